package gotemplate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// FuncMap is the function map Service Fabrik's inter-operator gave its gotemplate renderer:
// sprig's TxtFuncMap with nine functions added or replaced. A new map on every call (callers may
// add to it; the helm package builds on it).
func FuncMap() template.FuncMap {
	m := sprig.TxtFuncMap()
	for name, fn := range serviceFabrikFuncs {
		m[name] = fn
	}
	return m
}

var serviceFabrikFuncs = template.FuncMap{
	"b64enc":        b64enc,
	"b64dec":        b64dec,
	"unmarshalJSON": unmarshalJSON,
	"marshalJSON":   marshalJSON,
	"toToml":        toTOML,
	"toYaml":        toYAML,
	"fromYaml":      fromYAML,
	"toJson":        toJSON,
	"fromJson":      fromJSON,
}

// b64enc: standard base64 with padding (sprig's own b64enc is the same; SF replaced it anyway).
func b64enc(s string) string {
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// b64dec fails the template on invalid input (sprig's b64dec returns the error text instead).
// What decoded before the bad byte is returned with the error, as the original did.
func b64dec(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

// unmarshalJSON parses a JSON object; anything else fails the template.
func unmarshalJSON(s string) (map[string]interface{}, error) {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("failed to unmarshal %s. %v", s, err)
	}
	return m, nil
}

// marshalJSON takes only a map (a template passing anything else fails on the argument type).
func marshalJSON(m map[string]interface{}) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// toYAML is Helm's: sigs.k8s.io/yaml (JSON first, so map keys sorted), the final newline
// trimmed, "" on error.
func toYAML(v interface{}) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// fromYAML reads a YAML mapping; on error the map holds the message under "Error".
func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// toTOML returns the encoder's error text instead of failing.
func toTOML(v interface{}) string {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(v); err != nil {
		return err.Error()
	}
	return b.String()
}

// toJSON returns "" on error (unlike sprig's mustToJson).
func toJSON(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// fromJSON reads a JSON object; on error the map holds the message under "Error".
func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}
