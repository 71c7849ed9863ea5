package rpc

import "testing"

func TestRegisterAndCall(t *testing.T) {
	Register("test.echo", func(req []byte) ([]byte, error) { return append([]byte("echo:"), req...), nil })
	out, err := Call("test.echo", []byte("x"))
	if err != nil || string(out) != "echo:x" {
		t.Fatalf("got %q, %v", out, err)
	}
	if _, err := Call("test.missing", nil); err == nil {
		t.Fatal("an unknown method must fail")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a duplicate registration must panic")
		}
	}()
	Register("test.echo", func(req []byte) ([]byte, error) { return nil, nil })
}
