// Package hidden runs hidden-test suites (package hiddentest) against a
// candidate website: request and system tests over HTTP, browser journeys in
// Chromium through playwright-go, each test isolated, every test ending
// passed, failed, errored or not run with a reason, and a failed test run once more to
// tell flakiness from failure. It knows nothing of the database: the River
// jobs that call it store what it returns.
package hidden

import (
	"time"
)

// Results of one test.
const (
	Passed  = "passed"  // every check and checkpoint passed
	Failed  = "failed"  // the candidate answered and a check did not hold
	Errored = "errored" // the test could not be carried out (unreachable, hung, a restart hook failed, a capture missing)
	// NotRun is a test this platform cannot carry out whatever the
	// candidate (an offline build): it decides nothing (models.HiddenNotRun).
	NotRun = "not_run"
)

// Candidate is the website under test, as its team submitted it.
type Candidate struct {
	// BaseURL is where the candidate answers; a "{visitor}" in it is
	// replaced by a fresh value for every test and browser context
	// (docs/hidden-tests.md).
	BaseURL string
	// RestartURL, when set, restarts the candidate: Proctor POSTs to it at a
	// level-3 restart point and for system restart tests, then waits for
	// HealthURL.
	RestartURL string
	// HealthURL answers 2xx when the candidate is up; "" means BaseURL.
	HealthURL string
}

// Outcome is one run of one test.
type Outcome struct {
	TestID   string
	Result   string // Passed, Failed, Errored or NotRun
	Reason   string // why it failed, errored or was not run; "" when it passed
	Started  time.Time
	Duration time.Duration
	// Steps record what the test did, in order: a request and its answer, a
	// journey's actions, a probe.
	Steps []StepRecord
	// Checkpoints are the visual checkpoints' comparisons, in order.
	Checkpoints []CheckpointRecord
}

// StepRecord is one thing a test did.
type StepRecord struct {
	Index    int    // from 0
	Action   string // "request", "goto", "click", "restart", …
	Detail   string // the request line and status, the locator, the URL
	Result   string // Passed, Failed or Errored
	Reason   string
	Duration time.Duration
	// Screenshot is a JPEG of the page after the step, taken at checkpoints
	// and at the step that failed; nil otherwise.
	Screenshot []byte
}

// CheckpointRecord is one visual checkpoint's comparison.
type CheckpointRecord struct {
	Capture   string  // the reference capture's name
	Score     float64 // normalised against the flat-colour baseline (package visual)
	SSIM      float64
	Threshold float64
	Passed    bool
	Reason    string // why it could not be compared, if it could not
	Candidate []byte // PNG of the candidate's region
	Reference []byte // PNG of the reference's region
	Map       []byte // PNG of the SSIM map
}

// Verdict is a test's final result over its runs: a test that failed is run
// once more, and both runs are kept; it passes only if the second run passes
// (then Flaky is set), and fails or errors as the second run does.
type Verdict struct {
	TestID string
	Result string
	Flaky  bool
	Runs   []Outcome // one or two
}
