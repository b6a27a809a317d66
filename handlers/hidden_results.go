package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// hiddenResultRoutes registers the hidden-test result pages: an attempt's
// test browser and each test's page. The run page's section is part of
// showRun.
func (s *Server) hiddenResultRoutes(e *echo.Echo) {
	e.GET("/runs/:id/attempts/:attemptID/tests", s.showHiddenTests)
	e.GET("/runs/:id/attempts/:attemptID/tests/:test", s.showHiddenTest)
}

// hiddenTestFilterOf reads the test browser's result, group and level
// parameters; EINVALID naming the parameter for a level that is not a number
// (the store checks the rest).
func hiddenTestFilterOf(c echo.Context) (models.HiddenTestFilter, error) {
	f := models.HiddenTestFilter{
		Result: strings.TrimSpace(c.QueryParam("result")),
		Group:  strings.TrimSpace(c.QueryParam("group")),
	}
	if raw := strings.TrimSpace(c.QueryParam("level")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			return f, models.FieldError("level", "level must be 1, 2 or 3, not %q", truncateText(raw, 20))
		}
		f.Level = n
	}
	return f, nil
}

// hiddenTestsOf loads the tests of the attempt named by the :id and
// :attemptID path parameters, filtered by the query; an attempt of another
// run is not found.
func (s *Server) hiddenTestsOf(c echo.Context) (*models.AttemptHiddenTests, error) {
	runID, attemptID, err := attemptPathIDs(c)
	if err != nil {
		return nil, err
	}
	f, err := hiddenTestFilterOf(c)
	if err != nil {
		return nil, err
	}
	tests, err := s.deps.Runs.AttemptHiddenTests(c.Request().Context(), attemptID, f)
	if err != nil {
		return nil, err
	}
	if tests.RunID != runID {
		return nil, models.Errorf(models.ENOTFOUND, "Run %d has no attempt %d.", runID, attemptID)
	}
	return tests, nil
}

// hiddenTestOf loads the test named by the :test path parameter of the
// attempt named by :id and :attemptID; an attempt of another run is not
// found.
func (s *Server) hiddenTestOf(c echo.Context) (*models.AttemptHiddenTest, error) {
	runID, attemptID, err := attemptPathIDs(c)
	if err != nil {
		return nil, err
	}
	t, err := s.deps.Runs.AttemptHiddenTest(c.Request().Context(), attemptID, c.Param("test"))
	if err != nil {
		return nil, err
	}
	if t.RunID != runID {
		return nil, models.Errorf(models.ENOTFOUND, "Run %d has no attempt %d.", runID, attemptID)
	}
	return t, nil
}

// showHiddenTests is an attempt's test browser: its tests filtered by the
// query's result, group and level, a page that works without JavaScript.
func (s *Server) showHiddenTests(c echo.Context) error {
	tests, err := s.hiddenTestsOf(c)
	if err != nil {
		return err
	}
	runID, attemptID, f := tests.RunID, tests.AttemptID, tests.Filter
	h := c.Response().Header()
	h.Set("Cache-Control", "private, no-store")
	h.Add("Vary", "HX-Request")
	if isHTMX(c) {
		// The address the browser shows is the filter's canonical one,
		// without the form's empty fields, so that it is worth sharing.
		h.Set("HX-Push-Url", web.HiddenTestsPath(runID, attemptID)+f.Query())
	}
	title := "Hidden tests of task " + tests.TaskID
	return s.render(c, http.StatusOK, web.HiddenTestsPage(s.page(c, title), web.HiddenTestsView{Tests: *tests}))
}

// showHiddenTest is one test of an attempt: both its runs, their steps and
// checkpoints, with images through signed artifact URLs.
func (s *Server) showHiddenTest(c echo.Context) error {
	t, err := s.hiddenTestOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	c.Response().Header().Set("Cache-Control", "private, no-store")
	v := web.HiddenTestView{Test: *t, URLs: s.hiddenTestURLs(ctx, t)}
	return s.render(c, http.StatusOK, web.HiddenTestPage(s.page(c, "Test "+t.Test.TestID+" of task "+t.TaskID), v))
}

// hiddenTestURLs signs the URLs of a test's images (step screenshots,
// candidate and reference regions, SSIM maps), keyed by artifact key. Only
// keys under the attempt's own artifacts are signed: the page never serves
// anything else, whatever a row names.
func (s *Server) hiddenTestURLs(ctx context.Context, t *models.AttemptHiddenTest) map[string]string {
	urls := map[string]string{}
	if s.deps.ArtifactURLs == nil {
		return urls
	}
	prefix := fmt.Sprintf("runs/%d/attempts/%d/", t.RunID, t.AttemptID)
	sign := func(key string) {
		if key == "" || urls[key] != "" || !strings.HasPrefix(key, prefix) || strings.Contains(key, "..") {
			return
		}
		u, err := s.deps.ArtifactURLs.URL(ctx, key, artifactURLTTL)
		if err != nil {
			s.log.Warn("sign artifact URL", "key", key, "error", err.Error())
			return
		}
		urls[key] = u
	}
	for _, run := range t.Test.Runs {
		for _, st := range run.Steps {
			sign(st.ScreenshotKey)
		}
		for _, cp := range run.Checkpoints {
			sign(cp.ReferenceKey)
			sign(cp.CandidateKey)
			sign(cp.MapKey)
		}
	}
	return urls
}
