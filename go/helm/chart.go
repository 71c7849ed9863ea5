// Package helm renders Helm charts the way `helm template` (Helm 3) does: the chart model and
// loader, values coalescing, dependency conditions and tags, the template engine with Helm's
// functions, and the ordering and printing of the rendered documents. It is a pure library: charts
// arrive as in-memory files, nothing touches the network or a cluster.
package helm

import (
	"path"
	"strings"
	"unicode"

	"github.com/Masterminds/semver/v3"
)

// File is one file of a chart, its name relative to the chart's root, always with '/' separators.
type File struct {
	Name string
	Data []byte
}

// Maintainer is an entry of Chart.yaml's maintainers.
type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// Dependency is an entry of Chart.yaml's dependencies (or requirements.yaml for apiVersion v1).
type Dependency struct {
	Name         string        `json:"name"`
	Version      string        `json:"version,omitempty"`
	Repository   string        `json:"repository"`
	Condition    string        `json:"condition,omitempty"`
	Tags         []string      `json:"tags,omitempty"`
	Enabled      bool          `json:"enabled,omitempty"`
	ImportValues []interface{} `json:"import-values,omitempty"`
	Alias        string        `json:"alias,omitempty"`
}

// Metadata is Chart.yaml. Templates see it as .Chart with Go's field names (.Chart.Name,
// .Chart.AppVersion, .Chart.APIVersion), as Helm's templates do.
type Metadata struct {
	Name         string            `json:"name,omitempty"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version,omitempty"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Maintainers  []*Maintainer     `json:"maintainers,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion,omitempty"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	AppVersion   string            `json:"appVersion,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Dependencies []*Dependency     `json:"dependencies,omitempty"`
	Type         string            `json:"type,omitempty"`
}

// Chart is a loaded chart with its subcharts.
type Chart struct {
	Metadata  *Metadata
	Templates []*File
	Values    map[string]interface{}
	Schema    []byte
	// Files are the chart's other files (crds/, README, files a template reads with .Files).
	Files []*File

	parent       *Chart
	dependencies []*Chart
}

// Name is the chart's name (its alias once dependencies are processed).
func (c *Chart) Name() string {
	if c.Metadata == nil {
		return ""
	}
	return c.Metadata.Name
}

// IsRoot tells whether the chart is the top-level chart.
func (c *Chart) IsRoot() bool { return c.parent == nil }

// Parent is the chart this one is a subchart of, nil for the root.
func (c *Chart) Parent() *Chart { return c.parent }

// Dependencies are the subcharts.
func (c *Chart) Dependencies() []*Chart { return c.dependencies }

// AddDependency appends subcharts.
func (c *Chart) AddDependency(charts ...*Chart) {
	for _, sc := range charts {
		sc.parent = c
		c.dependencies = append(c.dependencies, sc)
	}
}

// SetDependencies replaces the subcharts.
func (c *Chart) SetDependencies(charts ...*Chart) {
	c.dependencies = nil
	c.AddDependency(charts...)
}

// FullPath is the chart's path as templates name it: root, root/charts/sub, ...
func (c *Chart) FullPath() string {
	if c.IsRoot() {
		return c.Name()
	}
	return c.parent.FullPath() + "/charts/" + c.Name()
}

// CRD is a file under a chart's crds/ directory.
type CRD struct {
	Name     string // relative to its chart: crds/x.yaml
	Filename string // as `helm template` prints it: root/charts/sub/crds/x.yaml
	File     *File
}

// CRDObjects are the CRD files of the chart then of its subcharts, depth first.
func (c *Chart) CRDObjects() []CRD {
	out := []CRD{}
	for _, f := range c.Files {
		if strings.HasPrefix(f.Name, "crds/") && isManifestFile(f.Name) {
			out = append(out, CRD{Name: f.Name, Filename: path.Join(c.FullPath(), f.Name), File: f})
		}
	}
	for _, d := range c.dependencies {
		out = append(out, d.CRDObjects()...)
	}
	return out
}

func isManifestFile(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".yaml" || ext == ".yml" || ext == ".json"
}

// ValidationError is a Chart.yaml that Helm refuses to load.
type ValidationError string

func (e ValidationError) Error() string { return "validation: " + string(e) }

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, s)
}

func (m *Metadata) validate() error {
	if m == nil {
		return ValidationError("chart.metadata is required")
	}
	m.Name = sanitize(m.Name)
	m.Description = sanitize(m.Description)
	m.Home = sanitize(m.Home)
	m.Icon = sanitize(m.Icon)
	m.Condition = sanitize(m.Condition)
	m.Tags = sanitize(m.Tags)
	m.AppVersion = sanitize(m.AppVersion)
	m.KubeVersion = sanitize(m.KubeVersion)
	for i := range m.Sources {
		m.Sources[i] = sanitize(m.Sources[i])
	}
	for i := range m.Keywords {
		m.Keywords[i] = sanitize(m.Keywords[i])
	}
	switch {
	case m.APIVersion == "":
		return ValidationError("chart.metadata.apiVersion is required")
	case m.Name == "":
		return ValidationError("chart.metadata.name is required")
	case m.Name == "." || m.Name == "..":
		return ValidationError("chart.metadata.name " + quote(m.Name) + " is not allowed")
	case m.Name != path.Base(m.Name) || strings.Contains(m.Name, "\\"):
		return ValidationError("chart.metadata.name " + quote(m.Name) + " is invalid")
	case m.Version == "":
		return ValidationError("chart.metadata.version is required")
	}
	if _, err := semver.NewVersion(m.Version); err != nil {
		return ValidationError("chart.metadata.version " + quote(m.Version) + " is invalid")
	}
	if m.Type != "" && m.Type != "application" && m.Type != "library" {
		return ValidationError("chart.metadata.type must be application or library")
	}
	for _, mt := range m.Maintainers {
		if mt == nil {
			return ValidationError("maintainers must not contain empty or null nodes")
		}
		mt.Name, mt.Email, mt.URL = sanitize(mt.Name), sanitize(mt.Email), sanitize(mt.URL)
	}
	seen := map[string]bool{}
	for _, d := range m.Dependencies {
		if d == nil {
			return ValidationError("dependencies must not contain empty or null nodes")
		}
		d.Name, d.Version, d.Repository, d.Condition = sanitize(d.Name), sanitize(d.Version), sanitize(d.Repository), sanitize(d.Condition)
		for i := range d.Tags {
			d.Tags[i] = sanitize(d.Tags[i])
		}
		if d.Alias != "" && !aliasPattern.MatchString(d.Alias) {
			return ValidationError("dependency " + quote(d.Name) + " has disallowed characters in the alias")
		}
		key := d.Name
		if d.Alias != "" {
			key = d.Alias
		}
		if seen[key] {
			return ValidationError("more than one dependency with name or alias " + quote(key))
		}
		seen[key] = true
	}
	return nil
}

// compatibleRange tells whether version satisfies the semver constraint (Helm's IsCompatibleRange).
func compatibleRange(constraint, version string) bool {
	v, err := semver.NewVersion(version)
	if err != nil {
		return false
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return false
	}
	return c.Check(v)
}
