package helm

import (
	"bufio"
	"bytes"
	"errors"
	"path"
	"strings"
)

// ignoreRules is a .helmignore: shell globs matched per path (a pattern without '/' against the
// base name, one with '/' against the whole path, a leading '/' anchors, a trailing '/' only
// matches directories, '!' negates as Helm's own rules do), no '**'.
type ignoreRules struct {
	patterns []ignorePattern
}

type ignorePattern struct {
	glob    string
	base    bool // match against the base name only
	negate  bool
	mustDir bool
}

func parseIgnore(data []byte) (*ignoreRules, error) {
	r := &ignoreRules{}
	s := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)))
	for s.Scan() {
		if err := r.add(s.Text()); err != nil {
			return r, err
		}
	}
	return r, s.Err()
}

func (r *ignoreRules) addDefaults() { _ = r.add("templates/.?*") }

func (r *ignoreRules) add(rule string) error {
	rule = strings.TrimSpace(rule)
	if rule == "" || strings.HasPrefix(rule, "#") {
		return nil
	}
	if strings.Contains(rule, "**") {
		return errors.New("double-star (**) syntax is not supported")
	}
	if _, err := path.Match(rule, "abc"); err != nil {
		return err
	}
	p := ignorePattern{}
	if strings.HasPrefix(rule, "!") {
		p.negate = true
		rule = rule[1:]
	}
	if strings.HasSuffix(rule, "/") {
		p.mustDir = true
		rule = strings.TrimSuffix(rule, "/")
	}
	switch {
	case strings.HasPrefix(rule, "/"):
		p.glob = strings.TrimPrefix(rule, "/")
	case strings.Contains(rule, "/"):
		p.glob = rule
	default:
		p.glob, p.base = rule, true
	}
	r.patterns = append(r.patterns, p)
	return nil
}

func (r *ignoreRules) ignored(name string, isDir bool) bool {
	if name == "" || name == "." || name == "./" {
		return false
	}
	for _, p := range r.patterns {
		subject := name
		if p.base {
			subject = path.Base(name)
		}
		ok, _ := path.Match(p.glob, subject)
		if p.negate {
			if p.mustDir && !isDir {
				return true
			}
			if !ok {
				return true
			}
			continue
		}
		if p.mustDir && !isDir {
			continue
		}
		if ok {
			return true
		}
	}
	return false
}

// ignoredPath tells whether a directory walk would skip the file: one of its parent directories
// is ignored (the walk does not descend), or the file itself is.
func (r *ignoreRules) ignoredPath(name string) bool {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		if r.ignored(strings.Join(parts[:i], "/"), true) {
			return true
		}
	}
	return r.ignored(name, false)
}
