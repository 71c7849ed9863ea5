package helm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirFiles reads a chart directory the way the broker hands one to the library.
func dirFiles(t *testing.T, dir string) []*File {
	t.Helper()
	var files []*File
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, &File{Name: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func loadWebapp(t *testing.T) *Chart {
	t.Helper()
	c, err := LoadDirectoryFiles(dirFiles(t, "testdata/webapp"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func render(t *testing.T, files, sets []string, o Options) (*Result, error) {
	t.Helper()
	vals, err := UserValues(files, sets)
	if err != nil {
		t.Fatal(err)
	}
	return Render(loadWebapp(t), vals, o)
}

func diff(t *testing.T, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			t.Fatalf("output differs at line %d:\n got: %q\nwant: %q\n--- got ---\n%s", i+1, gl, wl, got)
		}
	}
}

func TestTemplateFullChart(t *testing.T) {
	res, err := render(t, []string{readTestdata(t, "extra-values.yaml")}, []string{"database.host=db.shop"},
		Options{ReleaseName: "myapp", Namespace: "shop", IncludeCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, res.Output, readTestdata(t, "expected/full.txt"))
	wantNotes := "myapp-webapp is installed in shop.\nVisit http://myapp-webapp:80\n"
	if res.Notes != wantNotes {
		t.Fatalf("notes %q, want %q", res.Notes, wantNotes)
	}
}
