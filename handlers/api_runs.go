package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/models"
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

// apiRunInput is the body of POST /api/v1/runs; zero budgets take their defaults.
type apiRunInput struct {
	Team                string   `json:"team"`
	Agent               string   `json:"agent"`
	Benchmark           string   `json:"benchmark"`
	Subset              string   `json:"subset"`
	MaxSteps            int      `json:"max_steps"`
	MaxEpisodeSeconds   int      `json:"max_episode_seconds"`
	MaxAgentCallSeconds int      `json:"max_agent_call_seconds"`
	MaxCost             *float64 `json:"max_cost"`
	Parallelism         int      `json:"parallelism"`
	Notes               string   `json:"notes"`
}

// apiRun is a run as queued (POST /runs and /rerun).
type apiRun struct {
	ID                  int64     `json:"id"`
	Team                string    `json:"team,omitempty"`
	Agent               string    `json:"agent,omitempty"`
	Benchmark           string    `json:"benchmark,omitempty"`
	Subset              string    `json:"subset"`
	Status              string    `json:"status"`
	Origin              string    `json:"origin"`
	MaxSteps            int       `json:"max_steps"`
	MaxEpisodeSeconds   int       `json:"max_episode_seconds"`
	MaxAgentCallSeconds int       `json:"max_agent_call_seconds"`
	MaxCost             *float64  `json:"max_cost"`
	Parallelism         int       `json:"parallelism"`
	Notes               string    `json:"notes"`
	TasksTotal          int       `json:"tasks_total"`
	CreatedAt           time.Time `json:"created_at"`
	URL                 string    `json:"url"`
	APIURL              string    `json:"api_url"`
}

func toAPIRun(r *models.Run) apiRun {
	return apiRun{
		ID: r.ID, Agent: models.RunAgentSnapshot(r).Slug, Subset: r.SubsetName, Status: r.Status, Origin: r.Origin,
		MaxSteps: r.MaxSteps, MaxEpisodeSeconds: r.MaxEpisodeSeconds, MaxAgentCallSeconds: r.MaxAgentCallSeconds,
		MaxCost: r.MaxCost, Parallelism: r.Parallelism, Notes: r.Notes, TasksTotal: r.TasksTotal, CreatedAt: r.CreatedAt,
		URL: runPath(r.ID), APIURL: apiRunPath(r.ID),
	}
}

// apiRunItem is a run in listings and in a timeline.
type apiRunItem struct {
	ID            int64  `json:"id"`
	Status        string `json:"status"`
	Origin        string `json:"origin"`
	Team          string `json:"team"`
	TeamName      string `json:"team_name"`
	Agent         string `json:"agent"`
	AgentName     string `json:"agent_name"`
	Benchmark     string `json:"benchmark"`
	BenchmarkName string `json:"benchmark_name"`
	Subset        string `json:"subset"`
	TasksDone     int    `json:"tasks_done"`
	TasksTotal    int    `json:"tasks_total"`
	Successes     int    `json:"successes"`
	Errors        int    `json:"errors"`
	// ResultsWithheld: successes and errors read 0 because the caller
	// annotates some of the run's attempts in an open blind study.
	ResultsWithheld bool       `json:"results_withheld,omitempty"`
	Published       bool       `json:"published"`
	CreatedAt       time.Time  `json:"created_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	URL             string     `json:"url"`
	APIURL          string     `json:"api_url"`
}

func toAPIRunItem(r models.RunListItem) apiRunItem {
	return apiRunItem{
		ID: r.ID, Status: r.Status, Origin: r.Origin, Team: r.TeamSlug, TeamName: r.TeamName,
		Agent: r.AgentSlug, AgentName: r.AgentName, Benchmark: r.BenchmarkSlug, BenchmarkName: r.BenchmarkName,
		Subset: r.Subset, TasksDone: r.TasksDone, TasksTotal: r.TasksTotal, Successes: r.Successes, Errors: r.Errors,
		ResultsWithheld: r.Blind, Published: r.Published, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt, URL: runPath(r.ID), APIURL: apiRunPath(r.ID),
	}
}

// apiProgress is a run's live state (GET /runs/:id).
type apiProgress = models.RunState

func toAPIProgress(p *models.RunProgress) apiProgress {
	r := p.Run
	out := apiProgress{
		ID: r.ID, Status: r.Status, Finished: r.Finished(), Origin: r.Origin, Team: p.TeamSlug, TeamName: p.TeamName,
		Agent: models.RunAgentSnapshot(&r).Slug, AgentName: p.AgentName, Benchmark: p.Benchmark, Subset: r.SubsetName,
		MaxSteps: r.MaxSteps, MaxEpisodeSeconds: r.MaxEpisodeSeconds, MaxAgentCallSeconds: r.MaxAgentCallSeconds,
		MaxCost: r.MaxCost, Parallelism: r.Parallelism, Notes: r.Notes, Published: r.Published, TasksTotal: r.TasksTotal,
		Pending: p.Pending, Running: p.Running, Done: p.Done, Percent: p.Percent(), Successes: r.Successes,
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

// apiAttempt is an attempt in a run's attempt list.
type apiAttempt struct {
	ID           int64    `json:"id"`
	RunID        int64    `json:"run_id"`
	Task         string   `json:"task"`
	Intent       string   `json:"intent"`
	Status       string   `json:"status"`
	Outcome      string   `json:"outcome"`
	ErrorClass   string   `json:"error_class"`
	ErrorMessage string   `json:"error_message"`
	Score        *float64 `json:"score"`
	Steps        int      `json:"steps"`
	Cost         float64  `json:"cost"`
	DurationMS   int64    `json:"duration_ms"`
	Tries        int      `json:"tries"`
	URL          string   `json:"url"`
	APIURL       string   `json:"api_url"`
}

func attemptPaths(runID, attemptID int64) (page, api string) {
	suffix := "/attempts/" + strconv.FormatInt(attemptID, 10)
	return runPath(runID) + suffix, apiRunPath(runID) + suffix
}

func toAPIAttempt(a models.AttemptListItem) apiAttempt {
	page, api := attemptPaths(a.RunID, a.ID)
	return apiAttempt{
		ID: a.ID, RunID: a.RunID, Task: a.TaskExternalID, Intent: a.Intent, Status: a.Status, Outcome: a.Outcome,
		ErrorClass: a.ErrorClass, ErrorMessage: a.ErrorMessage, Score: a.Score, Steps: a.Steps, Cost: a.Cost,
		DurationMS: a.DurationMS, Tries: a.Tries, URL: page, APIURL: api,
	}
}

// apiTimeline is an attempt's timeline with signed artifact URLs.
type apiTimeline struct {
	Run        apiRunItem      `json:"run"`
	Attempt    apiTimelineTry  `json:"attempt"`
	Task       apiTimelineTask `json:"task"`
	Evaluation *apiEvaluation  `json:"evaluation"` // the primary verdict, null until evaluated or when not judged
	// Evaluations are every verdict, newest first: the current one of each
	// kind (check, judge, rubric) and the history re-scoring kept.
	Evaluations []apiEvaluation   `json:"evaluations"`
	Steps       []apiTimelineStep `json:"steps"`
}

type apiTimelineTry struct {
	ID           int64           `json:"id"`
	Status       string          `json:"status"`
	Outcome      string          `json:"outcome"`
	ErrorClass   string          `json:"error_class"`
	ErrorMessage string          `json:"error_message"`
	Score        *float64        `json:"score"`
	Steps        int             `json:"steps"`
	TokensIn     int64           `json:"tokens_in"`
	TokensOut    int64           `json:"tokens_out"`
	Cost         float64         `json:"cost"`
	DurationMS   int64           `json:"duration_ms"`
	Tries        int             `json:"tries"`
	FinalAnswer  json.RawMessage `json:"final_answer"`
	StartedAt    *time.Time      `json:"started_at"`
	FinishedAt   *time.Time      `json:"finished_at"`
	URL          string          `json:"url"`
}

// apiTimelineTask is a task's public fields only.
type apiTimelineTask struct {
	ID         string   `json:"id"`
	Intent     string   `json:"intent"`
	StartURLs  []string `json:"start_urls"`
	Sites      []string `json:"sites"`
	TaskType   string   `json:"task_type"`
	Difficulty string   `json:"difficulty"`
	Domain     string   `json:"domain"`
	Attributes []string `json:"attributes"`
}

type apiEvaluation struct {
	Evaluator        string              `json:"evaluator"`
	EvaluatorVersion string              `json:"evaluator_version"`
	Kind             string              `json:"kind"`
	Primary          bool                `json:"primary"`
	Current          bool                `json:"current"`
	Rescore          bool                `json:"rescore"`
	Verdict          string              `json:"verdict"`
	Score            *float64            `json:"score"`
	JudgeScore       *int                `json:"judge_score"`
	InputsChecksum   string              `json:"inputs_checksum"`
	TokensIn         int64               `json:"tokens_in"`
	TokensOut        int64               `json:"tokens_out"`
	Cost             float64             `json:"cost"`
	Rubric           []apiRubricJudgment `json:"rubric"`
	Details          json.RawMessage     `json:"details"`
	CreatedAt        time.Time           `json:"created_at"`
}

type apiRubricJudgment struct {
	Key       string `json:"key"`
	Passed    bool   `json:"passed"`
	Rationale string `json:"rationale"`
	Steps     []int  `json:"steps"`
}

func toAPIEvaluation(tl *models.Timeline, ev *models.Evaluation) apiEvaluation {
	out := apiEvaluation{
		Evaluator: ev.Evaluator, EvaluatorVersion: ev.EvaluatorVersion, Kind: ev.Kind, Primary: ev.IsPrimary,
		Current: ev.IsCurrent, Rescore: ev.Rescore, Verdict: ev.Verdict, Score: ev.Score, JudgeScore: ev.JudgeScore,
		InputsChecksum: ev.InputsChecksum, TokensIn: ev.TokensIn, TokensOut: ev.TokensOut, Cost: ev.Cost,
		Rubric: []apiRubricJudgment{}, Details: rawJSONOrNull(ev.Details), CreatedAt: ev.CreatedAt,
	}
	for _, j := range ev.RubricJudgments {
		key := ""
		if it := tl.RubricItem(j.RubricItemID); it != nil {
			key = it.Key
		}
		out.Rubric = append(out.Rubric, apiRubricJudgment{Key: key, Passed: j.Passed, Rationale: j.Rationale, Steps: nonNil([]int(j.EvidenceSteps))})
	}
	return out
}

type apiTimelineStep struct {
	Index           int             `json:"index"`
	Action          json.RawMessage `json:"action"`
	Summary         string          `json:"summary"`
	Thought         string          `json:"thought"`
	URL             string          `json:"url"`
	Title           string          `json:"title"`
	Error           string          `json:"error"`
	BlockedRequests []string        `json:"blocked_requests"`
	ObserveMS       int64           `json:"observe_ms"`
	AgentMS         int64           `json:"agent_ms"`
	ActMS           int64           `json:"act_ms"`
	TokensIn        int64           `json:"tokens_in"`
	TokensOut       int64           `json:"tokens_out"`
	Cost            float64         `json:"cost"`
	ScreenshotURL   string          `json:"screenshot_url,omitempty"`
	ThumbnailURL    string          `json:"thumbnail_url,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
}

// rawJSONOrNull passes stored JSON through, or null when it is empty or not JSON.
func rawJSONOrNull(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" || !json.Valid([]byte(s)) {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

func toAPITimeline(tl *models.Timeline, urls map[string]string) apiTimeline {
	a := tl.Attempt
	page, _ := attemptPaths(a.RunID, a.ID)
	out := apiTimeline{
		Run: toAPIRunItem(tl.Run),
		Attempt: apiTimelineTry{
			ID: a.ID, Status: a.Status, Outcome: a.Outcome, ErrorClass: a.ErrorClass, ErrorMessage: a.ErrorMessage,
			Score: a.Score, Steps: a.Steps, TokensIn: a.TokensIn, TokensOut: a.TokensOut, Cost: a.Cost,
			DurationMS: a.DurationMS, Tries: a.Tries, FinalAnswer: rawJSONOrNull(a.FinalAnswer),
			StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, URL: page,
		},
		Task: apiTimelineTask{
			ID: tl.Task.ExternalID, Intent: tl.Task.Intent, StartURLs: nonNil(tl.Task.StartURLs), Sites: nonNil(tl.Task.Sites),
			TaskType: tl.Task.TaskType, Difficulty: tl.Task.Difficulty, Domain: tl.Task.Domain, Attributes: nonNil(tl.Task.Attributes),
		},
		Steps: make([]apiTimelineStep, 0, len(tl.Steps)),
	}
	if ev := tl.Evaluation; ev != nil {
		primary := toAPIEvaluation(tl, ev)
		out.Evaluation = &primary
	}
	out.Evaluations = make([]apiEvaluation, 0, len(tl.Evaluations))
	for i := range tl.Evaluations {
		out.Evaluations = append(out.Evaluations, toAPIEvaluation(tl, &tl.Evaluations[i]))
	}
	for _, st := range tl.Steps {
		s := st.Step
		step := apiTimelineStep{
			Index: s.Index, Action: rawJSONOrNull(s.Action), Thought: s.Thought, URL: s.URL, Title: s.Title,
			Error: s.Error, BlockedRequests: nonNil(st.Blocked), ObserveMS: s.ObserveMS, AgentMS: s.AgentMS, ActMS: s.ActMS,
			TokensIn: s.TokensIn, TokensOut: s.TokensOut, Cost: s.Cost, CreatedAt: s.CreatedAt,
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
	items := make([]apiRunItem, 0, len(runs))
	for _, r := range runs {
		items = append(items, toAPIRunItem(r))
	}
	return c.JSON(http.StatusOK, listResponse{Items: items, Page: page, PerPage: perPage, Total: total, HasMore: page*perPage < total})
}

func (s *Server) apiQueueRun(c echo.Context) error {
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	var in apiRunInput
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
	return c.JSON(http.StatusOK, map[string]any{"run_id": id, "subsets": reports})
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
	items := make([]apiAttempt, 0, len(list))
	for _, a := range list {
		items = append(items, toAPIAttempt(a))
	}
	return c.JSON(http.StatusOK, listResponse{Items: items, Page: page, PerPage: perPage, Total: total, HasMore: page*perPage < total})
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

// apiRetried is the answer of POST /runs/:id/retry.
type apiRetried struct {
	Requeued int    `json:"requeued"`
	APIURL   string `json:"api_url"`
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
	return c.JSON(http.StatusOK, apiRetried{Requeued: n, APIURL: apiRunPath(id)})
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
