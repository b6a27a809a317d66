package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
	"proctor/web"
)

// CandidateService is the candidate service: the form's tasks and
// hidden-tests runs of submitted candidate websites.
type CandidateService interface {
	// CandidateTasks lists a hidden-tests benchmark's subsets and the tasks
	// of one of them, for the form's rows.
	CandidateTasks(ctx context.Context, benchmarkSlug, subset string) (*models.CandidateTasks, error)
	SubmitCandidates(ctx context.Context, req models.CandidateRunRequest) (*models.Run, error)
	// Available reports whether this process can queue the hidden tests.
	Available() bool
	// RequireQueue is EUNAVAILABLE when it cannot.
	RequireQueue() error
}

// candidateRoutes registers the candidate submission pages: signed-in
// callers only (anonymous visits go to the login page); the candidate service
// decides who may submit for which team. The form posts to its own address, so that
// a refusal re-rendered there reloads as the form, never as "Not found";
// the older address it posted to still takes posts and sends a visit to
// the form.
func (s *Server) candidateRoutes(e *echo.Echo) {
	e.GET("/benchmarks/:slug/candidates/new", s.newCandidates, requireUser)
	e.POST("/benchmarks/:slug/candidates/new", s.submitCandidates, requireUser)
	e.GET("/benchmarks/:slug/candidates", s.toCandidateForm, requireUser)
	e.POST("/benchmarks/:slug/candidates", s.submitCandidates, requireUser)
}

// apiCandidateRoutes registers the candidate submission API.
func (s *Server) apiCandidateRoutes(g *echo.Group) {
	g.POST("/candidate-runs", s.apiSubmitCandidates)
}

// newCandidates is the candidate form; ?agent= (team/agent) and ?subset=
// preselect.
func (s *Server) newCandidates(c echo.Context) error {
	f := web.NewForm()
	f.Values["agent"] = strings.TrimSpace(c.QueryParam("agent"))
	return s.renderCandidateForm(c, http.StatusOK, c.QueryParam("subset"), f)
}

// toCandidateForm sends a visit of the address the form used to post to
// (a reload, a bookmark) to the form, with its query.
func (s *Server) toCandidateForm(c echo.Context) error {
	target := web.CandidatesNewPath(pathParam(c, "slug"))
	if q := c.Request().URL.RawQuery; q != "" {
		target += "?" + q
	}
	return c.Redirect(http.StatusSeeOther, target)
}

// renderCandidateForm renders the form for a subset's tasks with the form's
// values and errors.
func (s *Server) renderCandidateForm(c echo.Context, status int, subset string, f web.Form) error {
	ctx := c.Request().Context()
	tasks, err := s.deps.Candidates.CandidateTasks(ctx, pathParam(c, "slug"), subset)
	if err != nil {
		return err
	}
	opts, err := s.deps.Submissions.SubmissionFormOptions(ctx)
	if err != nil {
		return err
	}
	v := web.CandidateFormView{
		BenchmarkSlug: tasks.Benchmark.Slug, BenchmarkName: tasks.Benchmark.Name, Subset: tasks.Subset, Subsets: tasks.Subsets,
		Tasks: tasks.Tasks, Agents: opts.Agents, Form: f, Available: s.deps.Candidates.Available(),
	}
	return s.render(c, status, web.CandidateFormPage(s.page(c, "Submit candidates"), v))
}

// submitCandidates takes the candidate form and redirects to the new run.
// A refusal (a field's problem, the quota, no queue here, a team the caller
// is not in) re-renders the form where it was posted, with what was typed
// and each message on its field or above the form; only an internal error
// goes to the error page.
func (s *Server) submitCandidates(c echo.Context) error {
	f := candidateFormValues(c)
	if err := s.deps.Candidates.RequireQueue(); err != nil {
		return s.refuseCandidates(c, f, err)
	}
	req, err := candidateRequestFromForm(c, f)
	if err == nil {
		var run *models.Run
		run, err = s.deps.Candidates.SubmitCandidates(c.Request().Context(), req)
		if err == nil {
			return redirect(c, runPath(run.ID)+"?notice=queued")
		}
	}
	return s.refuseCandidates(c, f, err)
}

// refuseCandidates re-renders the candidate form with why the submission
// was refused, answering with the refusal's status; an internal error is
// passed on to the error handler, which logs it.
func (s *Server) refuseCandidates(c echo.Context, f web.Form, err error) error {
	code := models.ErrorCode(err)
	if code == models.EINTERNAL {
		return err
	}
	setRetryAfter(c, err)
	return s.renderCandidateForm(c, statusOf(code), c.FormValue("subset"), withFieldErrors(f, err))
}

// candidateFormValues keeps every field the form posted, for re-rendering.
func candidateFormValues(c echo.Context) web.Form {
	f := web.NewForm()
	params, err := c.FormParams()
	if err != nil {
		return f
	}
	for name, vs := range params {
		if name != csrfField && len(vs) > 0 {
			f.Values[name] = vs[0]
		}
	}
	return f
}

// candidateRequestFromForm reads the form: the agent as team/agent, the
// subset, the notes, and the candidates from the JSON text area when it is
// filled, from the rows otherwise. Malformed numbers or JSON are EINVALID on
// their field.
func candidateRequestFromForm(c echo.Context, f web.Form) (models.CandidateRunRequest, error) {
	req := models.CandidateRunRequest{BenchmarkSlug: pathParam(c, "slug"), Subset: f.Value("subset"), Notes: f.Value("notes")}
	agent := strings.TrimSpace(f.Value("agent"))
	if agent == "" {
		return req, models.FieldError("agent", "choose the agent that built the candidates")
	}
	team, slug, ok := strings.Cut(agent, "/")
	if !ok {
		return req, models.FieldError("agent", "choose the agent as team/agent")
	}
	req.TeamSlug, req.AgentSlug = team, slug
	if raw := strings.TrimSpace(f.Value("candidates_json")); raw != "" {
		specs, err := parseCandidateJSON([]byte(raw))
		if err != nil {
			return req, models.FieldError("candidates_json", "%s", models.ErrorMessage(err))
		}
		req.Candidates = specs
		return req, nil
	}
	var errs []error
	for i := 0; ; i++ {
		id, present := f.Values[web.CandidateField(i, "task_id")]
		if !present {
			break
		}
		spec := models.CandidateSpec{
			TaskID: id, BaseURL: f.Value(web.CandidateField(i, "base_url")),
			RestartURL: f.Value(web.CandidateField(i, "restart_url")), HealthURL: f.Value(web.CandidateField(i, "health_url")),
		}
		number := func(name, label string, parse func(string) error) {
			raw := strings.TrimSpace(f.Value(web.CandidateField(i, name)))
			if raw == "" {
				return
			}
			if parse(raw) != nil {
				errs = append(errs, models.FieldError(web.CandidateField(i, name), "%s must be a number", label))
			}
		}
		number("cost_usd", "the cost", func(s string) (err error) { spec.CostUSD, err = strconv.ParseFloat(s, 64); return })
		number("tokens_in", "tokens in", func(s string) (err error) { spec.TokensIn, err = strconv.ParseInt(s, 10, 64); return })
		number("tokens_out", "tokens out", func(s string) (err error) { spec.TokensOut, err = strconv.ParseInt(s, 10, 64); return })
		number("turns", "turns", func(s string) (err error) { spec.Turns, err = strconv.Atoi(s); return })
		req.Candidates = append(req.Candidates, spec)
	}
	return req, errors.Join(errs...)
}

// parseCandidateJSON reads candidates as the CLI's file holds them: an array
// of candidates, or an object whose "candidates" holds them (its other
// fields are the form's to choose and are ignored). Unknown fields of a
// candidate are refused, so a misspelt hook is not silently dropped.
func parseCandidateJSON(raw []byte) ([]models.CandidateSpec, error) {
	raw = bytes.TrimSpace(raw)
	var list json.RawMessage = raw
	if len(raw) > 0 && raw[0] == '{' {
		var wrapper struct {
			Candidates json.RawMessage `json:"candidates"`
		}
		if err := json.Unmarshal(raw, &wrapper); err != nil {
			return nil, models.Errorf(models.EINVALID, "the JSON is malformed: %s", jsonProblem(err))
		}
		list = wrapper.Candidates
	}
	dec := json.NewDecoder(bytes.NewReader(list))
	dec.DisallowUnknownFields()
	var specs []models.CandidateSpec
	if err := dec.Decode(&specs); err != nil {
		return nil, models.Errorf(models.EINVALID, "expected an array of candidates: %s", jsonProblem(err))
	}
	return specs, nil
}

// jsonProblem says what is wrong with JSON without quoting Go types.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return "malformed at byte " + strconv.FormatInt(syntax.Offset, 10)
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return typeErr.Field + " has the wrong type (" + typeErr.Value + ")"
		}
		return "a value has the wrong type (" + typeErr.Value + ")"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// withFieldErrors attaches every application error in err (several come
// joined) to its field, or to the form when it has none. The team is chosen
// with the agent, so its problems show there; problems of candidates posted
// as JSON show on the text area, naming the entry.
func withFieldErrors(f web.Form, err error) web.Form {
	if f.Errors == nil {
		f.Errors = map[string]string{}
	}
	fromJSON := strings.TrimSpace(f.Value("candidates_json")) != ""
	var each func(error)
	each = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				each(x)
			}
			return
		}
		field, msg := models.ErrorField(e), models.ErrorMessage(e)
		switch {
		case field == "team" || field == "agent":
			f.Errors["agent"] = msg
		case field == "notes" || field == "candidates" || field == "candidates_json":
			f.Errors[field] = msg
		case strings.HasPrefix(field, "candidates[") && fromJSON:
			if prev := f.Errors["candidates_json"]; prev != "" {
				msg = prev + "; " + field + ": " + msg
			} else {
				msg = field + ": " + msg
			}
			f.Errors["candidates_json"] = msg
		case strings.HasPrefix(field, "candidates["):
			f.Errors[field] = msg
		default: // the benchmark, the subset, or no field: the form's own
			f.Error = msg
		}
	}
	each(err)
	return f
}

// apiSubmitCandidates creates a candidate run from a JSON request and
// answers 201 with it, like queuing a run.
func (s *Server) apiSubmitCandidates(c echo.Context) error {
	if err := s.deps.Candidates.RequireQueue(); err != nil {
		return err
	}
	var req api.CandidateRunRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	run, err := s.deps.Candidates.SubmitCandidates(c.Request().Context(), req)
	if err != nil {
		return err
	}
	out := toAPIRun(run)
	out.Team, out.Agent, out.Benchmark = req.TeamSlug, models.RunAgentSnapshot(run).Slug, req.BenchmarkSlug
	out.Origin = models.ShownOrigin(run.Origin, true)
	if team, _, ok := strings.Cut(req.AgentSlug, "/"); ok && out.Team == "" {
		out.Team = team
	}
	c.Response().Header().Set(echo.HeaderLocation, out.APIURL)
	return c.JSON(http.StatusCreated, out)
}
