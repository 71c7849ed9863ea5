package gotemplate

import (
	"strings"
	"testing"
)

func render(t *testing.T, name, tpl, values string) (string, error) {
	t.Helper()
	out, err := Render(Request{Name: name, Template: tpl, Values: []byte(values)})
	return string(out), err
}

func TestNumbersAreTypedPerKey(t *testing.T) {
	// SF objects went through json.Unmarshal into interface{}: float64, which %v prints in the
	// shortest form with an exponent from 1e21 (strconv 'g' with the shortest precision): 1e+06.
	// Sources are unstructured: integral numbers are int64.
	cases := []struct{ tpl, values, want string }{
		{`{{ .instance.spec.parameters.size }}`, `{"instance":{"spec":{"parameters":{"size":1000000}}}}`, "1e+06"},
		{`{{ .plan.spec.context.version }}`, `{"plan":{"spec":{"context":{"version":9.6}}}}`, "9.6"},
		{`{{ .plan.spec.context.cpu }}`, `{"plan":{"spec":{"context":{"cpu":1}}}}`, "1"},
		{`{{ printf "%T" .plan.spec.context.cpu }}`, `{"plan":{"spec":{"context":{"cpu":1}}}}`, "float64"},
		{`{{ .svc.spec.port }}`, `{"svc":{"spec":{"port":1000000}}}`, "1000000"},
		{`{{ printf "%d" .svc.spec.port }}`, `{"svc":{"spec":{"port":5432}}}`, "5432"},
		{`{{ printf "%T %v" .svc.x .svc.x }}`, `{"svc":{"x":1.5}}`, "float64 1.5"},
		// 2^53+1 survives as int64 because the bytes reach Go as text.
		{`{{ .svc.big }}`, `{"svc":{"big":9007199254740993}}`, "9007199254740993"},
		// -0 survives the float64 decoding of SF objects; %v prints it as -0.
		{`{{ .instance.z }}`, `{"instance":{"z":-0}}`, "-0"},
	}
	for _, c := range cases {
		got, err := render(t, "i/provision", c.tpl, c.values)
		if err != nil || got != c.want {
			t.Errorf("%s on %s: got %q, %v; want %q", c.tpl, c.values, got, err, c.want)
		}
	}
}

func TestMissingKeysPrintNoValue(t *testing.T) {
	// SF executed with text/template's defaults: a missing map key is the zero value, printed
	// "<no value>"; a field of a missing map is nil and `with` skips it.
	got, err := render(t, "i/provision", `a={{ .instance.nope }} b={{ with .binding.metadata.name }}x{{ end }}`, `{"instance":{}}`)
	if err != nil || got != "a=<no value> b=" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestErrorsNameTheTemplateWithLineAndColumn(t *testing.T) {
	_, err := render(t, "abc/provision", "a\n{{ nope }}", `{}`)
	want := `gotemplate renderer - can't create template for abc/provision. template: abc/provision:2: function "nope" not defined`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	_, err = render(t, "abc/bind", "x\n  {{ index .a 3 }}", `{"a":[1]}`)
	want = `gotemplate renderer - can't render template for abc/bind. template: abc/bind:2:5: executing "abc/bind" at <index .a 3>: error calling index: index out of range: 3`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestServiceFabrikFunctions(t *testing.T) {
	cases := []struct{ tpl, values, want string }{
		{`{{ b64enc "user:pw" }}`, `{}`, "dXNlcjpwdw=="},
		{`{{ b64dec "dXNlcjpwdw==" }}`, `{}`, "user:pw"},
		{`{{ (unmarshalJSON "{\"a\":[1,2]}").a }}`, `{}`, "[1 2]"},
		{`{{ marshalJSON .svc }}`, `{"svc":{"b":1,"a":"x"}}`, `{"a":"x","b":1}`},
		{`{{ toJson .svc }}`, `{"svc":{"b":[true],"a":null}}`, `{"a":null,"b":[true]}`},
		// sigs.k8s.io/yaml: keys sorted, final newline trimmed, float64 1 written as 1.
		{`{{ toYaml .plan }}`, `{"plan":{"b":{"c":1},"a":["x"]}}`, "a:\n- x\nb:\n  c: 1"},
		{`{{ (fromYaml "a: 1\nb: [x]").b }}`, `{}`, "[x]"},
		{`{{ (fromJson "{\"a\":2}").a }}`, `{}`, "2"},
		{`{{ (fromJson "nope").Error }}`, `{}`, "invalid character 'o' in literal null (expecting 'u')"},
		{`{{ toToml .svc }}`, `{"svc":{"a":"x"}}`, "a = \"x\"\n"},
		// sprig, unchanged
		{`{{ list 1 2 | last }}-{{ "x" | squote }}-{{ default "d" "" }}`, `{}`, "2-'x'-d"},
	}
	for _, c := range cases {
		got, err := render(t, "i/provision", c.tpl, c.values)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.tpl, got, err, c.want)
		}
	}
	if _, err := render(t, "i/bind", `{{ b64dec "%%%" }}`, `{}`); err == nil || !strings.Contains(err.Error(), "illegal base64 data at input byte 0") {
		t.Errorf("b64dec of invalid input must fail the template, got %v", err)
	}
	if _, err := render(t, "i/bind", `{{ unmarshalJSON "[1]" }}`, `{}`); err == nil || !strings.Contains(err.Error(), "failed to unmarshal [1]. json: cannot unmarshal array") {
		t.Errorf("unmarshalJSON of a list must fail, got %v", err)
	}
}

func TestOutputLimit(t *testing.T) {
	_, err := Render(Request{Name: "i/provision", Template: `{{ repeat 1000 "x" }}`, Values: []byte(`{}`), OutputLimit: 999})
	want := "gotemplate renderer - can't render template for i/provision. output exceeds 999 bytes"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v", err)
	}
	out, err := Render(Request{Name: "i/provision", Template: `{{ repeat 1000 "x" }}`, Values: []byte(`{}`), OutputLimit: 1000})
	if err != nil || len(out) != 1000 {
		t.Fatalf("exactly the limit must pass: %d, %v", len(out), err)
	}
}

func TestCompileOnly(t *testing.T) {
	if _, err := CompileJSON([]byte(`{"name":"x/status","template":"{{ .a "}`)); err == nil || !strings.Contains(err.Error(), "template: x/status:1: unclosed action") {
		t.Fatalf("got %v", err)
	}
	if _, err := CompileJSON([]byte(`{"name":"x/status","template":"{{ .a.b }}"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestParsedTemplatesAreReusedUnderEachRequestsName(t *testing.T) {
	// Go 1.19's index checks the index against the slice's cap with `>` (so index == cap passes
	// the check and fails in reflect instead); 5 is past any cap of a one-element slice.
	tpl := "ok\n{{ index .svc.a 5 }}"
	for _, name := range []string{"one/provision", "two/provision"} {
		_, err := render(t, name, tpl, `{"svc":{"a":[1]}}`)
		want := "gotemplate renderer - can't render template for " + name + `. template: ` + name + `:2:3: executing "` + name + `" at <index .svc.a 5>: error calling index: index out of range: 5`
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	}
	// A template that changes its values (sprig's set) fails the same way on the second run.
	got, err := render(t, "x/bind", `{{ $_ := set .svc "b" 1 }}{{ .svc.b }}`, `{"svc":{}}`)
	if err != nil || got != "1" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestSprigIsTheReleaseServiceFabrikShipped(t *testing.T) {
	// go.mod pins what Service Fabrik's last release (v0.27.1, 2024-03-27) resolved in its
	// interoperator/go.mod: sprig v3.2.3 and with it huandu/xstrings v1.4.0. From xstrings v1.3.3 on,
	// camelCaseToLowerCase no longer writes a connector after a number that a connector follows
	// (v1.3.1, which sprig v3.2.2 pulled in until 2023, wrote "v1_2__3" and "v1-2--3").
	cases := []struct{ tpl, want string }{
		{`{{ snakecase "v1_2_3" }}`, "v1_2_3"},
		{`{{ kebabcase "v1_2_3" }}`, "v1-2-3"},
		// A number that no connector follows is the same in both releases.
		{`{{ snakecase "HTTP20xOK" }}`, "http_20x_ok"},
	}
	for _, c := range cases {
		got, err := render(t, "i/provision", c.tpl, `{}`)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.tpl, got, err, c.want)
		}
	}
}

func TestTextTemplateIsTheGoReleaseServiceFabrikShipped(t *testing.T) {
	// Service Fabrik v0.27.1 was built FROM golang:1.21 (go1.21.8 on the day of the tag), and
	// go.mod's toolchain line builds this module with go1.21.8. Go 1.22 added range over an
	// integer and Go 1.23 {{else with}}; Service Fabrik refused both, and so do we. The messages
	// are go1.21.8's own (its text/template: elseControl expects the right delimiter after else
	// unless an if follows; walkRange has no case for integers and, before Go 1.22, reports a
	// two-variable range over a non-iterable value as "range can't iterate over").
	cases := []struct{ tpl, want string }{
		{`{{ with .a }}x{{ else with .b }}y{{ end }}`, `gotemplate renderer - can't create template for i/provision. template: i/provision:1: unexpected <with> in else`},
		{`{{ range 3 }}x{{ end }}`, `gotemplate renderer - can't render template for i/provision. template: i/provision:1:9: executing "i/provision" at <3>: range can't iterate over 3`},
		{`{{ range $i, $e := .n }}x{{ end }}`, `gotemplate renderer - can't render template for i/provision. template: i/provision:1:19: executing "i/provision" at <.n>: range can't iterate over 2`},
	}
	for _, c := range cases {
		got, err := render(t, "i/provision", c.tpl, `{"n":2}`)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %q, %v; want the error %q", c.tpl, got, err, c.want)
		}
	}
	// {{else if}} chains, which every release accepts, still render.
	got, err := render(t, "i/provision", `{{ if .a }}a{{ else if .n }}n{{ end }}`, `{"n":2}`)
	if err != nil || got != "n" {
		t.Fatalf("else if: got %q, %v", got, err)
	}
}
