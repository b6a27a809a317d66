package models

import (
	"strconv"
	"strings"
)

// HiddenRates are pass rates (0–1) overall, per group and per browser level;
// nil where nothing was measured.
type HiddenRates struct {
	Overall, Request, Browser, System, L1, L2, L3 *float64
}

// RatesOf are one attempt's pass rates from its tally.
func (s HiddenSummary) RatesOf() HiddenRates {
	return HiddenRates{
		Overall: s.Overall.Rate(), Request: s.Request.Rate(), Browser: s.Browser.Rate(), System: s.System.Rate(),
		L1: s.L1.Rate(), L2: s.L2.Rate(), L3: s.L3.Rate(),
	}
}

// MeanHiddenRates averages tasks' pass rates the way hidden-tests boards do:
// each task weighs the same whatever its number of tests, and a task without
// results (nil: its candidate could not be tested, or has not been yet)
// counts 0 everywhere. A group or level is averaged over the tasks whose
// suites have tests in it, plus the tasks without results; it is nil when no
// task's suite has such tests. Overall is nil only without tasks.
func MeanHiddenRates(tasks []*HiddenSummary) HiddenRates {
	if len(tasks) == 0 {
		return HiddenRates{}
	}
	mean := func(pick func(*HiddenSummary) HiddenTally) *float64 {
		sum, n, measured := 0.0, 0, false
		for _, s := range tasks {
			if s == nil {
				n++
				continue
			}
			t := pick(s)
			if r := t.Rate(); r != nil {
				sum += *r
				n++
				measured = true
			}
		}
		if !measured {
			return nil
		}
		m := sum / float64(n)
		return &m
	}
	out := HiddenRates{
		Request: mean(func(s *HiddenSummary) HiddenTally { return s.Request }),
		Browser: mean(func(s *HiddenSummary) HiddenTally { return s.Browser }),
		System:  mean(func(s *HiddenSummary) HiddenTally { return s.System }),
		L1:      mean(func(s *HiddenSummary) HiddenTally { return s.L1 }),
		L2:      mean(func(s *HiddenSummary) HiddenTally { return s.L2 }),
		L3:      mean(func(s *HiddenSummary) HiddenTally { return s.L3 }),
	}
	sum := 0.0
	for _, s := range tasks {
		if s != nil {
			if r := s.Overall.Rate(); r != nil {
				sum += *r
			}
		}
	}
	overall := sum / float64(len(tasks))
	out.Overall = &overall
	return out
}

// HiddenTaskResult is one task of a hidden-tests run: its attempt and the
// tally of its tests (nil until its tests have run).
type HiddenTaskResult struct {
	AttemptID  int64
	TaskID     int64
	ExternalID string
	SiteKey    string
	Status     string // the attempt's status
	Outcome    string // the attempt's outcome, once done
	Summary    *HiddenSummary
}

// Rates are the task's pass rates; all nil until its tests have run.
func (r HiddenTaskResult) Rates() HiddenRates {
	if r.Summary == nil {
		return HiddenRates{}
	}
	return r.Summary.RatesOf()
}

// HiddenSiteResult is a run's hidden-test results on the tasks of one
// website (tasks grouped by site key): the mean pass rates over them.
type HiddenSiteResult struct {
	Site   string
	Tasks  int
	Tested int // tasks whose tests have run
	Rates  HiddenRates
}

// HiddenPassRate is the overall pass rate of a hidden-tests run, or of its
// tasks on one board: the tests passed of the tests that ran, every task's
// tests together, with its Wilson 95% interval (package stats computes
// it). Tests not run are left out; a task without results adds nothing.
type HiddenPassRate struct {
	Tests HiddenTally // every task's tests together
	// Rate is Tests.Rate(): nil when no test ran.
	Rate *float64
	// Low and High bound the 95% interval; [0, 1] when no test ran.
	Low, High float64
}

// RunHiddenResults is a hidden-tests run's results as its page shows them:
// every task's pass rates, the overall pass rate, the mean over all tasks
// and per website.
type RunHiddenResults struct {
	RunID int64
	Tasks []HiddenTaskResult // in task order
	// PassRate is the run's overall pass rate, what its leaderboards rank it by.
	PassRate HiddenPassRate
	// PassThreshold is the pass rate a task needs to succeed (its benchmark
	// version's; DefaultPassThreshold unless the benchmark states one).
	PassThreshold float64
	Mean          HiddenRates
	Sites         []HiddenSiteResult // by site key
	// CanBrowse says whether the caller may open the test browser: the
	// tests' ids, titles, reasons, steps and images.
	CanBrowse bool
}

// HiddenTestFilter narrows an attempt's test browser: by result
// (HiddenPassed, HiddenFailed, HiddenErrored, HiddenNotRun, or HiddenFlaky
// for tests that passed only when rerun), group and browser level (1–3; 0
// for any).
type HiddenTestFilter struct {
	Result string
	Group  string
	Level  int
}

// HiddenFlaky is the test browser's result filter for flaky tests.
const HiddenFlaky = "flaky"

// HiddenResultFilters are the test browser's result filters, in the order
// an attempt's tally lists its counts.
func HiddenResultFilters() []string {
	return []string{HiddenPassed, HiddenFailed, HiddenErrored, HiddenNotRun, HiddenFlaky}
}

// Count is how many of the tally's tests the result filter lists (every
// test for ""), so that a link to a filter can say how many it shows.
func (t HiddenTally) Count(result string) int {
	switch result {
	case HiddenPassed:
		return t.Passed
	case HiddenFailed:
		return t.Failed
	case HiddenErrored:
		return t.Errored
	case HiddenNotRun:
		return t.NotRun
	case HiddenFlaky:
		return t.Flaky
	}
	return t.Total
}

// Validate checks the filter: EINVALID naming the parameter.
func (f HiddenTestFilter) Validate() error {
	switch f.Result {
	case "", HiddenPassed, HiddenFailed, HiddenErrored, HiddenNotRun, HiddenFlaky:
	default:
		return FieldError("result", "result must be passed, failed, errored, not_run or flaky, not %q", cut(f.Result))
	}
	switch f.Group {
	case "", HiddenGroupRequest, HiddenGroupBrowser, HiddenGroupSystem:
	default:
		return FieldError("group", "group must be request, browser or system, not %q", cut(f.Group))
	}
	if f.Level < 0 || f.Level > 3 {
		return FieldError("level", "level must be 1, 2 or 3, not %d", f.Level)
	}
	return nil
}

// Keeps reports whether a test passes the filter.
func (f HiddenTestFilter) Keeps(t HiddenTestView) bool {
	switch {
	case f.Result == HiddenFlaky && !t.Flaky:
		return false
	case f.Result != "" && f.Result != HiddenFlaky && t.Result != f.Result:
		return false
	case f.Group != "" && t.Group != f.Group:
		return false
	case f.Level != 0 && t.Level != f.Level:
		return false
	}
	return true
}

// Active reports whether the filter narrows the list.
func (f HiddenTestFilter) Active() bool { return f != HiddenTestFilter{} }

// Query is the filter as a query string ("" or "?…"), for links and the
// address a filtered list is shared by.
func (f HiddenTestFilter) Query() string {
	var parts []string
	if f.Result != "" {
		parts = append(parts, "result="+f.Result)
	}
	if f.Group != "" {
		parts = append(parts, "group="+f.Group)
	}
	if f.Level != 0 {
		parts = append(parts, "level="+strconv.Itoa(f.Level))
	}
	if len(parts) == 0 {
		return ""
	}
	return "?" + strings.Join(parts, "&")
}

// HiddenTestView is one hidden test's result on an attempt as the test
// browser shows it. Runs is filled on the test's own page only.
type HiddenTestView struct {
	TestID     string
	Title      string // from the task's suite; "" when the suite no longer names the test
	Position   int
	Group      string
	Level      int
	Result     string
	Flaky      bool
	Reason     string
	DurationMS int64
	Runs       []HiddenTestRun
}

// AttemptHiddenTests is one attempt's hidden tests: its tally and the
// tests that pass the filter, in suite order.
type AttemptHiddenTests struct {
	RunID      int64
	AttemptID  int64
	TaskID     string // the task's external id
	SiteKey    string
	Status     string
	Outcome    string
	Summary    HiddenSummary
	Filter     HiddenTestFilter
	Tests      []HiddenTestView
	TotalTests int // before the filter
}

// AttemptHiddenTest is one hidden test of an attempt with both its runs.
type AttemptHiddenTest struct {
	RunID     int64
	AttemptID int64
	TaskID    string
	Test      HiddenTestView
}
