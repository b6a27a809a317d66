package api

import (
	"time"

	"proctor/models"
)

// CandidateRunRequest is the body of POST /api/v1/candidate-runs: candidate
// websites of a hidden-tests benchmark's tasks to test.
type CandidateRunRequest = models.CandidateRunRequest

// HiddenRates are pass rates from 0 to 1; null where nothing was measured.
type HiddenRates struct {
	Overall *float64 `json:"overall"`
	Request *float64 `json:"request"`
	Browser *float64 `json:"browser"`
	System  *float64 `json:"system"`
	L1      *float64 `json:"l1"`
	L2      *float64 `json:"l2"`
	L3      *float64 `json:"l3"`
}

// HiddenPassRate is a run's overall pass rate: the tests passed of the
// tests that ran, every task's together, with its Wilson 95% interval.
type HiddenPassRate struct {
	Rate   *float64   `json:"rate"` // null when no test ran
	CI95   [2]float64 `json:"ci95"`
	Passed int        `json:"passed"`
	Ran    int        `json:"ran"`
	// NotRun counts the tests this platform cannot carry out (an offline
	// build): left out of the rate.
	NotRun int `json:"not_run"`
	Total  int `json:"total"`
}

// HiddenRunResults is GET /api/v1/runs/{id}/hidden-tests.
type HiddenRunResults struct {
	RunID int64 `json:"run_id"`
	// PassRate is the run's overall pass rate, what the leaderboards rank by.
	PassRate HiddenPassRate `json:"pass_rate"`
	// PassThreshold is the pass rate a task needs to succeed.
	PassThreshold float64 `json:"pass_threshold"`
	// Mean is over the run's tasks, each weighing the same; a task whose
	// candidate could not be tested counts 0.
	Mean  HiddenRates  `json:"mean"`
	Tasks []HiddenTask `json:"tasks"`
	Sites []HiddenSite `json:"sites"`
	// TestsVisible says whether the caller may list the tests (tests_api_url).
	TestsVisible bool `json:"tests_visible"`
}

// HiddenTask is one task of a hidden-tests run.
type HiddenTask struct {
	AttemptID int64  `json:"attempt_id"`
	TaskID    string `json:"task_id"`
	Site      string `json:"site"`
	Status    string `json:"status"`
	Outcome   string `json:"outcome"`
	// Summary counts the tests per group and level; null until they have run.
	Summary     *models.HiddenSummary `json:"summary"`
	Rates       HiddenRates           `json:"rates"`
	URL         string                `json:"url"`     // the attempt's page
	APIURL      string                `json:"api_url"` // the attempt's timeline in this API
	TestsAPIURL string                `json:"tests_api_url,omitempty"`
}

// HiddenSite is the mean over the tasks of one website (site key).
type HiddenSite struct {
	Site   string      `json:"site"`
	Tasks  int         `json:"tasks"`
	Tested int         `json:"tested"`
	Rates  HiddenRates `json:"rates"`
}

// HiddenTests is GET /api/v1/runs/{id}/attempts/{attempt_id}/tests.
type HiddenTests struct {
	RunID     int64                `json:"run_id"`
	AttemptID int64                `json:"attempt_id"`
	TaskID    string               `json:"task_id"`
	Site      string               `json:"site"`
	Status    string               `json:"status"`
	Outcome   string               `json:"outcome"`
	Summary   models.HiddenSummary `json:"summary"`
	// Total counts every test of the attempt, before the filter.
	Total int          `json:"total"`
	Tests []HiddenTest `json:"tests"`
}

// HiddenTest is one test's result; runs only in a test's own answer.
type HiddenTest struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Position   int    `json:"position"`
	Group      string `json:"group"`
	Level      int    `json:"level"` // browser tests' level, 1–3; 0 otherwise
	Result     string `json:"result"`
	Flaky      bool   `json:"flaky"` // passed only when run again
	Reason     string `json:"reason"`
	DurationMS int64  `json:"duration_ms"`
	URL        string `json:"url"`
	APIURL     string `json:"api_url"`
	// Runs are the test's runs, the first and, when it failed or errored,
	// the second that decided it.
	Runs []HiddenTestRun `json:"runs,omitempty"`
}

// HiddenTestRun is one run of a hidden test.
type HiddenTestRun struct {
	Result      string             `json:"result"`
	Reason      string             `json:"reason"`
	StartedAt   time.Time          `json:"started_at"`
	DurationMS  int64              `json:"duration_ms"`
	Steps       []HiddenTestStep   `json:"steps"`
	Checkpoints []HiddenCheckpoint `json:"checkpoints"`
}

// HiddenTestStep is one step of a hidden test's run.
type HiddenTestStep struct {
	Index      int    `json:"index"`
	Action     string `json:"action"`
	Detail     string `json:"detail"`
	Result     string `json:"result"`
	Reason     string `json:"reason"`
	DurationMS int64  `json:"duration_ms"`
	// ScreenshotURL is a signed, expiring link to the step's JPEG; "" when
	// the step kept none.
	ScreenshotURL string `json:"screenshot_url"`
}

// HiddenCheckpoint is one visual checkpoint of a hidden test's run.
type HiddenCheckpoint struct {
	Capture   string  `json:"capture"`
	Score     float64 `json:"score"` // normalised against a flat image of the reference's colour
	SSIM      float64 `json:"ssim"`
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
	Reason    string  `json:"reason"`
	// Signed, expiring links to PNGs of the candidate's and the reference's
	// regions and of the SSIM map; "" when not kept.
	CandidateURL string `json:"candidate_url"`
	ReferenceURL string `json:"reference_url"`
	MapURL       string `json:"map_url"`
}
