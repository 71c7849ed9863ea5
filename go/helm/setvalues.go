package helm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// ValueSources are the ways `helm template` takes values: -f files, then --set-json, --set,
// --set-string, --set-file and --set-literal, applied in that order whatever the order of the
// flags (Helm's values.Options.MergeValues).
type ValueSources struct {
	// Files are the documents of the -f files, in order (later files win).
	Files   []string
	JSON    []string
	Set     []string
	String  []string
	File    []string
	Literal []string
	// FileData are the contents of the files --set-file names, by the path as written; a path
	// missing here is a file that cannot be read (the caller reads them: FilePaths says which).
	FileData map[string]string
	// FileNames name the -f files in errors ("values file N" when missing).
	FileNames []string
}

// UserValues merges value files (-f, each a YAML document, later files win) and --set
// expressions (applied in order on top), as Helm's CLI does.
func UserValues(files []string, sets []string) (map[string]interface{}, error) {
	return MergeUserValues(ValueSources{Files: files, Set: sets})
}

// MergeUserValues merges every source of user values in Helm's order.
func MergeUserValues(v ValueSources) (map[string]interface{}, error) {
	base := map[string]interface{}{}
	for i, f := range v.Files {
		cur := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(f), &cur); err != nil {
			name := fmt.Sprintf("values file %d", i+1)
			if i < len(v.FileNames) {
				name = v.FileNames[i]
			}
			return nil, fmt.Errorf("failed to parse %s: %w", name, err)
		}
		base = mergeMaps(base, cur)
	}
	for _, s := range v.JSON {
		if err := parseSetWith(s, base, &setParser{json: true}); err != nil {
			// Helm drops the cause of a --set-json error.
			return nil, fmt.Errorf("failed parsing --set-json data %s", s)
		}
	}
	for _, s := range v.Set {
		if err := ParseSet(s, base); err != nil {
			return nil, fmt.Errorf("failed parsing --set data: %w", err)
		}
	}
	for _, s := range v.String {
		if err := parseSetWith(s, base, &setParser{value: stringValue}); err != nil {
			return nil, fmt.Errorf("failed parsing --set-string data: %w", err)
		}
	}
	for _, s := range v.File {
		read := func(rs []rune) (interface{}, error) {
			p := string(rs)
			data, ok := v.FileData[p]
			if !ok {
				return nil, fmt.Errorf("open %s: no such file or directory", p)
			}
			return data, nil
		}
		if err := parseSetWith(s, base, &setParser{value: read}); err != nil {
			return nil, fmt.Errorf("failed parsing --set-file data: %w", err)
		}
	}
	for _, s := range v.Literal {
		if err := parseLiteral(s, base); err != nil {
			return nil, fmt.Errorf("failed parsing --set-literal data: %w", err)
		}
	}
	return base, nil
}

// FilePaths are the paths --set-file expressions name, in order, for the caller to read.
func FilePaths(exprs []string) []string {
	var paths []string
	for _, s := range exprs {
		record := func(rs []rune) (interface{}, error) {
			paths = append(paths, string(rs))
			return "", nil
		}
		// A malformed expression fails later, in MergeUserValues, with Helm's message.
		_ = parseSetWith(s, map[string]interface{}{}, &setParser{value: record})
	}
	return paths
}

// ParseSet applies one --set expression ("a.b=1,c[0].d={x,y}") to dest. Values are typed as
// Helm types them: true/false, null, base-10 integers without a leading zero (int64), else
// strings; '\' escapes the next character.
func ParseSet(s string, dest map[string]interface{}) error {
	return parseSetWith(s, dest, &setParser{value: typedScalar})
}

func parseSetWith(s string, dest map[string]interface{}, p *setParser) error {
	p.rs = []rune(s)
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

func typedScalar(rs []rune) (interface{}, error) { return typedValue(rs), nil }
func stringValue(rs []rune) (interface{}, error) { return string(rs), nil }

// setParser reads --set, --set-string, --set-file and --set-json expressions: value turns the
// text of a scalar into its value (typed, a string, a file's content); json reads each value as
// a JSON document instead.
type setParser struct {
	rs    []rune
	pos   int
	value func([]rune) (interface{}, error)
	json  bool
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
		return indexedKey(p, data, key, level)
	case last == '=':
		if p.json {
			v, err := p.jsonValue()
			if err != nil {
				return err
			}
			setKey(data, key, v)
			return nil
		}
		vl, err := p.valList()
		switch err {
		case nil:
			setKey(data, key, vl)
			return nil
		case io.EOF:
			setKey(data, key, "")
			return err
		case errNotList:
			v, err := p.value(p.val())
			setKey(data, key, v)
			return err
		default:
			return err
		}
	case last == ',':
		setKey(data, key, "")
		return fmt.Errorf("key %q has no value (cannot end with ,)", key)
	default: // '.'
		return nestedKey(p, data, key, level)
	}
}

// pathParser is what Helm's two --set parsers (strvals, and the literal one of --set-literal) have
// in common: the rest of a key, a list item, an index. The steps below are written once for both.
type pathParser interface {
	key(data map[string]interface{}, level int) error
	listItem(list []interface{}, i, level int) ([]interface{}, error)
	index() (int, error)
}

// nestedKey parses what follows `key.` into the map at data[key] (made when absent), one level
// deeper.
func nestedKey(p pathParser, data map[string]interface{}, key string, level int) error {
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

// indexedKey parses what follows `key[`: an index, then the item, into the list at data[key].
func indexedKey(p pathParser, data map[string]interface{}, key string, level int) error {
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
}

// nestedList parses what follows `[i][`: the inner index and item, into the list at list[i].
func nestedList(p pathParser, list []interface{}, i, level int) ([]interface{}, error) {
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
}

// mapInList parses what follows `[i].`: a key of the map at list[i] (made when it is not a map).
func mapInList(p pathParser, list []interface{}, i, level int) ([]interface{}, error) {
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
		if p.json {
			v, err := p.jsonValue()
			if err != nil {
				return list, err
			}
			return setIndex(list, i, v)
		}
		vl, err := p.valList()
		switch err {
		case nil:
			return setIndex(list, i, vl)
		case io.EOF:
			return setIndex(list, i, "")
		case errNotList:
			v, err := p.value(p.val())
			if err != nil {
				return list, err
			}
			return setIndex(list, i, v)
		default:
			return list, err
		}
	case last == '[':
		return nestedList(p, list, i, level)
	default: // '.'
		return mapInList(p, list, i, level)
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
		v, err := p.value(rs)
		if last == '}' {
			if r, ok := p.read(); ok && r != ',' {
				p.pos--
			}
			return append(list, v), err
		}
		if err != nil {
			return list, err
		}
		list = append(list, v)
	}
}

// blankToComma skips blanks up to and including a ',': true when the value ends there (or at the
// end of the input), false (nothing else consumed) when something else follows.
func (p *setParser) blankToComma() bool {
	for {
		r, ok := p.read()
		if !ok || r == ',' {
			return true
		}
		if !unicode.IsSpace(r) {
			p.pos--
			return false
		}
	}
}

// jsonValue reads one JSON document after '=' (--set-json): nothing before the next ',' is null;
// the blanks and the ',' after the document are consumed.
func (p *setParser) jsonValue() (interface{}, error) {
	if p.blankToComma() {
		return nil, nil
	}
	rest := string(p.rs[p.pos:])
	dec := json.NewDecoder(strings.NewReader(rest))
	var v interface{}
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	p.pos += utf8.RuneCountInString(rest[:dec.InputOffset()])
	p.blankToComma()
	return v, nil
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

// parseLiteral applies one --set-literal expression: a key path as --set reads it, but without
// '\' escapes or ',' between pairs, and everything after the first '=' is the value, a string,
// as it is.
func parseLiteral(s string, dest map[string]interface{}) error {
	p := &literalParser{rs: []rune(s)}
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

type literalParser struct {
	rs  []rune
	pos int
}

// until reads up to (and consuming) one of stop, no escapes; io.EOF when the input ends first.
func (p *literalParser) until(stop string) ([]rune, rune, error) {
	v := []rune{}
	for p.pos < len(p.rs) {
		r := p.rs[p.pos]
		p.pos++
		if strings.ContainsRune(stop, r) {
			return v, r, nil
		}
		v = append(v, r)
	}
	return v, 0, io.EOF
}

func (p *literalParser) rest() string {
	v := string(p.rs[p.pos:])
	p.pos = len(p.rs)
	return v
}

func (p *literalParser) index() (int, error) {
	v, _, err := p.until("]")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(v))
}

func (p *literalParser) key(data map[string]interface{}, level int) error {
	k, last, err := p.until("=[.")
	key := string(k)
	switch {
	case err != nil:
		if len(k) == 0 {
			return err
		}
		return fmt.Errorf("key %q has no value", key)
	case last == '=':
		setKey(data, key, p.rest())
		return nil
	case last == '.':
		return nestedKey(p, data, key, level)
	default: // '['
		return indexedKey(p, data, key, level)
	}
}

func (p *literalParser) listItem(list []interface{}, i, level int) ([]interface{}, error) {
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
		return setIndex(list, i, p.rest())
	case last == '.':
		return mapInList(p, list, i, level)
	default: // '['
		return nestedList(p, list, i, level)
	}
}
