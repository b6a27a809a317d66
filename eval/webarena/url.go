package webarena

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"proctor/eval"
)

// goldInPred is WebArena's only URL matching rule (url_note): a reference's
// host and path must occur in the final URL's host and path, and every
// reference query parameter must be present with one of the reference values.
const goldInPred = "GOLD in PRED"

// urlActual is what the URLEvaluator reports as its actual value.
type urlActual struct {
	FinalURL string              `json:"final_url"`
	BasePath string              `json:"base_path"`
	Query    map[string][]string `json:"query"`
}

// urlExpected is what the URLEvaluator reports as expected.
type urlExpected struct {
	ReferenceURL string              `json:"reference_url"`
	URLNote      string              `json:"url_note"`
	BasePaths    []string            `json:"base_paths"`
	Query        map[string][]string `json:"query"`
}

// checkURL is WebArena's URLEvaluator. reference_url may list alternatives
// separated by " |OR| ": any one base path (host and path, trailing slashes
// off) must be a substring of the final URL's, and each query parameter named
// by any alternative must carry one of the values the alternatives give it.
// Scheme and fragment are ignored; query values are compared decoded.
func checkURL(s *spec, ps *eval.PageState) eval.EvaluatorResult {
	expectedRaw := mustJSON(map[string]json.RawMessage{"reference_url": rawOrNull(s.ReferenceURL), "url_note": rawOrNull(s.URLNote)})
	ref, ok, err := optionalString(s.ReferenceURL, "reference_url")
	if err != nil || !ok || strings.TrimSpace(ref) == "" {
		return errorResult(URLEvaluator, expectedRaw, "url_match needs a reference_url")
	}
	rule, ok, err := optionalString(s.URLNote, "url_note")
	if err != nil {
		return errorResult(URLEvaluator, expectedRaw, err.Error())
	}
	if !ok {
		rule = goldInPred
	}
	if rule != goldInPred {
		return errorResult(URLEvaluator, expectedRaw, fmt.Sprintf("url_note %q is not supported (WebArena knows %q)", rule, goldInPred))
	}
	if ps == nil || ps.FinalURL == "" {
		return errorResult(URLEvaluator, expectedRaw, "the episode recorded no final URL: url_match needs the active tab's URL at the end of the episode")
	}

	exp := urlExpected{ReferenceURL: ref, URLNote: rule, Query: map[string][]string{}}
	for _, alt := range strings.Split(ref, orSeparator) {
		base, query := parseURL(cleanURL(alt))
		exp.BasePaths = append(exp.BasePaths, base)
		for k, vs := range query {
			for _, v := range vs {
				if !slices.Contains(exp.Query[k], v) {
					exp.Query[k] = append(exp.Query[k], v)
				}
			}
		}
	}
	predBase, predQuery := parseURL(cleanURL(ps.FinalURL))
	act := urlActual{FinalURL: ps.FinalURL, BasePath: predBase, Query: predQuery}

	baseOK := false
	for _, b := range exp.BasePaths {
		if strings.Contains(predBase, b) {
			baseOK = true
			break
		}
	}
	as := []eval.Assertion{{Name: "url_match.base_path", Passed: baseOK, Message: verdictMessage(baseOK,
		fmt.Sprintf("%q contains a reference base path", predBase),
		fmt.Sprintf("%q contains none of the reference base paths %q", predBase, exp.BasePaths))}}
	keys := make([]string, 0, len(exp.Query))
	for k := range exp.Query {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		want := exp.Query[k]
		got := predQuery[k]
		ok := slices.ContainsFunc(want, func(v string) bool { return slices.Contains(got, v) })
		as = append(as, eval.Assertion{Name: fmt.Sprintf("url_match.query[%s]", k), Passed: ok, Message: verdictMessage(ok,
			fmt.Sprintf("query parameter %s is one of %q", k, want),
			fmt.Sprintf("query parameter %s is %q, expected one of %q", k, got, want))})
	}
	return scoredResult(URLEvaluator, act, mustJSON(exp), as)
}

// cleanURL drops trailing slashes, as WebArena does to whole URLs.
func cleanURL(u string) string { return strings.TrimRight(u, "/") }

// parseURL splits a URL as Python's urllib.parse.urlparse does and returns
// its host followed by its path (trailing slashes off) and its decoded query
// parameters without blank values (parse_qs).
func parseURL(raw string) (string, map[string][]string) {
	rest := raw
	// A scheme is letters, digits, '+', '-' and '.', starting with a letter.
	if i := strings.IndexByte(rest, ':'); i > 0 && isScheme(rest[:i]) {
		rest = rest[i+1:]
	}
	netloc := ""
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		netloc, rest = rest[:end], rest[end:]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	query := ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query = rest[:i], rest[i+1:]
	}
	path := rest
	// urlparse moves ";params" of the last path segment out of the path.
	if slash := strings.LastIndexByte(path, '/'); slash >= 0 {
		if semi := strings.IndexByte(path[slash:], ';'); semi >= 0 {
			path = path[:slash+semi]
		}
	} else if semi := strings.IndexByte(path, ';'); semi >= 0 {
		path = path[:semi]
	}
	return cleanURL(netloc + path), parseQuery(query)
}

func isScheme(s string) bool {
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// parseQuery decodes a query string as Python's parse_qs does by default:
// pairs split on '&', pairs without '=' or with an empty value dropped, '+'
// as a space, bad escapes kept literally.
func parseQuery(q string) map[string][]string {
	out := map[string][]string{}
	for _, pair := range strings.Split(q, "&") {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || value == "" {
			continue
		}
		k := unquotePlus(name)
		out[k] = append(out[k], unquotePlus(value))
	}
	return out
}

// unquotePlus decodes %XX escapes and '+'; undecodable bytes become U+FFFD.
func unquotePlus(s string) string {
	s = strings.ReplaceAll(s, "+", " ")
	if !strings.Contains(s, "%") {
		return s
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
