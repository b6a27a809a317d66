package models

import (
	"math"
	"time"
)

// EvaluatorHiddenTests grades a hidden-tests benchmark (WebsiteBench style):
// each task's answer is a candidate website, checked by the task's hidden
// test suite (package hiddentest) and visual checkpoints.
const EvaluatorHiddenTests = "hidden-tests"

// Hidden-test results, as package runner/hidden reports them.
const (
	HiddenPassed  = "passed"
	HiddenFailed  = "failed"
	HiddenErrored = "errored"
	// HiddenNotRun is a test this platform cannot carry out (an offline
	// build: Proctor does not host candidates). It is neither a pass nor a
	// failure: pass rates and outcomes leave it out.
	HiddenNotRun = "not_run"
)

// HiddenResultLabel names a test's result as pages show it ("not run" for
// HiddenNotRun).
func HiddenResultLabel(result string) string {
	if result == HiddenNotRun {
		return "not run"
	}
	return result
}

// DefaultPassThreshold is the pass rate a hidden-tests task needs to
// succeed when its benchmark states none: every test that ran passed.
const DefaultPassThreshold = 1.0

// CheckPassThreshold checks a benchmark's pass threshold: a share of a
// task's tests, above 0 and at most 1. EINVALID on "pass_threshold".
func CheckPassThreshold(x float64) error {
	if math.IsNaN(x) || x <= 0 || x > 1 {
		return FieldError("pass_threshold", "pass_threshold must be above 0 and at most 1 (the share of a task's tests that must pass; 1 means every test that ran), not %g", x)
	}
	return nil
}

// Hidden-test groups.
const (
	HiddenGroupRequest = "request"
	HiddenGroupBrowser = "browser"
	HiddenGroupSystem  = "system"
)

// ReferenceCapture is one reference screenshot of a hidden-tests task: the
// region a visual checkpoint compares the candidate's page with. Captures are
// hidden like the suite: kept in the database, never served to teams.
type ReferenceCapture struct {
	ID     int64
	TaskID int64
	Name   string // the capture's name in the suite (a slug)
	PNG    []byte `gorm:"column:png"`
	SHA256 string `gorm:"column:sha256"`
	Width  int
	Height int
}

// HiddenCandidate is the website a team submitted for one attempt of a
// hidden-tests run: where it answers and its optional hooks. The hooks are
// shown to the team and administrators only.
type HiddenCandidate struct {
	AttemptID  int64 `gorm:"primaryKey"`
	BaseURL    string
	RestartURL string
	HealthURL  string
	CreatedAt  time.Time
}

// HiddenTestResult is one hidden test's verdict on an attempt's candidate. A
// test that failed ran once more: Runs holds both runs, and Flaky marks a
// test that passed only on its second run.
type HiddenTestResult struct {
	ID         int64
	AttemptID  int64
	TestID     string
	Position   int    // the test's place in its suite
	Group      string `gorm:"column:test_group"` // HiddenGroup*
	Level      int    // a browser test's level (1–3); 0 for the other groups
	Result     string // HiddenPassed, HiddenFailed, HiddenErrored or HiddenNotRun
	Flaky      bool
	Reason     string // why the final run failed or errored, or why the test was not run
	DurationMS int64  // both runs together
	Runs       string // JSON: []HiddenTestRun
	CreatedAt  time.Time
}

// HiddenTestRun is one run of a hidden test, as stored in
// HiddenTestResult.Runs. Images are artifact keys, written before the row.
type HiddenTestRun struct {
	Result      string                 `json:"result"`
	Reason      string                 `json:"reason,omitempty"`
	StartedAt   time.Time              `json:"started_at"`
	DurationMS  int64                  `json:"duration_ms"`
	Steps       []HiddenTestStep       `json:"steps"`
	Checkpoints []HiddenTestCheckpoint `json:"checkpoints,omitempty"`
}

// HiddenTestStep is one thing a test run did.
type HiddenTestStep struct {
	Index         int    `json:"index"`
	Action        string `json:"action"`
	Detail        string `json:"detail,omitempty"`
	Result        string `json:"result"`
	Reason        string `json:"reason,omitempty"`
	DurationMS    int64  `json:"duration_ms"`
	ScreenshotKey string `json:"screenshot_key,omitempty"` // JPEG
}

// HiddenTestCheckpoint is one visual checkpoint's comparison in a test run.
type HiddenTestCheckpoint struct {
	Capture      string  `json:"capture"`
	Score        float64 `json:"score"` // normalised against the flat-colour baseline
	SSIM         float64 `json:"ssim"`
	Threshold    float64 `json:"threshold"`
	Passed       bool    `json:"passed"`
	Reason       string  `json:"reason,omitempty"`
	CandidateKey string  `json:"candidate_key,omitempty"` // PNG of the candidate's region
	ReferenceKey string  `json:"reference_key,omitempty"` // PNG of the reference's region
	MapKey       string  `json:"map_key,omitempty"`       // PNG of the SSIM map
}

// HiddenTally counts one group's or level's tests of an attempt. Total
// counts every test, those not run included.
type HiddenTally struct {
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errored int `json:"errored"`
	NotRun  int `json:"not_run"`
	Flaky   int `json:"flaky"`
}

// Ran counts the tests that ran: every test but those this platform
// cannot carry out. An errored test ran: the candidate was tried and did
// not answer as it should.
func (t HiddenTally) Ran() int { return t.Total - t.NotRun }

// Rate is the pass rate over the tests that ran, nil when none ran.
func (t HiddenTally) Rate() *float64 {
	if t.Ran() <= 0 {
		return nil
	}
	r := float64(t.Passed) / float64(t.Ran())
	return &r
}

// Outcome is a task's outcome from its tally, as hidden-tests benchmarks
// grade it (WebsiteBench style): OutcomeError when no test ran,
// OutcomeSuccess when the pass rate over the tests that ran reaches
// threshold, OutcomeFailure otherwise. Tests not run decide nothing. A
// threshold outside (0, 1] is taken as DefaultPassThreshold.
func (t HiddenTally) Outcome(threshold float64) string {
	if CheckPassThreshold(threshold) != nil {
		threshold = DefaultPassThreshold
	}
	ran := t.Ran()
	switch {
	case ran <= 0:
		return OutcomeError
	// Compared in counts, with room for the rounding of a decimal
	// threshold: 0.9 of 10 tests is 9 passed, not 9.000000000000002.
	case float64(t.Passed) >= threshold*float64(ran)-1e-9:
		return OutcomeSuccess
	}
	return OutcomeFailure
}

// Add counts one result; a result it does not know counts as errored.
func (t *HiddenTally) Add(result string, flaky bool) {
	t.Total++
	switch result {
	case HiddenPassed:
		t.Passed++
	case HiddenFailed:
		t.Failed++
	case HiddenNotRun:
		t.NotRun++
	default:
		t.Errored++
	}
	if flaky {
		t.Flaky++
	}
}

// Merge adds another tally's counts.
func (t *HiddenTally) Merge(o HiddenTally) {
	t.Total += o.Total
	t.Passed += o.Passed
	t.Failed += o.Failed
	t.Errored += o.Errored
	t.NotRun += o.NotRun
	t.Flaky += o.Flaky
}

// HiddenSummary is an attempt's hidden-test tally: overall, per group and per
// browser level. It is the details of the attempt's hidden-tests evaluation
// and what teams may see of the tests when the suite is not revealed.
type HiddenSummary struct {
	Overall HiddenTally `json:"overall"`
	Request HiddenTally `json:"request"`
	Browser HiddenTally `json:"browser"`
	System  HiddenTally `json:"system"`
	L1      HiddenTally `json:"l1"`
	L2      HiddenTally `json:"l2"`
	L3      HiddenTally `json:"l3"`
}

// Add counts one test's result.
func (s *HiddenSummary) Add(group string, level int, result string, flaky bool) {
	s.Overall.Add(result, flaky)
	switch group {
	case HiddenGroupRequest:
		s.Request.Add(result, flaky)
	case HiddenGroupBrowser:
		s.Browser.Add(result, flaky)
		switch level {
		case 1:
			s.L1.Add(result, flaky)
		case 2:
			s.L2.Add(result, flaky)
		case 3:
			s.L3.Add(result, flaky)
		}
	case HiddenGroupSystem:
		s.System.Add(result, flaky)
	}
}

// SummarizeHiddenResults tallies an attempt's results.
func SummarizeHiddenResults(results []HiddenTestResult) HiddenSummary {
	var s HiddenSummary
	for _, r := range results {
		s.Add(r.Group, r.Level, r.Result, r.Flaky)
	}
	return s
}

// CandidateRunRequest submits candidate websites for a hidden-tests
// benchmark: a run of the team's agent over a subset, one candidate per task.
type CandidateRunRequest struct {
	TeamSlug      string          `json:"team"`
	AgentSlug     string          `json:"agent"`
	BenchmarkSlug string          `json:"benchmark"`
	Subset        string          `json:"subset,omitempty"` // "" is the full set
	Notes         string          `json:"notes,omitempty"`
	Candidates    []CandidateSpec `json:"candidates"`
}

// CandidateSpec is one task's candidate: where it answers, its optional
// restart and health hooks, and what building it cost the team's agent.
type CandidateSpec struct {
	TaskID     string  `json:"task_id"`
	BaseURL    string  `json:"base_url"`
	RestartURL string  `json:"restart_url,omitempty"`
	HealthURL  string  `json:"health_url,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
	TokensIn   int64   `json:"tokens_in,omitempty"`
	TokensOut  int64   `json:"tokens_out,omitempty"`
	Turns      int     `json:"turns,omitempty"`
}
