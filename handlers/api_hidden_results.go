package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// apiHiddenResultRoutes registers the hidden-test results API: a run's pass
// rates, an attempt's tests and one test with both its runs. The store
// decides who sees what, as on the pages (HiddenResultStore).
func (s *Server) apiHiddenResultRoutes(g *echo.Group) {
	g.GET("/runs/:id/hidden-tests", s.apiRunHiddenResults)
	g.GET("/runs/:id/attempts/:attemptID/tests", s.apiAttemptHiddenTests)
	g.GET("/runs/:id/attempts/:attemptID/tests/:test", s.apiAttemptHiddenTest)
}

// apiHiddenRates are pass rates from 0 to 1; null where nothing was measured.
type apiHiddenRates struct {
	Overall *float64 `json:"overall"`
	Request *float64 `json:"request"`
	Browser *float64 `json:"browser"`
	System  *float64 `json:"system"`
	L1      *float64 `json:"l1"`
	L2      *float64 `json:"l2"`
	L3      *float64 `json:"l3"`
}

func toAPIHiddenRates(r models.HiddenRates) apiHiddenRates {
	return apiHiddenRates{Overall: r.Overall, Request: r.Request, Browser: r.Browser, System: r.System, L1: r.L1, L2: r.L2, L3: r.L3}
}

// apiHiddenPassRate is a run's overall pass rate: the tests passed of the
// tests that ran, every task's together, with its Wilson 95% interval.
type apiHiddenPassRate struct {
	Rate   *float64   `json:"rate"` // null when no test ran
	CI95   [2]float64 `json:"ci95"`
	Passed int        `json:"passed"`
	Ran    int        `json:"ran"`
	// NotRun counts the tests this platform cannot carry out (an offline
	// build): left out of the rate.
	NotRun int `json:"not_run"`
	Total  int `json:"total"`
}

// apiHiddenRunResults is GET /runs/:id/hidden-tests.
type apiHiddenRunResults struct {
	RunID int64 `json:"run_id"`
	// PassRate is the run's overall pass rate, what the leaderboards rank by.
	PassRate apiHiddenPassRate `json:"pass_rate"`
	// PassThreshold is the pass rate a task needs to succeed.
	PassThreshold float64 `json:"pass_threshold"`
	// Mean is over the run's tasks, each weighing the same; a task whose
	// candidate could not be tested counts 0.
	Mean  apiHiddenRates  `json:"mean"`
	Tasks []apiHiddenTask `json:"tasks"`
	Sites []apiHiddenSite `json:"sites"`
	// TestsVisible says whether the caller may list the tests (tests_api_url).
	TestsVisible bool `json:"tests_visible"`
}

// apiHiddenTask is one task of a hidden-tests run.
type apiHiddenTask struct {
	AttemptID int64  `json:"attempt_id"`
	TaskID    string `json:"task_id"`
	Site      string `json:"site"`
	Status    string `json:"status"`
	Outcome   string `json:"outcome"`
	// Summary counts the tests per group and level; null until they have run.
	Summary     *models.HiddenSummary `json:"summary"`
	Rates       apiHiddenRates        `json:"rates"`
	URL         string                `json:"url"`     // the attempt's page
	APIURL      string                `json:"api_url"` // the attempt's timeline in this API
	TestsAPIURL string                `json:"tests_api_url,omitempty"`
}

// apiHiddenSite is the mean over the tasks of one website (site key).
type apiHiddenSite struct {
	Site   string         `json:"site"`
	Tasks  int            `json:"tasks"`
	Tested int            `json:"tested"`
	Rates  apiHiddenRates `json:"rates"`
}

func (s *Server) apiRunHiddenResults(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	h, err := s.deps.Runs.RunHiddenResults(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if h == nil {
		return models.Errorf(models.ENOTFOUND, "Run %d has no hidden tests: its benchmark is not a hidden-tests one.", id)
	}
	p := h.PassRate
	out := apiHiddenRunResults{RunID: id, Mean: toAPIHiddenRates(h.Mean), TestsVisible: h.CanBrowse, PassThreshold: h.PassThreshold,
		PassRate: apiHiddenPassRate{Rate: p.Rate, CI95: [2]float64{p.Low, p.High}, Passed: p.Tests.Passed, Ran: p.Tests.Ran(),
			NotRun: p.Tests.NotRun, Total: p.Tests.Total},
		Tasks: make([]apiHiddenTask, len(h.Tasks)), Sites: make([]apiHiddenSite, len(h.Sites))}
	for i, t := range h.Tasks {
		page, api := attemptPaths(id, t.AttemptID)
		out.Tasks[i] = apiHiddenTask{
			AttemptID: t.AttemptID, TaskID: t.ExternalID, Site: t.SiteKey, Status: t.Status, Outcome: t.Outcome,
			Summary: t.Summary, Rates: toAPIHiddenRates(t.Rates()), URL: page, APIURL: api,
		}
		if h.CanBrowse {
			out.Tasks[i].TestsAPIURL = "/api/v1" + web.HiddenTestsPath(id, t.AttemptID)
		}
	}
	for i, site := range h.Sites {
		out.Sites[i] = apiHiddenSite{Site: site.Site, Tasks: site.Tasks, Tested: site.Tested, Rates: toAPIHiddenRates(site.Rates)}
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, out)
}

// apiHiddenTests is GET /runs/:id/attempts/:attempt_id/tests.
type apiHiddenTests struct {
	RunID     int64                `json:"run_id"`
	AttemptID int64                `json:"attempt_id"`
	TaskID    string               `json:"task_id"`
	Site      string               `json:"site"`
	Status    string               `json:"status"`
	Outcome   string               `json:"outcome"`
	Summary   models.HiddenSummary `json:"summary"`
	// Total counts every test of the attempt, before the filter.
	Total int             `json:"total"`
	Tests []apiHiddenTest `json:"tests"`
}

// apiHiddenTest is one test's result; runs only in a test's own answer.
type apiHiddenTest struct {
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
	Runs []apiHiddenTestRun `json:"runs,omitempty"`
}

type apiHiddenTestRun struct {
	Result      string                `json:"result"`
	Reason      string                `json:"reason"`
	StartedAt   time.Time             `json:"started_at"`
	DurationMS  int64                 `json:"duration_ms"`
	Steps       []apiHiddenTestStep   `json:"steps"`
	Checkpoints []apiHiddenCheckpoint `json:"checkpoints"`
}

type apiHiddenTestStep struct {
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

type apiHiddenCheckpoint struct {
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

func toAPIHiddenTest(runID, attemptID int64, t models.HiddenTestView) apiHiddenTest {
	page := web.HiddenTestPath(runID, attemptID, t.TestID)
	return apiHiddenTest{
		ID: t.TestID, Title: t.Title, Position: t.Position, Group: t.Group, Level: t.Level, Result: t.Result,
		Flaky: t.Flaky, Reason: t.Reason, DurationMS: t.DurationMS, URL: page, APIURL: "/api/v1" + page,
	}
}

func (s *Server) apiAttemptHiddenTests(c echo.Context) error {
	tests, err := s.hiddenTestsOf(c)
	if err != nil {
		return err
	}
	runID, attemptID := tests.RunID, tests.AttemptID
	out := apiHiddenTests{
		RunID: runID, AttemptID: attemptID, TaskID: tests.TaskID, Site: tests.SiteKey, Status: tests.Status,
		Outcome: tests.Outcome, Summary: tests.Summary, Total: tests.TotalTests, Tests: make([]apiHiddenTest, len(tests.Tests)),
	}
	for i, t := range tests.Tests {
		out.Tests[i] = toAPIHiddenTest(runID, attemptID, t)
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiAttemptHiddenTest(c echo.Context) error {
	t, err := s.hiddenTestOf(c)
	if err != nil {
		return err
	}
	urls := s.hiddenTestURLs(c.Request().Context(), t)
	out := toAPIHiddenTest(t.RunID, t.AttemptID, t.Test)
	out.Runs = make([]apiHiddenTestRun, len(t.Test.Runs))
	for i, r := range t.Test.Runs {
		run := apiHiddenTestRun{Result: r.Result, Reason: r.Reason, StartedAt: r.StartedAt, DurationMS: r.DurationMS,
			Steps: make([]apiHiddenTestStep, len(r.Steps)), Checkpoints: make([]apiHiddenCheckpoint, len(r.Checkpoints))}
		for k, st := range r.Steps {
			run.Steps[k] = apiHiddenTestStep{Index: st.Index, Action: st.Action, Detail: st.Detail, Result: st.Result,
				Reason: st.Reason, DurationMS: st.DurationMS, ScreenshotURL: urls[st.ScreenshotKey]}
		}
		for k, cp := range r.Checkpoints {
			run.Checkpoints[k] = apiHiddenCheckpoint{Capture: cp.Capture, Score: cp.Score, SSIM: cp.SSIM, Threshold: cp.Threshold,
				Passed: cp.Passed, Reason: cp.Reason, CandidateURL: urls[cp.CandidateKey], ReferenceURL: urls[cp.ReferenceKey], MapURL: urls[cp.MapKey]}
		}
		out.Runs[i] = run
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, out)
}
