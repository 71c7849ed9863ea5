package helm

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// GlobalKey is the values key shared by a chart and all its subcharts.
const GlobalKey = "global"

// Values is a values tree. Templates can call its methods (.Values.AsMap, .Values.YAML, ...)
// as they can on Helm's.
type Values map[string]interface{}

// YAML encodes the values.
func (v Values) YAML() (string, error) {
	b, err := yaml.Marshal(v)
	return string(b), err
}

// AsMap is the values as a plain map (never nil).
func (v Values) AsMap() map[string]interface{} {
	if len(v) == 0 {
		return map[string]interface{}{}
	}
	return v
}

// Table is the sub-tree at a dotted path ("a.b").
func (v Values) Table(name string) (Values, error) {
	table := v
	var err error
	for _, n := range strings.Split(name, ".") {
		if table, err = tableLookup(table, n); err != nil {
			break
		}
	}
	return table, err
}

// ErrNoTable is a dotted path that does not name a table.
type ErrNoTable struct{ Key string }

func (e ErrNoTable) Error() string { return fmt.Sprintf("%q is not a table", e.Key) }

// ErrNoValue is a dotted path that does not name a value.
type ErrNoValue struct{ Key string }

func (e ErrNoValue) Error() string { return fmt.Sprintf("%q is not a value", e.Key) }

func tableLookup(v Values, key string) (Values, error) {
	v2, ok := v[key]
	if !ok {
		return v, ErrNoTable{key}
	}
	switch t := v2.(type) {
	case map[string]interface{}:
		return t, nil
	case Values:
		return t, nil
	}
	return Values{}, ErrNoTable{key}
}

// PathValue is the non-table value at a dotted path.
func (v Values) PathValue(p string) (interface{}, error) {
	if p == "" {
		return nil, errors.New("YAML path cannot be empty")
	}
	parts := strings.Split(p, ".")
	if len(parts) == 1 {
		if x, ok := v[parts[0]]; ok && !isTable(x) {
			return x, nil
		}
		return nil, ErrNoValue{parts[0]}
	}
	key := parts[len(parts)-1]
	t, err := v.Table(strings.Join(parts[:len(parts)-1], "."))
	if err != nil {
		return nil, ErrNoValue{key}
	}
	if x, ok := t[key]; ok && !isTable(x) {
		return x, nil
	}
	return nil, ErrNoValue{key}
}

// ReadValues parses a values document (YAML or JSON); an empty document is an empty map.
func ReadValues(data []byte) (Values, error) {
	var vals Values
	err := yaml.Unmarshal(data, &vals)
	if len(vals) == 0 {
		vals = Values{}
	}
	return vals, err
}

func isTable(v interface{}) bool {
	_, ok := v.(map[string]interface{})
	return ok
}

func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		if t == nil {
			return t
		}
		m := make(map[string]interface{}, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case Values:
		if t == nil {
			return t
		}
		m := make(Values, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []interface{}:
		if t == nil {
			return t
		}
		s := make([]interface{}, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	}
	return v
}

func copyValues(vals map[string]interface{}) map[string]interface{} {
	c, _ := deepCopy(vals).(map[string]interface{})
	if c == nil {
		c = map[string]interface{}{}
	}
	return c
}

// Warnings Helm logs while coalescing go nowhere: `helm template` prints them on stderr only.
func warnf(string, ...interface{}) {}

func joinKey(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// CoalesceValues merges the chart's default values (and its subcharts', scoped under their names,
// with globals copied down) under vals: a value given wins, a null given deletes the key.
func CoalesceValues(c *Chart, vals map[string]interface{}) (Values, error) {
	return coalesce(c, copyValues(vals), "", false)
}

// MergeValues is CoalesceValues that keeps nulls (Helm uses it while processing dependencies).
func MergeValues(c *Chart, vals map[string]interface{}) (Values, error) {
	return coalesce(c, copyValues(vals), "", true)
}

func coalesce(c *Chart, dest map[string]interface{}, prefix string, merge bool) (map[string]interface{}, error) {
	coalesceChartValues(c, dest, prefix, merge)
	return coalesceDeps(c, dest, prefix, merge)
}

func coalesceDeps(c *Chart, dest map[string]interface{}, prefix string, merge bool) (map[string]interface{}, error) {
	for _, sub := range c.Dependencies() {
		if v, ok := dest[sub.Name()]; !ok {
			dest[sub.Name()] = map[string]interface{}{}
		} else if !isTable(v) {
			return dest, fmt.Errorf("type mismatch on %s: %t", sub.Name(), v)
		}
		sv := dest[sub.Name()].(map[string]interface{})
		subPrefix := joinKey(prefix, c.Metadata.Name)
		coalesceGlobals(sv, dest, subPrefix)
		var err error
		if dest[sub.Name()], err = coalesce(sub, sv, subPrefix, merge); err != nil {
			return dest, err
		}
	}
	return dest, nil
}

// coalesceGlobals copies the parent's globals into a subchart's values: the subchart's own
// globals win, tables are merged.
func coalesceGlobals(dest, src map[string]interface{}, prefix string) {
	var dg, sg map[string]interface{}
	if g, ok := dest[GlobalKey]; !ok {
		dg = map[string]interface{}{}
	} else if dg, ok = g.(map[string]interface{}); !ok {
		warnf("warning: skipping globals because destination %s is not a table.", GlobalKey)
		return
	}
	if g, ok := src[GlobalKey]; !ok {
		sg = map[string]interface{}{}
	} else if sg, ok = g.(map[string]interface{}); !ok {
		warnf("warning: skipping globals because source %s is not a table.", GlobalKey)
		return
	}
	for key, val := range sg {
		if isTable(val) {
			vv := shallowCopy(val.(map[string]interface{}))
			if dv, ok := dg[key]; !ok {
				dg[key] = vv
			} else if dvm, ok := dv.(map[string]interface{}); !ok {
				warnf("Conflict: cannot merge map onto non-map for %q. Skipping.", key)
			} else {
				coalesceTables(vv, dvm, joinKey(prefix, key), true)
				dg[key] = vv
			}
		} else if dv, ok := dg[key]; ok && isTable(dv) {
			warnf("key %s is table. Skipping", key)
		} else {
			dg[key] = val
		}
	}
	dest[GlobalKey] = dg
}

func shallowCopy(m map[string]interface{}) map[string]interface{} {
	c := make(map[string]interface{}, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// coalesceChartValues fills v with the chart's defaults where v has no value.
func coalesceChartValues(c *Chart, v map[string]interface{}, prefix string, merge bool) {
	subPrefix := joinKey(prefix, c.Metadata.Name)
	defaults := copyValues(c.Values)
	for key, val := range defaults {
		if given, ok := v[key]; ok {
			if given == nil && !merge {
				delete(v, key)
			} else if dest, ok := given.(map[string]interface{}); ok {
				src, ok := val.(map[string]interface{})
				if !ok {
					if val != nil {
						warnf("warning: skipped value for %s.%s: Not a table.", subPrefix, key)
					}
				} else {
					m := merge
					for _, sub := range c.Dependencies() {
						if sub.Name() == key {
							m = true
						}
					}
					coalesceTables(dest, src, joinKey(subPrefix, key), m)
				}
			}
		} else {
			v[key] = val
		}
	}
}

// CoalesceTables merges src under dst (dst wins; a null in dst deletes the key).
func CoalesceTables(dst, src map[string]interface{}) map[string]interface{} {
	return coalesceTables(dst, src, "", false)
}

// MergeTables merges src under dst keeping nulls.
func MergeTables(dst, src map[string]interface{}) map[string]interface{} {
	return coalesceTables(dst, src, "", true)
}

func coalesceTables(dst, src map[string]interface{}, prefix string, merge bool) map[string]interface{} {
	if src == nil {
		return dst
	}
	if dst == nil {
		return src
	}
	srcNonNil := map[string]bool{}
	for k, v := range src {
		if v != nil {
			srcNonNil[k] = true
		}
	}
	// A null in dst is carried into src so that it also nulls the key at deeper levels.
	for k, v := range dst {
		if v == nil {
			src[k] = nil
		}
	}
	for k, v := range src {
		full := joinKey(prefix, k)
		dv, ok := dst[k]
		switch {
		case ok && !merge && dv == nil && srcNonNil[k]:
			delete(dst, k)
		case !ok:
			dst[k] = v
		case isTable(v):
			if isTable(dv) {
				coalesceTables(dv.(map[string]interface{}), v.(map[string]interface{}), full, merge)
			} else {
				warnf("warning: cannot overwrite table with non table for %s (%v)", full, v)
			}
		case isTable(dv) && v != nil:
			warnf("warning: destination for %s is a table. Ignoring non-table value (%v)", full, v)
		}
	}
	return dst
}

// mergeMaps merges -f value files as Helm's CLI does: b wins, tables merged recursively.
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if bv, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeMaps(bv, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
