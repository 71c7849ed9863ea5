package helm

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestValuesScopingGlobalsAndNulls(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":                  chartYAML,
		"values.yaml":                 "a: 1\nkeep: yes-kept\ndrop: default\nglobal:\n  g: parent\n  t:\n    x: 1\nsub:\n  v: from-parent\n",
		"templates/p.yaml":            `{{ .Values.a }}|{{ .Values.keep }}|{{ .Values.drop }}|{{ .Values.global.g }}|{{ toJson .Values.global.t }}|{{ .Values.sub.v }}|{{ .Values.sub.w }}`,
		"charts/sub/Chart.yaml":       "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
		"charts/sub/values.yaml":      "v: sub-default\nw: sub-w\nglobal:\n  g: sub\n  own: sub-own\n  t:\n    z: 2\n",
		"charts/sub/templates/s.yaml": `{{ .Values.v }}|{{ .Values.w }}|{{ .Values.global.g }}|{{ .Values.global.own }}|{{ toJson .Values.global.t }}|{{ .Values.a }}|{{ .Chart.Name }}|{{ .Chart.IsRoot }}`,
	}
	vals, err := UserValues([]string{"drop: null\nsub:\n  w: null\n"}, []string{"a=2"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, out, _, err := renderFiles(chartOf(t, files), vals, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The parent sees its own values; sub's defaults appear under .Values.sub once coalesced.
	if got, want := out["k/templates/p.yaml"], `2|yes-kept||parent|{"x":1}|from-parent|`; got != want {
		t.Fatalf("parent got %q, want %q", got, want)
	}
	// The subchart sees its scope: the parent's values for it win, null deletes its default, the
	// parent's globals win over its own, tables of globals merge.
	if got, want := out["k/charts/sub/templates/s.yaml"], `from-parent||parent|sub-own|{"x":1,"z":2}||sub|false`; got != want {
		t.Fatalf("sub got %q, want %q", got, want)
	}
}

func TestCoalesceTables(t *testing.T) {
	dst := map[string]interface{}{"a": 1, "n": nil, "t": map[string]interface{}{"x": 1}}
	src := map[string]interface{}{"a": 2, "b": 3, "n": 4, "t": map[string]interface{}{"y": 2}}
	got, _ := json.Marshal(CoalesceTables(dst, src))
	if string(got) != `{"a":1,"b":3,"t":{"x":1,"y":2}}` {
		t.Fatalf("got %s", got)
	}
	dst = map[string]interface{}{"n": nil}
	got, _ = json.Marshal(MergeTables(dst, map[string]interface{}{"n": 4}))
	if string(got) != `{"n":null}` {
		t.Fatalf("merge got %s", got)
	}
}

func TestParseSet(t *testing.T) {
	cases := map[string]string{
		"a=1,b=true,c=null,d=0,e=007,f=x": `{"a":1,"b":true,"c":null,"d":0,"e":"007","f":"x"}`,
		"a.b.c=v":                         `{"a":{"b":{"c":"v"}}}`,
		"list[1]=x":                       `{"list":[null,"x"]}`,
		"list[0].name=a,list[0].v=2":      `{"list":[{"name":"a","v":2}]}`,
		"l={a,b,3}":                       `{"l":["a","b",3]}`,
		`k=a\,b,dotted\.key=v`:            `{"dotted.key":"v","k":"a,b"}`,
		"e=":                              `{"e":""}`,
		"big=12345678901234567890":        `{"big":"12345678901234567890"}`,
		"nested[0][1]=z":                  `{"nested":[[null,"z"]]}`,
	}
	for in, want := range cases {
		m := map[string]interface{}{}
		if err := ParseSet(in, m); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		got, _ := json.Marshal(m)
		if string(got) != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
	errs := map[string]string{
		"a":      `key "a" has no value`,
		"a,b=1":  `key "a" has no value (cannot end with ,)`,
		"a.=1":   `key map "a" has no value`,
		"l={a":   `list must terminate with '}'`,
		"l[x]=1": `error parsing index: strconv.Atoi: parsing "x": invalid syntax`,
	}
	for in, want := range errs {
		if err := ParseSet(in, map[string]interface{}{}); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", in, err, want)
		}
	}
}

func TestMergeUserValuesInHelmsOrder(t *testing.T) {
	vals, err := MergeUserValues(ValueSources{
		Files:    []string{"v: file\nkeep: 1\n"},
		JSON:     []string{`v="json",j={"a":[1,{"b":null}]}, n=`}, // Helm too reads " n" as the key
		Set:      []string{"v=set,s=007"},
		String:   []string{"v=string,str=true"},
		File:     []string{`v=one.txt,fl={one.txt,two\,x.txt}`},
		FileData: map[string]string{"one.txt": "ONE", "two,x.txt": "TWO"},
		Literal:  []string{"lit.k={a,b},c=d\\e"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(vals)
	want := `{" n":null,"fl":["ONE","TWO"],"j":{"a":[1,{"b":null}]},"keep":1,"lit":{"k":"{a,b},c=d\\e"},"s":"007","str":"true","v":"ONE"}`
	if string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if got := FilePaths([]string{`a=x.txt,b[0]=y\,z.txt`, "c={p,q}"}); fmt.Sprint(got) != "[x.txt y,z.txt p q]" {
		t.Fatalf("FilePaths got %q", got)
	}
	errs := map[string]ValueSources{
		"failed parsing --set-json data j={x}":                                     {JSON: []string{"j={x}"}},
		"failed parsing --set-file data: open none.txt: no such file or directory": {File: []string{"f=none.txt"}},
		"failed to parse a.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}": {Files: []string{"- 1\n"}, FileNames: []string{"a.yaml"}},
	}
	for want, v := range errs {
		if _, err := MergeUserValues(v); err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	}
}
