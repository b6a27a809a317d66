package verified_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp/syntax"
	"sort"
	"strings"

	"proctor/eval/verified"
	"proctor/models"
)

// synthOutput is an agent output made from a task's own spec: the expected
// answer as the agent response, and for each NetworkEventEvaluator the request
// it expects, as HAR entries.
type synthOutput struct {
	answer  *models.Action
	entries []entry
}

// synthesize builds the output that should pass the task: first alternatives,
// patterns turned into strings they match, placeholders rendered with sites.
func synthesize(d datasetTask, sites verified.Sites) (synthOutput, error) {
	var out synthOutput
	taskType := ""
	for _, raw := range d.Eval {
		var e map[string]any
		if err := json.Unmarshal(raw, &e); err != nil {
			return out, err
		}
		if e["evaluator"] != verified.AgentResponseEvaluator {
			continue
		}
		exp := e["expected"].(map[string]any)
		taskType = strings.ToLower(exp["task_type"].(string))
		schema, _ := e["results_schema"].(map[string]any)
		resp := map[string]any{"task_type": exp["task_type"], "status": exp["status"], "retrieved_data": firstAlternatives(exp["retrieved_data"], schema)}
		b, err := json.Marshal(resp)
		if err != nil {
			return out, err
		}
		out.answer = &models.Action{Type: models.ActAnswer, Response: b}
	}
	for _, raw := range d.Eval {
		var e map[string]any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if err := dec.Decode(&e); err != nil {
			return out, err
		}
		if e["evaluator"] != verified.NetworkEventEvaluator || e["should_not_exist"] == true {
			continue
		}
		en, err := synthRequest(e, taskType, render(verified.Placeholder(d.Sites[0]), sites), sites)
		if err != nil {
			return out, fmt.Errorf("task %d: %w", d.TaskID, err)
		}
		en["pageref"] = fmt.Sprintf("page@%d", len(out.entries)) // one tab per expected page
		out.entries = append(out.entries, en)
	}
	return out, nil
}

// firstAlternatives replaces "any of these" lists by their first item and
// patterns by a matching string.
func firstAlternatives(v any, schema map[string]any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	items, _ := schema["items"].(map[string]any)
	out := make([]any, len(list))
	for i, item := range list {
		out[i] = pickValue(item, items)
	}
	return out
}

func pickValue(v any, s map[string]any) any {
	switch t := v.(type) {
	case []any:
		if s["format"] == "coordinates" && len(t) == 2 {
			return t
		}
		if len(t) > 0 {
			return pickValue(t[0], s)
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		out := map[string]any{}
		for k, x := range t {
			ps, _ := props[k].(map[string]any)
			if ps["type"] == "array" {
				out[k] = x
				continue
			}
			out[k] = pickValue(x, ps)
		}
		return out
	case string:
		if isPattern(t) {
			return fromPattern(t)
		}
	}
	return v
}

func isPattern(s string) bool {
	return len(s) >= 2 && strings.HasPrefix(s, "^") && strings.HasSuffix(s, "$")
}

// render replaces a leading placeholder with its site's URL.
func render(s string, sites verified.Sites) string {
	for name, urls := range sites {
		ph := verified.Placeholder(name)
		if strings.Contains(s, ph) {
			s = strings.ReplaceAll(s, ph, urls[0])
		}
	}
	return s
}

func synthRequest(e map[string]any, taskType, firstSite string, sites verified.Sites) (entry, error) {
	exp := e["expected"].(map[string]any)
	method := "GET"
	if m, ok := exp["http_method"].(string); ok {
		method = strings.ToUpper(m)
	}
	var u string
	switch t := exp["url"].(type) {
	case string:
		u = t
	case []any:
		u = t[0].(string)
	}
	if isPattern(u) {
		u = fromPattern(u)
		if !strings.HasPrefix(u, "__") && !strings.HasPrefix(u, "http") {
			u = firstSite + strings.TrimLeft(u, "x")
		}
	}
	u = render(u, sites)
	if q, ok := exp["query_params"].(map[string]any); ok {
		pu, err := url.Parse(u)
		if err != nil {
			return nil, err
		}
		vals := url.Values{}
		for k, v := range q {
			for _, x := range v.([]any) {
				s := x.(string)
				if isPattern(s) {
					s = fromPattern(s)
				}
				vals.Add(k, s)
			}
		}
		pu.RawQuery = vals.Encode()
		u = pu.String()
	}
	status := 200
	if s, ok := exp["response_status"].(json.Number); ok {
		n, _ := s.Int64()
		status = int(n)
	}
	en := req(method, u, status)
	if taskType == models.TaskNavigate && method == "GET" {
		en = page(u)
	}
	if h, ok := exp["headers"].(map[string]any); ok {
		for name, v := range h {
			s := firstString(v)
			if isPattern(s) {
				s = fromPattern(s)
			}
			en.header(name, render(s, sites))
		}
	}
	if pd, ok := exp["post_data"].(map[string]any); ok {
		schema, _ := e["post_data_schema"].(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if hasPathKey(pd) {
			body := map[string]any{}
			for k, v := range pd {
				ps, _ := props[k].(map[string]any)
				setPath(body, k, bodyValue(v, ps, sites))
			}
			b, _ := json.Marshal(body)
			en.jsonBody(string(b))
		} else {
			vals := url.Values{}
			for _, k := range sortedStrings(pd) {
				v := pd[k]
				if v == nil {
					continue
				}
				ps, _ := props[k].(map[string]any)
				switch x := bodyValue(v, ps, sites).(type) {
				case []any:
					for _, y := range x {
						vals.Add(k, fmt.Sprint(y))
					}
				default:
					vals.Add(k, fmt.Sprint(x))
				}
			}
			if len(vals) == 0 {
				vals.Set("form_key", "synthetic") // a body, even when every expected field is null
			}
			en.form(vals.Encode())
		}
	}
	if rc, ok := exp["response_content"].(map[string]any); ok {
		body := map[string]any{}
		for k, v := range rc {
			setPath(body, k, v)
		}
		b, _ := json.Marshal(body)
		en.respond("application/json", string(b))
	}
	if rc, ok := exp["response_cookies"].(map[string]any); ok {
		for name, v := range rc {
			s := firstString(v)
			if isPattern(s) {
				s = fromPattern(s)
			}
			en.cookie(name, url.PathEscape(s))
		}
	}
	return en, nil
}

func firstString(v any) string {
	if l, ok := v.([]any); ok && len(l) > 0 {
		v = l[0]
	}
	s, _ := v.(string)
	return s
}

func sortedStrings(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func hasPathKey(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

// bodyValue is the value a request would carry: an alternative, a pattern's
// string, a list kept when the schema types a list.
func bodyValue(v any, s map[string]any, sites verified.Sites) any {
	switch t := v.(type) {
	case []any:
		if s["type"] == "array" {
			return t
		}
		if len(t) > 0 {
			return bodyValue(t[0], s, sites)
		}
	case string:
		if isPattern(t) {
			t = fromPattern(t)
		}
		return render(t, sites)
	case json.Number:
		return t
	}
	return v
}

// setPath stores v in body at a JSONPath-style key ($.a.b, $.a[0].b, $['a'],
// $['a'][?(@.f == 1)].b, $.^pattern$) or at a plain key.
func setPath(body map[string]any, key string, v any) {
	if !strings.HasPrefix(key, "$") {
		body[key] = v
		return
	}
	if strings.HasPrefix(key, "$.^") {
		body[fromPattern(key[2:])] = v
		return
	}
	type stepT struct {
		key    string
		index  int
		filter [2]any // field, literal
		kind   byte
	}
	var steps []stepT
	rest := key[1:]
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "."):
			end := strings.IndexAny(rest[1:], ".[")
			name := rest[1:]
			if end >= 0 {
				name = rest[1 : end+1]
			}
			steps = append(steps, stepT{kind: 'k', key: name})
			rest = rest[1+len(name):]
		case strings.HasPrefix(rest, "['"):
			end := strings.Index(rest, "']")
			steps = append(steps, stepT{kind: 'k', key: rest[2:end]})
			rest = rest[end+2:]
		case strings.HasPrefix(rest, "[?("):
			end := strings.Index(rest, ")]")
			field, lit, _ := strings.Cut(rest[3:end], "==")
			var litV any
			_ = json.Unmarshal([]byte(strings.TrimSpace(lit)), &litV)
			steps = append(steps, stepT{kind: '?', filter: [2]any{strings.TrimPrefix(strings.TrimSpace(field), "@."), litV}})
			rest = rest[end+2:]
		case strings.HasPrefix(rest, "["):
			end := strings.Index(rest, "]")
			var i int
			_, _ = fmt.Sscanf(rest[1:end], "%d", &i)
			steps = append(steps, stepT{kind: 'i', index: i})
			rest = rest[end+1:]
		default:
			return
		}
	}
	// Containers are created as the next step needs them.
	var put func(cur any, i int) any
	put = func(cur any, i int) any {
		if i == len(steps) {
			return v
		}
		st := steps[i]
		switch st.kind {
		case 'k':
			obj, _ := cur.(map[string]any)
			if obj == nil {
				obj = map[string]any{}
			}
			obj[st.key] = put(obj[st.key], i+1)
			return obj
		case 'i':
			list, _ := cur.([]any)
			for len(list) <= st.index {
				list = append(list, nil)
			}
			list[st.index] = put(list[st.index], i+1)
			return list
		default: // a filter: one matching object per expected value of the last key
			if vals, ok := v.([]any); ok && i+2 == len(steps) && steps[i+1].kind == 'k' {
				out := make([]any, len(vals))
				for j, x := range vals {
					out[j] = map[string]any{st.filter[0].(string): st.filter[1], steps[i+1].key: x}
				}
				return out
			}
			obj := map[string]any{st.filter[0].(string): st.filter[1]}
			return []any{put(obj, i+1)}
		}
	}
	put(body, 0)
}

// fromPattern returns a short string the pattern matches: positive
// lookaheads contribute their text first, negative ones are left out.
func fromPattern(p string) string {
	body := p[1 : len(p)-1]
	prefix := ""
	body = strings.TrimPrefix(body, ".*")
	for strings.HasPrefix(body, "(?=") || strings.HasPrefix(body, "(?!") {
		depth, end := 0, -1
		for i := 0; i < len(body) && end < 0; i++ {
			switch body[i] {
			case '\\':
				i++
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					end = i
				}
			}
		}
		if body[2] == '=' {
			prefix += generate(body[3:end]) + " "
		}
		body = body[end+1:]
	}
	return prefix + generate(body)
}

func generate(p string) string {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return ""
	}
	var b strings.Builder
	gen(&b, re.Simplify())
	return b.String()
}

func gen(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		for _, c := range "adx1-_AZ" {
			for i := 0; i+1 < len(re.Rune); i += 2 {
				if c >= re.Rune[i] && c <= re.Rune[i+1] {
					b.WriteRune(c)
					return
				}
			}
		}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1] >= ' ' {
				b.WriteRune(max(re.Rune[i], ' '))
				return
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpStar:
		// ".*" stands for some text, so that "/issues/.*" keeps its slash.
		if op := re.Sub[0].Op; op == syntax.OpAnyChar || op == syntax.OpAnyCharNotNL {
			b.WriteByte('x')
		}
	case syntax.OpPlus:
		gen(b, re.Sub[0])
	case syntax.OpRepeat:
		for i := 0; i < re.Min; i++ {
			gen(b, re.Sub[0])
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			gen(b, s)
		}
	case syntax.OpAlternate:
		gen(b, re.Sub[0])
	case syntax.OpCapture:
		gen(b, re.Sub[0])
	}
}
