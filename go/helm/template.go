package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// Options are `helm template`'s flags that change what it prints.
type Options struct {
	// ReleaseName is NAME; "" means `helm template`'s default, "release-name", unless NameTemplate.
	ReleaseName  string
	NameTemplate string
	// Namespace is --namespace; "" means "default".
	Namespace string
	// Revision is .Release.Revision; 0 means 1.
	Revision  int
	IsUpgrade bool
	// KubeVersion (--kube-version) and APIVersions (--api-versions) change .Capabilities.
	KubeVersion string
	APIVersions []string
	IncludeCRDs bool
	SkipTests   bool
	// DisableHooks leaves hook documents out (--no-hooks).
	DisableHooks bool
	// ShowOnly are --show-only globs over template paths relative to the chart's directory.
	ShowOnly []string
}

// Document is one document of the output, in output order.
type Document struct {
	Source     string   `json:"source"`
	Content    string   `json:"content"`
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Name       string   `json:"name,omitempty"`
	CRD        bool     `json:"crd,omitempty"`
	Hook       []string `json:"hook,omitempty"`
}

// Result is a rendered release.
type Result struct {
	// Output is exactly what `helm template` prints on stdout.
	Output string `json:"output"`
	// Documents are the printed documents, in the same order (a CRD file is one document even when
	// it holds several, as Helm prints it).
	Documents   []Document `json:"documents"`
	Notes       string     `json:"notes"`
	ReleaseName string     `json:"releaseName"`
	Namespace   string     `json:"namespace"`
	// Schemas are the values.schema.json of the rendered charts with the values each one sees,
	// for the caller to validate as Helm does before rendering (Helm's JSON Schema validator is
	// not part of this library).
	Schemas []SchemaCheck `json:"schemas,omitempty"`
}

// SchemaCheck is one chart's values.schema.json and the coalesced values it applies to.
type SchemaCheck struct {
	Chart  string          `json:"chart"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Values Values          `json:"values"`
	// Error is set instead of Schema when the schema is not JSON.
	Error string `json:"error,omitempty"`
}

// schemaChecks walks the chart and its rendered subcharts as Helm's ValidateAgainstSchema does:
// a subchart is checked with the values under its name, when they are a map.
func schemaChecks(c *Chart, vals map[string]interface{}) []SchemaCheck {
	var out []SchemaCheck
	if c.Schema != nil {
		var v interface{}
		if err := json.Unmarshal(c.Schema, &v); err != nil {
			out = append(out, SchemaCheck{Chart: c.Name(), Values: vals, Error: err.Error()})
		} else {
			out = append(out, SchemaCheck{Chart: c.Name(), Schema: json.RawMessage(c.Schema), Values: vals})
		}
	}
	for _, sc := range c.Dependencies() {
		if sv, ok := vals[sc.Name()].(map[string]interface{}); ok {
			out = append(out, schemaChecks(sc, sv)...)
		}
	}
	return out
}

// Error is a render failure; Message is the text Helm prints after "Error: ".
type Error struct {
	Message string
	// Rendered: Helm had started the release (it prints a hint to use --debug after the message).
	Rendered bool
}

func (e *Error) Error() string { return e.Message }

func fail(rendered bool, err error) error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return &Error{Message: err.Error(), Rendered: rendered}
}

var validReleaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// ReleaseName is the name `helm template` uses: NAME, else the rendered --name-template, else
// "release-name".
func ReleaseName(name, nameTemplate string) (string, error) {
	if name != "" {
		if nameTemplate != "" {
			return "", fmt.Errorf("cannot set --name-template and also specify a name")
		}
		return name, nil
	}
	if nameTemplate != "" {
		t, err := template.New("name-template").Funcs(sprig.TxtFuncMap()).Parse(nameTemplate)
		if err != nil {
			return "", err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, nil); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return "release-name", nil
}

// Render renders a loaded chart with user values (already merged from -f and --set) as
// `helm template` does. It changes the chart (dependencies are resolved in place): load the chart
// afresh for every render.
func Render(c *Chart, vals map[string]interface{}, o Options) (*Result, error) {
	name, ns, files, coalesced, err := renderFiles(c, vals, o)
	if err != nil {
		return nil, err
	}
	var notes strings.Builder
	rootNotes := path.Join(c.Name(), "templates", "NOTES.txt")
	for k, v := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			if k == rootNotes {
				notes.WriteString(v)
			}
			delete(files, k)
		}
	}
	hooks, manifests, err := sortManifests(files)
	if err != nil {
		return nil, fail(true, err)
	}

	res := &Result{Notes: notes.String(), ReleaseName: name, Namespace: ns, Schemas: schemaChecks(c, coalesced)}
	var manifest strings.Builder
	if o.IncludeCRDs {
		for _, crd := range c.CRDObjects() {
			fmt.Fprintf(&manifest, "---\n# Source: %s\n%s\n", crd.Filename, string(crd.File.Data))
			d := Document{Source: crd.Filename, Content: string(crd.File.Data), CRD: true}
			var head SimpleHead
			if yamlHead(crd.File.Data, &head) {
				d.APIVersion, d.Kind = head.Version, head.Kind
				if head.Metadata != nil {
					d.Name = head.Metadata.Name
				}
			}
			res.Documents = append(res.Documents, d)
		}
	}
	for _, m := range manifests {
		fmt.Fprintf(&manifest, "---\n# Source: %s\n%s\n", m.Source, m.Content)
		res.Documents = append(res.Documents, docOf(m, nil))
	}
	var out strings.Builder
	out.WriteString(strings.TrimSpace(manifest.String()))
	out.WriteString("\n")
	if !o.DisableHooks {
		for _, h := range hooks {
			if o.SkipTests && h.isTest() {
				continue
			}
			fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", h.Source, h.Content)
			res.Documents = append(res.Documents, docOf(h.Manifest, h.Events))
		}
	}
	if len(o.ShowOnly) == 0 {
		res.Output = out.String()
		return res, nil
	}
	shown, docs, err := showOnly(out.String(), res.Documents, o.ShowOnly)
	if err != nil {
		return nil, fail(false, err)
	}
	res.Output, res.Documents = shown, docs
	return res, nil
}

func docOf(m Manifest, hook []string) Document {
	d := Document{Source: m.Source, Content: m.Content, APIVersion: m.Head.Version, Kind: m.Head.Kind, Hook: hook}
	if m.Head.Metadata != nil {
		d.Name = m.Head.Metadata.Name
	}
	return d
}

var sourceLine = regexp.MustCompile("# Source: [^/]+/(.+)")

// showOnly keeps, for each pattern in turn, the printed documents whose template path (without
// the chart's name) matches it, as `helm template --show-only` does.
func showOnly(printed string, docs []Document, patterns []string) (string, []Document, error) {
	parts := SplitManifests(printed)
	var b strings.Builder
	var kept []Document
	for _, p := range patterns {
		p = filepath.ToSlash(p)
		missing := true
		for _, part := range parts {
			m := sourceLine.FindStringSubmatch(part)
			if len(m) == 0 {
				continue
			}
			if ok, _ := path.Match(p, m[1]); !ok {
				continue
			}
			fmt.Fprintf(&b, "---\n%s\n", part)
			for _, d := range docs {
				if "# Source: "+d.Source+"\n"+strings.TrimSpace(d.Content) == part {
					kept = append(kept, d)
					break
				}
			}
			missing = false
		}
		if missing {
			return "", nil, fmt.Errorf("could not find template %s in chart", p)
		}
	}
	return b.String(), kept, nil
}

// renderFiles checks the chart and the release, processes dependencies, coalesces values and
// executes every template: the rendered files by template path, NOTES.txt included.
func renderFiles(c *Chart, vals map[string]interface{}, o Options) (string, string, map[string]string, Values, error) {
	if vals == nil {
		vals = map[string]interface{}{}
	}
	name, err := ReleaseName(o.ReleaseName, o.NameTemplate)
	if err != nil {
		return "", "", nil, nil, fail(false, err)
	}
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	if c.Metadata.Type != "" && c.Metadata.Type != "application" {
		return "", "", nil, nil, fail(false, fmt.Errorf("%s charts are not installable", c.Metadata.Type))
	}
	if c.Metadata.Dependencies != nil {
		if err := CheckDependencies(c); err != nil {
			return "", "", nil, nil, fail(false, err)
		}
	}
	caps, err := DefaultCapabilities(o.KubeVersion, o.APIVersions)
	if err != nil {
		return "", "", nil, nil, fail(false, err)
	}
	if name == "" {
		return "", "", nil, nil, fail(false, fmt.Errorf("release name %q: no name provided", name))
	}
	if len(name) > 53 || !validReleaseName.MatchString(name) {
		return "", "", nil, nil, fail(false, fmt.Errorf("release name %q: invalid release name, must match regex %s and the length must not be longer than 53", name, validReleaseName.String()))
	}
	if err := ProcessDependencies(c, vals); err != nil {
		return "", "", nil, nil, fail(false, err)
	}
	revision := o.Revision
	if revision == 0 {
		revision = 1
	}
	top := Values{
		"Chart":        c.Metadata,
		"Capabilities": caps,
		"Release": map[string]interface{}{
			"Name":      name,
			"Namespace": ns,
			"IsUpgrade": o.IsUpgrade,
			"IsInstall": !o.IsUpgrade,
			"Revision":  revision,
			"Service":   "Helm",
		},
	}
	coalesced, err := CoalesceValues(c, vals)
	if err != nil {
		return "", "", nil, nil, fail(false, err)
	}
	top["Values"] = coalesced

	if c.Metadata.KubeVersion != "" && !compatibleRange(c.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return "", "", nil, nil, fail(true, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, caps.KubeVersion.String()))
	}
	files, err := renderTemplates(c, top)
	if err != nil {
		return "", "", nil, nil, fail(true, err)
	}
	return name, ns, files, coalesced, nil
}
