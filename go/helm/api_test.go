package helm

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestHandleRenderJSON(t *testing.T) {
	req := map[string]interface{}{
		"chart":      map[string]interface{}{"files": dirFiles(t, "testdata/webapp")},
		"valueFiles": []string{readTestdata(t, "extra-values.yaml")},
		"set":        []string{"database.host=db.shop"},
		"options":    map[string]interface{}{"releaseName": "myapp", "namespace": "shop", "includeCrds": true},
	}
	body, _ := json.Marshal(req) // File{Name, Data} marshals as {"Name":..,"Data":base64}
	out, err := HandleRender(body)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Output    string     `json:"output"`
		Documents []Document `json:"documents"`
		Notes     string     `json:"notes"`
		Error     string     `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error != "" {
		t.Fatal(resp.Error)
	}
	diff(t, resp.Output, readTestdata(t, "expected/full.txt"))
	if len(resp.Documents) != 10 || !resp.Documents[0].CRD || resp.Documents[0].Name != "widgets.example.com" || resp.Documents[9].Hook[0] != "pre-install" {
		t.Fatalf("documents %+v", resp.Documents)
	}
	if !strings.HasPrefix(resp.Notes, "myapp-webapp is installed in shop.") {
		t.Fatalf("notes %q", resp.Notes)
	}
}

func TestHandleRenderChartError(t *testing.T) {
	body, _ := json.Marshal(map[string]interface{}{"chart": map[string]interface{}{"files": dirFiles(t, "testdata/webapp")}})
	out, err := HandleRender(body)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"error":"execution error at (webapp/templates/deployment.yaml:29:24): database.host is required","debugHint":true}`
	if string(out) != want {
		t.Fatalf("got %s", out)
	}
	if _, err := HandleRender([]byte("{")); err == nil {
		t.Fatal("a bad request is a Go error")
	}
}

func TestHandleCheck(t *testing.T) {
	body, _ := json.Marshal(map[string]interface{}{"chart": map[string]interface{}{"files": dirFiles(t, "testdata/webapp")}})
	out, _ := HandleCheck(body)
	if string(out) != `{"name":"webapp","version":"1.2.3","type":"application","templates":10}` {
		t.Fatalf("got %s", out)
	}
	bad := []map[string]interface{}{
		{"name": "Chart.yaml", "data": []byte(chartYAML)},
		{"name": "templates/a.yaml", "data": []byte("a: 1\nb: {{ .Values.x | nope }}\n")},
	}
	body, _ = json.Marshal(map[string]interface{}{"chart": map[string]interface{}{"files": bad}})
	out, _ = HandleCheck(body)
	if string(out) != `{"error":"parse error at (k/templates/a.yaml:2): function \"nope\" not defined","templates":0}` {
		t.Fatalf("got %s", out)
	}
}

func TestSchemasAreHandedBack(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":                    chartYAML,
		"values.yaml":                   "replicas: 1\nsub:\n  size: 2\n",
		"values.schema.json":            `{"type":"object","required":["replicas"]}`,
		"templates/t.yaml":              "a: 1",
		"charts/sub/Chart.yaml":         "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
		"charts/sub/values.schema.json": "{not json",
		"charts/nos/Chart.yaml":         "apiVersion: v2\nname: nos\nversion: 1.0.0\n",
	}
	res, err := Render(chartOf(t, files), map[string]interface{}{"replicas": int64(3)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Schemas)
	want := `[{"chart":"k","schema":{"type":"object","required":["replicas"]},"values":{"nos":{"global":{}},"replicas":3,"sub":{"global":{},"size":2}}},` +
		`{"chart":"sub","values":{"global":{},"size":2},"error":"invalid character 'n' looking for beginning of object key string"}]`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
