package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
	"proctor/stats"
)

// apiRunRoutes registers the run API. Reads show what the caller may see (the
// team's members and admins, or anyone once a run is published); the store and
// the queue decide who may queue, cancel, retry and re-run.
func (s *Server) apiRunRoutes(g *echo.Group) {
	g.GET("/runs", s.apiListRuns)
	g.POST("/runs", s.apiQueueRun)
	g.GET("/runs/:id", s.apiShowRun)
	g.GET("/runs/:id/metrics", s.apiRunMetrics)
	g.GET("/runs/:id/attempts", s.apiListAttempts)
	g.GET("/runs/:id/attempts/:attemptID", s.apiShowAttempt)
	g.POST("/runs/:id/cancel", s.apiCancelRun)
	g.POST("/runs/:id/retry", s.apiRetryRun)
	g.POST("/runs/:id/rerun", s.apiRerunRun)
}

func apiRunPath(id int64) string { return "/api/v1/runs/" + strconv.FormatInt(id, 10) }

// toAPIRunBudgets are a run's budgets as it was queued.
func toAPIRunBudgets(r *models.Run) api.RunBudgets {
	return api.RunBudgets{MaxSteps: r.MaxSteps, MaxEpisodeSeconds: r.MaxEpisodeSeconds, MaxAgentCallSeconds: r.MaxAgentCallSeconds,
		MaxCost: r.MaxCost, Parallelism: r.Parallelism, Notes: r.Notes}
}

func toAPIRun(r *models.Run) api.Run {
	return api.Run{
		ID: r.ID, Agent: models.RunAgentSnapshot(r).Slug, Subset: r.SubsetName, Status: r.Status, Origin: r.Origin,
		RunBudgets: toAPIRunBudgets(r), TasksTotal: r.TasksTotal, CreatedAt: r.CreatedAt,
		URL: runPath(r.ID), APIURL: apiRunPath(r.ID),
	}
}

func toAPIRunItem(r models.RunListItem) api.RunItem {
	return api.RunItem{
		ID: r.ID, Status: r.Status, Origin: r.Origin, Team: r.TeamSlug, TeamName: r.TeamName,
		Agent: r.AgentSlug, AgentName: r.AgentName, Benchmark: r.BenchmarkSlug, BenchmarkName: r.BenchmarkName,
		Subset: r.Subset, TasksDone: r.TasksDone, TasksTotal: r.TasksTotal, Successes: r.Successes, Errors: r.Errors,
		ResultsWithheld: r.Blind, Published: r.Published, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt, URL: runPath(r.ID), APIURL: apiRunPath(r.ID),
	}
}

func toAPIProgress(p *models.RunProgress) api.RunState {
	r := p.Run
	out := api.RunState{
		ID: r.ID, Status: r.Status, Finished: r.Finished(), Origin: r.Origin, Team: p.TeamSlug, TeamName: p.TeamName,
		Agent: models.RunAgentSnapshot(&r).Slug, AgentName: p.AgentName, Benchmark: p.Benchmark, Subset: r.SubsetName,
		RunBudgets: toAPIRunBudgets(&r), Published: r.Published, TasksTotal: r.TasksTotal,
		Pending: p.Pending, WaitingForAgent: p.WaitingForAgent, Running: p.Running, Done: p.Done, Percent: p.Percent(), Successes: r.Successes,
		Failures: r.Failures, Errors: r.Errors, ErrorsByClass: p.ErrorsBy, ResultsWithheld: p.Blind, Steps: r.StepsSum, TokensIn: r.TokensIn,
		TokensOut: r.TokensOut, Cost: r.Cost, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		URL: runPath(r.ID), AttemptsURL: apiRunPath(r.ID) + "/attempts",
	}
	if out.ErrorsByClass == nil {
		out.ErrorsByClass = map[string]int{}
	}
	if p.ETA > 0 {
		eta := int64(p.ETA.Round(time.Second) / time.Second)
		out.ETASeconds = &eta
	}
	return out
}

func attemptPaths(runID, attemptID int64) (page, apiURL string) {
	suffix := "/attempts/" + strconv.FormatInt(attemptID, 10)
	return runPath(runID) + suffix, apiRunPath(runID) + suffix
}

func toAPIAttempt(a models.AttemptListItem) api.Attempt {
	page, apiURL := attemptPaths(a.RunID, a.ID)
	return api.Attempt{
		ID: a.ID, RunID: a.RunID, Task: a.TaskExternalID, Intent: a.Intent, Status: a.Status, Outcome: a.Outcome,
		ErrorClass: a.ErrorClass, ErrorMessage: a.ErrorMessage, Score: a.Score, Steps: a.Steps, Cost: a.Cost,
		DurationMS: a.DurationMS, Tries: a.Tries, URL: page, APIURL: apiURL,
	}
}

func toAPIEvaluation(tl *models.Timeline, ev *models.Evaluation) api.Evaluation {
	out := api.Evaluation{
		Evaluator: ev.Evaluator, EvaluatorVersion: ev.EvaluatorVersion, Kind: ev.Kind, Primary: ev.IsPrimary,
		Current: ev.IsCurrent, Rescore: ev.Rescore, Verdict: ev.Verdict, Score: ev.Score, JudgeScore: ev.JudgeScore,
		InputsChecksum: ev.InputsChecksum, TokensIn: ev.TokensIn, TokensOut: ev.TokensOut, Cost: ev.Cost,
		Rubric: []api.RubricJudgment{}, Details: rawJSONOrNull(ev.Details), CreatedAt: ev.CreatedAt,
	}
	for _, j := range ev.RubricJudgments {
		key := ""
		if it := tl.RubricItem(j.RubricItemID); it != nil {
			key = it.Key
		}
		out.Rubric = append(out.Rubric, api.RubricJudgment{Key: key, Passed: j.Passed, Rationale: j.Rationale, Steps: nonNil([]int(j.EvidenceSteps))})
	}
	return out
}

// rawJSONOrNull passes stored JSON through, or null when it is empty or not JSON.
func rawJSONOrNull(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" || !json.Valid([]byte(s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

func toAPITimeline(tl *models.Timeline, urls map[string]string) api.Timeline {
	a := tl.Attempt
	page, _ := attemptPaths(a.RunID, a.ID)
	out := api.Timeline{
		Run: toAPIRunItem(tl.Run),
		Attempt: api.TimelineTry{
			ID: a.ID, Status: a.Status, Outcome: a.Outcome, ErrorClass: a.ErrorClass, ErrorMessage: a.ErrorMessage,
			Score: a.Score, Steps: a.Steps, TokensIn: a.TokensIn, TokensOut: a.TokensOut, Cost: a.Cost,
			DurationMS: a.DurationMS, Tries: a.Tries, FinalAnswer: rawJSONOrNull(a.FinalAnswer),
			StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, URL: page,
		},
		Task: api.TimelineTask{
			ID: tl.Task.ExternalID, Intent: tl.Task.Intent, StartURLs: nonNil(tl.Task.StartURLs), Sites: nonNil(tl.Task.Sites),
			TaskType: tl.Task.TaskType, Difficulty: tl.Task.Difficulty, Domain: tl.Task.Domain, Attributes: nonNil(tl.Task.Attributes),
		},
		Steps: make([]api.TimelineStep, 0, len(tl.Steps)),
	}
	if ev := tl.Evaluation; ev != nil {
		primary := toAPIEvaluation(tl, ev)
		out.Evaluation = &primary
	}
	out.Evaluations = make([]api.Evaluation, 0, len(tl.Evaluations))
	for i := range tl.Evaluations {
		out.Evaluations = append(out.Evaluations, toAPIEvaluation(tl, &tl.Evaluations[i]))
	}
	for _, st := range tl.Steps {
		s := st.Step
		step := api.TimelineStep{
			Index: s.Index, Action: rawJSONOrNull(s.Action), Thought: s.Thought, URL: s.URL, Title: s.Title,
			Error: s.Error, BlockedRequests: nonNil(st.Blocked), ObserveMS: s.ObserveMS, AgentMS: s.AgentMS, ActMS: s.ActMS,
			PersistMS: s.PersistMS, TokensIn: s.TokensIn, TokensOut: s.TokensOut, Cost: s.Cost, CreatedAt: s.CreatedAt,
			ScreenshotURL: urls[s.ScreenshotKey], ThumbnailURL: urls[s.ThumbnailKey],
		}
		if st.Action != nil {
			step.Summary = st.Action.Summary()
		}
		out.Steps = append(out.Steps, step)
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) apiListRuns(c echo.Context) error {
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	runs, total, err := s.deps.Runs.ListRuns(c.Request().Context(), models.RunFilter{TeamSlug: c.QueryParam("team"), Page: page, PerPage: perPage})
	if err != nil {
		return err
	}
	items := make([]api.RunItem, 0, len(runs))
	for _, r := range runs {
		items = append(items, toAPIRunItem(r))
	}
	return c.JSON(http.StatusOK, api.NewPage(items, page, perPage, total))
}

func (s *Server) apiQueueRun(c echo.Context) error {
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	var in api.RunInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	if strings.TrimSpace(in.Team) == "" {
		return models.FieldError("team", "name the team that queues the run")
	}
	req := models.RunRequest{
		TeamSlug: in.Team, AgentSlug: in.Agent, BenchmarkSlug: in.Benchmark, Subset: in.Subset,
		MaxSteps: in.MaxSteps, MaxEpisodeSeconds: in.MaxEpisodeSeconds, MaxAgentCallSeconds: in.MaxAgentCallSeconds,
		MaxCost: in.MaxCost, Parallelism: in.Parallelism, Notes: in.Notes,
	}
	run, err := s.deps.Runs.QueueRun(c.Request().Context(), req)
	if err != nil {
		return err
	}
	out := toAPIRun(run)
	out.Team, out.Agent, out.Benchmark = req.TeamSlug, req.AgentSlug, req.BenchmarkSlug
	c.Response().Header().Set(echo.HeaderLocation, out.APIURL)
	return c.JSON(http.StatusCreated, out)
}

func (s *Server) apiShowRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	p, err := s.deps.Runs.RunProgress(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIProgress(p))
}

// apiRunMetrics is GET /api/v1/runs/{id}/metrics. It stays beside its
// handler rather than in package api: its reports are the stats package's
// own, encoded as they are, and api imports nothing but models.
type apiRunMetrics struct {
	RunID   int64          `json:"run_id"`
	Subsets []stats.Report `json:"subsets"`
}

// apiRunMetrics returns the run's metrics with their breakdowns: its own
// subset first, then (for a run over every task) each named subset.
func (s *Server) apiRunMetrics(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	reports, err := s.deps.Runs.RunMetrics(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiRunMetrics{RunID: id, Subsets: reports})
}

func (s *Server) apiListAttempts(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	list, total, err := s.deps.Runs.RunAttempts(c.Request().Context(), id, page, perPage)
	if err != nil {
		return err
	}
	items := make([]api.Attempt, 0, len(list))
	for _, a := range list {
		items = append(items, toAPIAttempt(a))
	}
	return c.JSON(http.StatusOK, api.NewPage(items, page, perPage, total))
}

func (s *Server) apiShowAttempt(c echo.Context) error {
	tl, err := s.timelineOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPITimeline(tl, s.stepArtifactURLs(c.Request().Context(), tl.Steps)))
}

func (s *Server) apiCancelRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Runs.CancelRun(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiRetryRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	n, err := s.deps.Runs.RetryAttempts(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.Retried{Requeued: n, APIURL: apiRunPath(id)})
}

func (s *Server) apiRerunRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	run, err := s.deps.Runs.RerunRun(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := toAPIRun(run)
	c.Response().Header().Set(echo.HeaderLocation, out.APIURL)
	return c.JSON(http.StatusCreated, out)
}
