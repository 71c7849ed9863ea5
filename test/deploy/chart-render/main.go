// A minimal Helm-like renderer for the chart test, built at test time with Go's real
// text/template and sprig: .Values (values.yaml deep-merged with an override file), .Release,
// .Chart, include, toYaml and sprig's functions (nindent, default, quote, sha256sum ...). It
// renders every templates/*.yaml (files starting with _ only define templates) and prints the
// documents, each after a "# Source:" comment, as `helm template` does. Until this project's
// own Helm engine lands; it is not a Helm replacement (no lookup, tpl, subcharts).
package main

import (
	"bytes"
	"fmt"
	"io/ioutil"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

func readYaml(file string) map[string]interface{} {
	data, err := ioutil.ReadFile(file)
	if err != nil {
		fail(err)
	}
	out := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		fail(fmt.Errorf("%s: %w", file, err))
	}
	return out
}

// merge: values of `over` replace those of `base`, maps are merged key by key (Helm's coalesce).
func merge(base, over map[string]interface{}) map[string]interface{} {
	for k, v := range over {
		if bm, ok := base[k].(map[string]interface{}); ok {
			if om, ok := v.(map[string]interface{}); ok {
				base[k] = merge(bm, om)
				continue
			}
		}
		base[k] = v
	}
	return base
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		fail(fmt.Errorf("usage: chart-render CHART_DIR VALUES_OVERRIDE_FILE RELEASE_NAME"))
	}
	dir, overrideFile, release := os.Args[1], os.Args[2], os.Args[3]
	chartMeta := readYaml(filepath.Join(dir, "Chart.yaml"))
	values := merge(readYaml(filepath.Join(dir, "values.yaml")), readYaml(overrideFile))
	data := map[string]interface{}{
		"Values":  values,
		"Release": map[string]interface{}{"Name": release, "Namespace": "default", "Service": "Helm", "IsInstall": true},
		"Chart": map[string]interface{}{
			"Name": chartMeta["name"], "Version": chartMeta["version"], "AppVersion": chartMeta["appVersion"],
		},
	}

	root := template.New("chart")
	funcs := sprig.TxtFuncMap()
	funcs["toYaml"] = func(v interface{}) string {
		out, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(out), "\n")
	}
	// Helm's required: an error when the value is nil or an empty string.
	funcs["required"] = func(message string, v interface{}) (interface{}, error) {
		if s, ok := v.(string); v == nil || (ok && s == "") {
			return v, fmt.Errorf("execution error: %s", message)
		}
		return v, nil
	}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	root.Funcs(funcs).Option("missingkey=zero")

	files, err := filepath.Glob(filepath.Join(dir, "templates", "*"))
	if err != nil {
		fail(err)
	}
	sort.Strings(files)
	for _, file := range files {
		text, err := ioutil.ReadFile(file)
		if err != nil {
			fail(err)
		}
		if _, err := root.New(filepath.Base(file)).Parse(string(text)); err != nil {
			fail(err)
		}
	}
	for _, file := range files {
		name := filepath.Base(file)
		if strings.HasPrefix(name, "_") || !strings.HasSuffix(name, ".yaml") {
			continue
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			fail(err)
		}
		if strings.TrimSpace(buf.String()) == "" {
			continue
		}
		fmt.Printf("---\n# Source: %s/templates/%s\n%s\n", chartMeta["name"], name, strings.TrimSpace(buf.String()))
	}
}
