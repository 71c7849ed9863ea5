package helm

import (
	"sort"
	"strings"
	"testing"
)

func chartOf(t *testing.T, files map[string]string) *Chart {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var fs []*File
	for _, n := range names {
		fs = append(fs, &File{Name: n, Data: []byte(files[n])})
	}
	c, err := LoadDirectoryFiles(fs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const chartYAML = "apiVersion: v2\nname: k\nversion: 0.1.0\n"

func renderOne(t *testing.T, files map[string]string, vals map[string]interface{}, o Options) (string, error) {
	t.Helper()
	files["Chart.yaml"] = chartYAML
	res, err := Render(chartOf(t, files), vals, o)
	if err != nil {
		return "", err
	}
	return res.Output, nil
}

func TestFunctions(t *testing.T) {
	cases := []struct{ name, tpl, want string }{
		{"missing key prints nothing", `a: {{ .Values.nope }}|{{ .Values.obj.nope }}`, `a: |`},
		{"toYaml", `{{ toYaml .Values.obj }}`, "list:\n- 1\n- two\nname: x"},
		{"toJson", `{{ toJson .Values.obj }}`, `{"list":[1,"two"],"name":"x"}`},
		{"fromYaml", `{{ (fromYaml "a: 1\nb: [x]").b | first }}`, `x`},
		{"fromYaml error", `{{ (fromYaml "a: [").Error }}`, `error converting YAML to JSON: yaml: line 1: did not find expected node content`},
		{"fromYamlArray", `{{ fromYamlArray "- a\n- b" | last }}`, `b`},
		{"fromJson", `{{ (fromJson "{\"a\":{\"b\":2}}").a.b }}`, `2`},
		{"fromJsonArray", `{{ fromJsonArray "[1,2,3]" | len }}`, `3`},
		{"toToml", `{{ toToml .Values.obj }}`, "list = [1.0, \"two\"]\nname = \"x\"\n"},
		{"fromToml", `{{ (fromToml "a = 1").a }}`, `1`},
		{"lookup is empty", `{{ lookup "v1" "Secret" "ns" "s" | len }}`, `0`},
		{"no env", `{{ if hasKey . "x" }}{{ end }}ok`, `ok`},
		{"tpl with define and include", `{{ tpl "{{ define \"in\" }}[{{ . }}]{{ end }}{{ include \"in\" .Values.obj.name }}" . }}`, `[x]`},
		{"tpl sees the release", `{{ tpl "{{ .Release.Name }}/{{ .Chart.Name }}" . }}`, `release-name/k`},
		{"include of a partial", `{{ include "k.hello" "w" }}`, `hello w`},
		{"Values methods", `{{ .Values.Table "obj" | toJson }}|{{ .Values.AsMap | len }}`, `{"list":[1,"two"],"name":"x"}|1`},
		{"Chart fields", `{{ .Chart.Name }} {{ .Chart.Version }} {{ .Chart.APIVersion }} {{ .Chart.IsRoot }}`, `k 0.1.0 v2 true`},
		{"Release", `{{ .Release.Revision }} {{ .Release.IsInstall }} {{ .Release.IsUpgrade }} {{ .Release.Service }}`, `1 true false Helm`},
		{"Capabilities", `{{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }} {{ .Capabilities.APIVersions.Has "batch/v1" }} {{ .Capabilities.APIVersions.Has "x.io/v9" }}`, `v1.36.0 1.36 true false`},
		{"Files", `{{ .Files.Get "data/a.txt" }}|{{ .Files.Get "none" }}|{{ range $k, $v := .Files.Glob "data/**" }}{{ $k }};{{ end }}`, "A\n||data/a.txt;data/sub/b.txt;"},
		{"Files.AsSecrets", `{{ (.Files.Glob "data/*.txt").AsSecrets }}`, `a.txt: QQo=`},
		{"Files.Glob braces", `{{ range $k, $v := .Files.Glob "{data/a.*,data/sub/?.txt}" }}{{ $k }};{{ end }}`, `data/a.txt;data/sub/b.txt;`},
		{"sha512sum (sprig 3.3)", `{{ sha512sum "abc" | trunc 16 }}`, `ddaf35a193617aba`},
		{"getHostByName is off", `[{{ getHostByName "localhost" }}]`, `[]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{
				"templates/_h.tpl": `{{ define "k.hello" }}hello {{ . }}{{ end }}`,
				"templates/t.yaml": c.tpl,
				"data/a.txt":       "A\n",
				"data/sub/b.txt":   "B",
				"values.yaml":      "obj:\n  name: x\n  list: [1, two]\n",
				"Chart.yaml":       chartYAML,
			}
			_, _, out, _, err := renderFiles(chartOf(t, files), nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if out["k/templates/t.yaml"] != c.want {
				t.Fatalf("got %q, want %q", out["k/templates/t.yaml"], c.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	cases := []struct{ name, tpl, want string }{
		{"parse error", "a: 1\nb: {{ .Values.x \n", `parse error at (k/templates/t.yaml:3): unclosed action started at k/templates/t.yaml:2`},
		{"undefined function", "a: {{ nope }}", `parse error at (k/templates/t.yaml:1): function "nope" not defined`},
		{"fail", "a: 1\nb: {{ fail \"boom\" }}", `execution error at (k/templates/t.yaml:2:6): boom`},
		{"required on a missing value", "x:\n  y: {{ required \"y please\" .Values.y }}", `execution error at (k/templates/t.yaml:2:8): y please`},
		{"go error is Go's text", "a: {{ index .Values.list 5 }}", `template: k/templates/t.yaml:1:6: executing "k/templates/t.yaml" at <index .Values.list 5>: error calling index: index out of range: 5`},
		{"include of an unknown template", `{{ include "nope" . }}`, `template: k/templates/t.yaml:1:3: executing "k/templates/t.yaml" at <include "nope" .>: error calling include: template: no template "nope" associated with template "gotpl"`},
		{"yaml error", "a: [", `YAML parse error on k/templates/t.yaml: error converting YAML to JSON: yaml: line 1: did not find expected node content`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderOne(t, map[string]string{"templates/t.yaml": c.tpl, "values.yaml": "list: [1]\n"}, nil, Options{})
			if err == nil || err.Error() != c.want {
				t.Fatalf("error %v\nwant %s", err, c.want)
			}
		})
	}
}

func TestIncludeRecursionIsBounded(t *testing.T) {
	_, err := renderOne(t, map[string]string{"templates/t.yaml": `{{ define "loop" }}{{ include "loop" . }}{{ end }}{{ include "loop" . }}`}, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "rendering template has a nested reference name: loop: unable to execute template") {
		t.Fatalf("error %v", err)
	}
}

func TestMissingDependency(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":       chartYAML + "dependencies:\n  - name: db\n    version: 1.0.0\n    repository: https://charts.example.com\n",
		"templates/t.yaml": "a: 1",
	}
	_, err := Render(chartOf(t, files), nil, Options{})
	want := "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: db"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v", err)
	}
}

func TestLibraryChart(t *testing.T) {
	files := map[string]string{"Chart.yaml": chartYAML + "type: library\n", "templates/_x.tpl": ""}
	_, err := Render(chartOf(t, files), nil, Options{})
	if err == nil || err.Error() != "library charts are not installable" {
		t.Fatalf("error %v", err)
	}
	// A library subchart lends its defines; its other templates are not rendered.
	files = map[string]string{
		"Chart.yaml":                   chartYAML,
		"templates/t.yaml":             `a: {{ include "lib.x" . }}`,
		"charts/lib/Chart.yaml":        "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
		"charts/lib/templates/_x.tpl":  `{{ define "lib.x" }}from-lib{{ end }}`,
		"charts/lib/templates/cm.yaml": "kind: ConfigMap",
	}
	res, err := Render(chartOf(t, files), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "---\n# Source: k/templates/t.yaml\na: from-lib\n" {
		t.Fatalf("output %q", res.Output)
	}
}

func TestChartValidation(t *testing.T) {
	cases := map[string]string{
		"apiVersion: v2\nversion: 1.0.0\n":                 "validation: chart.metadata.name is required",
		"apiVersion: v2\nname: x\n":                        "validation: chart.metadata.version is required",
		"apiVersion: v2\nname: x\nversion: one\n":          `validation: chart.metadata.version "one" is invalid`,
		"apiVersion: v2\nname: x\nversion: 1.0.0\ntype: y": "validation: chart.metadata.type must be application or library",
		"name: [": "cannot load Chart.yaml: error converting YAML to JSON: yaml: line 1: did not find expected node content",
	}
	for chartYAML, want := range cases {
		_, err := LoadFiles([]*File{{Name: "Chart.yaml", Data: []byte(chartYAML)}})
		if err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %s", chartYAML, err, want)
		}
	}
	_, err := LoadFiles([]*File{{Name: "values.yaml", Data: []byte("a: 1")}})
	if err == nil || err.Error() != "Chart.yaml file is missing" {
		t.Errorf("error %v", err)
	}
}
