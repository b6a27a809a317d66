package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
)

// apiBenchmarkRoutes registers the benchmark API: reading is public (unpublished
// benchmarks answer 404 to non-admins), importing is for admins.
func (s *Server) apiBenchmarkRoutes(g *echo.Group) {
	g.GET("/benchmarks", s.apiListBenchmarks)
	g.POST("/benchmarks/import", s.apiImportBenchmark, requireAdmin)
	g.GET("/benchmarks/:slug", s.apiShowBenchmark)
	g.GET("/benchmarks/:slug/tasks", s.apiListTasks)
	g.GET("/benchmarks/:slug/tasks/:taskID", s.apiShowTask)
}

// rawJSON passes stored JSON through; empty or invalid text is left out.
func rawJSON(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return nil
	}
	return json.RawMessage(s)
}

// orEmpty keeps JSON lists as [] rather than null.
func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// apiTaskOf converts a task for the API. The hidden fields are present when
// the benchmark service left them in (for admins and the system); blank ones
// are left out.
func apiTaskOf(t models.Task) api.Task {
	out := api.Task{
		ID: t.ExternalID, Position: t.Position, Intent: t.Intent, IntentTemplate: t.IntentTemplate,
		StartURLs: orEmpty(t.StartURLs), Sites: orEmpty(t.Sites), SiteKey: t.SiteKey,
		TaskType: t.TaskType, Difficulty: t.Difficulty, Domain: t.Domain, Attributes: orEmpty(t.Attributes),
		Revision: t.Revision, Modality: t.Modality, FileFormat: t.FileFormat, AccessType: t.AccessType,
		MaxToolCalls: t.MaxToolCalls, MaxSeconds: t.MaxSeconds, Metadata: rawJSON(t.Metadata),
		RubricItems: make([]api.RubricItem, len(t.RubricItems)),
	}
	for i, r := range t.RubricItems {
		out.RubricItems[i] = api.RubricItem{Key: r.Key, Requirement: r.Requirement, Verification: r.Verification, Weight: r.Weight}
	}
	out.EvalSpec, out.ReferenceAnswers, out.ReferenceActions = rawJSON(t.EvalSpec), rawJSON(t.ReferenceAnswers), rawJSON(t.ReferenceActions)
	return out
}

// apiListBenchmarks pages through the benchmarks in memory: a deployment hosts
// a handful, never enough to need a query per page.
func (s *Server) apiListBenchmarks(c echo.Context) error {
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	list, err := s.deps.Benchmarks.ListBenchmarks(c.Request().Context())
	if err != nil {
		return err
	}
	from := min((page-1)*perPage, len(list))
	to := min(from+perPage, len(list))
	items := make([]api.Benchmark, 0, to-from)
	for _, b := range list[from:to] {
		items = append(items, api.Benchmark{Slug: b.Slug, Name: b.Name, Description: b.Description, Format: b.Format,
			Version: b.Version, Tasks: b.Tasks, Subsets: b.Subsets, Sites: b.Sites, Published: b.Published})
	}
	return c.JSON(http.StatusOK, api.NewPage(items, page, perPage, len(list)))
}

func (s *Server) apiShowBenchmark(c echo.Context) error {
	sum, err := s.deps.Benchmarks.BenchmarkSummary(c.Request().Context(), pathParam(c, "slug"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sum)
}

func (s *Server) apiListTasks(c echo.Context) error {
	f, err := taskFilterOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	tasks, total, err := s.deps.Benchmarks.ListTasks(ctx, pathParam(c, "slug"), f)
	if err != nil {
		return err
	}
	items := make([]api.Task, len(tasks))
	for i, t := range tasks {
		items[i] = apiTaskOf(t)
	}
	return c.JSON(http.StatusOK, api.NewPage(items, f.Page, f.PerPage, total))
}

func (s *Server) apiShowTask(c echo.Context) error {
	ctx := c.Request().Context()
	t, err := s.deps.Benchmarks.Task(ctx, pathParam(c, "slug"), pathParam(c, "taskID"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiTaskOf(*t))
}

// apiImportBenchmark imports a multipart upload (the admin form's fields) and
// answers 201 with the new version, or 200 when the data was already imported.
func (s *Server) apiImportBenchmark(c echo.Context) error {
	res, err := s.runImport(c)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return c.JSON(status, api.ImportResult{
		Benchmark: res.Benchmark.Slug, Version: res.Version.Version, Checksum: res.Version.Checksum,
		Created: res.Created, Tasks: res.Version.TaskCount, Subsets: res.Subsets,
		URL: "/api/v1/benchmarks/" + url.PathEscape(res.Benchmark.Slug),
	})
}
