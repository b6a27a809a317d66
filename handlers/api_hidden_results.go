package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"proctor/api"
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

func toAPIHiddenRates(r models.HiddenRates) api.HiddenRates {
	return api.HiddenRates{Overall: r.Overall, Request: r.Request, Browser: r.Browser, System: r.System, L1: r.L1, L2: r.L2, L3: r.L3}
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
	out := api.HiddenRunResults{RunID: id, Mean: toAPIHiddenRates(h.Mean), TestsVisible: h.CanBrowse, PassThreshold: h.PassThreshold,
		PassRate: api.HiddenPassRate{Rate: p.Rate, CI95: [2]float64{p.Low, p.High}, Passed: p.Tests.Passed, Ran: p.Tests.Ran(),
			NotRun: p.Tests.NotRun, Total: p.Tests.Total},
		Tasks: make([]api.HiddenTask, len(h.Tasks)), Sites: make([]api.HiddenSite, len(h.Sites))}
	for i, t := range h.Tasks {
		page, apiURL := attemptPaths(id, t.AttemptID)
		out.Tasks[i] = api.HiddenTask{
			AttemptID: t.AttemptID, TaskID: t.ExternalID, Site: t.SiteKey, Status: t.Status, Outcome: t.Outcome,
			Summary: t.Summary, Rates: toAPIHiddenRates(t.Rates()), URL: page, APIURL: apiURL,
		}
		if h.CanBrowse {
			out.Tasks[i].TestsAPIURL = "/api/v1" + web.HiddenTestsPath(id, t.AttemptID)
		}
	}
	for i, site := range h.Sites {
		out.Sites[i] = api.HiddenSite{Site: site.Site, Tasks: site.Tasks, Tested: site.Tested, Rates: toAPIHiddenRates(site.Rates)}
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, out)
}

func toAPIHiddenTest(runID, attemptID int64, t models.HiddenTestView) api.HiddenTest {
	page := web.HiddenTestPath(runID, attemptID, t.TestID)
	return api.HiddenTest{
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
	out := api.HiddenTests{
		RunID: runID, AttemptID: attemptID, TaskID: tests.TaskID, Site: tests.SiteKey, Status: tests.Status,
		Outcome: tests.Outcome, Summary: tests.Summary, Total: tests.TotalTests, Tests: make([]api.HiddenTest, len(tests.Tests)),
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
	out.Runs = make([]api.HiddenTestRun, len(t.Test.Runs))
	for i, r := range t.Test.Runs {
		run := api.HiddenTestRun{Result: r.Result, Reason: r.Reason, StartedAt: r.StartedAt, DurationMS: r.DurationMS,
			Steps: make([]api.HiddenTestStep, len(r.Steps)), Checkpoints: make([]api.HiddenCheckpoint, len(r.Checkpoints))}
		for k, st := range r.Steps {
			run.Steps[k] = api.HiddenTestStep{Index: st.Index, Action: st.Action, Detail: st.Detail, Result: st.Result,
				Reason: st.Reason, DurationMS: st.DurationMS, ScreenshotURL: urls[st.ScreenshotKey]}
		}
		for k, cp := range r.Checkpoints {
			run.Checkpoints[k] = api.HiddenCheckpoint{Capture: cp.Capture, Score: cp.Score, SSIM: cp.SSIM, Threshold: cp.Threshold,
				Passed: cp.Passed, Reason: cp.Reason, CandidateURL: urls[cp.CandidateKey], ReferenceURL: urls[cp.ReferenceKey], MapURL: urls[cp.MapKey]}
		}
		out.Runs[i] = run
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return c.JSON(http.StatusOK, out)
}
