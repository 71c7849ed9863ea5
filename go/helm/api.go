package helm

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"text/template"
)

// ChartSource is a chart as the caller sends it: the files of a chart directory (names relative
// to it, .helmignore applied here) or the bytes of a .tgz.
type ChartSource struct {
	Files   []*jsonFile `json:"files,omitempty"`
	Archive []byte      `json:"archive,omitempty"`
}

type jsonFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// Load loads the chart afresh (rendering changes a chart in place).
func (s *ChartSource) Load() (*Chart, error) {
	switch {
	case s == nil:
		return nil, errors.New("no chart given")
	case s.Archive != nil && s.Files != nil:
		return nil, errors.New("give either the chart's files or its archive, not both")
	case s.Archive != nil:
		if !IsArchive(s.Archive) {
			return nil, errors.New("the chart archive is not a gzipped archive")
		}
		return LoadArchive(s.Archive)
	}
	files := make([]*File, 0, len(s.Files))
	for _, f := range s.Files {
		if f == nil {
			continue
		}
		files = append(files, &File{Name: f.Name, Data: f.Data})
	}
	return LoadDirectoryFiles(files)
}

// RenderRequest is the JSON request of "helm.render".
type RenderRequest struct {
	Chart *ChartSource `json:"chart"`
	// ValueFiles are YAML documents merged in order (-f), ValueFileNames their names for errors;
	// then come --set-json, --set, --set-string, --set-file (SetFileData: the files' contents by
	// path, FilePaths tells which) and --set-literal expressions, in Helm's order.
	ValueFiles     []string          `json:"valueFiles,omitempty"`
	ValueFileNames []string          `json:"valueFileNames,omitempty"`
	SetJSON        []string          `json:"setJson,omitempty"`
	Set            []string          `json:"set,omitempty"`
	SetString      []string          `json:"setString,omitempty"`
	SetFile        []string          `json:"setFile,omitempty"`
	SetFileData    map[string]string `json:"setFileData,omitempty"`
	SetLiteral     []string          `json:"setLiteral,omitempty"`
	Options        struct {
		ReleaseName  string   `json:"releaseName,omitempty"`
		NameTemplate string   `json:"nameTemplate,omitempty"`
		Namespace    string   `json:"namespace,omitempty"`
		Revision     int      `json:"revision,omitempty"`
		IsUpgrade    bool     `json:"isUpgrade,omitempty"`
		KubeVersion  string   `json:"kubeVersion,omitempty"`
		APIVersions  []string `json:"apiVersions,omitempty"`
		IncludeCRDs  bool     `json:"includeCrds,omitempty"`
		SkipTests    bool     `json:"skipTests,omitempty"`
		DisableHooks bool     `json:"disableHooks,omitempty"`
		ShowOnly     []string `json:"showOnly,omitempty"`
	} `json:"options"`
}

// RenderResponse is either a result or the chart's error (Helm's text; debugHint when Helm would
// add its "Use --debug flag" hint).
type RenderResponse struct {
	*Result
	Error     string `json:"error,omitempty"`
	DebugHint bool   `json:"debugHint,omitempty"`
}

// HandleRender answers "helm.render". A chart that fails to load or render is an answer with
// error set; only a request that cannot be read is a Go error.
func HandleRender(request []byte) ([]byte, error) {
	var req RenderRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, fmt.Errorf("helm.render: bad request: %w", err)
	}
	res, err := renderRequest(&req)
	if err != nil {
		resp := RenderResponse{Error: err.Error()}
		var he *Error
		if errors.As(err, &he) {
			resp.DebugHint = he.Rendered
		}
		return json.Marshal(resp)
	}
	if res.Documents == nil {
		res.Documents = []Document{}
	}
	return json.Marshal(RenderResponse{Result: res})
}

func renderRequest(req *RenderRequest) (*Result, error) {
	c, err := req.Chart.Load()
	if err != nil {
		return nil, err
	}
	vals, err := MergeUserValues(ValueSources{
		Files: req.ValueFiles, FileNames: req.ValueFileNames, JSON: req.SetJSON, Set: req.Set,
		String: req.SetString, File: req.SetFile, FileData: req.SetFileData, Literal: req.SetLiteral,
	})
	if err != nil {
		return nil, err
	}
	o := req.Options
	return Render(c, vals, Options{
		ReleaseName: o.ReleaseName, NameTemplate: o.NameTemplate, Namespace: o.Namespace,
		Revision: o.Revision, IsUpgrade: o.IsUpgrade, KubeVersion: o.KubeVersion,
		APIVersions: o.APIVersions, IncludeCRDs: o.IncludeCRDs, SkipTests: o.SkipTests,
		DisableHooks: o.DisableHooks, ShowOnly: o.ShowOnly,
	})
}

// HandleSetFilePaths answers "helm.setFilePaths": the paths that --set-file expressions name, for
// the caller to read before "helm.render" (the module reads no files).
func HandleSetFilePaths(request []byte) ([]byte, error) {
	var req struct {
		SetFile []string `json:"setFile"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, fmt.Errorf("helm.setFilePaths: bad request: %w", err)
	}
	paths := FilePaths(req.SetFile)
	if paths == nil {
		paths = []string{}
	}
	return json.Marshal(struct {
		Paths []string `json:"paths"`
	}{paths})
}

// CheckResponse is the answer of "helm.check".
type CheckResponse struct {
	Error    string `json:"error,omitempty"`
	Name     string `json:"name,omitempty"`
	Version  string `json:"version,omitempty"`
	Type     string `json:"type,omitempty"`
	Template int    `json:"templates"`
}

// HandleCheck answers "helm.check": the chart loads, its dependencies are present, and every
// template of it and of its subcharts parses (the catalog's check of a chart, before any render).
func HandleCheck(request []byte) ([]byte, error) {
	var req struct {
		Chart *ChartSource `json:"chart"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, fmt.Errorf("helm.check: bad request: %w", err)
	}
	c, err := req.Chart.Load()
	if err != nil {
		return json.Marshal(CheckResponse{Error: err.Error()})
	}
	n, err := Check(c)
	if err != nil {
		return json.Marshal(CheckResponse{Error: err.Error()})
	}
	return json.Marshal(CheckResponse{Name: c.Name(), Version: c.Metadata.Version, Type: c.Metadata.Type, Template: n})
}

// Check tells whether a loaded chart can be installed: application type, dependencies present
// under charts/ (recursively), every template parses. It returns how many templates it parsed.
func Check(c *Chart) (int, error) {
	if c.Metadata.Type != "" && c.Metadata.Type != "application" {
		return 0, fmt.Errorf("%s charts are not installable", c.Metadata.Type)
	}
	var checkDeps func(*Chart) error
	checkDeps = func(ch *Chart) error {
		if ch.Metadata.Dependencies != nil {
			if err := CheckDependencies(ch); err != nil {
				return err
			}
		}
		for _, sc := range ch.Dependencies() {
			if err := checkDeps(sc); err != nil {
				return err
			}
		}
		return nil
	}
	if err := checkDeps(c); err != nil {
		return 0, err
	}
	tpls := map[string]renderable{}
	var collect func(*Chart)
	collect = func(ch *Chart) {
		for _, f := range ch.Templates {
			tpls[path.Join(ch.FullPath(), f.Name)] = renderable{text: string(f.Data)}
		}
		for _, sc := range ch.Dependencies() {
			collect(sc)
		}
	}
	collect(c)
	t := template.New("gotpl")
	bindFuncs(t)
	for _, name := range parseOrder(tpls) {
		if _, err := t.New(name).Parse(tpls[name].text); err != nil {
			return 0, parseError(name, err)
		}
	}
	n := 0
	for name := range tpls {
		if !strings.HasSuffix(name, "NOTES.txt") {
			n++
		}
	}
	return n, nil
}
