// Package gotemplate renders Go templates as Service Fabrik's inter-operator did: Go's
// text/template with sprig and SF's functions, the template named `<id>/<action>`, default
// execution options (a missing map key prints "<no value>"), and inputs typed as the
// inter-operator held them.
package gotemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"text/template"
)

// funcs is built once: sprig builds a fresh map of ~200 entries on every TxtFuncMap call.
var funcs = FuncMap()

// Request is what the module receives (JSON).
type Request struct {
	// Name names the template in Go's messages; SF used "<instance-id>/<action>".
	Name     string `json:"name"`
	Template string `json:"template"`
	// Values: the keys service, plan, instance and binding are SF objects, decoded as the
	// inter-operator's json round trip did (every number float64); every other key is a live
	// object read from the cluster, decoded as unstructured does (integral numbers int64).
	Values json.RawMessage `json:"values"`
	// OutputLimit bounds the rendered bytes (0: no limit).
	OutputLimit int `json:"outputLimit"`
}

// RecordKeys are the values SF passed as its own custom resources.
var RecordKeys = map[string]bool{"service": true, "plan": true, "instance": true, "binding": true}

// ErrOutputLimit is returned when the output exceeds the request's limit.
var ErrOutputLimit = errors.New("output limit exceeded")

// Parse compiles the template under name with the function map, as SF did.
func Parse(name, content string) (*template.Template, error) {
	t, err := template.New(name).Funcs(funcs).Parse(content)
	if err != nil {
		return nil, fmt.Errorf("gotemplate renderer - can't create template for %s. %w", name, err)
	}
	return t, nil
}

// Execute runs a parsed template on values into w, with SF's error text.
func Execute(t *template.Template, values map[string]interface{}, w io.Writer) error {
	if err := t.Execute(w, values); err != nil {
		if errors.Is(err, ErrOutputLimit) {
			return err
		}
		return fmt.Errorf("gotemplate renderer - can't render template for %s. %w", t.Name(), err)
	}
	return nil
}

// DecodeValues decodes the values object, typing numbers per key (see Request.Values).
func DecodeValues(raw []byte) (map[string]interface{}, error) {
	values := map[string]interface{}{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return values, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("values: %v", err)
	}
	for key, v := range top {
		var decoded interface{}
		if RecordKeys[key] {
			if err := json.Unmarshal(v, &decoded); err != nil {
				return nil, fmt.Errorf("values.%s: %v", key, err)
			}
		} else {
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			if err := d.Decode(&decoded); err != nil {
				return nil, fmt.Errorf("values.%s: %v", key, err)
			}
			decoded = unstructuredNumbers(decoded)
		}
		values[key] = decoded
	}
	return values, nil
}

// unstructuredNumbers converts json.Number as Kubernetes' unstructured decoding does: int64
// when the text parses as one, float64 otherwise.
func unstructuredNumbers(v interface{}) interface{} {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case map[string]interface{}:
		for k, e := range x {
			x[k] = unstructuredNumbers(e)
		}
		return x
	case []interface{}:
		for i, e := range x {
			x[i] = unstructuredNumbers(e)
		}
		return x
	}
	return v
}

// limitedBuffer fails a write that would grow it past limit (0: unlimited).
type limitedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.limit > 0 && b.Len()+len(p) > b.limit {
		return 0, ErrOutputLimit
	}
	return b.Buffer.Write(p)
}

// Parsing costs about as much as executing; templates repeat and their names (which carry the
// instance id) do not, so parsed templates are kept by content under one placeholder name. A
// failure is reproduced under the request's name for Go's message (rendering is a pure function
// of template and values, but for sprig's random functions).
const placeholderName = "gotemplate"

var (
	parsedMu sync.Mutex
	parsed   = map[string]*template.Template{}
)

const parsedLimit = 256

func cachedParse(content string) (*template.Template, error) {
	parsedMu.Lock()
	defer parsedMu.Unlock()
	if t, ok := parsed[content]; ok {
		return t, nil
	}
	t, err := template.New(placeholderName).Funcs(funcs).Parse(content)
	if err != nil {
		return nil, err
	}
	if len(parsed) >= parsedLimit {
		parsed = map[string]*template.Template{}
	}
	parsed[content] = t
	return t, nil
}

// Render parses (or finds parsed) and executes the request's template.
func Render(req Request) ([]byte, error) {
	t, err := cachedParse(req.Template)
	if err != nil {
		_, err = Parse(req.Name, req.Template)
		return nil, err
	}
	values, err := DecodeValues(req.Values)
	if err != nil {
		return nil, err
	}
	out := &limitedBuffer{limit: req.OutputLimit}
	if err := t.Execute(out, values); err != nil {
		if errors.Is(err, ErrOutputLimit) {
			return nil, fmt.Errorf("gotemplate renderer - can't render template for %s. output exceeds %d bytes", req.Name, req.OutputLimit)
		}
		return nil, renderedFailure(req, err)
	}
	return out.Bytes(), nil
}

// renderedFailure runs the template again under the request's name (on freshly decoded values:
// sprig's set and unset changed the first ones) for the error text naming it.
func renderedFailure(req Request, first error) error {
	named, err := Parse(req.Name, req.Template)
	if err != nil {
		return err
	}
	values, err := DecodeValues(req.Values)
	if err != nil {
		return err
	}
	if err := Execute(named, values, &limitedBuffer{limit: req.OutputLimit}); err != nil {
		if errors.Is(err, ErrOutputLimit) {
			return fmt.Errorf("gotemplate renderer - can't render template for %s. output exceeds %d bytes", req.Name, req.OutputLimit)
		}
		return err
	}
	return fmt.Errorf("gotemplate renderer - can't render template for %s. %v", req.Name, first)
}

// RenderJSON is the module method: a JSON Request in, the rendered bytes out.
func RenderJSON(request []byte) ([]byte, error) {
	var req Request
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, fmt.Errorf("gotemplate: bad request: %v", err)
	}
	return Render(req)
}

// CompileJSON is the module method that only parses: {"name","template"} in, "" out.
func CompileJSON(request []byte) ([]byte, error) {
	var req Request
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, fmt.Errorf("gotemplate: bad request: %v", err)
	}
	if _, err := Parse(req.Name, req.Template); err != nil {
		return nil, err
	}
	return []byte{}, nil
}
