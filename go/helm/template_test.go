package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

func mustContain(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Fatalf("output lacks %q:\n%s", p, s)
		}
	}
}

func mustNotContain(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(s, p) {
			t.Fatalf("output has %q:\n%s", p, s)
		}
	}
}

func sources(res *Result) []string {
	var out []string
	for _, d := range res.Documents {
		out = append(out, d.Source+" "+d.Kind)
	}
	return out
}

func TestTemplateDefaultsSkipTests(t *testing.T) {
	res, err := render(t, nil, []string{"database.host=db"}, Options{SkipTests: true})
	if err != nil {
		t.Fatal(err)
	}
	// No --include-crds: the first document is the first template in install order.
	if !strings.HasPrefix(res.Output, "---\n# Source: webapp/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-name-webapp-config\n") {
		t.Fatalf("unexpected start:\n%s", res.Output)
	}
	mustContain(t, res.Output,
		"  greeting: \"Hello from release-name in default\"\n",
		"  replicas: 2\n",
		"      annotations:\n        prometheus.io/scrape: \"true\"\n        sidecar.example.com/inject: \"false\"\n      labels:\n",
		"      spec:\n        storageClassName: standard\n        resources:\n",
		"  size: 20\n",
	)
	mustNotContain(t, res.Output, "kind: Pod", "CustomResourceDefinition", "metrics")
	want := []string{
		"webapp/templates/configmap.yaml ConfigMap",
		"webapp/templates/service.yaml Service",
		"webapp/templates/deployment.yaml Deployment",
		"webapp/charts/redis/templates/statefulset.yaml StatefulSet",
		"webapp/templates/service.yaml ",
		"webapp/templates/widget.yaml Widget",
		"webapp/templates/migrate-job.yaml Job",
	}
	if got := sources(res); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("documents %q, want %q", got, want)
	}
	if !strings.HasSuffix(res.Output, "          image: example/webapp:4.5.6\n") {
		t.Fatalf("unexpected end:\n%s", res.Output)
	}
}

func TestConditionEnablesSubchart(t *testing.T) {
	res, err := render(t, nil, []string{"database.host=db", "metrics.enabled=true"}, Options{ReleaseName: "m"})
	if err != nil {
		t.Fatal(err)
	}
	// Both Services, in file name order: the subchart's path sorts first.
	mustContain(t, res.Output, "---\n# Source: webapp/charts/metrics/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: m-metrics\nspec:\n  ports:\n    - port: 9100\n---\n# Source: webapp/templates/service.yaml\napiVersion: v1\nkind: Service\n")
}

func TestTagDisablesAliasedSubchartAndItsCRDs(t *testing.T) {
	res, err := render(t, nil, []string{"database.host=db", "tags.backend=false"}, Options{IncludeCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res.Output, "# Source: webapp/crds/widgets.yaml\n")
	mustNotContain(t, res.Output, "StatefulSet", "cachepolicies")
	// A true tag keeps the subchart.
	res, err = render(t, nil, []string{"database.host=db", "tags.backend=true"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res.Output, "kind: StatefulSet")
}

func TestRequiredFailsWithLocation(t *testing.T) {
	_, err := render(t, nil, nil, Options{})
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v", err)
	}
	if e.Message != "execution error at (webapp/templates/deployment.yaml:29:24): database.host is required" || !e.Rendered {
		t.Fatalf("error %q rendered=%v", e.Message, e.Rendered)
	}
}

func TestShowOnly(t *testing.T) {
	res, err := render(t, nil, []string{"database.host=db"}, Options{ShowOnly: []string{"templates/service.yaml", "templates/w*.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "---\n# Source: webapp/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: release-name-webapp\n  labels:\n    app.kubernetes.io/name: webapp\n    app.kubernetes.io/instance: release-name\n    app.kubernetes.io/version: \"4.5.6\"\n    app.kubernetes.io/managed-by: Helm\n    helm.sh/chart: webapp-1.2.3\nspec:\n  type: ClusterIP\n  ports:\n    - port: 80\n      targetPort: 8080\n  selector:\n    app.kubernetes.io/name: webapp\n    app.kubernetes.io/instance: release-name\n" +
		"---\n# Source: webapp/templates/service.yaml\n# a comment-only document is kept, as Helm keeps it\n" +
		"---\n# Source: webapp/templates/widget.yaml\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: release-name-webapp\nspec:\n  size: 20\n"
	diff(t, res.Output, want)
	if len(res.Documents) != 3 {
		t.Fatalf("documents %q", sources(res))
	}
	_, err = render(t, nil, []string{"database.host=db"}, Options{ShowOnly: []string{"templates/nope.yaml"}})
	if err == nil || err.Error() != "could not find template templates/nope.yaml in chart" {
		t.Fatalf("error %v", err)
	}
}

func TestKubeVersion(t *testing.T) {
	res, err := render(t, nil, []string{"database.host=db"}, Options{KubeVersion: "v1.30.2-gke.100"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, res.Output, "  kubeVersion: \"v1.30.2\"\n")
	_, err = render(t, nil, []string{"database.host=db"}, Options{KubeVersion: "1.19"})
	if err == nil || err.Error() != "chart requires kubeVersion: >=1.20.0-0 which is incompatible with Kubernetes v1.19" {
		t.Fatalf("error %v", err)
	}
	_, err = render(t, nil, []string{"database.host=db"}, Options{KubeVersion: "banana"})
	if err == nil || !strings.HasPrefix(err.Error(), "invalid kube version 'banana': ") {
		t.Fatalf("error %v", err)
	}
}

func TestReleaseNames(t *testing.T) {
	res, err := render(t, nil, []string{"database.host=db"}, Options{NameTemplate: `{{ "shop" | upper | lower }}-{{ add 1 2 }}`})
	if err != nil {
		t.Fatal(err)
	}
	if res.ReleaseName != "shop-3" {
		t.Fatalf("release name %q", res.ReleaseName)
	}
	_, err = render(t, nil, []string{"database.host=db"}, Options{ReleaseName: "Bad_Name"})
	want := `release name "Bad_Name": invalid release name, must match regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length must not be longer than 53`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v", err)
	}
}

// tgz packs files under a top directory, as `helm package` does.
func tgz(t *testing.T, top string, files []*File) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: top + "/" + f.Name, Mode: 0644, Size: int64(len(f.Data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.Data)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestArchiveRendersAsDirectory(t *testing.T) {
	var kept []*File
	rules, _ := parseIgnore([]byte(readTestdata(t, "webapp/.helmignore")))
	rules.addDefaults()
	for _, f := range dirFiles(t, "testdata/webapp") {
		if !rules.ignoredPath(f.Name) {
			kept = append(kept, f)
		}
	}
	c, err := LoadArchive(tgz(t, "webapp", kept))
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := UserValues([]string{readTestdata(t, "extra-values.yaml")}, []string{"database.host=db.shop"})
	res, err := Render(c, vals, Options{ReleaseName: "myapp", Namespace: "shop", IncludeCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, res.Output, readTestdata(t, "expected/full.txt"))
	if !IsArchive(tgz(t, "x", kept)) {
		t.Fatal("not seen as an archive")
	}
}

func TestHelmignoreAndHiddenTemplates(t *testing.T) {
	c := loadWebapp(t)
	for _, f := range c.Templates {
		if strings.Contains(f.Name, ".swp-like") {
			t.Fatal("hidden template loaded")
		}
	}
	for _, f := range c.Files {
		if strings.HasPrefix(f.Name, "notes/") {
			t.Fatal("ignored directory loaded")
		}
	}
	// An archive is not filtered: a hidden file under templates/ is a template there.
	c, err := LoadArchive(tgz(t, "webapp", dirFiles(t, "testdata/webapp")))
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := UserValues(nil, []string{"database.host=db"})
	_, err = Render(c, vals, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "YAML parse error on webapp/templates/.swp-like.yaml: ") {
		t.Fatalf("error %v", err)
	}
}
