package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

var aliasPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func quote(s string) string { return strconv.Quote(s) }

// Limits Helm applies to a chart archive.
const (
	maxChartSize = 100 * 1024 * 1024
	maxFileSize  = 5 * 1024 * 1024
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// LoadDirectoryFiles loads a chart from the files of its directory (names relative to the chart's
// directory), applying its .helmignore and Helm's default rule (hidden files under templates/ are
// ignored), as Helm's directory loader does.
func LoadDirectoryFiles(files []*File) (*Chart, error) {
	rules := &ignoreRules{}
	for _, f := range files {
		if f.Name == ".helmignore" {
			r, err := parseIgnore(f.Data)
			if err != nil {
				return nil, err
			}
			rules = r
		}
	}
	rules.addDefaults()
	kept := []*File{}
	for _, f := range files {
		if rules.ignoredPath(f.Name) {
			continue
		}
		if len(f.Data) > maxFileSize {
			return nil, fmt.Errorf("chart file %q is larger than the maximum file size %d", path.Base(f.Name), maxFileSize)
		}
		kept = append(kept, &File{Name: f.Name, Data: bytes.TrimPrefix(f.Data, utf8BOM)})
	}
	// A directory walk visits names in lexical order.
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].Name < kept[j].Name })
	return LoadFiles(kept)
}

// ArchiveFiles unpacks a chart archive (.tgz) the way Helm does: the first path component (the
// chart's directory) is dropped, and paths escaping it are refused.
func ArchiveFiles(data []byte) ([]*File, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	files := []*File{}
	remaining := int64(maxChartSize)
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if hd.FileInfo().IsDir() || hd.Typeflag == tar.TypeXGlobalHeader || hd.Typeflag == tar.TypeXHeader {
			continue
		}
		delim := "/"
		if strings.ContainsRune(hd.Name, '\\') {
			delim = "\\"
		}
		parts := strings.Split(hd.Name, delim)
		n := strings.ReplaceAll(strings.Join(parts[1:], delim), delim, "/")
		if path.IsAbs(n) {
			return nil, errors.New("chart illegally contains absolute paths")
		}
		n = path.Clean(n)
		if n == "." {
			return nil, fmt.Errorf("chart illegally contains content outside the base directory: %q", hd.Name)
		}
		if strings.HasPrefix(n, "..") {
			return nil, errors.New("chart illegally references parent directory")
		}
		if drivePath.MatchString(n) {
			return nil, errors.New("chart contains illegally named files")
		}
		if parts[0] == "Chart.yaml" {
			return nil, errors.New("chart yaml not in base directory")
		}
		if hd.Size > remaining {
			return nil, fmt.Errorf("decompressed chart is larger than the maximum file size %d", maxChartSize)
		}
		if hd.Size > maxFileSize {
			return nil, fmt.Errorf("decompressed chart file %q is larger than the maximum file size %d", hd.Name, maxFileSize)
		}
		var b bytes.Buffer
		w, err := io.Copy(&b, io.LimitReader(tr, remaining))
		if err != nil {
			return nil, err
		}
		remaining -= w
		if w < hd.Size || remaining <= 0 {
			return nil, fmt.Errorf("decompressed chart is larger than the maximum file size %d", maxChartSize)
		}
		files = append(files, &File{Name: n, Data: bytes.TrimPrefix(b.Bytes(), utf8BOM)})
	}
	if len(files) == 0 {
		return nil, errors.New("no files in chart archive")
	}
	return files, nil
}

var drivePath = regexp.MustCompile(`^[a-zA-Z]:/`)

// LoadArchive loads a chart from a .tgz.
func LoadArchive(data []byte) (*Chart, error) {
	files, err := ArchiveFiles(data)
	if err != nil {
		return nil, err
	}
	return LoadFiles(files)
}

// IsArchive tells whether data is gzip, as Helm checks before loading a file as a chart archive.
func IsArchive(data []byte) bool {
	return bytes.HasPrefix(data, []byte("\x1F\x8B\x08"))
}

// LoadFiles builds a chart from its files (names relative to the chart root), as Helm's loader:
// Chart.yaml, values.yaml, values.schema.json, templates/, charts/ (directories and .tgz archives,
// names starting with '_' or '.' skipped), everything else is a file templates can read.
func LoadFiles(files []*File) (*Chart, error) {
	c := &Chart{}
	subcharts := map[string][]*File{}
	order := []string{}
	for _, f := range files {
		if f.Name == "Chart.yaml" {
			if c.Metadata == nil {
				c.Metadata = &Metadata{}
			}
			if err := yaml.Unmarshal(f.Data, c.Metadata); err != nil {
				return c, fmt.Errorf("cannot load Chart.yaml: %w", err)
			}
			if c.Metadata.APIVersion == "" {
				c.Metadata.APIVersion = "v1"
			}
		}
	}
	for _, f := range files {
		switch {
		case f.Name == "Chart.yaml", f.Name == "Chart.lock":
		case f.Name == "values.yaml":
			c.Values = map[string]interface{}{}
			if err := yaml.Unmarshal(f.Data, &c.Values); err != nil {
				return c, fmt.Errorf("cannot load values.yaml: %w", err)
			}
			if c.Values == nil {
				c.Values = map[string]interface{}{}
			}
		case f.Name == "values.schema.json":
			c.Schema = f.Data
		case f.Name == "requirements.yaml":
			if c.Metadata == nil {
				c.Metadata = &Metadata{}
			}
			if err := yaml.Unmarshal(f.Data, c.Metadata); err != nil {
				return c, fmt.Errorf("cannot load requirements.yaml: %w", err)
			}
			if c.Metadata.APIVersion == "v1" {
				c.Files = append(c.Files, &File{Name: f.Name, Data: f.Data})
			}
		case f.Name == "requirements.lock":
			if c.Metadata != nil && c.Metadata.APIVersion == "v1" {
				c.Files = append(c.Files, &File{Name: f.Name, Data: f.Data})
			}
		case strings.HasPrefix(f.Name, "templates/"):
			c.Templates = append(c.Templates, &File{Name: f.Name, Data: f.Data})
		case strings.HasPrefix(f.Name, "charts/"):
			if path.Ext(f.Name) == ".prov" {
				c.Files = append(c.Files, &File{Name: f.Name, Data: f.Data})
				continue
			}
			rest := strings.TrimPrefix(f.Name, "charts/")
			name := strings.SplitN(rest, "/", 2)[0]
			if _, ok := subcharts[name]; !ok {
				order = append(order, name)
			}
			subcharts[name] = append(subcharts[name], &File{Name: rest, Data: f.Data})
		default:
			c.Files = append(c.Files, &File{Name: f.Name, Data: f.Data})
		}
	}
	if c.Metadata == nil {
		return c, errors.New("Chart.yaml file is missing")
	}
	if err := c.Metadata.validate(); err != nil {
		return c, err
	}
	for _, n := range order {
		fs := subcharts[n]
		if strings.IndexAny(n, "_.") == 0 {
			continue
		}
		var sc *Chart
		var err error
		if path.Ext(n) == ".tgz" {
			if fs[0].Name != n {
				return c, fmt.Errorf("error unpacking subchart tar in %s: expected %s, got %s", c.Name(), n, fs[0].Name)
			}
			sc, err = LoadArchive(fs[0].Data)
		} else {
			inner := make([]*File, 0, len(fs))
			for _, f := range fs {
				parts := strings.SplitN(f.Name, "/", 2)
				if len(parts) < 2 {
					continue
				}
				inner = append(inner, &File{Name: parts[1], Data: f.Data})
			}
			sc, err = LoadFiles(inner)
		}
		if err != nil {
			return c, fmt.Errorf("error unpacking subchart %s in %s: %w", n, c.Name(), err)
		}
		c.AddDependency(sc)
	}
	return c, nil
}
