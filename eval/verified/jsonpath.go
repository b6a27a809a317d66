package verified

import (
	"fmt"
	"strconv"
	"strings"
)

// jsonPath is a compiled post_data or response_content key. WebArena-Verified
// keys that start with "$" are JSONPath expressions into a JSON body; keys
// written "$.^…$" (or "^…$") are patterns matched against the body's top-level
// keys, for names with a varying part ("reply_to_submission_12[comment]").
// The JSONPath subset is what the dataset uses: .name, ['name'], [index], [*]
// and filters [?(@.field == literal)] (also !=).
type jsonPath struct {
	src    string
	keyRE  *pyRegexp // key-pattern form
	steps  []pathStep
	filter bool // has a filter: the result is always a list
}

type pathStep struct {
	key     string
	index   int
	kind    byte // 'k' key, 'i' index, '*' wildcard, '?' filter
	field   string
	negate  bool
	literal any
}

// isPathKey reports whether a post_data/response_content key is a JSONPath or a
// key pattern rather than a plain key.
func isPathKey(k string) bool { return strings.HasPrefix(k, "$") || isRegexp(k) }

func compileJSONPath(src string, re *regexCache) (*jsonPath, error) {
	p := &jsonPath{src: src}
	if strings.HasPrefix(src, "$.^") && strings.HasSuffix(src, "$") {
		r, err := re.compile(src[2:], false, false)
		if err != nil {
			return nil, err
		}
		p.keyRE = r
		return p, nil
	}
	if isRegexp(src) {
		r, err := re.compile(src, false, false)
		if err != nil {
			return nil, err
		}
		p.keyRE = r
		return p, nil
	}
	rest := strings.TrimPrefix(src, "$")
	if len(rest) == len(src) {
		return nil, fmt.Errorf("JSONPath %q must start with $", src)
	}
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, ".."):
			return nil, fmt.Errorf("JSONPath %q: recursive descent (..) is not supported", src)
		case strings.HasPrefix(rest, ".*"):
			p.steps = append(p.steps, pathStep{kind: '*'})
			rest = rest[2:]
		case strings.HasPrefix(rest, "."):
			end := strings.IndexAny(rest[1:], ".[")
			name := rest[1:]
			if end >= 0 {
				name = rest[1 : end+1]
			}
			if name == "" {
				return nil, fmt.Errorf("JSONPath %q: empty name", src)
			}
			p.steps = append(p.steps, pathStep{kind: 'k', key: name})
			rest = rest[1+len(name):]
		case strings.HasPrefix(rest, "["):
			end := closingBracket(rest)
			if end < 0 {
				return nil, fmt.Errorf("JSONPath %q: unbalanced [", src)
			}
			inner := strings.TrimSpace(rest[1:end])
			rest = rest[end+1:]
			step, err := bracketStep(inner)
			if err != nil {
				return nil, fmt.Errorf("JSONPath %q: %w", src, err)
			}
			if step.kind == '?' {
				p.filter = true
			}
			p.steps = append(p.steps, step)
		default:
			return nil, fmt.Errorf("JSONPath %q: unexpected %q", src, rest)
		}
	}
	return p, nil
}

// closingBracket finds the ] closing the [ at s[0], skipping quoted text.
func closingBracket(s string) int {
	var quote byte
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[':
			depth++
		case c == ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func bracketStep(inner string) (pathStep, error) {
	switch {
	case inner == "*":
		return pathStep{kind: '*'}, nil
	case len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0]:
		return pathStep{kind: 'k', key: inner[1 : len(inner)-1]}, nil
	case strings.HasPrefix(inner, "?(") && strings.HasSuffix(inner, ")"):
		expr := strings.TrimSpace(inner[2 : len(inner)-1])
		op := "=="
		left, right, ok := strings.Cut(expr, "==")
		if !ok {
			op = "!="
			if left, right, ok = strings.Cut(expr, "!="); !ok {
				return pathStep{}, fmt.Errorf("filter %q: only == and != are supported", expr)
			}
		}
		left = strings.TrimSpace(left)
		if !strings.HasPrefix(left, "@.") {
			return pathStep{}, fmt.Errorf("filter %q: the left side must be @.field", expr)
		}
		lit, err := pathLiteral(strings.TrimSpace(right))
		if err != nil {
			return pathStep{}, fmt.Errorf("filter %q: %w", expr, err)
		}
		return pathStep{kind: '?', field: left[2:], negate: op == "!=", literal: lit}, nil
	}
	i, err := strconv.Atoi(inner)
	if err != nil {
		return pathStep{}, fmt.Errorf("unsupported selector [%s]", inner)
	}
	return pathStep{kind: 'i', index: i}, nil
}

func pathLiteral(s string) (any, error) {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1], nil
	}
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("literal %q", s)
	}
	return f, nil
}

// find returns what the path selects in data: one value, a list of values
// (several matches, or any match of a filter path), or nil for none. A body
// whose matches hide in JSON-encoded strings is searched again with those
// strings decoded, as WebArena-Verified does.
func (p *jsonPath) find(data any) any {
	if p.keyRE != nil {
		obj, ok := data.(map[string]any)
		if !ok {
			return nil
		}
		var found []any
		for _, k := range sortedKeys(obj) {
			if p.keyRE.match(k) {
				found = append(found, obj[k])
			}
		}
		switch len(found) {
		case 0:
			return nil
		case 1:
			return found[0]
		}
		return found
	}
	matches := p.walk([]any{data})
	if len(matches) == 0 {
		matches = p.walk([]any{decodeNestedJSON(data)})
	}
	switch {
	case len(matches) == 0:
		return nil
	case len(matches) == 1 && !p.filter:
		return matches[0]
	}
	return matches
}

func (p *jsonPath) walk(cur []any) []any {
	for _, st := range p.steps {
		var next []any
		for _, v := range cur {
			switch st.kind {
			case 'k':
				if obj, ok := v.(map[string]any); ok {
					if x, ok := obj[st.key]; ok {
						next = append(next, x)
					}
				}
			case 'i':
				if list, ok := v.([]any); ok {
					i := st.index
					if i < 0 {
						i += len(list)
					}
					if i >= 0 && i < len(list) {
						next = append(next, list[i])
					}
				}
			case '*':
				next = append(next, children(v)...)
			case '?':
				for _, c := range children(v) {
					obj, ok := c.(map[string]any)
					if !ok {
						continue
					}
					field, has := obj[st.field]
					eq := has && jsonEqual(field, st.literal)
					if eq != st.negate && (has || st.negate) {
						next = append(next, c)
					}
				}
			}
		}
		cur = next
	}
	return cur
}

func children(v any) []any {
	switch t := v.(type) {
	case []any:
		return t
	case map[string]any:
		out := make([]any, 0, len(t))
		for _, k := range sortedKeys(t) {
			out = append(out, t[k])
		}
		return out
	}
	return nil
}

// decodeNestedJSON decodes string values of objects that hold JSON, one level
// per object, recursing into non-string values.
func decodeNestedJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if s, ok := x.(string); ok {
				if d, err := decodeJSON([]byte(s)); err == nil {
					out[k] = d
					continue
				}
				out[k] = s
				continue
			}
			out[k] = decodeNestedJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = decodeNestedJSON(x)
		}
		return out
	}
	return v
}
