package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/stats"
	"proctor/web"
)

// matrixTasksPerPage is how many tasks a page of the per-task matrix shows:
// with 200 entries, a page is 20,000 cells, which still renders quickly.
const matrixTasksPerPage = 100

// breakdownsRoutes registers the public breakdowns pages of every board:
// /benchmarks/:slug/leaderboard/breakdowns is the full board's, and
// /benchmarks/:slug/leaderboard/:subset/breakdowns a subset's. A static path
// segment wins over a parameter in Echo's router, so the first never
// reaches the leaderboard's /benchmarks/:slug/leaderboard/:subset.
func (s *Server) breakdownsRoutes(e *echo.Echo) {
	e.GET("/benchmarks/:slug/leaderboard/breakdowns", s.showBreakdowns)
	e.GET("/benchmarks/:slug/leaderboard/:subset/breakdowns", s.showBreakdowns)
}

// breakdownQueryOf reads the board from the path and dim, page and version
// from the query string: EINVALID naming the parameter when one is malformed.
func breakdownQueryOf(c echo.Context) (models.BreakdownQuery, error) {
	q := models.BreakdownQuery{Slug: pathParam(c, "slug"), Subset: models.SubsetFull, Page: 1, PerPage: matrixTasksPerPage}
	if c.Param("subset") != "" {
		q.Subset = pathParam(c, "subset")
	}
	dim, err := models.CheckBreakdownDimension(strings.TrimSpace(c.QueryParam("dim")))
	if err != nil {
		return q, err
	}
	q.Dimension = dim
	if raw := strings.TrimSpace(c.QueryParam("page")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxPage {
			return q, models.FieldError("page", "page must be a whole number from 1 to %d, not %q", maxPage, shortParam(raw))
		}
		q.Page = n
	}
	if raw := strings.TrimSpace(c.QueryParam("version")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return q, models.FieldError("version", "version must be a version number, not %q", shortParam(raw))
		}
		q.Version = n
	}
	return q, nil
}

// shortParam shortens an echoed parameter so error messages stay readable.
func shortParam(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// showBreakdowns renders a board's breakdowns. An htmx request from the
// dimension links gets only the groups table back, one from the matrix's
// pagination only the matrix; anything else gets the whole page.
func (s *Server) showBreakdowns(c echo.Context) error {
	q, err := breakdownQueryOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	c.Response().Header().Add("Vary", "HX-Request, HX-Target")
	if wantsFragment(c) {
		switch c.Request().Header.Get("HX-Target") {
		case web.BreakdownGroupsID:
			board, err := s.deps.Runs.BreakdownBoard(ctx, q)
			if err != nil {
				return err
			}
			return s.render(c, http.StatusOK, web.BreakdownGroupsSection(board, q.Page))
		case web.TaskMatrixID:
			m, err := s.deps.Runs.TaskMatrix(ctx, q)
			if err != nil {
				return err
			}
			return s.render(c, http.StatusOK, web.TaskMatrixSection(m, q.Dimension))
		}
	}
	board, err := s.deps.Runs.BreakdownBoard(ctx, q)
	if err != nil {
		return err
	}
	board.CostFrontier = stats.CostFrontier(board.Entries)
	var m *models.TaskMatrix
	if len(board.Entries) > 0 {
		if m, err = s.deps.Runs.TaskMatrix(ctx, q); err != nil {
			return err
		}
	}
	title := fmt.Sprintf("Breakdowns of %s (%s)", board.Board.BenchmarkName, board.Board.Subset)
	return s.render(c, http.StatusOK, web.BreakdownsPage(s.page(c, title), board, m))
}
