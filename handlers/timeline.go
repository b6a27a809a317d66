package handlers

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"proctor/har"
	"proctor/models"
	"proctor/storage/artifact"
	"proctor/web"
)

// ArtifactReader opens stored artifacts. The artifact store given as
// Deps.Artifacts provides it (artifact.Store); the timeline reads
// accessibility texts, HARs and screenshots through it.
type ArtifactReader interface {
	Get(ctx context.Context, key string) (io.ReadCloser, artifact.Info, error)
}

// maxAXTextBytes caps the accessibility text shown for one step.
const maxAXTextBytes = 1 << 20

// timelineRoutes registers the timeline's per-step endpoints and its
// download. The timeline page itself is a run route (showTimeline). All of
// them are visible to whoever may see the run, and 404 for everyone else.
func (s *Server) timelineRoutes(e *echo.Echo) {
	e.GET("/runs/:id/attempts/:attemptID/steps/:n", s.showStepPanel)
	e.GET("/runs/:id/attempts/:attemptID/steps/:n/axtree", s.showStepAXText)
	e.GET("/runs/:id/attempts/:attemptID/steps/:n/network", s.showStepNetwork)
	e.GET("/runs/:id/attempts/:attemptID/artifacts.zip", s.downloadAttemptArtifacts)
	e.GET("/runs/:id/attempts/:attemptID/expected", s.showExpectedAnswer)
}

// showExpectedAnswer reveals what the attempt's task expects of its final
// answer, for administrators only (EUNAUTHORIZED or EFORBIDDEN for anyone
// else who may see the run, ENOTFOUND for who may not). The timeline page
// never holds it: an administrator opens it on purpose, so hidden answers do
// not end up in every page view, shared screen or browser history snapshot.
func (s *Server) showExpectedAnswer(c echo.Context) error {
	as, err := s.attemptStepsOf(c)
	if err != nil {
		return err
	}
	exp, err := s.deps.Runs.AttemptExpectedAnswer(c.Request().Context(), as.Attempt.ID)
	if err != nil {
		return err
	}
	v := web.ExpectedAnswerView{RunID: as.Attempt.RunID, AttemptID: as.Attempt.ID, TaskID: as.Task.ExternalID, Expected: exp}
	h := c.Response().Header()
	h.Set("Cache-Control", "private, no-store")
	h.Add("Vary", "HX-Request")
	if wantsFragment(c) {
		return s.render(c, http.StatusOK, web.ExpectedAnswerFragment(v))
	}
	return s.render(c, http.StatusOK, web.ExpectedAnswerPage(s.page(c, "Expected answer of task "+as.Task.ExternalID), v))
}

// artifactReader returns the artifact store's reader; EUNAVAILABLE when this
// server has none.
func (s *Server) artifactReader() (ArtifactReader, error) {
	r, ok := s.deps.Artifacts.(ArtifactReader)
	if !ok {
		return nil, models.Errorf(models.EUNAVAILABLE, "Stored artifacts cannot be read on this server right now. Try again later or ask an administrator.")
	}
	return r, nil
}

// stepQuery reads the timeline page's ?step=N (numbered from 1) and returns
// its index into the attempt's steps; the first step without one. EINVALID on
// "step" when it is not a whole number naming one of the steps.
func stepQuery(c echo.Context, steps int) (int, error) {
	raw := strings.TrimSpace(c.QueryParam("step"))
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	switch {
	case err != nil:
		return 0, models.FieldError("step", "step must be a whole number, not %q", truncateText(raw, 20))
	case steps == 0:
		return 0, models.FieldError("step", "step %d does not exist: this attempt recorded no steps", n)
	case n < 1 || n > steps:
		return 0, models.FieldError("step", "step must be from 1 to %d, not %d", steps, n)
	}
	return n - 1, nil
}

// attemptStepsOf loads the attempt named by the :id and :attemptID path
// parameters with its steps; an attempt of another run is not found.
func (s *Server) attemptStepsOf(c echo.Context) (*models.AttemptSteps, error) {
	runID, attemptID, err := attemptPathIDs(c)
	if err != nil {
		return nil, err
	}
	as, err := s.deps.Runs.AttemptSteps(c.Request().Context(), attemptID)
	if err != nil {
		return nil, err
	}
	if err := checkAttemptRun(as.Attempt, runID); err != nil {
		return nil, err
	}
	return as, nil
}

// stepOf returns the step named by the :n path parameter (numbered from 1);
// ENOTFOUND when the attempt has no such step.
func stepOf(c echo.Context, as *models.AttemptSteps) (int, error) {
	return stepIndex(c, as.Attempt.ID, len(as.Steps))
}

// stepIndex reads the :n path parameter (numbered from 1) as an index into
// an attempt's steps; ENOTFOUND when it names none of them.
func stepIndex(c echo.Context, attemptID int64, steps int) (int, error) {
	raw := c.Param("n")
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > steps {
		return 0, models.Errorf(models.ENOTFOUND, "Attempt %d has no step %q.", attemptID, truncateText(raw, 20))
	}
	return n - 1, nil
}

// showStepPanel answers one step of the timeline in full, the fragment the
// timeline page loads for a step it shows only by its heading. Pages link to
// the step with ?step=N instead, so this is only ever read by timeline.js.
//
// It reads the attempt's steps, not its whole timeline (run, evaluations,
// rubrics), since keyboard stepping asks for one at every key press; only
// the step shown is decoded.
func (s *Server) showStepPanel(c echo.Context) error {
	as, err := s.attemptStepsOf(c)
	if err != nil {
		return err
	}
	i, err := stepOf(c, as)
	if err != nil {
		return err
	}
	tl := models.Timeline{Attempt: as.Attempt, Task: as.Task, Steps: make([]models.TimelineStep, len(as.Steps))}
	for j, st := range as.Steps {
		tl.Steps[j].Step = st
	}
	tl.Steps[i] = models.TimelineStepOf(as.Steps[i])
	urls := s.stepArtifactURLs(c.Request().Context(), tl.Steps[i:i+1])
	v := web.TimelineView{Timeline: tl, URLs: urls, Current: i}
	return s.render(c, http.StatusOK, web.TimelineStepPanel(v, i))
}

// showStepAXText answers one step's accessibility text (answerStepAXText).
func (s *Server) showStepAXText(c echo.Context) error {
	as, err := s.attemptStepsOf(c)
	if err != nil {
		return err
	}
	i, err := stepOf(c, as)
	if err != nil {
		return err
	}
	v := web.AXTextView{RunID: as.Attempt.RunID, AttemptID: as.Attempt.ID, TaskID: as.Task.ExternalID}
	return s.answerStepAXText(c, as, i, v, func(v web.AXTextView) templ.Component {
		return web.AXTextPage(s.page(c, fmt.Sprintf("Accessibility text of step %d", i+1)), v)
	})
}

// answerStepAXText reads step i's stored accessibility text into v and
// answers it: a fragment for htmx's collapsed part, page(v) for an htmx
// navigation, plain text for a link followed without JavaScript (the text is
// the page's own and untrusted: it is never sent as HTML unescaped).
// ENOTFOUND in plain text when the step has none.
func (s *Server) answerStepAXText(c echo.Context, as *models.AttemptSteps, i int, v web.AXTextView, page func(web.AXTextView) templ.Component) error {
	key := as.Steps[i].AXTreeKey
	v.Step, v.Missing = i+1, key == ""
	if !v.Missing {
		files, err := s.artifactReader()
		if err != nil {
			return err
		}
		text, truncated, err := artifact.ReadText(c.Request().Context(), files, key, maxAXTextBytes)
		switch {
		case errors.Is(err, artifact.ErrNotFound):
			v.Missing = true
		case err != nil:
			return fmt.Errorf("read accessibility text of attempt %d step %d: %w", as.Attempt.ID, i+1, err)
		}
		v.Text, v.Truncated = text, truncated
	}
	c.Response().Header().Add("Vary", "HX-Request")
	switch {
	case wantsFragment(c):
		return s.render(c, http.StatusOK, web.AXTextFragment(v))
	case isHTMX(c):
		return s.render(c, http.StatusOK, page(v))
	}
	if v.Missing {
		return models.Errorf(models.ENOTFOUND, "Step %d has no stored accessibility text.", i+1)
	}
	text := v.Text
	if v.Truncated {
		text += "\n\n[cut at " + strconv.Itoa(maxAXTextBytes>>20) + " MiB]\n"
	}
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", []byte(text))
}

// showStepNetwork lists the requests the browser made during one step, read
// from the attempt's HAR on demand: a fragment for htmx, a page otherwise.
func (s *Server) showStepNetwork(c echo.Context) error {
	as, err := s.attemptStepsOf(c)
	if err != nil {
		return err
	}
	i, err := stepOf(c, as)
	if err != nil {
		return err
	}
	nw, err := s.stepNetwork(c.Request().Context(), as, i)
	if err != nil {
		return err
	}
	v := web.StepNetworkView{RunID: as.Attempt.RunID, AttemptID: as.Attempt.ID, TaskID: as.Task.ExternalID, Network: *nw}
	c.Response().Header().Add("Vary", "HX-Request")
	if wantsFragment(c) {
		return s.render(c, http.StatusOK, web.StepNetworkFragment(v))
	}
	return s.render(c, http.StatusOK, web.StepNetworkPage(s.page(c, fmt.Sprintf("Network requests of step %d", i+1)), v))
}

// stepNetwork reads the attempt's HAR and keeps the requests that started
// during step i (models.AssignRequests), at most models.MaxStepRequests.
func (s *Server) stepNetwork(ctx context.Context, as *models.AttemptSteps, i int) (*models.StepNetwork, error) {
	nw := &models.StepNetwork{Step: i + 1, Start: models.StepStart(as.Steps[i])}
	if as.Attempt.HARKey == "" {
		return nw, nil
	}
	files, err := s.artifactReader()
	if err != nil {
		return nil, err
	}
	rc, _, err := files.Get(ctx, as.Attempt.HARKey)
	if errors.Is(err, artifact.ErrNotFound) {
		return nw, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open HAR of attempt %d: %w", as.Attempt.ID, err)
	}
	defer rc.Close()
	reqs, err := har.Requests(rc)
	if err != nil {
		return nil, fmt.Errorf("read HAR of attempt %d: %w", as.Attempt.ID, err)
	}
	nw.HasHAR = true
	during := models.AssignRequests(as.Steps, reqs)[i]
	nw.Total = len(during)
	nw.Requests = during[:min(len(during), models.MaxStepRequests)]
	return nw, nil
}

// downloadAttemptArtifacts streams a zip of the attempt's artifacts: every
// step's screenshot and accessibility text, the HAR, the live-page state, a
// steps.json and an attempt.json. Nothing of the task's hidden data goes in:
// for viewers who are not administrators the HAR leaves out what the browser
// loaded after the last step (the live-page reads of checks, whose addresses
// come from the hidden evaluation spec) and the page state keeps only the
// final URL.
func (s *Server) downloadAttemptArtifacts(c echo.Context) error {
	as, err := s.attemptStepsOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	files, err := s.artifactReader()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("run-%d-attempt-%d", as.Attempt.RunID, as.Attempt.ID)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/zip")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`.zip"`)
	h.Set("Cache-Control", "private, no-store")
	c.Response().WriteHeader(http.StatusOK)
	a := &attemptArchive{
		zw: zip.NewWriter(c.Response()), files: files, dir: name + "/",
		privileged: as.Unredacted, now: s.deps.Now(),
	}
	if err := a.write(ctx, as); err != nil {
		// The status is sent: cut the connection so that the client sees a
		// failed download rather than a zip that looks complete.
		s.requestLogger(c).Error("write attempt artifacts", "attempt", as.Attempt.ID, "error", err.Error())
		panic(http.ErrAbortHandler)
	}
	return nil
}

// attemptArchive writes one attempt's artifacts into a zip under dir.
type attemptArchive struct {
	zw         *zip.Writer
	files      ArtifactReader
	dir        string
	privileged bool
	now        time.Time
	missing    []string // artifacts the attempt names but the store no longer has
}

// archiveStep is one step in steps.json.
type archiveStep struct {
	Step              int             `json:"step"`
	Action            json.RawMessage `json:"action,omitempty"`
	Summary           string          `json:"summary"`
	Thought           string          `json:"thought,omitempty"`
	URL               string          `json:"url,omitempty"`
	Title             string          `json:"title,omitempty"`
	Tabs              json.RawMessage `json:"tabs,omitempty"`
	Error             string          `json:"error,omitempty"`
	BlockedRequests   json.RawMessage `json:"blocked_requests,omitempty"`
	ObserveMS         int64           `json:"observe_ms"`
	AgentMS           int64           `json:"agent_ms"`
	ActMS             int64           `json:"act_ms"`
	PersistMS         int64           `json:"persist_ms"`
	TokensIn          int64           `json:"tokens_in"`
	TokensOut         int64           `json:"tokens_out"`
	Cost              float64         `json:"cost"`
	StartedAt         time.Time       `json:"started_at"`
	SavedAt           time.Time       `json:"saved_at"`
	Screenshot        string          `json:"screenshot,omitempty"`
	AccessibilityText string          `json:"accessibility_text,omitempty"`
}

// archiveAttempt is attempt.json: the attempt's public metadata.
type archiveAttempt struct {
	RunID        int64           `json:"run_id"`
	AttemptID    int64           `json:"attempt_id"`
	TaskID       string          `json:"task_id"`
	Intent       string          `json:"intent"`
	StartURLs    []string        `json:"start_urls"`
	Status       string          `json:"status"`
	Outcome      string          `json:"outcome,omitempty"`
	ErrorClass   string          `json:"error_class,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	Score        *float64        `json:"score,omitempty"`
	Steps        int             `json:"steps"`
	TokensIn     int64           `json:"tokens_in"`
	TokensOut    int64           `json:"tokens_out"`
	Cost         float64         `json:"cost"`
	DurationMS   int64           `json:"duration_ms"`
	StartedAt    *time.Time      `json:"started_at,omitempty"`
	FinishedAt   *time.Time      `json:"finished_at,omitempty"`
	Tries        int             `json:"tries"`
	FinalAnswer  json.RawMessage `json:"final_answer,omitempty"`
	HAR          string          `json:"har,omitempty"`
	PageState    string          `json:"page_state,omitempty"`
	Missing      []string        `json:"missing_artifacts,omitempty"`
	HARNote      string          `json:"har_note,omitempty"`
}

func (a *attemptArchive) write(ctx context.Context, as *models.AttemptSteps) error {
	steps := make([]archiveStep, len(as.Steps))
	for i, st := range as.Steps {
		base := fmt.Sprintf("steps/%03d", i+1)
		out := archiveStep{
			Step: i + 1, Summary: "no action", Thought: st.Thought, URL: st.URL, Title: st.Title, Error: st.Error,
			Action: rawJSON(st.Action), Tabs: rawJSON(st.Tabs), BlockedRequests: rawJSON(st.BlockedRequests),
			ObserveMS: st.ObserveMS, AgentMS: st.AgentMS, ActMS: st.ActMS, PersistMS: st.PersistMS, TokensIn: st.TokensIn, TokensOut: st.TokensOut,
			Cost: st.Cost, StartedAt: models.StepStart(st).UTC(), SavedAt: st.CreatedAt.UTC(),
		}
		if act := models.DecodeAction(st.Action); act != nil {
			out.Summary = act.Summary()
		}
		if ok, err := a.copy(ctx, st.ScreenshotKey, base+".jpg", zip.Store); err != nil {
			return err
		} else if ok {
			out.Screenshot = base + ".jpg"
		}
		if ok, err := a.copy(ctx, st.AXTreeKey, base+".txt", zip.Deflate); err != nil {
			return err
		} else if ok {
			out.AccessibilityText = base + ".txt"
		}
		steps[i] = out
	}
	if err := a.json("steps.json", steps); err != nil {
		return err
	}
	att := as.Attempt
	meta := archiveAttempt{
		RunID: att.RunID, AttemptID: att.ID, TaskID: as.Task.ExternalID, Intent: as.Task.Intent, StartURLs: as.Task.StartURLs,
		Status: att.Status, Outcome: att.Outcome, ErrorClass: att.ErrorClass, ErrorMessage: att.ErrorMessage, Score: att.Score,
		Steps: len(as.Steps), TokensIn: att.TokensIn, TokensOut: att.TokensOut, Cost: att.Cost, DurationMS: att.DurationMS,
		StartedAt: att.StartedAt, FinishedAt: att.FinishedAt, Tries: att.Tries, FinalAnswer: rawJSON(att.FinalAnswer),
	}
	var err error
	if meta.HAR, meta.HARNote, err = a.har(ctx, as); err != nil {
		return err
	}
	if meta.PageState, err = a.pageState(ctx, att.PageStateKey); err != nil {
		return err
	}
	meta.Missing = a.missing
	if err := a.json("attempt.json", meta); err != nil {
		return err
	}
	return a.zw.Close()
}

// create starts a file in the zip.
func (a *attemptArchive) create(name string, method uint16) (io.Writer, error) {
	return a.zw.CreateHeader(&zip.FileHeader{Name: a.dir + name, Method: method, Modified: a.now})
}

// open opens an artifact; false (and the key noted as missing) when the store
// no longer has it.
func (a *attemptArchive) open(ctx context.Context, key string) (io.ReadCloser, bool, error) {
	rc, _, err := a.files.Get(ctx, key)
	if errors.Is(err, artifact.ErrNotFound) {
		a.missing = append(a.missing, key)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open artifact %s: %w", key, err)
	}
	return rc, true, nil
}

// copy stores the artifact key as name; false when there is none.
func (a *attemptArchive) copy(ctx context.Context, key, name string, method uint16) (bool, error) {
	if key == "" {
		return false, nil
	}
	rc, ok, err := a.open(ctx, key)
	if !ok || err != nil {
		return false, err
	}
	defer rc.Close()
	w, err := a.create(name, method)
	if err != nil {
		return false, fmt.Errorf("zip %s: %w", name, err)
	}
	if _, err := io.Copy(w, rc); err != nil {
		return false, fmt.Errorf("zip %s: %w", name, err)
	}
	return true, nil
}

func (a *attemptArchive) json(name string, v any) error {
	w, err := a.create(name, zip.Deflate)
	if err != nil {
		return fmt.Errorf("zip %s: %w", name, err)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("zip %s: %w", name, err)
	}
	return nil
}

// har adds the attempt's HAR as network.har: whole for administrators, and
// for everyone else only the requests made during the steps. It returns the
// file's name ("" when there is none) and a note on what was left out.
func (a *attemptArchive) har(ctx context.Context, as *models.AttemptSteps) (string, string, error) {
	const name = "network.har"
	if as.Attempt.HARKey == "" {
		return "", "", nil
	}
	if a.privileged {
		ok, err := a.copy(ctx, as.Attempt.HARKey, name, zip.Deflate)
		if !ok || err != nil {
			return "", "", err
		}
		return name, "", nil
	}
	rc, ok, err := a.open(ctx, as.Attempt.HARKey)
	if !ok || err != nil {
		return "", "", err
	}
	defer rc.Close()
	w, err := a.create(name, zip.Deflate)
	if err != nil {
		return "", "", fmt.Errorf("zip %s: %w", name, err)
	}
	windows := models.StepWindows(as.Steps)
	dropped, err := har.Filter(w, rc, func(t time.Time) bool { return models.StepOfTime(windows, t) >= 0 })
	if err != nil {
		return "", "", fmt.Errorf("zip %s: %w", name, err)
	}
	note := ""
	if dropped > 0 {
		note = fmt.Sprintf("%d requests made after the last step (or without a start time) are left out.", dropped)
	}
	return name, note, nil
}

// pageState adds the live-page state read at the end of the episode as
// page_state.json: whole for administrators; everyone else gets only the
// final URL, since the probes' addresses and locators come from the task's
// hidden evaluation spec.
func (a *attemptArchive) pageState(ctx context.Context, key string) (string, error) {
	const name = "page_state.json"
	if key == "" {
		return "", nil
	}
	if a.privileged {
		ok, err := a.copy(ctx, key, name, zip.Deflate)
		if !ok || err != nil {
			return "", err
		}
		return name, nil
	}
	rc, ok, err := a.open(ctx, key)
	if !ok || err != nil {
		return "", err
	}
	defer rc.Close()
	var state struct {
		FinalURL string `json:"final_url"`
	}
	if err := json.NewDecoder(io.LimitReader(rc, 64<<20)).Decode(&state); err != nil {
		return "", fmt.Errorf("read page state %s: %w", key, err)
	}
	return name, a.json(name, state)
}

// truncateText shortens s to n characters for messages.
func truncateText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
