package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
	"proctor/web"
)

// compareRoutes registers the compare pages and API routes. Anyone may
// compare the runs they may see; the store decides which those are.
func (s *Server) compareRoutes(e *echo.Echo) {
	e.GET("/compare", s.showComparison)
	e.GET("/api/v1/compare", s.apiCompare)
}

// compareRunsParam is the runs query parameter; several of them are read as
// one comma-separated list. present is false when the parameter is absent.
func compareRunsParam(c echo.Context) (raw string, present bool) {
	values, present := c.QueryParams()[models.CompareParam]
	return strings.Join(values, ","), present
}

// showComparison is the compare page: the form alone until runs are chosen,
// then the comparison at its permalink, /compare?runs=12,15. Runs that cannot
// be compared (malformed, too few or too many, repeated, of different
// benchmarks) re-render the form with the reason and status 400; a run the
// caller may not see is the plain 404 page.
func (s *Server) showComparison(c echo.Context) error {
	raw, present := compareRunsParam(c)
	v := web.CompareView{Runs: raw}
	if !present {
		return s.render(c, http.StatusOK, web.ComparePage(s.page(c, "Compare runs"), v))
	}
	ids, err := models.ParseCompareRuns(raw)
	if err == nil && c.Request().URL.RawQuery != strings.TrimPrefix(web.ComparePath(ids), "/compare?") {
		// One address per comparison: spaces, escaped commas and repeated
		// parameters (as a form submits them) lead to the permalink.
		return redirect(c, web.ComparePath(ids))
	}
	var cmp *models.Comparison
	if err == nil {
		cmp, err = s.deps.Runs.CompareRuns(c.Request().Context(), ids)
	}
	if models.ErrorCode(err) == models.EINVALID {
		v.Error = models.ErrorMessage(err)
		return s.render(c, http.StatusBadRequest, web.ComparePage(s.page(c, "Compare runs"), v))
	}
	if err != nil {
		return err
	}
	v.Comparison, v.Runs = cmp, models.CompareRunsValue(cmp.RunIDs())
	return s.render(c, http.StatusOK, web.ComparePage(s.page(c, "Compare runs "+strings.ReplaceAll(v.Runs, ",", ", ")), v))
}

// apiCompare answers the comparison as JSON; every error, a missing runs
// parameter included, is the API's error object.
func (s *Server) apiCompare(c echo.Context) error {
	raw, _ := compareRunsParam(c)
	ids, err := models.ParseCompareRuns(raw)
	if err != nil {
		return err
	}
	cmp, err := s.deps.Runs.CompareRuns(c.Request().Context(), ids)
	if err != nil {
		return err
	}
	out := api.Comparison{
		Benchmark:      api.CompareBenchmark{Slug: cmp.BenchmarkSlug, Name: cmp.BenchmarkName},
		VersionsDiffer: cmp.VersionsDiffer, MetricsSubset: cmp.MetricsSubset,
		Metrics: cmp.Metrics, Breakdowns: cmp.Breakdowns, PairedTests: cmp.Paired,
		SharedTasks: len(cmp.Tasks), Tasks: make([]api.CompareTask, 0, len(cmp.Tasks)),
		URL: web.ComparePath(cmp.RunIDs()),
	}
	if out.Breakdowns == nil {
		out.Breakdowns = []models.CompareBreakdown{}
	}
	for i, r := range cmp.Runs {
		out.Runs = append(out.Runs, api.CompareRun{
			RunItem: toAPIRunItem(r.RunListItem), Label: string(rune('A' + i)), Baseline: i == 0,
			Model: r.Model, BenchmarkVersion: r.BenchmarkVersion, MetricsSubset: r.MetricsSubset, Restricted: r.Restricted,
		})
	}
	for _, t := range cmp.Tasks {
		at := api.CompareTask{ID: t.ExternalID, Intent: t.Intent, Difficulty: t.Difficulty, Site: t.Site, Differs: t.Differs()}
		if len(cmp.Runs) == 2 {
			at.Group = t.PairGroup(0, 1)
		}
		for _, cell := range t.Cells {
			at.Runs = append(at.Runs, api.CompareCell{CompareCell: cell, TimelineURL: compareTimelinePath(cell.RunID, cell.AttemptID)})
		}
		if at.Differs {
			out.DifferingTasks++
		}
		out.Tasks = append(out.Tasks, at)
	}
	return c.JSON(http.StatusOK, out)
}

// compareTimelinePath is the timeline page of a run's attempt.
func compareTimelinePath(runID, attemptID int64) string {
	return fmt.Sprintf("/runs/%d/attempts/%d", runID, attemptID)
}
