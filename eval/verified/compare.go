package verified

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// assertion is one failed (or, with passed, informational) check, named as
// WebArena-Verified names them: "agent_response.task_type_mismatch",
// "retrieved_data_array_values_mismatch", "missing_navigation_event".
type assertion struct {
	name   string
	msgs   []string
	passed bool
}

func fail(name string, msgs ...string) assertion { return assertion{name: name, msgs: msgs} }

// compareOpts are the comparison settings that hold for a whole value.
type compareOpts struct {
	ordered     bool
	ignored     map[string]bool // object keys whose values are not compared
	ignoreExtra bool            // extra keys in actual objects are fine
}

// compare compares an actual normalised value with the expected one and
// returns what differs (nothing when they match): objects key by key, lists in
// order or as multisets, values by their type's equality.
func compare(actual, expected any, path string, o compareOpts) []assertion {
	if expected == nil && actual == nil {
		return nil
	}
	if expected == nil || actual == nil {
		return []assertion{fail(path+"_none_mismatch", fmt.Sprintf("Expected %s, got %s", display(expected), display(actual)))}
	}
	switch e := expected.(type) {
	case map[string]any:
		a, ok := actual.(map[string]any)
		if !ok {
			return []assertion{fail(path+"_invalid_format", "Expected a structured object, but got: "+kindName(actual))}
		}
		var out []assertion
		var missing, extra []string
		for _, k := range sortedKeys(e) {
			if _, ok := a[k]; !ok {
				missing = append(missing, k)
			}
		}
		for _, k := range sortedKeys(a) {
			if _, ok := e[k]; !ok {
				extra = append(extra, k)
			}
		}
		var msgs []string
		if len(extra) > 0 && !o.ignoreExtra {
			msgs = append(msgs, "Extra keys in actual object: "+quoteList(extra))
		}
		if len(missing) > 0 {
			msgs = append(msgs, "Missing keys in actual object: "+quoteList(missing))
		}
		if len(msgs) > 0 {
			out = append(out, fail(path+"_keys_mismatch", msgs...))
		}
		for _, k := range sortedKeys(e) {
			av, ok := a[k]
			if !ok || o.ignored[k] {
				continue
			}
			out = append(out, compare(av, e[k], path+"."+k, o)...)
		}
		return out
	case []any:
		a, ok := actual.([]any)
		if !ok {
			return []assertion{fail(path+"_invalid_format", "Expected an array, but got: "+kindName(actual))}
		}
		if o.ordered {
			return compareOrdered(a, e, path, o)
		}
		return compareUnordered(a, e, path, o)
	}
	if !scalarEqual(expected, actual) {
		return []assertion{fail(path+"_mismatch", fmt.Sprintf("Expected %s, got %s", display(expected), display(actual)))}
	}
	return nil
}

func compareOrdered(actual, expected []any, path string, o compareOpts) []assertion {
	var out []assertion
	matched := 0
	n := min(len(actual), len(expected))
	for i := 0; i < n; i++ {
		nested := compare(actual[i], expected[i], fmt.Sprintf("%s[%d]", path, i), o)
		if len(nested) == 0 {
			matched++
		}
		out = append(out, nested...)
	}
	if len(actual) != len(expected) || len(out) == 0 && matched < len(expected) {
		out = append(out, fail(path+"_array_values_mismatch",
			fmt.Sprintf("Array value mismatch (ordered). Matched (%d/%d)", matched, len(expected)),
			fmt.Sprintf("Expected: %s, Got: %s", displayList(expected), displayList(actual))))
	}
	return out
}

// compareUnordered pairs expected and actual items as a maximum matching, so
// overlapping alternatives or tolerances never hide a valid pairing.
func compareUnordered(actual, expected []any, path string, o compareOpts) []assertion {
	fits := make([][]bool, len(expected))
	for i := range expected {
		fits[i] = make([]bool, len(actual))
		for j := range actual {
			fits[i][j] = len(compare(actual[j], expected[i], fmt.Sprintf("%s[%d]", path, i), o)) == 0
		}
	}
	owner := make([]int, len(actual))
	for j := range owner {
		owner[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j := range actual {
			if fits[i][j] && !seen[j] {
				seen[j] = true
				if owner[j] < 0 || try(owner[j], seen) {
					owner[j] = i
					return true
				}
			}
		}
		return false
	}
	matched := 0
	for i := range expected {
		if try(i, make([]bool, len(actual))) {
			matched++
		}
	}
	missing, extra := len(expected)-matched, len(actual)-matched
	if missing == 0 && extra == 0 {
		return nil
	}
	var msg string
	switch {
	case missing == 0:
		msg = fmt.Sprintf("Array contains all expected elements (%d/%d) but has %d extra element(s)", matched, len(expected), extra)
	case extra == 0:
		msg = fmt.Sprintf("Array is missing %d expected element(s). Matched (%d/%d)", missing, matched, len(expected))
	default:
		msg = fmt.Sprintf("Array value mismatch (unordered). Matched (%d/%d), Missing: %d, Extra: %d", matched, len(expected), missing, extra)
	}
	return []assertion{fail(path+"_array_values_mismatch", msg,
		fmt.Sprintf("Expected: %s, Got: %s", displayList(expected), displayList(actual)))}
}

// scalarEqual compares two values that are neither objects nor lists.
func scalarEqual(expected, actual any) bool {
	switch e := expected.(type) {
	case *tval:
		switch a := actual.(type) {
		case *tval:
			return e.equal(a)
		case rawVal:
			// A raw string still compares as a string, as WebArena-Verified's
			// string type normalises strings on the fly.
			if s, ok := a.v.(string); ok && e.kind == typeString {
				folded := strings.TrimSpace(strings.ToLower(foldText(s, nil)))
				for _, alt := range e.alts {
					if stringAltEqual(alt, folded) {
						return true
					}
				}
			}
		}
		return false
	case rawVal:
		if a, ok := actual.(rawVal); ok {
			return jsonEqual(e.v, a.v)
		}
	}
	return false
}

// jsonEqual compares decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	if x, ok := numberValue(a); ok {
		y, ok := numberValue(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case nil:
		return b == nil
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
			if !jsonEqual(x[i], y[i]) {
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
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// display renders a value for an assertion message.
func display(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case *tval:
		return t.text()
	case rawVal:
		if s, ok := t.v.(string); ok {
			return fmt.Sprintf("%q", truncate(s, 200))
		}
		return truncate(compactJSON(t.v), 200)
	case []any:
		return displayList(t)
	case map[string]any:
		parts := make([]string, 0, len(t))
		for _, k := range sortedKeys(t) {
			parts = append(parts, k+": "+display(t[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// displayList shows the first two and the last item of long lists.
func displayList(l []any) string {
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = display(x)
	}
	if len(parts) > 3 {
		parts = []string{parts[0], parts[1], "...", parts[len(parts)-1]}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func kindName(v any) string {
	switch t := v.(type) {
	case rawVal:
		return kindName(t.v)
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case *tval:
		return t.kind
	}
	return fmt.Sprintf("%T", v)
}

func quoteList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	sort.Strings(q)
	return "[" + strings.Join(q, ", ") + "]"
}
