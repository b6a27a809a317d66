package verified

import (
	"fmt"
	"strings"

	"proctor/models"
)

// checkNetwork is the NetworkEventEvaluator. Static assets are skipped. For a
// navigate task checked by a GET, the candidate is the last page the browser
// loaded; otherwise requests are filtered by method, URL (scheme, host and path,
// or the spec's pattern) and, when the spec names one, the Referer's path. With
// last_event_only (the default) only the last candidate is compared, else any
// candidate may match. The comparison covers the URL with its query
// parameters, the method, the response status, and the headers, post data,
// response content and cookies the spec names. should_not_exist inverts it: no
// candidate may exist.
func (r *run) checkNetwork(s *networkSpec, events []harEvent) result {
	opts, err := r.urlOptions(s)
	if err != nil {
		return errorResult(err.Error())
	}
	postSchema := s.postSchema
	if r.ev.lenient || postSchema == nil {
		postSchema = effectivePostSchema(s, r.ev.lenient)
	}
	expOpts := opts
	expOpts.query = s.queryParams
	exp := r.normalizer(true, expOpts)
	expected, expURL, err := r.expectedEvent(s, exp, opts, postSchema)
	if err != nil {
		return errorResult(fmt.Sprintf("expected: %v", err))
	}
	res := result{expected: expected, shouldNotExist: &s.shouldNotExist}

	act := r.normalizer(false, opts)
	var candidates []*harEvent
	navigate := r.taskType == models.TaskNavigate && s.httpMethod == "GET"
	if navigate {
		candidates = lastPage(events)
	} else {
		var expReferer *tval
		if h, ok := expected["headers"].(map[string]any); ok {
			expReferer, _ = h["referer"].(*tval)
		}
		for i := range events {
			e := &events[i]
			if !strings.EqualFold(e.method, s.httpMethod) || e.static() {
				continue
			}
			// The query is read only when the rest of the URL matches: a
			// query that cannot be read still rules the request out.
			u, query, err := act.parseBase(e.url, opts)
			if err != nil || !anyBase(act, expURL, u) || u.query == nil && act.readQuery(u, query, opts) != nil {
				continue
			}
			if ref, ok := e.header("referer"); ok && expReferer != nil && ref != "" {
				ru, err := act.parseURL(ref, opts)
				if err != nil || !anyBase(act, expReferer, ru) {
					continue
				}
			}
			candidates = append(candidates, e)
		}
	}
	if s.lastEventOnly && len(candidates) > 1 {
		candidates = candidates[len(candidates)-1:]
	}

	actuals := make([]any, 0, len(candidates))
	shown := make([]any, 0, len(candidates))
	for _, e := range candidates {
		raw, norm := r.actualEvent(s, e, act, opts, postSchema)
		actuals = append(actuals, raw)
		shown = append(shown, norm)
	}
	res.actual = mustJSON(actuals)
	res.actualNorm = shown

	want := describeEvent(s)
	if s.shouldNotExist {
		if len(candidates) > 0 {
			msgs := []string{fmt.Sprintf("Found %d matching event(s) when none were expected (should_not_exist=True).", len(candidates))}
			for _, e := range candidates {
				msgs = append(msgs, e.method+" "+e.url)
			}
			res.assertions = append(res.assertions, fail("unexpected_navigation_event", msgs...))
		}
		return res
	}
	if len(candidates) == 0 {
		msg := fmt.Sprintf("No %s among the %d recorded requests.", want, len(events))
		if navigate {
			msg = fmt.Sprintf("The browser loaded no page (no top-level GET navigation among the %d recorded requests).", len(events))
		}
		res.assertions = append(res.assertions, fail("missing_navigation_event",
			"No matching network event found that satisfies all expected criteria.", msg))
		return res
	}
	var last []assertion
	for _, a := range shown {
		last = compare(a, expected, "network_event", compareOpts{ignoreExtra: true})
		if len(last) == 0 {
			return res
		}
	}
	msgs := []string{fmt.Sprintf("No matching network event found. Checked %d event(s) but none matched all expected criteria.", len(candidates))}
	what := "the last candidate"
	if navigate {
		what = "the last page loaded (" + candidates[len(candidates)-1].url + ")"
	}
	for _, a := range last {
		for _, m := range a.msgs {
			msgs = append(msgs, fmt.Sprintf("%s: %s: %s", what, a.name, m))
		}
	}
	res.assertions = append(res.assertions, fail("missing_navigation_event", msgs...))
	return res
}

// lastPage returns the last page the browser loaded in the whole episode,
// whichever tab loaded it, as WebArena-Verified compares: a navigate task
// passes only when the target is the last page loaded. Checking the last page
// of every tab would let an agent hedge by opening candidates in several tabs.
func lastPage(events []harEvent) []*harEvent {
	for i := len(events) - 1; i >= 0; i-- {
		if !events[i].static() && events[i].navigation() {
			return []*harEvent{&events[i]}
		}
	}
	return nil
}

func anyBase(n *normalizer, want *tval, got *urlValue) bool {
	for _, alt := range want.alts {
		if n.sameBase(alt.(*urlValue), got) {
			return true
		}
	}
	return false
}

// urlOptions compiles a spec's URL settings.
func (r *run) urlOptions(s *networkSpec) (urlOptions, error) {
	o := urlOptions{decodeBase64: s.decodeBase64, querySchema: s.querySchema, ignored: map[string]bool{}}
	for _, k := range s.ignoredQuery {
		o.ignored[k] = true
	}
	for _, p := range s.ignoredQueryPattern {
		re, err := r.ev.re.compile(p, true, false)
		if err != nil {
			return o, err
		}
		o.ignoredPatterns = append(o.ignoredPatterns, re)
	}
	return o, nil
}

// effectivePostSchema is the post_data_schema (an empty object schema when the
// spec has none); the lenient reading adds a number type for keys the spec
// leaves untyped whose expected value is a JSON number (or a list of them),
// so that "79.00" posted by a form matches 79. The official evaluator
// compares such values as their text, so "79.00" is not 79.
func effectivePostSchema(s *networkSpec, lenient bool) *schema {
	out := &schema{Type: "object", Properties: map[string]*schema{}}
	if s.postSchema != nil {
		for k, p := range s.postSchema.Properties {
			out.Properties[k] = p
		}
	}
	if !lenient {
		return out
	}
	for k, v := range s.postData {
		if _, typed := out.Properties[k]; typed {
			continue
		}
		if allNumbers(v) {
			out.Properties[k] = &schema{Type: typeNumber}
		}
	}
	return out
}

func allNumbers(v any) bool {
	if isNumber(v) {
		return true
	}
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return false
	}
	for _, x := range l {
		if !isNumber(x) {
			return false
		}
	}
	return true
}

// expectedEvent normalises the spec's expected event.
func (r *run) expectedEvent(s *networkSpec, exp *normalizer, opts urlOptions, postSchema *schema) (map[string]any, *tval, error) {
	urls := make([]any, len(s.urls))
	for i, u := range s.urls {
		urls[i] = u
	}
	var rawURL any = urls
	if len(urls) == 1 {
		rawURL = urls[0]
	}
	expURL, err := exp.newNorm(typeURL, rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("url: %w", err)
	}
	out := map[string]any{
		"url":             expURL,
		"response_status": rawVal{float64(s.responseStatus)},
		"http_method":     rawVal{s.httpMethod},
	}
	if s.headers != nil {
		plain := r.normalizer(true, opts)
		h := make(map[string]any, len(s.headers))
		for name, v := range s.headers {
			kind := typeString
			if isURLHeader(name) {
				kind = typeURL
			}
			tv, err := plain.newNorm(kind, v)
			if err != nil {
				return nil, nil, fmt.Errorf("headers.%s: %w", name, err)
			}
			h[name] = tv
		}
		out["headers"] = h
	}
	if s.postData != nil {
		pd, err := exp.normalizeObject(s.postData, postSchema)
		if err != nil {
			return nil, nil, fmt.Errorf("post_data.%w", err)
		}
		out["post_data"] = pd
	}
	if s.responseContent != nil {
		rc := make(map[string]any, len(s.responseContent))
		for k, v := range s.responseContent {
			rc[k] = rawVal{v}
		}
		out["response_content"] = rc
	}
	if s.responseCookies != nil {
		c := make(map[string]any, len(s.responseCookies))
		for name, v := range s.responseCookies {
			tv, err := exp.newNorm(typeString, v)
			if err != nil {
				return nil, nil, fmt.Errorf("response_cookies.%s: %w", name, err)
			}
			c[name] = tv
		}
		out["response_cookies"] = c
	}
	return out, expURL, nil
}

func isURLHeader(name string) bool {
	return strings.EqualFold(name, "referer") || strings.EqualFold(name, "redirect_url")
}

// actualEvent extracts what the spec compares from one request: raw for the
// report, normalised for the comparison.
func (r *run) actualEvent(s *networkSpec, e *harEvent, act *normalizer, opts urlOptions, postSchema *schema) (map[string]any, map[string]any) {
	raw := map[string]any{"url": e.url, "http_method": e.method, "response_status": e.status}
	method := e.method
	if r.ev.lenient {
		method = strings.ToUpper(method)
	}
	norm := map[string]any{"response_status": rawVal{float64(e.status)}, "http_method": rawVal{method}}
	if u, err := act.parseURL(e.url, opts); err == nil {
		norm["url"] = &tval{kind: typeURL, alts: []any{u}}
	} else {
		norm["url"] = rawVal{e.url}
	}
	if s.headers != nil {
		rawH, normH := map[string]any{}, map[string]any{}
		for name := range s.headers {
			v, ok := e.header(name)
			if !ok {
				continue
			}
			rawH[name] = v
			kind := typeString
			if isURLHeader(name) {
				kind = typeURL
			}
			if tv, err := act.newNorm(kind, v); err == nil {
				normH[name] = tv
			} else {
				normH[name] = rawVal{v}
			}
		}
		raw["headers"], norm["headers"] = nilIfEmpty(rawH), nilIfEmpty(normH)
	}
	if s.postData != nil {
		pd := e.postData()
		if len(pd) > 0 {
			for k := range pd {
				if r.ignoredPost(s, k) {
					delete(pd, k)
				}
			}
			flat := extractKeys(pd, s.postData, r.ev.re, true)
			raw["post_data"] = flat
			n, err := act.normalizeObject(flat, postSchema)
			if err != nil {
				n = rawVal{flat}
			}
			norm["post_data"] = n
		} else {
			raw["post_data"], norm["post_data"] = nil, nil
		}
	}
	if s.responseContent != nil {
		rc := e.responseData()
		if rc != nil {
			flat := extractKeys(rc, s.responseContent, r.ev.re, false)
			raw["response_content"] = flat
			n := make(map[string]any, len(flat))
			for k, v := range flat {
				n[k] = rawVal{v}
			}
			norm["response_content"] = n
		} else {
			raw["response_content"], norm["response_content"] = nil, nil
		}
	}
	if s.responseCookies != nil {
		rawC, normC := map[string]any{}, map[string]any{}
		for name := range s.responseCookies {
			v, ok := e.cookie(name)
			if !ok {
				continue
			}
			rawC[name] = v
			tv, _ := act.newNorm(typeString, v)
			normC[name] = tv
		}
		raw["response_cookies"], norm["response_cookies"] = nilIfEmpty(rawC), nilIfEmpty(normC)
	}
	return raw, norm
}

func nilIfEmpty(m map[string]any) any {
	if len(m) == 0 {
		return nil
	}
	return m
}

func (r *run) ignoredPost(s *networkSpec, key string) bool {
	for _, p := range s.ignoredPostPattern {
		if re, err := r.ev.re.compile(p, false, false); err == nil && re.search(key) {
			return true
		}
	}
	return false
}

// extractKeys picks the spec's keys out of a body: plain keys by name (absent
// ones as null when allMissing, else left out), JSONPath keys and key patterns
// by what they select.
func extractKeys(body map[string]any, want map[string]any, re *regexCache, allMissing bool) map[string]any {
	out := make(map[string]any, len(want))
	for k := range want {
		if isPathKey(k) {
			p, err := compileJSONPath(k, re)
			if err != nil {
				out[k] = nil
				continue
			}
			out[k] = p.find(body)
			continue
		}
		v, ok := body[k]
		if ok || allMissing {
			out[k] = v
		}
	}
	return out
}

// describeEvent names the expected request in messages.
func describeEvent(s *networkSpec) string {
	return fmt.Sprintf("%s request to %s", s.httpMethod, strings.Join(s.urls, " or "))
}
