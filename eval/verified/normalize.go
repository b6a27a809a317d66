package verified

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Value normalisation shared by the checks: strings are trimmed, case-folded and
// have their runs of white space collapsed; anything that reads as a number
// ("12", "12.0", "$1,234.50") becomes a float64, so "12" equals 12.0; object keys
// are folded the same way. The full WebArena-Verified evaluator adds type-aware
// normalisation (dates, months, durations, URLs) driven by results_schema.

// normalize returns v (decoded JSON) in comparable form.
func normalize(v any) any {
	switch t := v.(type) {
	case string:
		return normalizeString(t)
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return f
		}
		return normalizeString(t.String())
	case int:
		return float64(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[foldString(k)] = normalize(e)
		}
		return out
	}
	return v // nil, bool, float64
}

// foldString trims, collapses white space and lower-cases s.
func foldString(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// normalizeString reads s as a number when it is one, else folds it.
func normalizeString(s string) any {
	if f, ok := parseNumber(s); ok {
		return f
	}
	return foldString(s)
}

// parseNumber reads a plain decimal number, optionally signed, prefixed by a
// currency symbol and written with thousands separators: "-3", "12.50", "$1,234".
func parseNumber(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	sign := ""
	if strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+") {
		sign, t = t[:1], t[1:]
	}
	for _, c := range []string{"US$", "$", "€", "£"} {
		if rest, ok := strings.CutPrefix(t, c); ok {
			t = strings.TrimSpace(rest)
			break
		}
	}
	intPart, frac, hasFrac := strings.Cut(t, ".")
	if hasFrac && (frac == "" || !allDigits(frac)) {
		return 0, false
	}
	if strings.Contains(intPart, ",") {
		groups := strings.Split(intPart, ",")
		if len(groups[0]) == 0 || len(groups[0]) > 3 || !allDigits(groups[0]) {
			return 0, false
		}
		for _, g := range groups[1:] {
			if len(g) != 3 || !allDigits(g) {
				return 0, false
			}
		}
		intPart = strings.Join(groups, "")
	} else if intPart == "" && !hasFrac || intPart != "" && !allDigits(intPart) {
		return 0, false
	}
	num := intPart
	if hasFrac {
		num += "." + frac
	}
	f, err := strconv.ParseFloat(sign+num, 64)
	return f, err == nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// equalValues compares two normalised values structurally.
func equalValues(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) <= 1e-9*math.Max(1, math.Max(math.Abs(x), math.Abs(y)))
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, found := y[k]
			if !found || !equalValues(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// matchItem compares one expected list item with an actual one. An expected item
// that is itself a list lists acceptable alternatives, as in WebArena-Verified.
func matchItem(expected, actual any) bool {
	if equalValues(expected, actual) {
		return true
	}
	if alts, ok := expected.([]any); ok {
		for _, alt := range alts {
			if equalValues(alt, actual) {
				return true
			}
		}
	}
	return false
}

// matchLists compares normalised lists: item by item when ordered, otherwise as
// multisets (every expected item matched by a distinct actual item).
func matchLists(expected, actual []any, ordered bool) bool {
	if len(expected) != len(actual) {
		return false
	}
	if ordered {
		for i := range expected {
			if !matchItem(expected[i], actual[i]) {
				return false
			}
		}
		return true
	}
	used := make([]bool, len(actual))
	var assign func(i int) bool
	assign = func(i int) bool {
		if i == len(expected) {
			return true
		}
		for j := range actual {
			if !used[j] && matchItem(expected[i], actual[j]) {
				used[j] = true
				if assign(i + 1) {
					return true
				}
				used[j] = false
			}
		}
		return false
	}
	return assign(0)
}

// asList wraps a value that is not a list into a one-item list; nil stays nil.
func asList(v any) []any {
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		return t
	}
	return []any{v}
}

// decodeJSON decodes raw into a generic value with numbers as json.Number.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
