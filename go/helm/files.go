package helm

import (
	"encoding/base64"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Files is .Files: the chart's files that are not templates, values, Chart.yaml or subcharts.
type Files map[string][]byte

func newFiles(from []*File) Files {
	f := Files{}
	for _, x := range from {
		f[x.Name] = x.Data
	}
	return f
}

// GetBytes is a file's content, empty when absent.
func (f Files) GetBytes(name string) []byte {
	if v, ok := f[name]; ok {
		return v
	}
	return []byte{}
}

// Get is a file's content as a string, "" when absent.
func (f Files) Get(name string) string { return string(f.GetBytes(name)) }

// Glob are the files whose names match a glob ('*' and '?' stop at '/', '**' does not, [a-z],
// [!a], {a,b}); an invalid pattern matches everything, as in Helm.
func (f Files) Glob(pattern string) Files {
	re, err := compileGlob(pattern)
	if err != nil {
		re, _ = compileGlob("**")
	}
	out := Files{}
	for name, data := range f {
		if re.MatchString(name) {
			out[name] = data
		}
	}
	return out
}

// AsConfig is the files as a YAML map from base name to content (a ConfigMap's data).
func (f Files) AsConfig() string {
	if f == nil {
		return ""
	}
	m := map[string]string{}
	for k, v := range f {
		m[path.Base(k)] = string(v)
	}
	return toYAML(m)
}

// AsSecrets is the files as a YAML map from base name to base64 content (a Secret's data).
func (f Files) AsSecrets() string {
	if f == nil {
		return ""
	}
	m := map[string]string{}
	for k, v := range f {
		m[path.Base(k)] = base64.StdEncoding.EncodeToString(v)
	}
	return toYAML(m)
}

// Lines are a file's lines (one trailing newline dropped).
func (f Files) Lines(p string) []string {
	if f == nil || len(f[p]) == 0 {
		return []string{}
	}
	s := string(f[p])
	if s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return strings.Split(s, "\n")
}

// names are the file names, sorted.
func (f Files) names() []string {
	out := make([]string, 0, len(f))
	for k := range f {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type globError string

func (e globError) Error() string { return string(e) }

// compileGlob turns a glob with '/' as separator into an anchored regular expression.
func compileGlob(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	rs := []rune(pattern)
	depth := 0
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case '\\':
			i++
			if i >= len(rs) {
				return nil, globError("unexpected end of pattern after escape")
			}
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '*':
			if i+1 < len(rs) && rs[i+1] == '*' {
				for i+1 < len(rs) && rs[i+1] == '*' {
					i++
				}
				b.WriteString(".*")
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := i + 1
			neg := false
			if j < len(rs) && rs[j] == '!' {
				neg = true
				j++
			}
			var cls strings.Builder
			closed := false
			for ; j < len(rs); j++ {
				if rs[j] == ']' {
					closed = true
					break
				}
				if rs[j] == '-' && cls.Len() > 0 && j+1 < len(rs) && rs[j+1] != ']' {
					cls.WriteString("-")
					continue
				}
				if rs[j] == '\\' && j+1 < len(rs) {
					j++
				}
				cls.WriteString(regexp.QuoteMeta(string(rs[j])))
			}
			if !closed || cls.Len() == 0 {
				return nil, globError("invalid character class")
			}
			if neg {
				b.WriteString("[^/" + cls.String() + "]")
			} else {
				b.WriteString("[" + cls.String() + "]")
			}
			i = j
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth == 0 {
				return nil, globError("unexpected '}'")
			}
			depth--
			b.WriteString(")")
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	if depth != 0 {
		return nil, globError("unclosed '{'")
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
