package helm

import (
	"fmt"
	"strings"
)

// CheckDependencies is `helm template`'s check that every dependency in Chart.yaml is present
// under charts/.
func CheckDependencies(c *Chart) error {
	var missing []string
outer:
	for _, d := range c.Metadata.Dependencies {
		for _, sc := range c.Dependencies() {
			if sc.Name() == d.Name {
				continue outer
			}
		}
		missing = append(missing, d.Name)
	}
	if len(missing) > 0 {
		return fmt.Errorf("An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: %s", strings.Join(missing, ", "))
	}
	return nil
}

// ProcessDependencies applies aliases, removes subcharts disabled by their condition or tags, and
// imports values, as Helm does before rendering an install (keeping nulls while merging).
func ProcessDependencies(c *Chart, vals map[string]interface{}) error {
	if err := processEnabled(c, vals, ""); err != nil {
		return err
	}
	return processImports(c)
}

func aliasedDependency(charts []*Chart, d *Dependency) *Chart {
	for _, c := range charts {
		if c == nil || c.Name() != d.Name || !compatibleRange(d.Version, c.Metadata.Version) {
			continue
		}
		out := *c
		md := *c.Metadata
		out.Metadata = &md
		if d.Alias != "" {
			md.Name = d.Alias
		}
		return &out
	}
	return nil
}

func processEnabled(c *Chart, vals map[string]interface{}, p string) error {
	if c.Metadata.Dependencies == nil {
		return nil
	}
	var deps []*Chart
	// Subcharts not listed in Chart.yaml are always rendered.
outer:
	for _, sc := range c.Dependencies() {
		for _, d := range c.Metadata.Dependencies {
			if sc.Name() == d.Name && compatibleRange(d.Version, sc.Metadata.Version) {
				continue outer
			}
		}
		deps = append(deps, sc)
	}
	for _, d := range c.Metadata.Dependencies {
		if d == nil {
			continue
		}
		if sc := aliasedDependency(c.Dependencies(), d); sc != nil {
			deps = append(deps, sc)
		}
		if d.Alias != "" {
			d.Name = d.Alias
		}
	}
	c.SetDependencies(deps...)
	for _, d := range c.Metadata.Dependencies {
		d.Enabled = true
	}
	cvals, err := CoalesceValues(c, vals)
	if err != nil {
		return err
	}
	processTags(c.Metadata.Dependencies, cvals)
	processConditions(c.Metadata.Dependencies, cvals, p)
	disabled := map[string]bool{}
	for _, d := range c.Metadata.Dependencies {
		if !d.Enabled {
			disabled[d.Name] = true
		}
	}
	kept := []*Chart{}
	for _, sc := range c.Dependencies() {
		if !disabled[sc.Metadata.Name] {
			kept = append(kept, sc)
		}
	}
	keptMeta := []*Dependency{}
	for _, d := range c.Metadata.Dependencies {
		if !disabled[d.Name] {
			keptMeta = append(keptMeta, d)
		}
	}
	for _, sc := range kept {
		if err := processEnabled(sc, cvals, p+sc.Metadata.Name+"."); err != nil {
			return err
		}
	}
	c.Metadata.Dependencies = keptMeta
	c.SetDependencies(kept...)
	return nil
}

// processConditions: the first condition path that resolves to a bool decides.
func processConditions(deps []*Dependency, cvals Values, p string) {
	for _, d := range deps {
		for _, cond := range strings.Split(strings.TrimSpace(d.Condition), ",") {
			if cond == "" {
				continue
			}
			v, err := cvals.PathValue(p + cond)
			if err == nil {
				if b, ok := v.(bool); ok {
					d.Enabled = b
					break
				}
			}
		}
	}
}

// processTags: a dependency with any tag true is enabled; with only false tags, disabled.
func processTags(deps []*Dependency, cvals Values) {
	tags, err := cvals.Table("tags")
	if err != nil {
		return
	}
	for _, d := range deps {
		hasTrue, hasFalse := false, false
		for _, t := range d.Tags {
			if b, ok := tags[t].(bool); ok {
				if b {
					hasTrue = true
				} else {
					hasFalse = true
				}
			}
		}
		if !hasTrue && hasFalse {
			d.Enabled = false
		} else {
			d.Enabled = true
		}
	}
}

func pathToMap(p string, data map[string]interface{}) map[string]interface{} {
	if p == "." {
		return data
	}
	parts := strings.Split(p, ".")
	cur := data
	for i := len(parts) - 1; i >= 0; i-- {
		cur = map[string]interface{}{parts[i]: cur}
	}
	return cur
}

func processImports(c *Chart) error {
	for _, sc := range c.Dependencies() {
		if err := processImports(sc); err != nil {
			return err
		}
	}
	if c.Metadata.Dependencies == nil {
		return nil
	}
	cvals, err := MergeValues(c, nil)
	if err != nil {
		return err
	}
	b := map[string]interface{}{}
	for _, d := range c.Metadata.Dependencies {
		var out []interface{}
		for _, iv := range d.ImportValues {
			switch t := iv.(type) {
			case map[string]interface{}:
				child, parent := fmt.Sprintf("%v", t["child"]), fmt.Sprintf("%v", t["parent"])
				out = append(out, map[string]string{"child": child, "parent": parent})
				vv, err := cvals.Table(d.Name + "." + child)
				if err != nil {
					continue
				}
				b = MergeTables(b, pathToMap(parent, vv.AsMap()))
			case string:
				child := "exports." + t
				out = append(out, map[string]string{"child": child, "parent": "."})
				vm, err := cvals.Table(d.Name + "." + child)
				if err != nil {
					continue
				}
				b = MergeTables(b, vm.AsMap())
			}
		}
		d.ImportValues = out
	}
	c.Values = MergeTables(copyValues(cvals), b)
	return nil
}
