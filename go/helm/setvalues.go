package helm

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// UserValues merges value files (-f, each a YAML document, later files win) and --set
// expressions (applied in order on top), as Helm's CLI does.
func UserValues(files []string, sets []string) (map[string]interface{}, error) {
	base := map[string]interface{}{}
	for i, f := range files {
		cur := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(f), &cur); err != nil {
			return nil, fmt.Errorf("failed to parse values file %d: %w", i+1, err)
		}
		base = mergeMaps(base, cur)
	}
	for _, s := range sets {
		if err := ParseSet(s, base); err != nil {
			return nil, fmt.Errorf("failed parsing --set data: %w", err)
		}
	}
	return base, nil
}

// ParseSet applies one --set expression ("a.b=1,c[0].d={x,y}") to dest. Values are typed as
// Helm types them: true/false, null, base-10 integers without a leading zero (int64), else
// strings; '\' escapes the next character.
func ParseSet(s string, dest map[string]interface{}) error {
	p := &setParser{rs: []rune(s)}
	for {
		err := p.key(dest, 0)
		if err == nil {
			continue
		}
		if err == io.EOF {
			return nil
		}
		return err
	}
}

type setParser struct {
	rs  []rune
	pos int
}

func (p *setParser) read() (rune, bool) {
	if p.pos >= len(p.rs) {
		return 0, false
	}
	r := p.rs[p.pos]
	p.pos++
	return r, true
}

// until reads up to (and consuming) one of stop; io.EOF when the input ends first.
func (p *setParser) until(stop string) ([]rune, rune, error) {
	v := []rune{}
	for {
		r, ok := p.read()
		if !ok {
			return v, 0, io.EOF
		}
		if strings.ContainsRune(stop, r) {
			return v, r, nil
		}
		if r == '\\' {
			n, ok := p.read()
			if !ok {
				return v, 0, io.EOF
			}
			v = append(v, n)
			continue
		}
		v = append(v, r)
	}
}

const maxSetIndex = 65536
const maxSetNesting = 30

func (p *setParser) key(data map[string]interface{}, level int) error {
	k, last, err := p.until("=[,.")
	key := string(k)
	switch {
	case err != nil:
		if len(k) == 0 {
			return err
		}
		return fmt.Errorf("key %q has no value", key)
	case last == '[':
		i, err := p.index()
		if err != nil {
			return fmt.Errorf("error parsing index: %w", err)
		}
		list := []interface{}{}
		if existing, ok := data[key]; ok {
			l, ok := existing.([]interface{})
			if !ok {
				return fmt.Errorf("unable to parse key: interface conversion: interface {} is %T, not []interface {}", existing)
			}
			list = l
		}
		list, err = p.listItem(list, i, level)
		setKey(data, key, list)
		return err
	case last == '=':
		vl, err := p.valList()
		switch err {
		case nil:
			setKey(data, key, vl)
			return nil
		case io.EOF:
			setKey(data, key, "")
			return err
		case errNotList:
			setKey(data, key, typedValue(p.val()))
			return nil
		default:
			return err
		}
	case last == ',':
		setKey(data, key, "")
		return fmt.Errorf("key %q has no value (cannot end with ,)", key)
	default: // '.'
		level++
		if level > maxSetNesting {
			return fmt.Errorf("value name nested level is greater than maximum supported nested level of %d", maxSetNesting)
		}
		inner := map[string]interface{}{}
		if existing, ok := data[key]; ok {
			m, ok := existing.(map[string]interface{})
			if !ok {
				return fmt.Errorf("unable to parse key: interface conversion: interface {} is %T, not map[string]interface {}", existing)
			}
			inner = m
		}
		err := p.key(inner, level)
		if err == nil && len(inner) == 0 {
			return fmt.Errorf("key map %q has no value", key)
		}
		if len(inner) != 0 {
			setKey(data, key, inner)
		}
		return err
	}
}

func setKey(data map[string]interface{}, key string, v interface{}) {
	if key != "" {
		data[key] = v
	}
}

func setIndex(list []interface{}, i int, v interface{}) ([]interface{}, error) {
	if i < 0 {
		return list, fmt.Errorf("negative %d index not allowed", i)
	}
	if i > maxSetIndex {
		return list, fmt.Errorf("index of %d is greater than maximum supported index of %d", i, maxSetIndex)
	}
	if len(list) <= i {
		n := make([]interface{}, i+1)
		copy(n, list)
		list = n
	}
	list[i] = v
	return list, nil
}

func (p *setParser) index() (int, error) {
	v, _, err := p.until("]")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(v))
}

func (p *setParser) listItem(list []interface{}, i, level int) ([]interface{}, error) {
	if i < 0 {
		return list, fmt.Errorf("negative %d index not allowed", i)
	}
	k, last, err := p.until("[.=")
	switch {
	case len(k) > 0:
		return list, fmt.Errorf("unexpected data at end of array index: %q", string(k))
	case err != nil:
		return list, err
	case last == '=':
		vl, err := p.valList()
		switch err {
		case nil:
			return setIndex(list, i, vl)
		case io.EOF:
			return setIndex(list, i, "")
		case errNotList:
			return setIndex(list, i, typedValue(p.val()))
		default:
			return list, err
		}
	case last == '[':
		next, err := p.index()
		if err != nil {
			return list, fmt.Errorf("error parsing index: %w", err)
		}
		var cur []interface{}
		if len(list) > i && list[i] != nil {
			l, ok := list[i].([]interface{})
			if !ok {
				return list, fmt.Errorf("unable to parse key: interface conversion: interface {} is %T, not []interface {}", list[i])
			}
			cur = l
		}
		inner, err := p.listItem(cur, next, level)
		if err != nil {
			return list, err
		}
		return setIndex(list, i, inner)
	default: // '.'
		inner := map[string]interface{}{}
		if len(list) > i {
			if m, ok := list[i].(map[string]interface{}); ok {
				inner = m
			}
		}
		if err := p.key(inner, level); err != nil {
			return list, err
		}
		return setIndex(list, i, inner)
	}
}

var errNotList = errors.New("not a list")

func (p *setParser) val() []rune {
	v, _, _ := p.until(",")
	return v
}

func (p *setParser) valList() ([]interface{}, error) {
	r, ok := p.read()
	if !ok {
		return []interface{}{}, io.EOF
	}
	if r != '{' {
		p.pos--
		return []interface{}{}, errNotList
	}
	list := []interface{}{}
	for {
		rs, last, err := p.until(",}")
		if err != nil {
			return list, errors.New("list must terminate with '}'")
		}
		list = append(list, typedValue(rs))
		if last == '}' {
			if r, ok := p.read(); ok && r != ',' {
				p.pos--
			}
			return list, nil
		}
	}
}

func typedValue(rs []rune) interface{} {
	v := string(rs)
	switch {
	case strings.EqualFold(v, "true"):
		return true
	case strings.EqualFold(v, "false"):
		return false
	case strings.EqualFold(v, "null"):
		return nil
	case v == "0":
		return int64(0)
	}
	if len(v) != 0 && v[0] != '0' {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return v
}
