package verified

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Value types of WebArena-Verified's results_schema, post_data_schema and
// query_params_schema: a schema's "format" names the type, else its "type".
const (
	typeString      = "string"
	typeNumber      = "number"
	typeInteger     = "integer"
	typeCurrency    = "currency"
	typeDate        = "date"
	typeMonth       = "month"
	typeDuration    = "duration"
	typeDistance    = "distance"
	typeCoordinates = "coordinates"
	typeLocation    = "location-name"
	typeURL         = "url"
	typeBoolean     = "boolean"
	typeNull        = "null"
	typeJSON        = "json"
	typeMarkdown    = "markdown"
	typeBase64      = "base64"
	typeStringList  = "string_list"
)

// ValueTypes lists the value types the evaluator implements. A spec naming any
// other type (WebArena-Verified's full_address, a misspelling) is an error.
func ValueTypes() []string {
	return []string{typeString, typeNumber, typeInteger, typeCurrency, typeDate, typeMonth, typeDuration,
		typeDistance, typeCoordinates, typeLocation, typeURL, typeBoolean, typeNull, typeJSON, typeMarkdown,
		typeBase64, typeStringList}
}

func supportedType(name string) bool { return slices.Contains(ValueTypes(), name) }

// Tolerances WebArena-Verified allows.
const (
	currencyTolerance      = 0.1   // absolute, in the currency's unit
	durationToleranceSecs  = 180.0 // or 10 % of the larger duration, whichever is larger
	durationToleranceShare = 0.10
	distanceToleranceM     = 10.0 // or 2 % of the larger distance
	distanceToleranceShare = 0.02
	coordinateTolerance    = 1e-5 // degrees, per component (about 1.1 m)
	locationMinRatio       = 80   // token-sort similarity, 0–100
)

// tval is one normalised value of a type: one or more acceptable
// alternatives (an expected list nested in a list means "any of these").
type tval struct {
	kind string
	alts []any
}

// coord is a latitude/longitude pair.
type coord struct{ lat, lon float64 }

// normalizer carries what value normalisation needs from the evaluation: how
// to turn site URLs into placeholders and back, compiled patterns, and the URL
// options of a network check.
type normalizer struct {
	sites  *siteMap
	re     *regexCache
	url    urlOptions
	strict bool // expected values: a value that does not normalise is an error
	// lenient adds readings the official evaluator does not have (a currency
	// sign on a number, hemisphere letters on coordinates); the lenient
	// evaluator only.
	lenient bool
}

// derenderFn is the site-URL-to-placeholder step of string folding, or nil
// when no site URL is known.
func (n *normalizer) derenderFn() func(string) string {
	if !n.sites.known() {
		return nil
	}
	return n.sites.derenderText
}

// newNorm normalises raw as a value of kind. A list is a set of alternatives,
// except a two-item list of scalars for coordinates, which is one pair.
func (n *normalizer) newNorm(kind string, raw any) (*tval, error) {
	if !supportedType(kind) {
		return nil, fmt.Errorf("value type %q is not supported (supported: %s)", kind, strings.Join(ValueTypes(), ", "))
	}
	list, isList := raw.([]any)
	if isList && kind == typeCoordinates && len(list) == 2 && isScalar(list[0]) && isScalar(list[1]) {
		isList = false
	}
	if isList && !n.strict && (!n.lenient || len(list) != 1) {
		// The official evaluator reads a list in an answer as alternatives, and
		// alternatives on the agent's side never equal the expected value: a
		// one-item nested list ([["Duffle"]]) does not pass. The lenient
		// reading takes a one-item list as its item, never several (a hedge).
		return nil, fmt.Errorf("%s where one value is expected", describe(raw))
	}
	if !isList {
		v, err := n.parse(kind, raw)
		if err != nil {
			return nil, err
		}
		return &tval{kind: kind, alts: []any{v}}, nil
	}
	if len(list) == 0 {
		return nil, errors.New("an empty list of alternatives")
	}
	if n.strict && !n.lenient && kind == typeString {
		// The official evaluator's string type takes only text alternatives:
		// an expected [1] without a schema is not gradable there.
		for _, item := range list {
			if _, ok := item.(string); !ok {
				return nil, fmt.Errorf("the official evaluator cannot grade alternatives %s of the string type: they must all be text, got %s (give the value a type in the schema)", truncate(compactJSON(raw), 60), describe(item))
			}
		}
	}
	out := &tval{kind: kind, alts: make([]any, 0, len(list))}
	for _, item := range list {
		v, err := n.parse(kind, item)
		if err != nil {
			return nil, err
		}
		out.alts = append(out.alts, v)
	}
	return out, nil
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, json.Number, float64:
		return true
	}
	return false
}

// parse normalises one alternative.
func (n *normalizer) parse(kind string, v any) (any, error) {
	if s, ok := v.(string); ok {
		switch kind {
		case typeURL, typeBase64:
			s = strings.TrimSpace(s)
		case typeMarkdown, typeJSON:
			// Site URLs in content compare as their placeholders, as in the
			// runner's resolved specs; WebArena-Verified leaves these as written.
			if d := n.derenderFn(); d != nil {
				s = d(s)
			}
			if kind == typeMarkdown {
				s = strings.TrimSpace(s)
			}
		case typeNull:
			s = strings.Join(strings.Fields(strings.ToLower(s)), " ")
			s = strings.ReplaceAll(strings.ReplaceAll(s, " /", "/"), "/ ", "/")
		default:
			s = foldText(s, n.derenderFn())
		}
		v = s
	}
	switch kind {
	case typeString:
		return n.parseString(v)
	case typeLocation:
		if v == nil {
			return nil, errors.New("a location name cannot be null")
		}
		if falsy(v) {
			return "", nil
		}
		return strings.TrimSpace(strings.ToLower(pyStr(v))), nil
	case typeNumber, typeInteger:
		return parseNumberValue(v, n.lenient)
	case typeCurrency:
		return parseCurrency(v)
	case typeDate:
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("a date must be a non-empty string, got %s", describe(v))
		}
		return parseDate(s)
	case typeMonth:
		return parseMonth(v)
	case typeDuration:
		return parseDuration(v)
	case typeDistance:
		return parseDistance(v)
	case typeCoordinates:
		return parseCoordinates(v, n.lenient)
	case typeURL:
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("a URL must be a non-empty string, got %s", describe(v))
		}
		return n.parseURL(s, n.url)
	case typeBoolean:
		return parseBoolean(v)
	case typeNull:
		if falsy(v) {
			if isNumber(v) {
				return nil, errors.New("the number 0 is not an empty value")
			}
			return nil, nil
		}
		if s, ok := v.(string); ok && slices.Contains([]string{"n/a", "na", "nan", "null", "none"}, s) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s is not an empty value (null, \"\", N/A, none)", describe(v))
	case typeJSON:
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("a JSON value must be a non-empty string, got %s", describe(v))
		}
		return canonicalJSONText(s)
	case typeMarkdown:
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("markdown must be a non-empty string, got %s", describe(v))
		}
		return normalizeMarkdown(s), nil
	case typeBase64:
		return n.parseBase64(v)
	case typeStringList:
		if falsy(v) {
			return nil, errors.New("an empty string list")
		}
		var items []string
		for _, p := range strings.Split(pyStr(v), ",") {
			if p = strings.TrimSpace(p); p != "" {
				items = append(items, p)
			}
		}
		if len(items) == 0 {
			return nil, fmt.Errorf("no items in the string list %q", pyStr(v))
		}
		sort.Strings(items)
		return items, nil
	}
	return nil, fmt.Errorf("value type %q is not supported", kind)
}

// parseString is a plain string: lower case, or a pattern kept as written.
func (n *normalizer) parseString(v any) (any, error) {
	if falsy(v) && !isNumber(v) && v != false {
		return "", nil
	}
	s := pyStr(v)
	if isRegexp(s) {
		re, err := n.re.compile(strings.TrimSpace(s), true, false)
		if err != nil {
			return nil, err
		}
		return re, nil
	}
	return strings.TrimSpace(strings.ToLower(s)), nil
}

func (n *normalizer) parseBase64(v any) (any, error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return nil, fmt.Errorf("base64 content must be a non-empty string, got %s", describe(v))
	}
	if isRegexp(s) {
		return n.re.compile(s, false, true)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || !utf8.Valid(raw) {
		return nil, fmt.Errorf("invalid base64 content %q", truncate(s, 40))
	}
	text := strings.ReplaceAll(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\r", "\n")
	return strings.TrimSpace(text), nil
}

// equal reports whether two normalised values of the same type match: any
// alternative of one matching any alternative of the other.
func (a *tval) equal(b *tval) bool {
	if a.kind != b.kind {
		return false
	}
	for _, x := range a.alts {
		for _, y := range b.alts {
			if altEqual(a.kind, x, y) {
				return true
			}
		}
	}
	return false
}

// altEqual compares two alternatives of kind, with the type's tolerance.
func altEqual(kind string, x, y any) bool {
	switch kind {
	case typeString:
		return stringAltEqual(x, y)
	case typeLocation:
		xs, ys := x.(string), y.(string)
		if xs == "" || ys == "" {
			return xs == ys
		}
		return tokenSortRatio(xs, ys) >= locationMinRatio
	case typeNumber, typeInteger:
		return x.(float64) == y.(float64)
	case typeCurrency:
		return math.Abs(x.(float64)-y.(float64)) <= currencyTolerance+1e-9
	case typeDuration:
		a, b := x.(float64), y.(float64)
		return math.Abs(a-b) <= math.Max(durationToleranceSecs, durationToleranceShare*math.Max(a, b))
	case typeDistance:
		a, b := x.(float64), y.(float64)
		return math.Abs(a-b) <= math.Max(distanceToleranceM, distanceToleranceShare*math.Max(a, b))+1e-9
	case typeCoordinates:
		a, b := x.(coord), y.(coord)
		return math.Abs(a.lat-b.lat) <= coordinateTolerance+1e-12 && math.Abs(a.lon-b.lon) <= coordinateTolerance+1e-12
	case typeBase64:
		if re, ok := x.(*pyRegexp); ok {
			s, isStr := y.(string)
			return isStr && re.fullmatch(s)
		}
		if re, ok := y.(*pyRegexp); ok {
			s, isStr := x.(string)
			return isStr && re.fullmatch(s)
		}
		return x == y
	case typeURL:
		return urlEqual(x.(*urlValue), y.(*urlValue))
	case typeStringList:
		return slices.Equal(x.([]string), y.([]string))
	case typeNull:
		return x == nil && y == nil
	}
	return x == y
}

// stringAltEqual matches patterns (case-insensitive, whole string), then equal
// strings, then strings equal once surrounding quotes and punctuation go.
func stringAltEqual(x, y any) bool {
	if re, ok := x.(*pyRegexp); ok {
		if s, isStr := y.(string); isStr {
			return re.fullmatch(s)
		}
		return re.src == y.(*pyRegexp).src
	}
	if re, ok := y.(*pyRegexp); ok {
		return re.fullmatch(x.(string))
	}
	xs, ys := x.(string), y.(string)
	return xs == ys || stripQuotePunct(xs) == stripQuotePunct(ys)
}

// show renders the first alternative for reports, as WebArena-Verified does.
func (a *tval) show() any { return showAlt(a.kind, a.alts[0]) }

func showAlt(kind string, v any) any {
	switch t := v.(type) {
	case *pyRegexp:
		return t.src
	case coord:
		return map[string]float64{"latitude": t.lat, "longitude": t.lon}
	case *urlValue:
		return t.show()
	case float64:
		if kind == typeDuration {
			return pyTimedelta(t)
		}
		return t
	}
	return v
}

// text renders a value for assertion messages.
func (a *tval) text() string {
	v := a.show()
	if s, ok := v.(string); ok {
		return s
	}
	return compactJSON(v)
}

// falsy is Python's notion of an empty value.
func falsy(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case json.Number:
		f, err := t.Float64()
		return err == nil && f == 0
	case float64:
		return t == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, float64, int:
		return true
	}
	return false
}

// pyStr renders a decoded JSON value the way Python's str() renders the value
// json.loads gives: integers as digits, floats with a decimal point, booleans
// as True/False.
func pyStr(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case string:
		return t
	case bool:
		if t {
			return "True"
		}
		return "False"
	case json.Number:
		s := t.String()
		if !strings.ContainsAny(s, ".eE") {
			return s
		}
		f, err := t.Float64()
		if err != nil {
			return s
		}
		return pyFloat(f)
	case float64:
		return pyFloat(t)
	}
	return compactJSON(v)
}

// pyFloat formats a float like Python's repr for ordinary magnitudes.
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// numberValue reads a decoded JSON number.
func numberValue(v any) (float64, bool) {
	switch t := v.(type) {
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	case float64:
		return t, true
	case int:
		return float64(t), true
	}
	return 0, false
}

// parseNumberValue is the number type: JSON numbers, numeric strings with
// thousands separators ("1,234.5", "1 000") and number words ("twenty
// three"). The lenient reading adds two that WebArena-Verified's number type
// lacks: a leading or trailing currency sign ("$79.00", "79 €") and the
// European grouping "1.234,56".
func parseNumberValue(v any, lenient bool) (float64, error) {
	if f, ok := numberValue(v); ok {
		return f, nil
	}
	switch t := v.(type) {
	case bool:
		if t {
			return 1, nil
		}
		return 0, nil
	case string:
		if t == "" {
			return 0, errors.New("an empty number")
		}
		s := strings.TrimSpace(t)
		if lenient {
			s = stripCurrencySign(s)
		}
		if lenient && europeanNumber(s) {
			s = strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(s, ".", ""), " ", ""), ",", ".")
		}
		s = strings.ReplaceAll(strings.ReplaceAll(s, ",", ""), " ", "")
		if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.HasPrefix(strings.TrimLeft(s, "+-"), "0x") {
			return f, nil
		}
		if f, err := parseNumberWords(t); err == nil {
			return f, nil
		}
		return 0, fmt.Errorf("%q is not a number", t)
	}
	return 0, fmt.Errorf("%s is not a number", describe(v))
}

// stripCurrencySign removes one currency sign or code before or after the
// amount (folded text spells € as "eur" and £ as "ps").
func stripCurrencySign(s string) string {
	s = strings.TrimSpace(s)
	sign := ""
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, s = s[:1], strings.TrimSpace(s[1:])
	}
	for _, c := range []string{"us$", "usd", "eur", "gbp", "$", "ps"} {
		if rest, ok := strings.CutPrefix(s, c); ok && rest != "" && (rest[0] >= '0' && rest[0] <= '9' || rest[0] == ' ' || rest[0] == '.') {
			s = strings.TrimSpace(rest)
			break
		}
		if rest, ok := strings.CutSuffix(s, c); ok && rest != "" && (rest[len(rest)-1] >= '0' && rest[len(rest)-1] <= '9' || rest[len(rest)-1] == ' ') {
			s = strings.TrimSpace(rest)
			break
		}
	}
	return sign + s
}

// europeanNumber matches "1.234,56" and "1 234,56": grouped thousands and a
// decimal comma.
func europeanNumber(s string) bool {
	s = strings.TrimLeft(s, "+-")
	intPart, frac, ok := strings.Cut(s, ",")
	if !ok || frac == "" || !allDigits(frac) || strings.Contains(frac, ",") {
		return false
	}
	sep := ""
	switch {
	case strings.Contains(intPart, "."):
		sep = "."
	case strings.Contains(intPart, " "):
		sep = " "
	default:
		return false
	}
	groups := strings.Split(intPart, sep)
	if len(groups[0]) == 0 || len(groups[0]) > 3 || !allDigits(groups[0]) {
		return false
	}
	for _, g := range groups[1:] {
		if len(g) != 3 || !allDigits(g) {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseCurrency reads an amount of money: signs and codes around it are
// ignored, the last of "." and "," that is followed by one or two digits is the
// decimal separator, the other groups thousands ("$1,234.56", "1.234,56 €",
// "-$50"). WebArena-Verified allows ±0.1.
func parseCurrency(v any) (float64, error) {
	if f, ok := numberValue(v); ok {
		return f, nil
	}
	if obj, isObj := v.(map[string]any); isObj && len(obj) > 0 {
		// As the official evaluator does, an object is read through its text:
		// {"answer": [148.8]} is 148.8.
		v = pyStr(obj)
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return 0, fmt.Errorf("%s is not an amount of money", describe(v))
	}
	start := strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' })
	if start < 0 {
		return 0, fmt.Errorf("%q has no amount", s)
	}
	negative := strings.Contains(s[:start], "-")
	end := start
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || s[end] == ',' || s[end] == ' ' || s[end] == '\'') {
		end++
	}
	if strings.IndexFunc(s[end:], func(r rune) bool { return r >= '0' && r <= '9' }) >= 0 {
		// "$20.00 or $25.00": a hedged answer is not one amount.
		return 0, fmt.Errorf("%q holds more than one amount", truncate(s, 60))
	}
	amount := strings.TrimRight(s[start:end], " .,'")
	amount = strings.NewReplacer(" ", "", "'", "").Replace(amount)
	dec := decimalSeparator(amount)
	var b strings.Builder
	for i := 0; i < len(amount); i++ {
		switch c := amount[i]; {
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case string(c) == dec:
			b.WriteByte('.')
		}
	}
	f, err := strconv.ParseFloat(b.String(), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an amount of money", s)
	}
	if negative {
		f = -f
	}
	return f, nil
}

// decimalSeparator picks the decimal separator of a digit string with "." and
// "," in it, or "" when it has none.
func decimalSeparator(a string) string {
	dot, comma := strings.LastIndex(a, "."), strings.LastIndex(a, ",")
	switch {
	case dot < 0 && comma < 0:
		return ""
	case dot >= 0 && comma >= 0:
		if dot > comma {
			return "."
		}
		return ","
	}
	sep := "."
	if comma >= 0 {
		sep = ","
	}
	parts := strings.Split(a, sep)
	thousands := len(parts) > 1 && len(parts[0]) <= 3
	for _, p := range parts[1:] {
		if len(p) != 3 {
			thousands = false
		}
	}
	if thousands && (sep == "," || len(parts) > 2) {
		return ""
	}
	if len(parts) > 2 {
		return "" // "1.234.567"
	}
	return sep
}

func parseBoolean(v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case string:
		switch strings.TrimSpace(t) {
		case "true", "yes", "y", "1", "t", "on":
			return true, nil
		case "false", "no", "n", "0", "f", "off":
			return false, nil
		}
		return false, fmt.Errorf("%q is not a boolean", t)
	}
	if f, ok := numberValue(v); ok {
		return f != 0, nil
	}
	return false, fmt.Errorf("%s is not a boolean", describe(v))
}

// canonicalJSONText parses a JSON text and writes it compactly with sorted keys.
func canonicalJSONText(s string) (string, error) {
	v, err := decodeJSON([]byte(s))
	if err != nil {
		return "", fmt.Errorf("invalid JSON text %q", truncate(s, 40))
	}
	return compactJSON(v), nil
}

// normalizeMarkdown evens out what renders the same: line endings, trailing
// blanks, runs of blank lines, header spacing, list markers and indentation,
// links broken across lines and blanks inside link text and URLs.
func normalizeMarkdown(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	s = regexp.MustCompile(`(?m)[ \t]+$`).ReplaceAllString(s, "")
	s = regexp.MustCompile(`\n{3,}`).ReplaceAllString(s, "\n\n")
	s = regexp.MustCompile(`(?m)^(\s*)(#{1,6})[ \t]+`).ReplaceAllString(s, "$1$2 ")
	s = regexp.MustCompile(`(?m)^(\s*)[*+][ \t]+`).ReplaceAllString(s, "$1- ")
	s = regexp.MustCompile(`(?m)^[ \t]+(-)`).ReplaceAllString(s, "  $1")
	s = regexp.MustCompile(`\[([^\]]*?)\n\s*([^\]]*?)\](\([^)]+\))`).ReplaceAllString(s, "[$1 $2]$3")
	s = regexp.MustCompile(`\[([^\]]+)\]`).ReplaceAllStringFunc(s, func(m string) string {
		return "[" + strings.Join(strings.Fields(m[1:len(m)-1]), " ") + "]"
	})
	s = regexp.MustCompile(`\(\s*([^)]+?)\s*\)`).ReplaceAllString(s, "($1)")
	return strings.TrimSpace(s)
}

// describe names a decoded JSON value's kind for messages.
func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", truncate(t, 60))
	case bool:
		return fmt.Sprintf("the boolean %t", t)
	case json.Number, float64:
		return fmt.Sprintf("the number %v", t)
	case []any:
		return fmt.Sprintf("a list of %d", len(t))
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
