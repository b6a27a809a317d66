package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// offFormat is why a reply is not the JSON object the prompt asks for.
type offFormat struct{ msg string }

func (e *offFormat) Error() string { return e.msg }

func offf(format string, args ...any) error { return &offFormat{msg: fmt.Sprintf(format, args...)} }

// extractObject returns the one JSON object a reply consists of. The reply
// may be wrapped in a single ``` fence (optionally tagged json); any prose
// around it, a second value, or anything but an object is off-format, so a
// verdict is never guessed from text.
func extractObject(reply string) ([]byte, error) {
	text := strings.TrimSpace(reply)
	if strings.HasPrefix(text, "```") {
		inner, ok := strings.CutSuffix(text[3:], "```")
		if !ok {
			return nil, offf("the reply opens a ``` fence it does not close at its end")
		}
		if tag, rest, found := strings.Cut(inner, "\n"); found && (strings.TrimSpace(tag) == "" || strings.EqualFold(strings.TrimSpace(tag), "json")) {
			inner = rest
		}
		if strings.Contains(inner, "```") {
			return nil, offf("the reply holds more than one ``` fence")
		}
		text = strings.TrimSpace(inner)
	}
	if !strings.HasPrefix(text, "{") {
		return nil, offf("the reply is not a JSON object: it starts with %s", quoteShort(text))
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var obj json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return nil, offf("the reply is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	rest := strings.TrimSpace(text[dec.InputOffset():])
	switch {
	case rest == "":
		return obj, nil
	case strings.HasPrefix(rest, "{"):
		return nil, offf("the reply holds more than one JSON object")
	default:
		return nil, offf("the reply has text after its JSON object: %s", quoteShort(rest))
	}
}

// fields is a JSON object's members, read strictly: duplicate keys are
// refused, and each accessor demands an exact JSON type.
type fields struct {
	where string // "the reply" or "items[2]", for messages
	m     map[string]json.RawMessage
}

// objectFields splits raw, which must be a JSON object, into its members.
func objectFields(where string, raw []byte) (*fields, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, offf("%s must be a JSON object, got %s", where, kindOf(raw))
	}
	f := &fields{where: where, m: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, offf("%s is not valid JSON: %s", where, strings.TrimPrefix(err.Error(), "json: "))
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, offf("%s is not valid JSON: %s", where, strings.TrimPrefix(err.Error(), "json: "))
		}
		if _, dup := f.m[key]; dup {
			return nil, offf("%s has the field %s twice", where, quoteShort(key))
		}
		f.m[key] = val
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, offf("%s is not valid JSON: %s", where, strings.TrimPrefix(err.Error(), "json: "))
	}
	return f, nil
}

// only refuses members other than names.
func (f *fields) only(names ...string) error {
	for key := range f.m {
		known := false
		for _, n := range names {
			known = known || key == n
		}
		if !known {
			return offf("%s has the unknown field %s (expected only %s)", f.where, quoteShort(key), strings.Join(quoteAll(names), ", "))
		}
	}
	return nil
}

// get returns a required member.
func (f *fields) get(name string) (json.RawMessage, error) {
	v, ok := f.m[name]
	if !ok {
		return nil, offf("%s lacks the required field %q", f.where, name)
	}
	return v, nil
}

// bool reads a member that must be a JSON boolean (not "yes", not 1).
func (f *fields) bool(name string) (bool, error) {
	v, err := f.get(name)
	if err != nil {
		return false, err
	}
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, offf("%s: field %q must be a JSON boolean, got %s", f.where, name, kindOf(v))
}

// string reads a member that must be a JSON string.
func (f *fields) string(name string) (string, error) {
	v, err := f.get(name)
	if err != nil {
		return "", err
	}
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", offf("%s: field %q must be a JSON string, got %s", f.where, name, kindOf(v))
	}
	return s, nil
}

// int reads a member that must be a JSON integer within [lo, hi].
func (f *fields) int(name string, lo, hi int) (int, error) {
	v, err := f.get(name)
	if err != nil {
		return 0, err
	}
	n, ok := integer(v)
	if !ok {
		return 0, offf("%s: field %q must be an integer from %d to %d, got %s", f.where, name, lo, hi, kindOf(v))
	}
	if n < lo || n > hi {
		return 0, offf("%s: field %q must be an integer from %d to %d, got %d", f.where, name, lo, hi, n)
	}
	return n, nil
}

// array reads a member that must be a JSON array.
func (f *fields) array(name string) ([]json.RawMessage, error) {
	v, err := f.get(name)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &items) != nil {
		return nil, offf("%s: field %q must be a JSON array, got %s", f.where, name, kindOf(v))
	}
	return items, nil
}

// integer reads a JSON number without a fraction or exponent.
func integer(v json.RawMessage) (int, bool) {
	s := string(v)
	if s == "" || strings.ContainsAny(s, ".eE") {
		return 0, false
	}
	var n int
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, false
	}
	return n, true
}

// kindOf names a JSON value's type for messages, quoting short strings.
func kindOf(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	if s == "" {
		return "nothing"
	}
	switch s[0] {
	case '"':
		var str string
		if json.Unmarshal(v, &str) != nil {
			return "the string " + firstRunes(s, maxQuoted)
		}
		return "the string " + quoteShort(str)
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "the boolean " + s
	case 'n':
		return "null"
	}
	return "the number " + firstRunes(s, 20)
}

// maxQuoted caps the reply text an error message quotes, in characters:
// enough to recognise what was wrong, too little to carry much of whatever a
// reply was led to repeat, such as the fuzzy-match judge's reference answer.
const maxQuoted = 40

// quoteShort quotes at most maxQuoted characters of reply text, saying how
// much was left out.
func quoteShort(s string) string {
	total := utf8.RuneCountInString(s)
	if total <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d more characters)", strconv.Quote(firstRunes(s, maxQuoted)), total-maxQuoted)
}

// quoteAll quotes names the judge was given, which need no cap.
func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// firstRunes returns at most n runes of s.
func firstRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// truncate cuts s to at most n runes, saying how much was cut.
func truncate(s string, n int) string {
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s
	}
	return firstRunes(s, n) + fmt.Sprintf("… (%d more characters)", total-n)
}
