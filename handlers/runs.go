package handlers

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/stats"
	"proctor/web"
)

// RunService is the run service (service.Runs): queuing, retrying and
// re-scoring runs, and every read of a run, its attempts and their steps,
// already redacted for the caller.
type RunService interface {
	QueueAvailable() bool
	RequireQueue() error
	QueueRun(ctx context.Context, req models.RunRequest) (*models.Run, error)
	RerunRun(ctx context.Context, runID int64) (*models.Run, error) // a new run with the same configuration and agent snapshot
	RetryAttempts(ctx context.Context, runID int64) (int, error)    // re-enqueue attempts that ended in error; returns how many
	// Rescore queues a new evaluation of finished attempts in scope (admins only); returns how many.
	Rescore(ctx context.Context, scope models.RescoreScope) (int, error)
	CancelRun(ctx context.Context, runID int64) error

	ListRuns(ctx context.Context, f models.RunFilter) ([]models.RunListItem, int, error)
	TeamRuns(ctx context.Context, teamSlug string, page, perPage int) (*models.TeamRunList, error)
	RunProgress(ctx context.Context, runID int64) (*models.RunProgress, error)
	RunOverview(ctx context.Context, runID int64, f models.AttemptFilter) (*models.RunOverview, error)
	RunResults(ctx context.Context, runID int64, emit func([]models.RunResult) error) error
	RunAttempts(ctx context.Context, runID int64, page, perPage int) ([]models.AttemptListItem, int, error)
	RunMetrics(ctx context.Context, runID int64) ([]stats.Report, error)
	RunFormOptions(ctx context.Context, teamSlug string) (*models.RunFormOptions, error)
	RunHiddenResults(ctx context.Context, runID int64) (*models.RunHiddenResults, error)
	AttemptTimeline(ctx context.Context, attemptID int64) (*models.Timeline, error)
	AttemptSteps(ctx context.Context, attemptID int64) (*models.AttemptSteps, error)
	AttemptExpectedAnswer(ctx context.Context, attemptID int64) (*models.ExpectedAnswer, error)
	AttemptHiddenTests(ctx context.Context, attemptID int64, f models.HiddenTestFilter) (*models.AttemptHiddenTests, error)
	AttemptHiddenTest(ctx context.Context, attemptID int64, testID string) (*models.AttemptHiddenTest, error)
	CompareRuns(ctx context.Context, runIDs []int64) (*models.Comparison, error)
	BreakdownBoard(ctx context.Context, q models.BreakdownQuery) (*models.BreakdownBoard, error)
	TaskMatrix(ctx context.Context, q models.BreakdownQuery) (*models.TaskMatrix, error)
}

// ArtifactURLSigner makes time-limited GET URLs for stored artifacts (the
// artifact store: presigned S3 URLs or signed local ones).
type ArtifactURLSigner interface {
	URL(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// artifactURLTTL is how long the screenshot links of a page keep working.
const artifactURLTTL = time.Hour

// runRoutes registers the run pages. Runs are visible to their team's members
// and admins, and to everyone once published; the store decides, and answers
// 404 for runs the caller may not see.
func (s *Server) runRoutes(e *echo.Echo) {
	e.GET("/runs", s.listRuns)
	e.GET("/runs/:id", s.showRun)
	e.GET("/runs/:id/progress", s.showRunProgress)
	e.GET("/runs/:id/attempts/:attemptID", s.showTimeline)
	e.POST("/runs/:id/cancel", s.cancelRun, requireUser)
	e.POST("/runs/:id/retry", s.retryRun, requireUser)
	e.POST("/runs/:id/rerun", s.rerunRun, requireUser)
	e.POST("/runs/:id/rescore", s.rescoreRun, requireAdmin)
	e.GET("/teams/:slug/runs", s.listTeamRuns)
	e.GET("/teams/:slug/runs/new", s.newRun, requireUser)
	e.POST("/teams/:slug/runs", s.queueRun, requireUser)
}

func runPath(id int64) string { return "/runs/" + strconv.FormatInt(id, 10) }

func (s *Server) listRuns(c echo.Context) error {
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	runs, total, err := s.deps.Runs.ListRuns(c.Request().Context(), models.RunFilter{Page: page, PerPage: perPage})
	if err != nil {
		return err
	}
	teams, err := s.deps.Teams.MemberTeams(c.Request().Context())
	if err != nil {
		return err
	}
	v := web.RunListView{Runs: runs, Page: page, PerPage: perPage, Total: total, Path: "/runs"}
	return s.render(c, http.StatusOK, web.RunsPage(s.page(c, "Runs"), v, teams))
}

func (s *Server) listTeamRuns(c echo.Context) error {
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	tr, err := s.deps.Runs.TeamRuns(c.Request().Context(), c.Param("slug"), page, perPage)
	if err != nil {
		return err
	}
	v := web.TeamRunsView{
		Team: tr.Team, CanQueue: tr.CanQueue,
		List: web.RunListView{Runs: tr.Runs, Page: page, PerPage: perPage, Total: tr.Total, Path: web.TeamRunsPath(tr.Team.Slug)},
	}
	return s.render(c, http.StatusOK, web.TeamRunsPage(s.page(c, "Runs of "+tr.Team.Name), v))
}

// showRun is the run page: summary, live progress, publication state, actions
// and the attempts table, filtered by the query's outcome, error_class, site
// and difficulty. An htmx request from the filter form or the table's pages
// gets the attempts results only.
func (s *Server) showRun(c echo.Context) error {
	return s.renderRun(c, http.StatusOK, "")
}

// renderRun renders the run page with an optional message at the top (a refused
// action's reason).
func (s *Server) renderRun(c echo.Context, status int, message string) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	f, err := attemptFilterOf(c)
	if err != nil {
		return err
	}
	ov, err := s.deps.Runs.RunOverview(c.Request().Context(), id, f)
	if err != nil {
		return err
	}
	c.Response().Header().Add("Vary", "HX-Request")
	v := runViewOf(ov, message)
	if wantsFragment(c) && message == "" {
		// The address the browser shows is the filter's canonical one, without
		// the form's empty fields, so that it is worth sharing.
		c.Response().Header().Set("HX-Push-Url", runPath(id)+f.Query(f.Page, defaultPerPage))
		return s.render(c, status, web.AttemptResults(v))
	}
	if !ov.AttemptsWithheld {
		// A hidden run's numbers stay with its team and the administrators.
		if v.Metrics, err = s.deps.Runs.RunMetrics(c.Request().Context(), id); err != nil {
			return err
		}
		if v.Hidden, err = s.deps.Runs.RunHiddenResults(c.Request().Context(), id); err != nil {
			return err
		}
	}
	p := s.page(c, "Run "+strconv.FormatInt(id, 10))
	if c.QueryParam("notice") == "queued" {
		v.Queued = message == ""
	} else if n := runNotice(c); n != "" && message == "" {
		p.Flash = n
	} else if n := moderationNotice(c); n != "" && message == "" {
		p.Flash = n
	}
	return s.render(c, status, web.RunPage(p, v))
}

// runViewOf is the run page's view of the store's overview.
func runViewOf(ov *models.RunOverview, message string) web.RunView {
	return web.RunView{Run: ov.Page, Error: message, Filter: ov.Filter, Facets: ov.Facets, Moderation: ov.Moderation, AttemptsWithheld: ov.AttemptsWithheld, AttemptsBlind: ov.AttemptsBlind}
}

// attemptFilterOf reads the run page's query parameters: outcome,
// error_class, site, difficulty, page and per_page. Values are checked by the
// store (EINVALID naming the parameter).
func attemptFilterOf(c echo.Context) (models.AttemptFilter, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return models.AttemptFilter{}, err
	}
	return models.AttemptFilter{
		Outcome:    strings.TrimSpace(c.QueryParam("outcome")),
		ErrorClass: strings.TrimSpace(c.QueryParam("error_class")),
		Site:       strings.TrimSpace(c.QueryParam("site")),
		Difficulty: strings.TrimSpace(c.QueryParam("difficulty")),
		Page:       page,
		PerPage:    perPage,
	}, nil
}

// runNotice is the one-time notice of a run action's redirect.
func runNotice(c echo.Context) string {
	switch c.QueryParam("notice") {
	case "canceled":
		return "Run canceled. Episodes in flight stop within seconds."
	case "retried":
		n, _ := strconv.Atoi(c.QueryParam("n"))
		switch n {
		case 0:
			return "No attempt ended in an error: there was nothing to retry."
		case 1:
			return "1 failed attempt is queued again."
		}
		return strconv.Itoa(n) + " failed attempts are queued again."
	}
	return ""
}

// showRunProgress answers the run page's polling with its live update (the
// progress, and out of band the status badge, the queued notice and the
// attempts table asked for by the page's filter); a plain request gets a
// page holding the progress.
func (s *Server) showRunProgress(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	c.Response().Header().Add("Vary", "HX-Request")
	if !wantsFragment(c) {
		prog, err := s.deps.Runs.RunProgress(c.Request().Context(), id)
		if err != nil {
			return err
		}
		return s.render(c, http.StatusOK, web.RunProgressPage(s.page(c, "Progress of run "+strconv.FormatInt(id, 10)), *prog))
	}
	f, err := attemptFilterOf(c)
	if err != nil {
		return err
	}
	ov, err := s.deps.Runs.RunOverview(c.Request().Context(), id, f)
	if err != nil {
		return err
	}
	if ov.Page.Progress.Run.Finished() {
		// The page was polling an unfinished run: reload it whole, so the
		// metrics, the actions and the final outcomes show.
		c.Response().Header().Set("HX-Refresh", "true")
		return s.render(c, http.StatusOK, web.RunProgressSection(ov.Page.Progress))
	}
	return s.render(c, http.StatusOK, web.RunLiveUpdate(runViewOf(ov, "")))
}

func (s *Server) cancelRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Runs.CancelRun(c.Request().Context(), id); err != nil {
		return s.runActionError(c, err)
	}
	return redirect(c, runPath(id)+"?notice=canceled")
}

func (s *Server) retryRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	n, err := s.deps.Runs.RetryAttempts(c.Request().Context(), id)
	if err != nil {
		return s.runActionError(c, err)
	}
	return redirect(c, runPath(id)+"?notice=retried&n="+strconv.Itoa(n))
}

// rescoreRun queues a new evaluation of the run's finished attempts.
func (s *Server) rescoreRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	n, err := s.deps.Runs.Rescore(c.Request().Context(), models.RescoreScope{RunID: id})
	if err != nil {
		return s.runActionError(c, err)
	}
	return redirect(c, runPath(id)+"?notice=rescored&n="+strconv.Itoa(n))
}

// rescoredNotice tells how many attempts a re-scoring queued.
func rescoredNotice(count string) string {
	n, _ := strconv.Atoi(count)
	if n == 0 {
		return "No finished attempt to re-score."
	}
	return strconv.Itoa(n) + " finished attempts are queued for re-scoring; their new verdicts appear as they are graded, and earlier ones are kept."
}

func (s *Server) rerunRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	run, err := s.deps.Runs.RerunRun(c.Request().Context(), id)
	if err != nil {
		return s.runActionError(c, err)
	}
	return redirect(c, runPath(run.ID)+"?notice=queued")
}

// runActionError shows a refused run action (already finished, over quota,
// nothing to re-run) at the top of the run page; anything else goes to the
// error handler.
func (s *Server) runActionError(c echo.Context, err error) error {
	code := models.ErrorCode(err)
	switch code {
	case models.EINVALID, models.ECONFLICT, models.ERATELIMIT:
	default:
		return err
	}
	setRetryAfter(c, err)
	return s.renderRun(c, statusOf(code), models.ErrorMessage(err))
}

// runFormFields are the queue form's fields, echoed back when it re-renders.
func runFormFields() []string {
	return []string{"agent", "benchmark", "subset", "max_steps", "max_episode_seconds", "max_agent_call_seconds", "max_cost", "parallelism", "notes"}
}

func (s *Server) newRun(c echo.Context) error {
	opts, err := s.deps.Runs.RunFormOptions(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	f := web.NewForm()
	f.Values["agent"] = c.QueryParam("agent")
	f.Values["benchmark"] = c.QueryParam("benchmark")
	f.Values["subset"] = models.SubsetFull
	if v := c.QueryParam("subset"); v != "" {
		f.Values["subset"] = v
	}
	f.Values["max_steps"] = strconv.Itoa(models.DefaultMaxSteps)
	f.Values["max_episode_seconds"] = strconv.Itoa(models.DefaultMaxEpisodeSeconds)
	f.Values["max_agent_call_seconds"] = strconv.Itoa(models.DefaultMaxAgentCallSeconds)
	f.Values["parallelism"] = "1"
	v := web.RunFormView{Options: *opts, Form: f, QueueAvailable: s.deps.Runs.QueueAvailable()}
	return s.render(c, http.StatusOK, web.RunFormPage(s.page(c, "Queue a run"), v))
}

func (s *Server) queueRun(c echo.Context) error {
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	req, err := runRequestFromForm(c)
	if err != nil {
		return s.runFormError(c, err)
	}
	run, err := s.deps.Runs.QueueRun(c.Request().Context(), req)
	if err != nil {
		return s.runFormError(c, err)
	}
	return redirect(c, runPath(run.ID)+"?notice=queued")
}

// runFormError re-renders the queue form with an error the user can fix next
// to its field, or at the top when it belongs to no field (the daily quota,
// with status 429); anything else goes to the error handler.
func (s *Server) runFormError(c echo.Context, err error) error {
	code := models.ErrorCode(err)
	switch code {
	case models.EINVALID, models.ECONFLICT, models.ERATELIMIT:
	default:
		return err
	}
	opts, oerr := s.deps.Runs.RunFormOptions(c.Request().Context(), c.Param("slug"))
	if oerr != nil {
		return oerr
	}
	setRetryAfter(c, err)
	v := web.RunFormView{Options: *opts, Form: formOf(c, runFormFields()...).WithError(err), QueueAvailable: true}
	return s.render(c, statusOf(code), web.RunFormPage(s.page(c, "Queue a run"), v))
}

// runRequestFromForm reads the queue form. Empty numbers keep their defaults;
// malformed ones are EINVALID on their field.
func runRequestFromForm(c echo.Context) (models.RunRequest, error) {
	req := models.RunRequest{
		TeamSlug: c.Param("slug"), AgentSlug: strings.TrimSpace(c.FormValue("agent")),
		BenchmarkSlug: strings.TrimSpace(c.FormValue("benchmark")), Subset: c.FormValue("subset"), Notes: c.FormValue("notes"),
	}
	for _, n := range []struct {
		field, label string
		dst          *int
	}{
		{"max_steps", "max steps", &req.MaxSteps},
		{"max_episode_seconds", "seconds per episode", &req.MaxEpisodeSeconds},
		{"max_agent_call_seconds", "seconds per agent call", &req.MaxAgentCallSeconds},
		{"parallelism", "parallelism", &req.Parallelism},
	} {
		raw := strings.TrimSpace(c.FormValue(n.field))
		if raw == "" {
			continue
		}
		v, err := strconv.Atoi(raw)
		if err != nil {
			return req, models.FieldError(n.field, "%s must be a whole number", n.label)
		}
		*n.dst = v
	}
	if raw := strings.TrimSpace(c.FormValue("max_cost")); raw != "" {
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return req, models.FieldError("max_cost", "max cost must be a number, or left empty for no limit")
		}
		req.MaxCost = &v
	}
	return req, nil
}

// showTimeline is an attempt's timeline: its metadata, the task, every step in
// a filmstrip with the current one (?step=N, numbered from 1; the first
// without) shown large, the final answer beside a way to reveal the expected
// one (for administrators) and the verdicts. A step number that is not one of the
// attempt's is EINVALID on "step".
func (s *Server) showTimeline(c echo.Context) error {
	tl, err := s.timelineOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	current, err := stepQuery(c, len(tl.Steps))
	if err != nil {
		return err
	}
	urls := s.signArtifactURLs(ctx, filmstripImages(tl.Steps, current))
	v := web.TimelineView{Timeline: *tl, URLs: urls, Current: current, Admin: tl.MayRevealAnswer, Deferred: true}
	return s.render(c, http.StatusOK, web.TimelinePage(s.page(c, "Attempt "+tl.Task.ExternalID+" of run "+strconv.FormatInt(tl.Attempt.RunID, 10)), v))
}

// stepArtifactURLs signs the screenshot and thumbnail URLs of steps, keyed by
// artifact key (signArtifactURLs).
func (s *Server) stepArtifactURLs(ctx context.Context, steps []models.TimelineStep) map[string]string {
	keys := make([]string, 0, 2*len(steps))
	for _, st := range steps {
		keys = append(keys, st.Step.ScreenshotKey, st.Step.ThumbnailKey)
	}
	return s.signArtifactURLs(ctx, keys)
}

// filmstripImages lists the images a timeline page shows at once: every
// step's thumbnail in the filmstrip (its screenshot when it has none) and
// the current step's screenshot. The other steps' screenshots are signed when
// their step is loaded (showStepPanel), so a long attempt's page signs about
// one URL a step instead of two.
func filmstripImages(steps []models.TimelineStep, current int) []string {
	keys := make([]string, 0, len(steps)+2)
	for i, st := range steps {
		if st.Step.ThumbnailKey == "" || i == current {
			keys = append(keys, st.Step.ScreenshotKey)
		}
		keys = append(keys, st.Step.ThumbnailKey)
	}
	return keys
}

// signArtifactURLs signs artifact keys' URLs, keyed by artifact key. Keys
// that cannot be signed are left out (the page says the screenshot is
// unavailable); so is everything when no signer is configured.
func (s *Server) signArtifactURLs(ctx context.Context, keys []string) map[string]string {
	urls := map[string]string{}
	if s.deps.ArtifactURLs == nil {
		return urls
	}
	for _, key := range keys {
		if key == "" || urls[key] != "" {
			continue
		}
		u, err := s.deps.ArtifactURLs.URL(ctx, key, artifactURLTTL)
		if err != nil {
			s.log.Warn("sign artifact URL", "key", key, "error", err.Error())
			continue
		}
		urls[key] = u
	}
	return urls
}

// timelineOf loads the timeline of the attempt named by the :id and :attemptID
// path parameters; an attempt of another run is not found.
func (s *Server) timelineOf(c echo.Context) (*models.Timeline, error) {
	runID, attemptID, err := attemptPathIDs(c)
	if err != nil {
		return nil, err
	}
	tl, err := s.deps.Runs.AttemptTimeline(c.Request().Context(), attemptID)
	if err != nil {
		return nil, err
	}
	if err := checkAttemptRun(tl.Attempt, runID); err != nil {
		return nil, err
	}
	return tl, nil
}

// attemptPathIDs reads the :id (run) and :attemptID path parameters.
func attemptPathIDs(c echo.Context) (runID, attemptID int64, err error) {
	if runID, err = int64Param(c, "id"); err != nil {
		return 0, 0, err
	}
	attemptID, err = int64Param(c, "attemptID")
	return runID, attemptID, err
}

// checkAttemptRun answers not found for an attempt addressed under another run.
func checkAttemptRun(a models.Attempt, runID int64) error {
	if a.RunID != runID {
		return models.Errorf(models.ENOTFOUND, "Run %d has no attempt %d.", runID, a.ID)
	}
	return nil
}
