package models

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// A comparison holds between MinCompareRuns and MaxCompareRuns runs: two is the
// least that compares anything, and past four the side-by-side tables stop
// fitting a screen.
const (
	MinCompareRuns = 2
	MaxCompareRuns = 4
)

// CompareParam is the query parameter naming the compared runs.
const CompareParam = "runs"

// ParseCompareRuns reads the runs of a comparison from the runs parameter:
// MinCompareRuns to MaxCompareRuns distinct run ids separated by commas (spaces
// around them are ignored), the first being the baseline. EINVALID on the
// runs field when there are too few or too many, an id is not a positive
// integer, or one is repeated.
func ParseCompareRuns(raw string) ([]int64, error) {
	parts := strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	if len(parts) < MinCompareRuns || len(parts) > MaxCompareRuns {
		return nil, FieldError(CompareParam, "choose %d to %d runs to compare, as run ids separated by commas (such as 12,15); %d given", MinCompareRuns, MaxCompareRuns, len(parts))
	}
	ids := make([]int64, 0, len(parts))
	for _, p := range parts {
		id, err := strconv.ParseInt(p, 10, 64)
		if err != nil || id <= 0 {
			return nil, FieldError(CompareParam, "%q is not a run id: run ids are positive whole numbers", truncateRunes(p, 40))
		}
		if slices.Contains(ids, id) {
			return nil, FieldError(CompareParam, "run %d is named twice: each run can be compared once", id)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// CompareRunsValue is the runs parameter for ids, the comparison's permalink part.
func CompareRunsValue(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

// truncateRunes cuts s to at most n runes, so an echoed input cannot flood a message.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Comparison is 2–4 runs of one benchmark side by side. The first run is the
// baseline: every delta and paired test is against it.
type Comparison struct {
	BenchmarkSlug string
	BenchmarkName string
	Runs          []CompareRun
	// VersionsDiffer is true when the runs used different versions of the
	// benchmark: tasks are then matched by their external id.
	VersionsDiffer bool
	// MetricsSubset is the subset every run's metrics cover (a full run
	// restricted to it where needed); "" when the runs cover different task
	// sets and each run's metrics are on its own subset.
	MetricsSubset string
	Metrics       []CompareMetric
	Breakdowns    []CompareBreakdown
	// Tasks are the tasks every run attempted, in the baseline's task order.
	Tasks []CompareTask
	// Paired holds one paired test of success per run after the baseline.
	Paired []PairedTest
}

// RunIDs returns the compared runs' ids in order.
func (c *Comparison) RunIDs() []int64 {
	ids := make([]int64, len(c.Runs))
	for i, r := range c.Runs {
		ids[i] = r.ID
	}
	return ids
}

// Differing returns the tasks whose outcomes are not the same in every run.
func (c *Comparison) Differing() []CompareTask {
	var out []CompareTask
	for _, t := range c.Tasks {
		if t.Differs() {
			out = append(out, t)
		}
	}
	return out
}

// PairGroup returns the tasks of one group of the first two runs' diff.
func (c *Comparison) PairGroup(group string) []CompareTask {
	var out []CompareTask
	for _, t := range c.Tasks {
		if t.PairGroup(0, 1) == group {
			out = append(out, t)
		}
	}
	return out
}

// CompareRun is one compared run: what it ran, with which model, on which
// version, and which task set its metrics cover.
type CompareRun struct {
	RunListItem
	Model            string
	BenchmarkVersion int
	// MetricsSubset is the subset its metrics are computed on; Restricted says
	// they are a full run's numbers restricted to that subset's tasks.
	MetricsSubset string
	Restricted    bool
}

// CompareMetric is one metric across the compared runs, one value per run.
type CompareMetric struct {
	Key            string         `json:"key"`
	Label          string         `json:"label"`
	HigherIsBetter bool           `json:"higher_is_better"`
	Values         []CompareValue `json:"values"`
}

// CompareValue is one run's value of a metric, with its 95% interval where it
// has one and its difference from the baseline's value.
type CompareValue struct {
	// Value is nil when the run has no such measure (not judged, no rubric, no
	// attempt in the group).
	Value *float64 `json:"value"`
	Low   *float64 `json:"ci_low,omitempty"`
	High  *float64 `json:"ci_high,omitempty"`
	// K and N are the successes and the sample size behind a rate, N alone the
	// sample size of a mean.
	K int `json:"k,omitempty"`
	N int `json:"n"`
	// Delta is Value minus the baseline's value; nil for the baseline itself
	// and when either value is missing.
	Delta *float64 `json:"delta,omitempty"`
}

// Change classes of a delta.
const (
	ChangeBetter = "better"
	ChangeWorse  = "worse"
	ChangeSame   = "same"
)

// Change says whether the value moved for the better, the worse or not at all
// against the baseline, given which direction is better; "" without a delta.
// Differences under 1e-9 are no change: they are rounding, not results.
func (v CompareValue) Change(higherIsBetter bool) string {
	switch {
	case v.Delta == nil:
		return ""
	case math.Abs(*v.Delta) < 1e-9:
		return ChangeSame
	case (*v.Delta > 0) == higherIsBetter:
		return ChangeBetter
	}
	return ChangeWorse
}

// CompareBreakdown is the success rate of each run per label value of one
// dimension (site, domain, difficulty, attribute, task type).
type CompareBreakdown struct {
	Dimension string         `json:"dimension"`
	Groups    []CompareGroup `json:"groups"`
}

// CompareGroup is one label value with each run's success rate on its tasks.
type CompareGroup struct {
	Key    string         `json:"key"`
	Values []CompareValue `json:"values"`
}

// CompareTask is one task every compared run attempted, with each run's
// attempt and outcome in the comparison's run order.
type CompareTask struct {
	ExternalID string        `json:"task_id"`
	Intent     string        `json:"intent"`
	Difficulty string        `json:"difficulty,omitempty"`
	Site       string        `json:"site,omitempty"`
	Cells      []CompareCell `json:"runs"`
}

// CompareCell is one run's attempt at a task.
type CompareCell struct {
	RunID     int64 `json:"run_id"`
	AttemptID int64 `json:"attempt_id"`
	// Outcome is OutcomeSuccess, OutcomeFailure, OutcomeError, or "" while the
	// attempt has no verdict.
	Outcome string `json:"outcome"`
}

// Solved reports whether the attempt succeeded.
func (c CompareCell) Solved() bool { return c.Outcome == OutcomeSuccess }

// Graded reports whether the attempt has a verdict. Errors are graded: an
// errored attempt did not solve the task, as in every success rate.
func (c CompareCell) Graded() bool {
	return c.Outcome == OutcomeSuccess || c.Outcome == OutcomeFailure || c.Outcome == OutcomeError
}

// state is solved, unsolved or ungraded, the three states a diff tells apart.
func (c CompareCell) state() int {
	switch {
	case c.Solved():
		return 2
	case c.Graded():
		return 1
	}
	return 0
}

// Differs reports whether the runs disagree on the task: solved by some and
// not by others, or graded in some runs and still without a verdict in others.
func (t CompareTask) Differs() bool {
	for _, c := range t.Cells[1:] {
		if c.state() != t.Cells[0].state() {
			return true
		}
	}
	return false
}

// Groups of a two-run outcome diff.
const (
	GroupFirstOnly  = "first_only"  // solved by the first run only
	GroupSecondOnly = "second_only" // solved by the second run only
	GroupBoth       = "both"
	GroupNeither    = "neither"
	GroupUngraded   = "ungraded" // at least one of the two has no verdict yet
)

// PairGroup places the task in a group of the diff between runs a and b
// (indexes into Cells).
func (t CompareTask) PairGroup(a, b int) string {
	ca, cb := t.Cells[a], t.Cells[b]
	switch {
	case !ca.Graded() || !cb.Graded():
		return GroupUngraded
	case ca.Solved() && cb.Solved():
		return GroupBoth
	case ca.Solved():
		return GroupFirstOnly
	case cb.Solved():
		return GroupSecondOnly
	}
	return GroupNeither
}

// PairedTest compares one run's success with the baseline's on the tasks both
// have a verdict for: how many each solved alone (the discordant tasks) and
// the exact McNemar p-value of the difference.
type PairedTest struct {
	RunID        int64   `json:"run_id"`
	Tasks        int     `json:"tasks"`
	Both         int     `json:"both"`
	BaselineOnly int     `json:"baseline_only"`
	RunOnly      int     `json:"run_only"`
	Neither      int     `json:"neither"`
	Discordant   int     `json:"discordant"`
	PValue       float64 `json:"p_value"`
}

// PairCounts counts the groups of the diff between the baseline (run 0) and
// run i over the comparison's tasks; the p-value is left to the caller.
func (c *Comparison) PairCounts(i int) PairedTest {
	p := PairedTest{RunID: c.Runs[i].ID}
	for _, t := range c.Tasks {
		switch t.PairGroup(0, i) {
		case GroupBoth:
			p.Both++
		case GroupFirstOnly:
			p.BaselineOnly++
		case GroupSecondOnly:
			p.RunOnly++
		case GroupNeither:
			p.Neither++
		default:
			continue
		}
		p.Tasks++
	}
	p.Discordant = p.BaselineOnly + p.RunOnly
	return p
}
