package helm

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// renderable is one template with the values it is executed with.
type renderable struct {
	text     string
	vals     Values
	basePath string
}

// required and fail wrap their message so that the error a template execution returns can be cut
// down to it, as Helm prints it.
const (
	errStart      = "HELM_ERR_START"
	errEnd        = "HELM_ERR_END"
	maxIncludeRec = 1000
)

var wrappedMessage = regexp.MustCompile(errStart + `((?s).*)` + errEnd)

func wrapMessage(s string) string { return errStart + s + errEnd }

// chartInfo is .Chart: Chart.yaml's fields plus IsRoot.
type chartInfo struct {
	Metadata
	IsRoot bool
}

func includeFunc(t *template.Template, depth map[string]int) func(string, interface{}) (string, error) {
	return func(name string, data interface{}) (string, error) {
		var b strings.Builder
		if n, ok := depth[name]; ok {
			if n > maxIncludeRec {
				return "", fmt.Errorf("rendering template has a nested reference name: %s: unable to execute template", name)
			}
			depth[name]++
		} else {
			depth[name] = 1
		}
		err := t.ExecuteTemplate(&b, name, data)
		depth[name]--
		return b.String(), err
	}
}

func tplFunc(parent *template.Template, depth map[string]int) func(string, interface{}) (string, error) {
	return func(text string, vals interface{}) (string, error) {
		t, err := parent.Clone()
		if err != nil {
			return "", fmt.Errorf("cannot clone template: %w", err)
		}
		t.Option("missingkey=zero")
		// include and tpl inside the text see the clone, so its own defines can be included.
		t.Funcs(template.FuncMap{"include": includeFunc(t, depth), "tpl": tplFunc(t, depth)})
		t, err = t.New(parent.Name()).Parse(text)
		if err != nil {
			return "", fmt.Errorf("cannot parse template %q: %w", text, err)
		}
		var b strings.Builder
		if err := t.Execute(&b, vals); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %w", text, err)
		}
		return strings.ReplaceAll(b.String(), "<no value>", ""), nil
	}
}

func bindFuncs(t *template.Template) {
	f := baseFuncs()
	depth := map[string]int{}
	f["include"] = includeFunc(t, depth)
	f["tpl"] = tplFunc(t, depth)
	f["required"] = func(msg string, val interface{}) (interface{}, error) {
		if val == nil {
			return val, errors.New(wrapMessage(msg))
		}
		if s, ok := val.(string); ok && s == "" {
			return val, errors.New(wrapMessage(msg))
		}
		return val, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(wrapMessage(msg)) }
	t.Funcs(f)
}

// renderTemplates executes every template of the chart and its subcharts (partials, names
// starting with '_', are parsed but not executed). Keys are the templates' full paths
// (chart/templates/x.yaml, chart/charts/sub/templates/y.yaml).
func renderTemplates(c *Chart, top Values) (out map[string]string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rendering template failed: %v", r)
		}
	}()
	tpls := map[string]renderable{}
	collectTemplates(c, tpls, top)

	t := template.New("gotpl")
	t.Option("missingkey=zero")
	bindFuncs(t)

	keys := parseOrder(tpls)
	for _, name := range keys {
		if _, err := t.New(name).Parse(tpls[name].text); err != nil {
			return map[string]string{}, parseError(name, err)
		}
	}
	out = make(map[string]string, len(keys))
	for _, name := range keys {
		if strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		r := tpls[name]
		r.vals["Template"] = Values{"Name": name, "BasePath": r.basePath}
		var b strings.Builder
		if err := t.ExecuteTemplate(&b, name, r.vals); err != nil {
			return map[string]string{}, execError(name, err)
		}
		// missingkey=zero still prints "<no value>" for a missing map key; Helm removes it.
		out[name] = strings.ReplaceAll(b.String(), "<no value>", "")
	}
	return out, nil
}

// parseOrder: deeper paths first, then reverse lexical order, so a parent chart's defines (parsed
// last) win over its subcharts'.
func parseOrder(tpls map[string]renderable) []string {
	keys := make([]string, 0, len(tpls))
	for k := range tpls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		ca, cb := strings.Count(a, "/"), strings.Count(b, "/")
		if ca == cb {
			return a > b
		}
		return ca > cb
	})
	return keys
}

func collectTemplates(c *Chart, tpls map[string]renderable, parent Values) map[string]interface{} {
	subcharts := map[string]interface{}{}
	next := Values{
		"Chart":        chartInfo{Metadata: *c.Metadata, IsRoot: c.IsRoot()},
		"Files":        newFiles(c.Files),
		"Release":      parent["Release"],
		"Capabilities": parent["Capabilities"],
		"Values":       Values{},
		"Subcharts":    subcharts,
	}
	if c.IsRoot() {
		next["Values"] = parent["Values"]
	} else if vs, err := parent.Table("Values." + c.Name()); err == nil {
		next["Values"] = vs
	}
	for _, sc := range c.Dependencies() {
		subcharts[sc.Name()] = collectTemplates(sc, tpls, next)
	}
	full := c.FullPath()
	library := strings.EqualFold(c.Metadata.Type, "library")
	for _, f := range c.Templates {
		if library && !strings.HasPrefix(path.Base(f.Name), "_") {
			continue
		}
		tpls[path.Join(full, f.Name)] = renderable{
			text:     string(f.Data),
			vals:     next,
			basePath: path.Join(full, "templates"),
		}
	}
	return next
}

// parseError: "template: NAME:LINE: MSG" becomes "parse error at (NAME:LINE): MSG".
func parseError(name string, err error) error {
	tokens := strings.Split(err.Error(), ": ")
	if len(tokens) == 1 {
		return fmt.Errorf("parse error in (%s): %s", name, err)
	}
	return fmt.Errorf("parse error at (%s): %s", tokens[1], tokens[len(tokens)-1])
}

// execError: an error of required or fail becomes "execution error at (NAME:LINE:COL): MSG";
// other execution errors are Go's own text.
func execError(name string, err error) error {
	if _, ok := err.(template.ExecError); !ok {
		return err
	}
	tokens := strings.SplitN(err.Error(), ": ", 3)
	if len(tokens) != 3 {
		return fmt.Errorf("execution error in (%s): %s", name, err)
	}
	if m := wrappedMessage.FindStringSubmatch(tokens[2]); len(m) >= 2 {
		return fmt.Errorf("execution error at (%s): %s", tokens[1], m[1])
	}
	return err
}
