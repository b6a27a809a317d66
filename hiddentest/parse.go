package hiddentest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"proctor/models"
)

// MaxSuiteBytes caps a suite file; larger input is refused with ETOOLARGE.
const MaxSuiteBytes = 4 << 20

// MaxProblems caps how many problems a ValidationError lists; it counts the rest.
const MaxProblems = 50

// maxDepth caps the nesting of JSON values; a suite needs fewer than ten levels.
const maxDepth = 32

// Problem is one thing wrong with a suite: where (a JSON path such as
// tests[12].journey.steps[3].locator, empty for the whole file) and what.
type Problem struct {
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// String is "path: message", or the message alone for the whole file.
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError lists the problems found in a suite, at most MaxProblems of
// them; More counts those left out. It unwraps to a *models.Error with the code
// EINVALID, or ETOOLARGE when the file exceeds MaxSuiteBytes, so handlers map it
// like any other input error.
type ValidationError struct {
	Problems []Problem
	More     int
	TooLarge bool
}

// Error lists the problems, one a line.
func (e *ValidationError) Error() string {
	lines := make([]string, 0, len(e.Problems)+1)
	for _, p := range e.Problems {
		lines = append(lines, p.String())
	}
	if e.More > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more problems", e.More))
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives the client-safe *models.Error carrying the same message.
func (e *ValidationError) Unwrap() error {
	code := models.EINVALID
	if e.TooLarge {
		code = models.ETOOLARGE
	}
	return &models.Error{Code: code, Message: e.Error()}
}

// problems collects problems in the order they are found.
type problems struct {
	list []Problem
}

func (p *problems) add(path, format string, args ...any) {
	p.list = append(p.list, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns nil without problems, else a ValidationError of at most MaxProblems.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	e := &ValidationError{Problems: p.list}
	if len(e.Problems) > MaxProblems {
		e.More = len(e.Problems) - MaxProblems
		e.Problems = e.Problems[:MaxProblems:MaxProblems]
	}
	return e
}

// Parse reads a suite from strict JSON and validates it without checking that
// reference captures exist (Validate with a capture lookup does). Unknown
// fields, fields given twice, values of the wrong type and every rule of
// Validate are reported together, each with its JSON path, in a
// *ValidationError; a failing reader gives a wrapped internal error.
func Parse(r io.Reader) (*Suite, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSuiteBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read hidden-test suite: %w", err)
	}
	if len(data) > MaxSuiteBytes {
		return nil, &ValidationError{TooLarge: true, Problems: []Problem{{
			Message: fmt.Sprintf("the suite is larger than %d MiB", MaxSuiteBytes>>20),
		}}}
	}
	var structural problems
	tree, ok := decodeTree(data, &structural)
	if !ok {
		return nil, structural.err()
	}
	tree = check(tree, reflect.TypeFor[Suite](), "", &structural)

	// Decode what survived the structural check (bad values and unknown fields
	// removed), so that the rules below can still report everything else.
	var clean bytes.Buffer
	encodeNode(&clean, tree)
	dec := json.NewDecoder(&clean)
	dec.DisallowUnknownFields()
	var s Suite
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("decode checked hidden-test suite: %w", err)
	}

	var semantic problems
	(&validator{p: &semantic}).suite(&s)
	all := problems{list: structural.list}
	for _, p := range semantic.list {
		if !underAny(p.Path, structural.list) {
			all.list = append(all.list, p)
		}
	}
	if err := all.err(); err != nil {
		return nil, err
	}
	return &s, nil
}

// underAny reports whether path is at or below the path of one of the problems:
// a value the structural check dropped should not also be reported missing.
func underAny(path string, list []Problem) bool {
	for _, p := range list {
		if p.Path == "" || path == p.Path || strings.HasPrefix(path, p.Path+".") || strings.HasPrefix(path, p.Path+"[") {
			return true
		}
	}
	return false
}

// object is a JSON object that keeps its keys in document order.
type object struct {
	keys []string
	vals map[string]any
}

// decodeTree reads one JSON value into a tree of *object, []any, string,
// json.Number, bool and nil, reporting fields given twice. Malformed JSON is
// one problem with its line and column, and ok false.
func decodeTree(data []byte, p *problems) (tree any, ok bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		p.add("", "the suite is empty")
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	d := treeDecoder{dec: dec, p: p}
	tree, err := d.value("", 0)
	var depth *depthError
	switch {
	case errors.As(err, &depth):
		p.add(depth.path, "values are nested more than %d levels deep", maxDepth)
		return nil, false
	case err != nil:
		p.add("", "%s", syntaxMessage(data, err))
		return nil, false
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		p.add("", "malformed JSON at %s: unexpected data after the suite", position(data, len(data)-len(rest)))
		return nil, false
	}
	return tree, true
}

// syntaxMessage says where and how JSON is malformed. A json.Decoder's syntax
// errors do not all count offsets alike, so the position comes from a second,
// whole-input check (json.Unmarshal's), whose offset is just past the
// offending byte.
func syntaxMessage(data []byte, err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		var whole any
		if errors.As(json.Unmarshal(data, &whole), &syn) {
			return fmt.Sprintf("malformed JSON at %s: %s", position(data, int(syn.Offset)-1), syn.Error())
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || syn != nil && syn.Offset >= int64(len(data)) {
		return "malformed JSON: the input ends early"
	}
	return "malformed JSON: " + err.Error()
}

// position is "line L, column C" (both from 1) of the byte at offset.
func position(data []byte, offset int) string {
	offset = max(0, min(offset, len(data)))
	line := 1 + bytes.Count(data[:offset], []byte("\n"))
	column := offset - bytes.LastIndexByte(data[:offset], '\n')
	return fmt.Sprintf("line %d, column %d", line, column)
}

// depthError refuses values nested deeper than maxDepth.
type depthError struct{ path string }

func (e *depthError) Error() string { return "values are nested too deeply at " + e.path }

type treeDecoder struct {
	dec *json.Decoder
	p   *problems
}

func (d *treeDecoder) value(path string, depth int) (any, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, err
	}
	delim, isDelim := tok.(json.Delim)
	if !isDelim {
		return tok, nil
	}
	if depth >= maxDepth {
		return nil, &depthError{path: path}
	}
	switch delim {
	case '{':
		obj := &object{vals: map[string]any{}}
		for d.dec.More() {
			keyTok, err := d.dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ := keyTok.(string) // the decoder yields only strings as keys
			child := joinKey(path, key)
			val, err := d.value(child, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := obj.vals[key]; dup {
				d.p.add(child, "the field is given twice")
				continue
			}
			obj.keys = append(obj.keys, key)
			obj.vals[key] = val
		}
		_, err := d.dec.Token() // '}'
		return obj, err
	default: // '['
		list := []any{}
		for d.dec.More() {
			val, err := d.value(fmt.Sprintf("%s[%d]", path, len(list)), depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, val)
		}
		_, err := d.dec.Token() // ']'
		return list, err
	}
}

// joinKey appends an object key to a path; keys that are not plain names are
// quoted: headers["X-Frame-Options"] stays readable, query["a b"] unambiguous.
func joinKey(path, key string) string {
	plain := key != ""
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// check compares a decoded tree with the Go type it will be decoded into,
// reporting unknown fields and values of the wrong type at their paths. It
// returns the tree without them (a bad value becomes null, the zero value).
func check(v any, t reflect.Type, path string, p *problems) any {
	if v == nil {
		return nil
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		var raw bytes.Buffer
		encodeNode(&raw, v)
		target := reflect.New(t).Interface().(json.Unmarshaler)
		if err := target.UnmarshalJSON(raw.Bytes()); err != nil {
			p.add(path, "%s", err.Error())
			return nil
		}
		return v
	}
	switch t.Kind() {
	case reflect.Pointer:
		return check(v, t.Elem(), path, p)
	case reflect.Struct:
		obj, ok := v.(*object)
		if !ok {
			p.add(path, "expected an object, found %s", describe(v))
			return nil
		}
		fields := jsonFields(t)
		kept := &object{vals: map[string]any{}}
		for _, key := range obj.keys {
			child := joinKey(path, key)
			ft, known := fields[key]
			if !known {
				p.add(child, "unknown field")
				continue
			}
			kept.keys = append(kept.keys, key)
			kept.vals[key] = check(obj.vals[key], ft, child, p)
		}
		return kept
	case reflect.Map:
		obj, ok := v.(*object)
		if !ok {
			p.add(path, "expected an object, found %s", describe(v))
			return nil
		}
		for _, key := range obj.keys {
			obj.vals[key] = check(obj.vals[key], t.Elem(), joinKey(path, key), p)
		}
		return obj
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			p.add(path, "expected a list, found %s", describe(v))
			return nil
		}
		for i := range list {
			list[i] = check(list[i], t.Elem(), fmt.Sprintf("%s[%d]", path, i), p)
		}
		return list
	case reflect.String:
		if _, ok := v.(string); !ok {
			p.add(path, "expected a string, found %s", describe(v))
			return nil
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			p.add(path, "expected true or false, found %s", describe(v))
			return nil
		}
	case reflect.Int:
		n, ok := v.(json.Number)
		if !ok {
			p.add(path, "expected a whole number, found %s", describe(v))
			return nil
		}
		if _, err := strconv.ParseInt(n.String(), 10, 32); errors.Is(err, strconv.ErrRange) {
			p.add(path, "the number %s is out of range", n)
			return nil
		} else if err != nil {
			p.add(path, "expected a whole number, found the number %s", n)
			return nil
		}
	case reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			p.add(path, "expected a number, found %s", describe(v))
			return nil
		}
		if _, err := n.Float64(); err != nil {
			p.add(path, "the number %s is out of range", n)
			return nil
		}
	}
	return v
}

// jsonFields maps the JSON names of a struct's fields to their types, with the
// fields of embedded structs inlined as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// describe names a JSON value's type for messages.
func describe(v any) string {
	switch v := v.(type) {
	case *object:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "the number " + v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return "null"
}

// encodeNode writes a decoded tree back as JSON.
func encodeNode(buf *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case json.Number:
		buf.WriteString(v.String())
	case string:
		b, _ := json.Marshal(v) // a string always encodes
		buf.Write(b)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeNode(buf, e)
		}
		buf.WriteByte(']')
	case *object:
		buf.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeNode(buf, k)
			buf.WriteByte(':')
			encodeNode(buf, v.vals[k])
		}
		buf.WriteByte('}')
	}
}
