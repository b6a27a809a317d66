package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/service"
	"proctor/web"
)

// BenchmarkService is what the benchmark pages, the admin pages and the
// benchmark API need (service.Benchmarks): it decides who sees and changes
// what.
type BenchmarkService interface {
	// TaskDefects lists a task's upstream defects for administrators (nil
	// for everyone else).
	TaskDefects(ctx context.Context, slug string, t *models.Task) ([]models.TaskDefect, error)
	// Leaderboard returns a benchmark's board for a subset, filtered, ranked
	// and sorted by the query; ENOTFOUND for unknown or hidden boards.
	Leaderboard(ctx context.Context, slug, subset string, q models.LeaderboardQuery) (*models.Leaderboard, error)
	// BoardVersion returns where the benchmark's boards stand for the
	// caller; it moves with every change they show.
	BoardVersion(ctx context.Context, slug string) (models.BoardVersion, error)
	ListBenchmarks(ctx context.Context) ([]models.BenchmarkListItem, error)
	Benchmark(ctx context.Context, slug string) (*models.Benchmark, error)
	BenchmarkDetail(ctx context.Context, slug string) (*models.BenchmarkDetail, error)
	BenchmarkSummary(ctx context.Context, slug string) (*models.BenchmarkSummary, error)
	BrowseTasks(ctx context.Context, slug string, f models.TaskFilter) (*models.TaskPage, error)
	ListTasks(ctx context.Context, slug string, f models.TaskFilter) ([]models.Task, int, error)
	Task(ctx context.Context, slug, externalID string) (*models.Task, error)
	ListSites(ctx context.Context, slug string) ([]models.Site, error)
	Import(ctx context.Context, req service.ImportRequest) (models.ImportResult, error)
	AdminBenchmarks(ctx context.Context) ([]models.AdminBenchmark, error)
	UpdateSite(ctx context.Context, slug, siteName, siteURL, resetURL string, maxConcurrency int) (*models.Site, error)
	SetPublished(ctx context.Context, slug string, published bool) error
	SetJudge(ctx context.Context, slug string, u models.JudgeUpdate) error
	SetEvaluator(ctx context.Context, slug, evaluator string) error
}

// benchmarkRoutes registers the public benchmark pages (unpublished benchmarks
// answer 404 to non-admins) and the admin pages.
func (s *Server) benchmarkRoutes(e *echo.Echo) {
	e.GET("/benchmarks", s.listBenchmarks)
	e.GET("/benchmarks/:slug", s.showBenchmark)
	e.GET("/benchmarks/:slug/tasks", s.browseTasks)
	e.GET("/benchmarks/:slug/tasks/:taskID", s.showTask)
	s.adminRoutes(e)
}

func (s *Server) listBenchmarks(c echo.Context) error {
	list, err := s.deps.Benchmarks.ListBenchmarks(c.Request().Context())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.BenchmarksPage(s.page(c, "Benchmarks"), list))
}

func (s *Server) showBenchmark(c echo.Context) error {
	d, err := s.deps.Benchmarks.BenchmarkDetail(c.Request().Context(), pathParam(c, "slug"))
	if err != nil {
		return err
	}
	d.Grading = s.deps.Evaluators.Grading(d.Benchmark.Evaluator)
	return s.render(c, http.StatusOK, web.BenchmarkPage(s.page(c, d.Benchmark.Name), d))
}

// browseTasks is the task browser. An htmx request from its own form or
// pagination gets only the results fragment; boosted navigation and history
// restores get the whole page.
func (s *Server) browseTasks(c echo.Context) error {
	f, err := taskFilterOf(c)
	if err != nil {
		return err
	}
	tp, err := s.deps.Benchmarks.BrowseTasks(c.Request().Context(), pathParam(c, "slug"), f)
	if err != nil {
		return err
	}
	c.Response().Header().Add("Vary", "HX-Request")
	if wantsFragment(c) {
		return s.render(c, http.StatusOK, web.TaskResults(tp))
	}
	return s.render(c, http.StatusOK, web.TasksPage(s.page(c, "Tasks of "+tp.Benchmark.Name), tp))
}

func (s *Server) showTask(c echo.Context) error {
	slug, id := pathParam(c, "slug"), pathParam(c, "taskID")
	ctx := c.Request().Context()
	t, err := s.deps.Benchmarks.Task(ctx, slug, id)
	if err != nil {
		return err
	}
	defects, err := s.deps.Benchmarks.TaskDefects(ctx, slug, t)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.TaskDetailPage(s.page(c, "Task "+t.ExternalID), slug, t, defects))
}

// wantsFragment reports whether an htmx request asks for a part of the page
// rather than a whole page.
func wantsFragment(c echo.Context) bool {
	h := c.Request().Header
	return isHTMX(c) && h.Get("HX-Boosted") != "true" && h.Get("HX-History-Restore-Request") != "true"
}

// taskFilterOf reads the task browser's query parameters: site, task_type,
// difficulty, domain, attribute, subset, q, page and per_page.
func taskFilterOf(c echo.Context) (models.TaskFilter, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return models.TaskFilter{}, err
	}
	return models.TaskFilter{
		Site:       c.QueryParam("site"),
		TaskType:   c.QueryParam("task_type"),
		Difficulty: c.QueryParam("difficulty"),
		Domain:     c.QueryParam("domain"),
		Attribute:  c.QueryParam("attribute"),
		Subset:     c.QueryParam("subset"),
		Query:      c.QueryParam("q"),
		Page:       page,
		PerPage:    perPage,
	}.Normalized(), nil
}
