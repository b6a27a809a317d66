package webarena

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"

	"proctor/eval"
)

// Kinds of required_contents of a program_html entry.
const (
	ContentExactMatch  = "exact_match"
	ContentMustInclude = "must_include"
)

// maxReportedValue caps how much of a page value the report keeps.
const maxReportedValue = 2000

// htmlActual is what the HTMLContentEvaluator reports for one entry.
type htmlActual struct {
	URL     string `json:"url"`     // the page read ("last" is the active tab)
	Locator string `json:"locator"` // as written in the spec
	Value   string `json:"value"`   // what was read, shortened
	Note    string `json:"note,omitempty"`
}

// requiredContents is a program_html entry's required_contents.
type requiredContents struct {
	exact       *string
	mustInclude []string
}

// parseRequiredContents decodes required_contents, refusing kinds it does not know.
func parseRequiredContents(raw json.RawMessage) (*requiredContents, error) {
	var kinds map[string]json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &kinds) != nil || len(kinds) == 0 {
		return nil, errors.New("required_contents must be an object with exact_match or must_include")
	}
	rc := &requiredContents{}
	for kind, v := range kinds {
		switch kind {
		case ContentExactMatch:
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, errors.New("required_contents.exact_match must be a string")
			}
			rc.exact = &s
		case ContentMustInclude:
			if err := json.Unmarshal(v, &rc.mustInclude); err != nil || len(rc.mustInclude) == 0 {
				return nil, errors.New("required_contents.must_include must be a non-empty list of strings")
			}
		default:
			return nil, fmt.Errorf("required_contents.%s is not supported (WebArena knows exact_match and must_include)", kind)
		}
	}
	return rc, nil
}

// checkHTML is WebArena's HTMLContentEvaluator: for every program_html entry
// the value read from its page (HTML-unescaped) must be exactly the
// exact_match content or include every must_include content, where a content
// may list alternatives separated by " |OR| ". An entry that was not read, or
// could not be, makes the evaluator's result an error naming the entry.
func checkHTML(s *spec, ps *eval.PageState) eval.EvaluatorResult {
	targets, err := parseTargets(s.ProgramHTML)
	if err != nil {
		return errorResult(HTMLContentEvaluator, s.ProgramHTML, err.Error())
	}
	if ps == nil {
		return errorResult(HTMLContentEvaluator, s.ProgramHTML, "the episode recorded no page state: program_html needs values read from the live page at the end of the episode")
	}
	var (
		problems []string
		actual   []htmlActual
		as       []eval.Assertion
	)
	for i, t := range targets {
		entry := fmt.Sprintf("program_html[%d] (url %q, locator %q)", i, t.URL, excerpt(t.Locator, 120))
		rc, err := parseRequiredContents(t.RequiredContents)
		if err != nil {
			problems = append(problems, entry+": "+err.Error())
			continue
		}
		locator, err := probeLocator(i, t)
		if err != nil {
			problems = append(problems, entry+": "+err.Error())
			continue
		}
		probe, ok := findProbe(ps.Probes, locator, t)
		if !ok {
			problems = append(problems, entry+": was not read from the page (the episode recorded no probe for it)")
			continue
		}
		if probe.Error != "" {
			problems = append(problems, entry+": the page could not be read: "+probe.Error)
			continue
		}
		value, thrown, err := decodeProbeValue(probe.Value)
		if err != nil {
			problems = append(problems, entry+": "+err.Error())
			continue
		}
		value = html.UnescapeString(value)
		a := htmlActual{URL: probe.URL, Locator: t.Locator, Value: excerpt(value, maxReportedValue)}
		if thrown != "" {
			a.Note = "the locator failed on this page, so the value is empty: " + thrown
		}
		actual = append(actual, a)
		as = append(as, contentAssertions(i, rc, value)...)
	}
	if len(problems) > 0 {
		r := errorResult(HTMLContentEvaluator, s.ProgramHTML, strings.Join(problems, "; "))
		if actual != nil {
			r.Actual = mustJSON(actual)
		}
		return r
	}
	return scoredResult(HTMLContentEvaluator, actual, s.ProgramHTML, as)
}

// contentAssertions checks one entry's required contents against its value.
func contentAssertions(i int, rc *requiredContents, value string) []eval.Assertion {
	var as []eval.Assertion
	if rc.exact != nil {
		ok := exactMatch(*rc.exact, value)
		as = append(as, eval.Assertion{Name: fmt.Sprintf("program_html[%d].exact_match", i), Passed: ok,
			Message: verdictMessage(ok, fmt.Sprintf("the value is %q", *rc.exact),
				fmt.Sprintf("the value %q is not %q", excerpt(clean(value), 200), clean(*rc.exact)))})
	}
	for j, content := range rc.mustInclude {
		alts := strings.Split(content, orSeparator)
		ok := slices.ContainsFunc(alts, func(alt string) bool { return mustInclude(alt, value, false) })
		what := fmt.Sprintf("%q", alts[0])
		if len(alts) > 1 {
			what = fmt.Sprintf("one of %q", alts)
		}
		as = append(as, eval.Assertion{Name: fmt.Sprintf("program_html[%d].must_include[%d]", i, j), Passed: ok,
			Message: verdictMessage(ok, "the value includes "+what, "the value does not include "+what)})
	}
	return as
}

// findProbe finds the probe result of an entry: its locator names the entry,
// and its URL must be the entry's page where that page is fixed by the spec.
func findProbe(results []eval.ProbeResult, locator string, t target) (eval.ProbeResult, bool) {
	kind, _ := pageKind(t)
	for _, r := range results {
		if r.Locator != locator {
			continue
		}
		switch kind {
		case "last", targetRedditPost:
			if r.URL != "last" && r.URL != "" {
				continue
			}
		case "url":
			if r.URL != t.URL {
				continue
			}
		}
		return r, true
	}
	return eval.ProbeResult{}, false
}

// decodeProbeValue reads probe.js's tagged value: the text WebArena compares
// (Python's str() of what the locator returned), or why the locator threw
// (the text is then empty, as in WebArena), or an error when the page could not
// be opened at all.
func decodeProbeValue(v string) (value, thrown string, err error) {
	tag, rest, ok := strings.Cut(v, ":")
	if !ok {
		return "", "", errors.New("the probe value is not in probe.js's tagged form")
	}
	switch tag {
	case "value":
		return rest, "", nil
	case "json":
		dec := json.NewDecoder(strings.NewReader(rest))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return "", "", fmt.Errorf("the probe value is not valid JSON: %v", err)
		}
		s := pyStr(x)
		if s == "" { // WebArena: `if not selected_element: selected_element = ""`
			return "", "", nil
		}
		return s, "", nil
	case "thrown":
		if rest == "" {
			rest = "an exception"
		}
		return "", rest, nil
	case "error":
		return "", "", errors.New("the page could not be read: " + rest)
	}
	return "", "", fmt.Errorf("the probe value has the unknown tag %q", tag)
}

// pyStr renders a decoded JSON value as Python's str() renders what
// Playwright hands WebArena: integers without a decimal point, True/False,
// None, lists and dicts in Python's repr.
func pyStr(x any) string {
	if s, ok := x.(string); ok {
		return s
	}
	return pyRepr(x)
}

func pyRepr(x any) string {
	switch v := x.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case string:
		return pyQuote(v)
	case json.Number:
		return pyNumber(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		// JSON objects lose their key order in Go; sorted keys keep the text stable.
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = pyQuote(k) + ": " + pyRepr(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(x)
}

// pyNumber renders a JSON number as Python does after Playwright decoded it:
// whole numbers as ints, others as floats in Python's shortest repr.
func pyNumber(n json.Number) string {
	if i, err := n.Int64(); err == nil {
		return strconv.FormatInt(i, 10)
	}
	f, err := n.Float64()
	if err != nil {
		return n.String()
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	exp := 0
	if f != 0 {
		exp = int(math.Floor(math.Log10(math.Abs(f))))
	}
	if exp < -4 || exp >= 16 {
		return strconv.FormatFloat(f, 'e', -1, 64) // two exponent digits at least, as in Python
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// pyQuote renders a string as Python's repr does for printable text: single
// quotes unless the text holds a single quote and no double quote.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b bytes.Buffer
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
