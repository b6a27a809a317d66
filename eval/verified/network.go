package verified

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// networkExpected is the `expected` block of a NetworkEventEvaluator, limited to
// the fields the deterministic check implements; any other field is refused.
type networkExpected struct {
	URL            json.RawMessage            `json:"url"`
	HTTPMethod     string                     `json:"http_method"`
	QueryParams    map[string]json.RawMessage `json:"query_params"`
	PostData       map[string]json.RawMessage `json:"post_data"`
	ResponseStatus *int                       `json:"response_status"`
}

// urlSpec is one acceptable URL: scheme, host and path, plus the query
// parameters it requires.
type urlSpec struct {
	raw   string
	key   string
	query map[string][]any
}

// networkCheck is a NetworkEventEvaluator's expectation, decoded and normalised.
type networkCheck struct {
	urls   []urlSpec
	method string
	query  map[string][]any
	post   map[string]any
	status *int
}

// checkNetworkEvent looks for the expected request in the HAR. Static assets are
// ignored. Requests match by URL (scheme, host and path; the query is compared
// separately) and method; with last_event_only (the default) only the last
// match is compared, otherwise any match may satisfy the query parameters, post
// data and response status. For navigate tasks checked by a GET, the candidate
// is the last page the browser loaded, as in WebArena-Verified. With
// should_not_exist, no request may match the URL and method.
func checkNetworkEvent(s evaluatorSpec, entries []harEntry, taskType string) eval.EvaluatorResult {
	c, err := newNetworkCheck(s.Expected)
	if err != nil {
		return errorResult(s, err.Error())
	}
	navigate := taskType == models.TaskNavigate && (c.method == "" || c.method == "GET") && !s.ShouldNotExist

	var candidates []harEntry
	if navigate {
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].pageLoad() {
				candidates = entries[i : i+1]
				break
			}
		}
	} else {
		for _, e := range entries {
			if !e.static() && (c.method == "" || e.Method == c.method) && c.matchURL(e.URL) != nil {
				candidates = append(candidates, e)
			}
		}
	}
	want := c.describe()

	if s.ShouldNotExist {
		a := eval.Assertion{Name: "network_event.should_not_exist", Passed: len(candidates) == 0}
		if !a.Passed {
			a.Message = fmt.Sprintf("Found %d %s when none was expected", len(candidates), want)
		}
		return scoredResult(s, summarize(candidates), []eval.Assertion{a})
	}
	if len(candidates) == 0 {
		msg := "No " + want + " in the HAR"
		if navigate {
			msg = "The browser loaded no page"
		}
		return scoredResult(s, []any{}, []eval.Assertion{{Name: "network_event.found", Message: msg}})
	}
	if s.LastEventOnly == nil || *s.LastEventOnly {
		candidates = candidates[len(candidates)-1:]
	}
	var problems []string
	for _, e := range candidates {
		problems = c.compare(e)
		if len(problems) == 0 {
			return scoredResult(s, summarize(candidates), []eval.Assertion{{Name: "network_event.matched", Passed: true}})
		}
	}
	what := "the last matching request"
	switch {
	case navigate:
		what = "the last page loaded"
	case len(candidates) > 1:
		what = fmt.Sprintf("none of %d matching requests fits; the last one", len(candidates))
	}
	return scoredResult(s, summarize(candidates), []eval.Assertion{{
		Name:    "network_event.matched",
		Message: fmt.Sprintf("Expected %s, but %s: %s", want, what, strings.Join(problems, "; ")),
	}})
}

// newNetworkCheck decodes and normalises an expected network event.
func newNetworkCheck(raw json.RawMessage) (*networkCheck, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var exp networkExpected
	if err := dec.Decode(&exp); err != nil {
		return nil, fmt.Errorf("expected: %v (the deterministic check supports url, http_method, query_params, post_data and response_status)", err)
	}
	c := &networkCheck{method: strings.ToUpper(strings.TrimSpace(exp.HTTPMethod)), status: exp.ResponseStatus}

	var urls []string
	if isJSONNull(exp.URL) {
		return nil, fmt.Errorf("expected.url is missing")
	}
	if err := json.Unmarshal(exp.URL, &urls); err != nil {
		var one string
		if err := json.Unmarshal(exp.URL, &one); err != nil {
			return nil, fmt.Errorf("expected.url must be a string or a list of strings")
		}
		urls = []string{one}
	}
	for _, u := range urls {
		if strings.HasPrefix(u, "^") {
			return nil, fmt.Errorf("expected.url %q is a regular expression, which the deterministic check does not support", u)
		}
		parsed, err := url.Parse(u)
		if err != nil || parsed.Scheme == "" || parsed.Host == "" {
			return nil, fmt.Errorf("expected.url %q is not an absolute URL (are its site placeholders resolved?)", u)
		}
		spec := urlSpec{raw: u, key: urlKey(parsed), query: map[string][]any{}}
		for k, vs := range parsed.Query() {
			for _, v := range vs {
				spec.query[k] = append(spec.query[k], normalize(v))
			}
		}
		c.urls = append(c.urls, spec)
	}
	if len(c.urls) == 0 {
		return nil, fmt.Errorf("expected.url lists no URL")
	}

	c.query = map[string][]any{}
	for k, raw := range exp.QueryParams {
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("expected.query_params.%s: %v", k, err)
		}
		c.query[k] = asList(normalize(v))
	}
	c.post = map[string]any{}
	for k, raw := range exp.PostData {
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("expected.post_data.%s: %v", k, err)
		}
		c.post[k] = normalize(v)
	}
	return c, nil
}

// urlKey is the part of a URL that requests are matched on: scheme, host and path
// without a trailing slash.
func urlKey(u *url.URL) string {
	p := strings.TrimRight(u.Path, "/")
	if p == "" {
		p = "/"
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + p
}

// matchURL returns the expected URL that raw matches, or nil.
func (c *networkCheck) matchURL(raw string) *urlSpec {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	key := urlKey(u)
	for i := range c.urls {
		if c.urls[i].key == key {
			return &c.urls[i]
		}
	}
	return nil
}

// compare lists how a request differs from the expectation; none means it fits.
func (c *networkCheck) compare(e harEntry) []string {
	var problems []string
	spec := c.matchURL(e.URL)
	if spec == nil {
		return []string{fmt.Sprintf("url was %s", e.URL)}
	}
	if c.method != "" && e.Method != c.method {
		problems = append(problems, fmt.Sprintf("method was %s", e.Method))
	}
	if u, err := url.Parse(e.URL); err == nil {
		got := map[string][]any{}
		for k, vs := range u.Query() {
			for _, v := range vs {
				got[k] = append(got[k], normalize(v))
			}
		}
		for _, want := range []map[string][]any{spec.query, c.query} {
			for _, k := range sortedKeys(want) {
				if !matchLists(want[k], got[k], false) {
					problems = append(problems, fmt.Sprintf("query %s was %s", k, compactJSON(got[k])))
				}
			}
		}
	}
	if len(c.post) > 0 {
		got := e.postValues()
		for _, k := range sortedKeys(c.post) {
			actual := make([]any, len(got[k]))
			for i, v := range got[k] {
				actual[i] = normalize(v)
			}
			if !postValueMatches(c.post[k], actual) {
				problems = append(problems, fmt.Sprintf("post_data %s was %s", k, compactJSON(got[k])))
			}
		}
	}
	if c.status != nil && e.Status != *c.status {
		problems = append(problems, fmt.Sprintf("response status was %d", e.Status))
	}
	return problems
}

// postValueMatches compares an expected post value with the values sent under
// its key: a list must equal them as a multiset, a single value must be among them.
func postValueMatches(want any, got []any) bool {
	if list, ok := want.([]any); ok {
		return matchLists(list, got, false)
	}
	for _, g := range got {
		if equalValues(want, g) {
			return true
		}
	}
	return false
}

// describe names the expected request for messages: "POST request to http://…".
func (c *networkCheck) describe() string {
	method := c.method
	if method == "" {
		method = "any"
	}
	urls := make([]string, len(c.urls))
	for i, u := range c.urls {
		urls[i] = u.raw
	}
	return fmt.Sprintf("%s request to %s", method, strings.Join(urls, " or "))
}

// summarize describes the compared requests for the details' `actual`.
func summarize(entries []harEntry) []any {
	const keep = 5
	if len(entries) > keep {
		entries = entries[len(entries)-keep:]
	}
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		ev := map[string]any{"url": e.URL, "http_method": e.Method, "response_status": e.Status}
		if post := e.postValues(); len(post) > 0 {
			ev["post_data"] = post
		}
		out = append(out, ev)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
