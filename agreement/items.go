package agreement

import (
	"fmt"
	"slices"
	"strings"
)

// Item is one trajectory with every human label given to it, and each label's
// majority.
type Item struct {
	Key Key
	// Labels are the human labels in input order; the first annotator of a
	// pair is the one whose label came first.
	Labels []HumanLabel
	// Majority is the human majority of each label any annotator answered.
	Majority map[Label]Majority
}

// Majority is the outcome of the human vote on one label of one item.
//
// The rule: "unsure" answers are left out of the vote (counted in Unsure); the
// category with strictly more votes than any other wins. When two or more
// categories share the most votes (one annotator says successful, another
// unsuccessful) there is no majority and Tie is set; when every answer is
// unsure there is no majority either. An item without a majority is left out
// of every judge comparison on that label. The same plurality rule applies to
// ordinal labels: a 2 and a 3 are a tie, not a 2.5.
type Majority struct {
	// Value is the winning category, "" when there is none.
	Value string `json:"value"`
	// Votes counts the answers that were not unsure; Unsure the unsure ones.
	Votes  int  `json:"votes"`
	Unsure int  `json:"unsure"`
	Tie    bool `json:"tie"`
}

// Items checks the human labels and groups them by item, in order of first
// appearance. Values may use any spelling Spec.Parse accepts; the items hold
// canonical ones. Key fields and annotator names are trimmed of surrounding
// spaces, as the readers trim them: " alice" and "alice" are one annotator.
// An empty key field or annotator, an unknown label, a value Parse refuses, or
// two labels by the same annotator for the same item is an EINVALID error; so
// is an empty list.
func Items(humans []HumanLabel) ([]Item, error) {
	if len(humans) == 0 {
		return nil, invalidf("no human labels: nothing to measure agreement against")
	}
	return groupItems(humans)
}

// groupItems is Items without its refusal of an empty list.
func groupItems(humans []HumanLabel) ([]Item, error) {
	index := map[Key]int{}
	var items []Item
	seen := map[string]bool{}
	for n, h := range humans {
		where := recordPlace("human label", n, h.Line)
		h.Key, h.Annotator = h.Key.trimmed(), strings.TrimSpace(h.Annotator)
		if err := checkKey(h.Key, "annotator_name", h.Annotator); err != "" {
			return nil, invalidf("%s: %s", where, err)
		}
		values, err := canonicalValues(h.Values)
		if err != "" {
			return nil, invalidf("%s: %s", where, err)
		}
		id := h.Annotator + "\x00" + h.Benchmark + "\x00" + h.Model + "\x00" + h.TaskID
		if seen[id] {
			return nil, invalidf("%s: annotator %q labelled %s twice", where, h.Annotator, h.Key)
		}
		seen[id] = true
		h.Values = values
		i, ok := index[h.Key]
		if !ok {
			i = len(items)
			index[h.Key] = i
			items = append(items, Item{Key: h.Key})
		}
		items[i].Labels = append(items[i].Labels, h)
	}
	for i := range items {
		items[i].Majority = map[Label]Majority{}
		for _, l := range Labels() {
			if m, ok := vote(l, items[i].Labels); ok {
				items[i].Majority[l] = m
			}
		}
	}
	return items, nil
}

// vote applies the majority rule to one label; ok false when no annotator
// answered it.
func vote(l Label, labels []HumanLabel) (Majority, bool) {
	var m Majority
	counts := map[string]int{}
	for _, h := range labels {
		switch v := h.Values[l]; v {
		case "":
		case Unsure:
			m.Unsure++
		default:
			m.Votes++
			counts[v]++
		}
	}
	if m.Votes+m.Unsure == 0 {
		return m, false
	}
	best := 0
	for v, c := range counts {
		switch {
		case c > best:
			best, m.Value, m.Tie = c, v, false
		case c == best:
			m.Tie = true
		}
	}
	if m.Tie {
		m.Value = ""
	}
	return m, true
}

// checkVerdicts checks verdicts and returns them with canonical values and
// trimmed keys and judge names, under the rules Items applies to human labels
// (judge for annotator).
func checkVerdicts(verdicts []Verdict) ([]Verdict, error) {
	out := make([]Verdict, len(verdicts))
	seen := map[string]bool{}
	for n, v := range verdicts {
		where := recordPlace("verdict", n, v.Line)
		v.Key, v.Judge = v.Key.trimmed(), strings.TrimSpace(v.Judge)
		if err := checkKey(v.Key, "judge", v.Judge); err != "" {
			return nil, invalidf("%s: %s", where, err)
		}
		values, err := canonicalValues(v.Values)
		if err != "" {
			return nil, invalidf("%s: %s", where, err)
		}
		id := v.Judge + "\x00" + v.Benchmark + "\x00" + v.Model + "\x00" + v.TaskID
		if seen[id] {
			return nil, invalidf("%s: judge %q has two verdicts for %s", where, v.Judge, v.Key)
		}
		seen[id] = true
		v.Values = values
		out[n] = v
	}
	return out, nil
}

// recordPlace names a record in messages: its line when it came from a file,
// its position otherwise.
func recordPlace(kind string, index, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s on line %d", kind, line)
	}
	return fmt.Sprintf("%s %d", kind, index+1)
}

// checkKey says which identifying field is empty, "" when none is.
func checkKey(k Key, party, name string) string {
	for _, f := range []struct{ column, value string }{
		{ColumnBenchmark, k.Benchmark}, {ColumnModel, k.Model}, {ColumnTaskID, k.TaskID}, {party, name},
	} {
		if strings.TrimSpace(f.value) == "" {
			return "empty " + f.column
		}
	}
	return ""
}

// canonicalValues parses every value; unknown labels and bad values are
// reported together.
func canonicalValues(in Values) (Values, string) {
	out := Values{}
	var problems []string
	for l, raw := range in {
		spec, ok := SpecOf(l)
		if !ok {
			problems = append(problems, fmt.Sprintf("unknown label %q", l))
			continue
		}
		v, err := spec.Parse(raw)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if v != "" {
			out[l] = v
		}
	}
	slices.Sort(problems) // map order would make the message vary
	return out, strings.Join(problems, "; ")
}
