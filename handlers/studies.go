package handlers

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// studyRoutes registers the pages that create, manage and report on
// agreement studies. Every page needs a signed-in caller (anonymous visits go
// to the login page). The store decides the rest: a study's owner and admins
// manage it and read its report; invited annotators see its overview; anyone
// else gets 404.
func (s *Server) studyRoutes(e *echo.Echo) {
	e.Pre(s.limitStudyImportBody)
	e.GET(web.StudiesPath, s.listStudies, requireUser)
	e.GET("/studies/new", s.newStudy, requireUser)
	e.POST(web.StudiesPath, s.createStudy, requireUser)
	e.GET("/studies/:id", s.showStudy, requireUser)
	e.POST("/studies/:id/annotators", s.inviteStudyAnnotator, requireUser)
	e.POST("/studies/:id/annotators/:userID/remove", s.removeStudyAnnotator, requireUser)
	e.POST("/studies/:id/judges", s.setStudyJudges, requireUser)
	e.POST("/studies/:id/judges/run", s.runStudyJudges, requireUser)
	e.POST("/studies/:id/open", s.openStudy, requireUser)
	e.POST("/studies/:id/close", s.closeStudy, requireUser)
	e.GET("/studies/:id/report", s.showStudyReport, requireUser)
	e.GET("/studies/:id/disagreements", s.showStudyDisagreements, requireUser)
	e.GET("/studies/:id/export/:file", s.exportStudy, requireUser)
	e.POST(studyImportLabelsRoute, s.importStudyLabels, requireUser)
	e.POST(studyImportVerdictsRoute, s.importStudyVerdicts, requireUser)
}

// The creation form offers at most this many of the runs the user may see,
// newest first; older ones are added by id.
const studyFormRuns = 100

func (s *Server) listStudies(c echo.Context) error {
	items, err := s.deps.Studies.Studies(c.Request().Context())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.StudiesPage(s.page(c, "Agreement studies"), items))
}

// newStudy is the creation form with its defaults: a random seed (shown, so
// that the sample can be drawn again), 50 items, a fifth of them for two
// annotators each, AgentRewardBench's four labels and one judge row.
func (s *Server) newStudy(c echo.Context) error {
	f := web.NewForm()
	f.Values["sampling"] = models.SampleRandom
	f.Values["stratify_by"] = models.StratumOutcome
	f.Values["seed"] = strconv.FormatInt(rand.Int64N(1<<31-1)+1, 10)
	f.Values["sample_size"] = "50"
	f.Values["overlap_fraction"] = "0.2"
	f.Values["overlap_annotators"] = "2"
	v := web.StudyFormView{
		Form: f, RunIDs: map[int64]bool{}, Benchmarks: map[string]bool{},
		Labels: map[string]bool{models.StudyLabelSuccess: true, models.StudyLabelSideEffect: true,
			models.StudyLabelLooping: true, models.StudyLabelOptimality: true},
		Judges: web.StudyJudgeRows(nil),
	}
	if run, err := strconv.ParseInt(c.QueryParam("run"), 10, 64); err == nil && run > 0 {
		v.RunIDs[run] = true // "Study this run" links preselect it
	}
	return s.renderStudyForm(c, http.StatusOK, v)
}

// renderStudyForm renders the creation form with the sources the user may
// see.
func (s *Server) renderStudyForm(c echo.Context, status int, v web.StudyFormView) error {
	ctx := c.Request().Context()
	runs, total, err := s.deps.Runs.ListRuns(ctx, models.RunFilter{Page: 1, PerPage: studyFormRuns})
	if err != nil {
		return err
	}
	benchmarks, err := s.deps.Benchmarks.ListBenchmarks(ctx)
	if err != nil {
		return err
	}
	v.Runs, v.RunsTotal, v.BenchmarkChoices = runs, total, benchmarks
	// A run asked for by id that the list does not show stays in the
	// "other runs" field, so that nothing typed is lost.
	listed := map[int64]bool{}
	for _, r := range runs {
		listed[r.ID] = true
	}
	var others []string
	for id := range v.RunIDs {
		if !listed[id] {
			others = append(others, strconv.FormatInt(id, 10))
		}
	}
	if len(others) > 0 && v.Form.Value("other_runs") == "" {
		v.Form.Values["other_runs"] = strings.Join(others, ", ")
	}
	return s.render(c, status, web.StudyFormPage(s.page(c, "New agreement study"), v))
}

// createStudy creates a study from the form and shows its overview; a
// refused request re-renders the form with the error at its field.
func (s *Server) createStudy(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return models.Errorf(models.EINVALID, "The form could not be read.")
	}
	req, v := studyRequestOf(form)
	if len(v.Form.Errors) > 0 {
		return s.renderStudyForm(c, http.StatusBadRequest, v)
	}
	st, err := s.deps.Studies.CreateStudy(c.Request().Context(), req)
	switch code := models.ErrorCode(err); code {
	case "":
		return redirect(c, web.StudyPath(st.ID)+"?notice=created")
	case models.EINVALID, models.ECONFLICT, models.EFORBIDDEN:
		v.Form = v.Form.WithError(err)
		return s.renderStudyForm(c, statusOf(code), v)
	case models.ENOTFOUND:
		// A source the user may not see (or that does not exist) is named
		// at its field; any other not-found is the error page's.
		if models.ErrorField(err) != "" {
			v.Form = v.Form.WithError(err)
			return s.renderStudyForm(c, statusOf(code), v)
		}
	}
	return err
}

// studyRequestOf reads the creation form: the request it makes and the form
// as typed, with an error for each value that is not even of the right kind
// (the store checks the rest).
func studyRequestOf(form url.Values) (models.StudyRequest, web.StudyFormView) {
	f := web.NewForm()
	for _, name := range []string{"name", "description", "other_runs", "sampling", "stratify_by", "seed",
		"sample_size", "overlap_fraction", "overlap_annotators", "annotators"} {
		f.Values[name] = strings.TrimSpace(form.Get(name))
	}
	v := web.StudyFormView{Form: f, RunIDs: map[int64]bool{}, Benchmarks: map[string]bool{}, Labels: map[string]bool{},
		Blind: form.Get("blind") != ""}
	req := models.StudyRequest{
		Name: f.Value("name"), Description: f.Value("description"), Sampling: f.Value("sampling"), Blind: v.Blind,
	}
	if req.Sampling == models.SampleStratified {
		req.StratifyBy = f.Value("stratify_by")
	}

	ids := append([]string{}, form["run_ids"]...)
	ids = append(ids, splitList(f.Value("other_runs"))...)
	for _, raw := range ids {
		id, err := strconv.ParseInt(strings.TrimPrefix(raw, "#"), 10, 64)
		if err != nil || id <= 0 {
			f.Errors["run_ids"] = fmt.Sprintf("%q is not a run id: run ids are positive whole numbers.", raw)
			continue
		}
		if !v.RunIDs[id] {
			v.RunIDs[id] = true
			req.RunIDs = append(req.RunIDs, id)
		}
	}
	for _, slug := range form["benchmarks"] {
		if slug = strings.TrimSpace(slug); slug != "" && !v.Benchmarks[slug] {
			v.Benchmarks[slug] = true
			req.Benchmarks = append(req.Benchmarks, slug)
		}
	}
	for _, l := range form["labels"] {
		if !v.Labels[l] {
			v.Labels[l] = true
			req.Labels = append(req.Labels, l)
		}
	}

	var err error
	if req.Seed, err = optionalInt64(f.Value("seed")); err != nil {
		f.Errors["seed"] = "The seed must be a whole number."
	}
	var n int64
	if n, err = optionalInt64(f.Value("sample_size")); err != nil {
		f.Errors["sample_size"] = "The sample size must be a whole number."
	}
	req.SampleSize = int(n)
	if n, err = optionalInt64(f.Value("overlap_annotators")); err != nil {
		f.Errors["overlap_annotators"] = "The number of annotators per overlapping item must be a whole number."
	}
	req.OverlapAnnotators = int(n)
	if raw := f.Value("overlap_fraction"); raw != "" {
		if req.OverlapFraction, err = strconv.ParseFloat(raw, 64); err != nil {
			f.Errors["overlap_fraction"] = "The overlap must be a number from 0 to 1, such as 0.2."
		}
	}

	req.Annotators = splitList(f.Value("annotators"))
	judges, rows, jerr := judgesOf(form)
	req.Judges, v.Judges = judges, web.StudyJudgeRows(rows)
	if jerr != nil {
		f.Errors[models.ErrorField(jerr)] = models.ErrorMessage(jerr)
	}
	v.Form = f
	return req, v
}

// optionalInt64 parses a whole number; "" is 0 (the store says whether the
// field may be left out).
func optionalInt64(raw string) (int64, error) {
	if raw == "" {
		return 0, nil
	}
	return strconv.ParseInt(raw, 10, 64)
}

// splitList splits what is typed one per line or separated by commas,
// semicolons or spaces, dropping empty entries.
func splitList(raw string) []string {
	return strings.FieldsFunc(raw, func(r rune) bool {
		return r == ',' || r == ';' || r == '\n' || r == '\r' || r == ' ' || r == '\t'
	})
}

// judgesOf reads the judge rows of a form (judge_name_N, judge_model_N,
// judge_prompt_N, judge_screenshots_N, judge_accessibility_N for N from 1):
// the configurations of the rows with a name, and the rows as typed up to the
// last one filled in, each in its place, for a re-render. A row with a model
// but no name is an error naming the row.
func judgesOf(form url.Values) (judges, rows []models.StudyJudge, err error) {
	for i := 1; i <= models.MaxStudyJudges+2; i++ {
		n := strconv.Itoa(i)
		j := models.StudyJudge{
			Name:          strings.TrimSpace(form.Get("judge_name_" + n)),
			Model:         strings.TrimSpace(form.Get("judge_model_" + n)),
			Prompt:        strings.TrimSpace(form.Get("judge_prompt_" + n)),
			Screenshots:   form.Get("judge_screenshots_"+n) != "",
			Accessibility: form.Get("judge_accessibility_"+n) != "",
		}
		if j.Prompt == "" {
			j.Prompt = models.StudyPromptLabelsV1
		}
		rows = append(rows, j)
		switch {
		case j.Name != "":
			judges = append(judges, j)
		case j.Model != "" && err == nil:
			err = models.FieldError("judge_name_"+n, "Judge row %d has a model but no name: name it, or clear its model to leave it out.", i)
		}
	}
	last := len(rows)
	for last > 0 && rows[last-1].Name == "" && rows[last-1].Model == "" {
		last--
	}
	return judges, rows[:last], err
}

// studyNotice is the one-time notice of a study action's redirect.
func studyNotice(notice string) string {
	switch notice {
	case "created":
		return "Study created and its sample drawn. Invite annotators and configure judges, then open it."
	case "invited":
		return "Annotator invited."
	case "removed":
		return "Invitation withdrawn."
	case "judges":
		return "Judge configurations saved."
	case "judging":
		return "Judging queued: the judges' progress shows below as verdicts arrive."
	case "opened":
		return "Study opened: the items are assigned and annotators can start."
	case "closed":
		return "Study closed: the labels are final."
	}
	return ""
}

func (s *Server) showStudy(c echo.Context) error {
	return s.renderStudy(c, http.StatusOK, web.StudyPageView{})
}

// renderStudy renders a study's overview; v carries a refused action's
// message or an import's result, and the forms as typed.
func (s *Server) renderStudy(c echo.Context, status int, v web.StudyPageView) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	view, err := s.deps.Studies.StudyOverview(ctx, id)
	if err != nil {
		return err
	}
	v.View = view
	if err := s.deps.Studies.JudgeAvailable(); err != nil {
		v.JudgingUnavailable = models.ErrorMessage(err)
	}
	v.MaxImportMiB = maxStudyImportBytes >> 20
	if v.Invite.Values == nil {
		v.Invite = web.NewForm()
	}
	if v.JudgeForm.Values == nil {
		v.JudgeForm = web.NewForm()
	}
	if v.JudgeRows == nil {
		v.JudgeRows = web.StudyJudgeRows(view.Study.Judges)
	}
	p := s.page(c, view.Study.Name)
	if n := studyNotice(c.QueryParam("notice")); n != "" && status == http.StatusOK {
		p.Flash = n
	}
	return s.render(c, status, web.StudyPage(p, v))
}

// studyActionError re-renders the overview with a refusal the manager can act
// on, in the section of the form that was refused; not-found and internal
// errors go to the error handler.
func (s *Server) studyActionError(c echo.Context, section string, err error, v web.StudyPageView) error {
	switch code := models.ErrorCode(err); code {
	case models.EINVALID, models.ECONFLICT, models.EFORBIDDEN, models.EUNAVAILABLE, models.ETOOLARGE:
		if code == models.EUNAVAILABLE {
			s.requestLogger(c).Warn("study action unavailable", "error", err.Error())
		}
		v.Error, v.Section = models.ErrorMessage(err), section
		return s.renderStudy(c, statusOf(code), v)
	}
	return err
}

func (s *Server) inviteStudyAnnotator(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	email := strings.TrimSpace(c.FormValue("email"))
	if err := s.deps.Studies.InviteAnnotator(c.Request().Context(), id, email); err != nil {
		invite := web.NewForm()
		invite.Values["email"] = email
		if models.ErrorCode(err) == models.EINVALID || models.ErrorCode(err) == models.ECONFLICT {
			invite.Errors["email"] = models.ErrorMessage(err)
		}
		return s.studyActionError(c, web.StudySectionAnnotators, err, web.StudyPageView{Invite: invite})
	}
	return redirect(c, web.StudyPath(id)+"?notice=invited#"+web.StudySectionAnnotators)
}

func (s *Server) removeStudyAnnotator(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	userID, err := int64Param(c, "userID")
	if err != nil {
		return err
	}
	if err := s.deps.Studies.RemoveAnnotator(c.Request().Context(), id, userID); err != nil {
		return s.studyActionError(c, web.StudySectionAnnotators, err, web.StudyPageView{})
	}
	return redirect(c, web.StudyPath(id)+"?notice=removed#"+web.StudySectionAnnotators)
}

// setStudyJudges replaces the judge configurations with the form's rows.
func (s *Server) setStudyJudges(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return models.Errorf(models.EINVALID, "The form could not be read.")
	}
	judges, rows, err := judgesOf(form)
	if err == nil {
		err = s.deps.Studies.SetStudyJudges(c.Request().Context(), id, judges)
	}
	if err != nil {
		jf := web.NewForm()
		field := models.ErrorField(err)
		if field == "" {
			field = "judges"
		}
		jf.Errors[field] = models.ErrorMessage(err)
		return s.studyActionError(c, web.StudySectionJudges, err, web.StudyPageView{JudgeForm: jf, JudgeRows: web.StudyJudgeRows(rows)})
	}
	return redirect(c, web.StudyPath(id)+"?notice=judges#"+web.StudySectionJudges)
}

// runStudyJudges queues the judge configurations (those named by the form's
// judge values, all by default) over the items they have not judged.
func (s *Server) runStudyJudges(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return models.Errorf(models.EINVALID, "The form could not be read.")
	}
	if err := s.deps.Studies.QueueStudyJudges(c.Request().Context(), id, form["judge"]); err != nil {
		return s.studyActionError(c, web.StudySectionJudges, err, web.StudyPageView{})
	}
	return redirect(c, web.StudyPath(id)+"?notice=judging#"+web.StudySectionJudges)
}

func (s *Server) openStudy(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Studies.OpenStudy(c.Request().Context(), id); err != nil {
		return s.studyActionError(c, web.StudySectionLifecycle, err, web.StudyPageView{})
	}
	return redirect(c, web.StudyPath(id)+"?notice=opened")
}

func (s *Server) closeStudy(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if err := s.deps.Studies.CloseStudy(c.Request().Context(), id); err != nil {
		return s.studyActionError(c, web.StudySectionLifecycle, err, web.StudyPageView{})
	}
	return redirect(c, web.StudyPath(id)+"?notice=closed")
}
