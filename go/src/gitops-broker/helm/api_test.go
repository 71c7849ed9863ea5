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
