package hiddentest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// These functions fix the meaning of the format's HTTP checks in one place, so
// that whatever runs a suite judges responses exactly as docs/hidden-tests.md says.

// JoinURL appends a suite path to a base URL as written: no dot-segment
// removal and no re-encoding, so "/../../etc/passwd" reaches the server intact.
func JoinURL(base, path string) string {
	return strings.TrimRight(base, "/") + path
}

// URL is the request's full URL under base: its path with Query added (names
// sorted, values encoded).
func (r *RequestTest) URL(base string) string {
	u := JoinURL(base, r.Path)
	if len(r.Query) == 0 {
		return u
	}
	q := url.Values{}
	for k, v := range r.Query {
		q.Set(k, v)
	}
	sep := "?"
	if strings.Contains(r.Path, "?") {
		sep = "&"
	}
	return u + sep + q.Encode()
}

// FormBody is the request's form encoded as application/x-www-form-urlencoded
// (names sorted), or "" without a form.
func (r *RequestTest) FormBody() string {
	if len(r.Form) == 0 {
		return ""
	}
	f := url.Values{}
	for k, v := range r.Form {
		f.Set(k, v)
	}
	return f.Encode()
}

// RelativeURL writes target relative to base, as suites compare URLs: when
// target is on base's scheme and host and under base's path, the rest of its
// path ("/" for base itself) and its query; otherwise target unchanged. A
// relative target (a Location header) is resolved against base first.
// Fragments are dropped.
func RelativeURL(base, target string) string {
	b, err := url.Parse(base)
	if err != nil {
		return target
	}
	t, err := b.Parse(target)
	if err != nil {
		return target
	}
	t.Fragment, t.RawFragment = "", ""
	basePath := strings.TrimRight(b.EscapedPath(), "/")
	path := t.EscapedPath()
	if !strings.EqualFold(t.Scheme, b.Scheme) || !strings.EqualFold(t.Host, b.Host) {
		return t.String()
	}
	rest, ok := strings.CutPrefix(path, basePath)
	if !ok || rest != "" && rest[0] != '/' {
		return t.String()
	}
	if rest == "" {
		rest = "/"
	}
	if t.RawQuery != "" || t.ForceQuery {
		rest += "?" + t.RawQuery
	}
	return rest
}

// Describe says what the comparison requires: `equal to "x"`, `containing "x"`
// or `matching /x/`; "" when no comparison is set.
func (m *TextMatch) Describe() string {
	switch {
	case m.Equals != nil:
		return fmt.Sprintf("equal to %q", *m.Equals)
	case m.Contains != "":
		return fmt.Sprintf("containing %q", m.Contains)
	case m.Matches != "":
		return "matching /" + m.Matches + "/"
	}
	return ""
}

// Match reports whether s satisfies the comparison; with none set, any s does.
// A pattern that does not compile matches nothing (Validate refuses it).
func (m *TextMatch) Match(s string) bool {
	switch {
	case m.Equals != nil:
		return s == *m.Equals
	case m.Contains != "":
		return strings.Contains(s, m.Contains)
	case m.Matches != "":
		re, err := regexp.Compile(m.Matches)
		return err == nil && re.MatchString(s)
	}
	return true
}

// Response is what a request test's expectations look at.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Location is the Location header written relative to the base URL
	// (RelativeURL), "" when the response has none.
	Location string
}

// Failures lists every expectation the response breaks, each as a sentence;
// none means the test passes.
func (e *RequestExpect) Failures(r Response) []string {
	var out []string
	if e.Status != nil && !e.Status.Matches(r.Status) {
		out = append(out, fmt.Sprintf("the status is %d, expected %s", r.Status, e.Status))
	}
	for _, h := range e.Headers {
		values, present := r.Header[http.CanonicalHeaderKey(h.Name)]
		value := strings.Join(values, ", ")
		switch {
		case h.Absent && present:
			out = append(out, fmt.Sprintf("the header %s is present (%q), expected none", h.Name, value))
		case h.Absent:
		case !present:
			out = append(out, fmt.Sprintf("the header %s is missing", h.Name))
		case !h.Match(value):
			out = append(out, fmt.Sprintf("the header %s is %q, expected it %s", h.Name, value, h.Describe()))
		}
	}
	for _, s := range e.BodyContains {
		if !bytes.Contains(r.Body, []byte(s)) {
			out = append(out, fmt.Sprintf("the body does not contain %q", s))
		}
	}
	for _, s := range e.BodyNotContains {
		if bytes.Contains(r.Body, []byte(s)) {
			out = append(out, fmt.Sprintf("the body contains %q", s))
		}
	}
	for _, p := range e.BodyMatches {
		if re, err := regexp.Compile(p); err != nil || !re.Match(r.Body) {
			out = append(out, fmt.Sprintf("the body does not match /%s/", p))
		}
	}
	if e.Location != nil {
		switch {
		case r.Location == "":
			out = append(out, fmt.Sprintf("there is no redirect location, expected one %s", e.Location.Describe()))
		case !e.Location.Match(r.Location):
			out = append(out, fmt.Sprintf("the redirect location is %q, expected one %s", r.Location, e.Location.Describe()))
		}
	}
	return out
}

// DefaultMarkers are the texts that, found in a response body, fail a probe:
// signs of a file outside the site (path_traversal), of a generated directory
// index (directory_listing) or of an internal error shown to the visitor
// (error_disclosure). security_headers has none.
func DefaultMarkers(probe string) []string {
	switch probe {
	case ProbePathTraversal:
		return []string{"root:x:0:0:", "root:*:0:0:", "root::0:0:", "root:!:0:0:"}
	case ProbeDirectoryListing:
		return []string{"Index of /", "Directory listing for /", "[To Parent Directory]"}
	case ProbeErrorDisclosure:
		return []string{
			"goroutine ", "panic: ", "Traceback (most recent call last)", "Exception in thread \"",
			"\tat java.", "at Object.<anonymous>", "node:internal/", "Stack trace:", "Fatal error: ",
			"SQLSTATE[", "Server Error in '/' Application", "Werkzeug Debugger", "ActionController::",
		}
	}
	return nil
}

// ProbeFailure says why one response to a security probe fails it, or ""
// when it passes: a body showing one of the probe's markers (DefaultMarkers and
// the test's own), or, for security_headers, a required header missing or empty.
func (s *SystemTest) ProbeFailure(header http.Header, body []byte) string {
	if s.Probe == ProbeSecurityHeaders {
		var missing []string
		for _, h := range s.Headers {
			if strings.TrimSpace(header.Get(h)) == "" {
				missing = append(missing, h)
			}
		}
		if len(missing) > 0 {
			return "the response lacks the header " + strings.Join(missing, ", ")
		}
		return ""
	}
	for _, m := range slices.Concat(DefaultMarkers(s.Probe), s.Markers) {
		if bytes.Contains(body, []byte(m)) {
			return fmt.Sprintf("the body shows %q", m)
		}
	}
	return ""
}
