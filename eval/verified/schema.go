package verified

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

// schema is the subset of JSON Schema WebArena-Verified uses to type values:
// "type", "format" (which takes precedence), "items" and "properties".
type schema struct {
	Type       string
	Format     string
	Items      *schema
	Properties map[string]*schema
}

// schemaKeywords are the keywords a schema may hold; the descriptive ones are
// ignored, and any other keyword is refused rather than silently ignored.
func schemaKeyword(k string) bool {
	return slices.Contains([]string{"type", "format", "items", "properties", "title", "description", "required", "additionalProperties", "$schema"}, k)
}

func schemaType(t string) bool {
	return slices.Contains([]string{"string", "number", "integer", "boolean", "null", "array", "object"}, t)
}

// parseSchema decodes and checks a schema: known keywords, known types and
// formats, at every level.
func parseSchema(raw json.RawMessage, where string) (*schema, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s: a schema must be a JSON object", where)
	}
	s := &schema{}
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		if !schemaKeyword(k) {
			return nil, fmt.Errorf("%s: schema keyword %q is not supported", where, k)
		}
		switch k {
		case "type":
			if err := json.Unmarshal(v, &s.Type); err != nil || !schemaType(s.Type) {
				return nil, fmt.Errorf("%s.type: %s is not a supported type (string, number, integer, boolean, null, array, object)", where, string(v))
			}
		case "format":
			if err := json.Unmarshal(v, &s.Format); err != nil || !supportedType(s.Format) {
				return nil, fmt.Errorf("%s.format: value type %s is not supported (supported: %s)", where, string(v), strings.Join(ValueTypes(), ", "))
			}
		case "items":
			items, err := parseSchema(v, where+".items")
			if err != nil {
				return nil, err
			}
			s.Items = items
		case "properties":
			var props map[string]json.RawMessage
			if err := json.Unmarshal(v, &props); err != nil {
				return nil, fmt.Errorf("%s.properties: expected an object of schemas", where)
			}
			s.Properties = make(map[string]*schema, len(props))
			for name, p := range props {
				ps, err := parseSchema(p, where+".properties."+name)
				if err != nil {
					return nil, err
				}
				s.Properties[name] = ps
			}
		}
	}
	return s, nil
}

// valueType is the value type a leaf schema names: its format, else its type,
// else string.
func (s *schema) valueType() string {
	switch {
	case s == nil:
		return typeString
	case s.Format != "":
		return s.Format
	case s.Type != "":
		return s.Type
	}
	return typeString
}

// rawVal is a value kept as the agent (or the page) gave it: a value that did
// not normalise to its type, or one compared as plain JSON.
type rawVal struct{ v any }

// normalizeRetrieved normalises retrieved_data against a results_schema, which
// describes an array: a non-list answer is a one-item list, items are typed by
// "items", objects property by property. Empty data is nil.
func (n *normalizer) normalizeRetrieved(raw any, s *schema) (any, error) {
	if falsy(raw) && !isNumber(raw) && raw != false {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		list = []any{raw}
	}
	if s != nil && s.Type != "array" {
		if !n.strict {
			// Data where the schema expects none (type null): kept as given, so
			// the comparison reports it as unexpected.
			out := make([]any, len(list))
			for i, item := range list {
				out[i] = rawVal{item}
			}
			return out, nil
		}
		return nil, fmt.Errorf("results_schema must describe an array of results (type array), got type %q", s.Type)
	}
	items := &schema{}
	if s != nil && s.Items != nil {
		items = s.Items
	}
	out := make([]any, len(list))
	for i, item := range list {
		var err error
		if items.Type == "object" {
			out[i], err = n.normalizeObjectOrList(item, items)
		} else {
			out[i], err = n.normalizeLeaf(item, items)
		}
		if err != nil {
			return nil, fmt.Errorf("retrieved_data[%d]: %w", i, err)
		}
	}
	return out, nil
}

// normalizeLeaf types one value; a failure is an error for expected values and
// keeps the raw value for actual ones.
func (n *normalizer) normalizeLeaf(v any, s *schema) (any, error) {
	kind := s.valueType()
	if !supportedType(kind) {
		return nil, fmt.Errorf("value type %q is not supported", kind)
	}
	tv, err := n.newNorm(kind, v)
	if err != nil {
		if n.strict {
			return nil, err
		}
		return rawVal{v}, nil
	}
	return tv, nil
}

func (n *normalizer) normalizeObjectOrList(v any, s *schema) (any, error) {
	if list, ok := v.([]any); ok {
		out := make([]any, len(list))
		for i, item := range list {
			o, err := n.normalizeObject(item, s)
			if err != nil {
				return nil, err
			}
			out[i] = o
		}
		return out, nil
	}
	return n.normalizeObject(v, s)
}

// normalizeObject types an object's values by the schema's properties; keys
// without a property are strings. The object keeps its own keys, so missing
// and extra keys show in the comparison.
func (n *normalizer) normalizeObject(v any, s *schema) (any, error) {
	if str, ok := v.(string); ok {
		if parsed, err := decodeJSON([]byte(str)); err == nil {
			if m, isObj := parsed.(map[string]any); isObj {
				v = m
			}
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		if n.strict {
			return nil, fmt.Errorf("expected an object, got %s", describe(v))
		}
		return rawVal{v}, nil
	}
	out := make(map[string]any, len(obj))
	for k, val := range obj {
		if val == nil {
			out[k] = nil
			continue
		}
		prop := s.Properties[k]
		var err error
		switch {
		case prop == nil:
			out[k], err = n.normalizeLeaf(val, &schema{Type: typeString})
		case prop.Type == "array":
			out[k], err = n.normalizeTypedList(val, prop.Items)
		case prop.Type == "object":
			out[k], err = n.normalizeObject(val, prop)
		default:
			out[k], err = n.normalizeLeaf(val, prop)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	return out, nil
}

// normalizeTypedList types a list property item by item (a string holding a
// JSON list is read as that list).
func (n *normalizer) normalizeTypedList(v any, items *schema) (any, error) {
	if str, ok := v.(string); ok {
		if parsed, err := decodeJSON([]byte(str)); err == nil {
			if l, isList := parsed.([]any); isList {
				v = l
			}
		}
	}
	list, ok := v.([]any)
	if !ok {
		if n.strict {
			return nil, fmt.Errorf("expected a list, got %s", describe(v))
		}
		return rawVal{v}, nil
	}
	if items == nil {
		items = &schema{}
	}
	out := make([]any, len(list))
	for i, item := range list {
		var err error
		if items.Type == "object" {
			out[i], err = n.normalizeObjectOrList(item, items)
		} else {
			out[i], err = n.normalizeLeaf(item, items)
		}
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return out, nil
}

// showValue renders a normalised value for the report.
func showValue(v any) any {
	switch t := v.(type) {
	case *tval:
		return t.show()
	case rawVal:
		return t.v
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = showValue(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = showValue(x)
		}
		return out
	}
	return v
}

// regexCache compiles each spec pattern once per evaluator.
type regexCache struct {
	mu sync.Mutex
	m  map[string]regexEntry
}

type regexEntry struct {
	re  *pyRegexp
	err error
}

func newRegexCache() *regexCache { return &regexCache{m: map[string]regexEntry{}} }

func (c *regexCache) compile(src string, ignoreCase, dotAll bool) (*pyRegexp, error) {
	key := fmt.Sprintf("%t%t%s", ignoreCase, dotAll, src)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		return e.re, e.err
	}
	re, err := compilePy(src, ignoreCase, dotAll)
	if len(c.m) > 10000 {
		clear(c.m)
	}
	c.m[key] = regexEntry{re, err}
	return re, err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeJSON decodes one JSON value with numbers kept as json.Number; trailing
// text is an error.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected text after the JSON value")
	}
	return v, nil
}

// compactJSON encodes v compactly with sorted keys and no HTML escaping.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
