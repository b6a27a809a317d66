package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"proctor/agreement"
	"proctor/models"
	"proctor/web"
)

// annotationRoutes registers an annotator's queue and annotation pages. The
// store decides who sees what: annotators their own queue and assigned
// items, managers every item (as a review), everyone else ENOTFOUND.
func (s *Server) annotationRoutes(e *echo.Echo) {
	e.GET("/studies/:id/queue", s.showStudyQueue, requireUser)
	e.GET("/studies/:id/items/:itemID", s.showStudyItem, requireUser)
	e.POST("/studies/:id/items/:itemID/labels", s.saveStudyItemLabels, requireUser)
	// A study item's per-step parts, for annotators who may not see the run
	// itself (a private run of another team).
	e.GET("/studies/:id/items/:itemID/steps/:n/axtree", s.showStudyStepAXText, requireUser)
	e.GET("/studies/:id/items/:itemID/steps/:n/network", s.showStudyStepNetwork, requireUser)
}

// showStudyQueue is the annotator's own queue: progress, the next pending
// item and every assignment with its status, reason and time spent.
func (s *Server) showStudyQueue(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	q, err := s.deps.Studies.StudyQueue(c.Request().Context(), id)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	v := web.AnnotateQueueView{Queue: *q, Notice: lastActionNotice(c.QueryParam("last"), true)}
	return s.render(c, http.StatusOK, web.StudyQueuePage(s.page(c, "Your queue in "+q.Study.Name), v))
}

// showStudyItem is the annotation page of a study item (?step=N shows step N
// first): the trajectory beside the viewer's label form, and the review
// (every label and verdict) where the store reveals it.
func (s *Server) showStudyItem(c echo.Context) error {
	studyID, itemID, err := studyItemIDs(c)
	if err != nil {
		return err
	}
	v, err := s.deps.Studies.StudyItem(c.Request().Context(), studyID, itemID)
	if err != nil {
		return err
	}
	form := web.NewForm()
	if a := v.Assignment; a != nil {
		for k, val := range a.Labels {
			form.Values[k] = val
		}
		form.Values["reason"] = a.Reason
	}
	notice := lastActionNotice(c.QueryParam("last"), false)
	if c.QueryParam("notice") == "saved" {
		notice = "" // the layout's flash says it
	}
	return s.renderStudyItem(c, http.StatusOK, v, form, notice)
}

// renderStudyItem renders the annotation page with the form's values and errors.
func (s *Server) renderStudyItem(c echo.Context, status int, v *models.StudyItemView, form web.Form, notice string) error {
	current, err := stepQuery(c, len(v.Timeline.Steps))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	path := web.AnnotateItemPath(v.Study.ID, v.Item.ID)
	page := web.AnnotateView{
		Item:      *v,
		Viewer:    web.TimelineView{Timeline: v.Timeline, URLs: s.stepArtifactURLs(ctx, v.Timeline.Steps), Current: current, Path: path},
		Questions: labelQuestions(v),
		Form:      form,
		CanManage: v.Role == models.StudyRoleOwner || v.Role == models.StudyRoleAdmin,
		Notice:    notice,
	}
	if v.Reveal != nil {
		page.Review = labelReview(v, page.CanManage)
	}
	// Labels are personal and blind studies hide what others see: no shared cache.
	c.Response().Header().Set("Cache-Control", "private, no-store")
	title := fmt.Sprintf("Item %d of %d · %s", v.Position, v.Total, v.Study.Name)
	return s.render(c, status, web.AnnotatePage(s.page(c, title), page))
}

// saveStudyItemLabels stores the viewer's labels for an item: autosave
// ("save"), "submit", "skip" or "flag" (with a reason). A form post is
// redirected (save: back to the item; the others: to the next pending item,
// or the queue when none is left); a fetch or htmx autosave gets 204. Bad
// labels re-render the page naming the field (400), a closed study says so
// (409), an item assigned to someone else is EFORBIDDEN.
func (s *Server) saveStudyItemLabels(c echo.Context) error {
	studyID, itemID, err := studyItemIDs(c)
	if err != nil {
		return err
	}
	in, err := labelInputOf(c)
	if err == nil {
		_, err = s.deps.Studies.SaveStudyLabels(c.Request().Context(), studyID, itemID, in)
	}
	if err != nil {
		return s.refuseLabels(c, studyID, itemID, err)
	}
	if isHTMX(c) && in.Action == models.LabelActionSave {
		return c.NoContent(http.StatusNoContent)
	}
	if in.Action == models.LabelActionSave {
		return redirect(c, web.AnnotateItemPath(studyID, itemID)+"?notice=saved")
	}
	target, err := s.nextPendingItem(c.Request().Context(), studyID, itemID)
	if err != nil {
		return err
	}
	return redirect(c, target+"?last="+in.Action)
}

// refuseLabels answers a refused label post. A plain form post with bad
// labels or to a closed study gets the page again with the submitted values
// and the message at its field; anything else (and every fetch) goes to the
// error handler, with the field named in X-Error-Field for the script.
func (s *Server) refuseLabels(c echo.Context, studyID, itemID int64, err error) error {
	code := models.ErrorCode(err)
	if code != models.EINVALID && code != models.ECONFLICT {
		return err
	}
	if isHTMX(c) {
		if field := models.ErrorField(err); field != "" {
			c.Response().Header().Set("X-Error-Field", field)
		}
		return err
	}
	v, loadErr := s.deps.Studies.StudyItem(c.Request().Context(), studyID, itemID)
	if loadErr != nil || v.Assignment == nil {
		return err
	}
	form := web.NewForm()
	params, _ := c.FormParams()
	for k := range params {
		if isLabelField(k) || k == "reason" {
			form.Values[k] = params.Get(k)
		}
	}
	// Answers the post left out keep their saved values, as the store does.
	for k, val := range v.Assignment.Labels {
		if _, sent := form.Values[k]; !sent {
			form.Values[k] = val
		}
	}
	form = form.WithError(err)
	// A field the page has no place for (time_spent_ms, a rubric item of
	// another task) is said at the top.
	if field := models.ErrorField(err); field != "" && field != "reason" && !asksQuestion(v, field) {
		form.Error = form.Errors[field]
		delete(form.Errors, field)
	}
	return s.renderStudyItem(c, statusOf(code), v, form, "")
}

// asksQuestion reports whether the item's form has a question named name.
func asksQuestion(v *models.StudyItemView, name string) bool {
	for _, q := range labelQuestions(v) {
		if q.Name == name {
			return true
		}
	}
	return false
}

// nextPendingItem is where an annotator goes after finishing an item: the
// next pending item of their queue after it (wrapping around), or the queue
// when none is left.
func (s *Server) nextPendingItem(ctx context.Context, studyID, itemID int64) (string, error) {
	q, err := s.deps.Studies.StudyQueue(ctx, studyID)
	if err != nil {
		return "", err
	}
	after := 0
	for _, e := range q.Entries {
		if e.ItemID == itemID {
			after = e.Position
		}
	}
	var first int64
	for _, e := range q.Entries {
		if e.Status != models.AssignmentPending || e.ItemID == itemID {
			continue
		}
		if e.Position > after {
			return web.AnnotateItemPath(studyID, e.ItemID), nil
		}
		if first == 0 {
			first = e.ItemID
		}
	}
	if first != 0 {
		return web.AnnotateItemPath(studyID, first), nil
	}
	return web.AnnotateQueuePath(studyID), nil
}

// lastActionNotice says what the previous page's post did (?last=submit,
// skip or flag); atQueue when the queue is shown because nothing is left.
func lastActionNotice(action string, atQueue bool) string {
	var done string
	switch action {
	case models.LabelActionSubmit:
		done = "Labels submitted."
	case models.LabelActionSkip:
		done = "Item skipped."
	case models.LabelActionFlag:
		done = "Item flagged."
	default:
		return ""
	}
	if atQueue {
		return done + " No pending item is left in your queue."
	}
	return done + " Here is the next item of your queue."
}

// labelInputOf reads the label form: a field per label (named by the label
// or a rubric item's key; "" clears it), action, reason and time_spent_ms.
func labelInputOf(c echo.Context) (models.StudyLabelInput, error) {
	params, err := c.FormParams()
	if err != nil {
		return models.StudyLabelInput{}, models.Errorf(models.EINVALID, "The form could not be read.")
	}
	in := models.StudyLabelInput{
		Labels: map[string]string{},
		Action: params.Get("action"),
		Reason: params.Get("reason"),
	}
	if in.Action == "" {
		// A form sent without a button (Enter in a field of an old browser):
		// keep what was given without changing the item's status.
		in.Action = models.LabelActionSave
	}
	for k := range params {
		if isLabelField(k) {
			in.Labels[k] = params.Get(k)
		}
	}
	if raw := strings.TrimSpace(params.Get("time_spent_ms")); raw != "" {
		ms, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return in, models.FieldError("time_spent_ms", "time_spent_ms must be a whole number of milliseconds, not %q.", truncateText(raw, 20))
		}
		in.TimeSpentMS = ms
	}
	return in, nil
}

// isLabelField reports whether a form field holds a label: a study label's
// name or a rubric item's key.
func isLabelField(name string) bool {
	if strings.HasPrefix(name, models.StudyLabelRubric+":") {
		return true
	}
	for _, l := range models.StudyLabelNames() {
		if name == l && l != models.StudyLabelRubric {
			return true
		}
	}
	return false
}

// studyItemIDs reads the :id (study) and :itemID path parameters.
func studyItemIDs(c echo.Context) (studyID, itemID int64, err error) {
	if studyID, err = int64Param(c, "id"); err != nil {
		return 0, 0, err
	}
	itemID, err = int64Param(c, "itemID")
	return studyID, itemID, err
}

// labelShortcut is the key that chooses a question on the annotation page;
// annotate.js reads it from the page. They avoid the timeline's own
// keys (← → j k Home End) and the digits that answer.
func labelShortcut(label string) string {
	switch label {
	case models.StudyLabelSuccess:
		return "s"
	case models.StudyLabelScore:
		return "c"
	case models.StudyLabelSideEffect:
		return "e"
	case models.StudyLabelLooping:
		return "l"
	case models.StudyLabelOptimality:
		return "o"
	case models.StudyLabelRubric:
		return "r"
	}
	return ""
}

// labelTitle names a question.
func labelTitle(label string) string {
	switch label {
	case models.StudyLabelSuccess:
		return "Success"
	case models.StudyLabelScore:
		return "Score"
	case models.StudyLabelSideEffect:
		return "Side effect"
	case models.StudyLabelLooping:
		return "Looping"
	case models.StudyLabelOptimality:
		return "Optimality"
	}
	return label
}

// labelPrompt asks a question in a sentence.
func labelPrompt(label string) string {
	switch label {
	case models.StudyLabelSuccess:
		return "Did the agent complete the task?"
	case models.StudyLabelScore:
		return "How good is the trajectory overall, from 1 (worst) to 5 (best)?"
	case models.StudyLabelSideEffect:
		return "Did the agent change something the task did not ask for?"
	case models.StudyLabelLooping:
		return "Did the agent repeat the same actions without making progress?"
	case models.StudyLabelOptimality:
		return "How directly did the agent work towards the goal?"
	}
	return ""
}

// labelQuestions lists the questions the study asks of this item, in form
// order, with the answers (display names) from the agreement schema; rubric
// items of the item's task when the study asks for them.
func labelQuestions(v *models.StudyItemView) []web.AnnotateQuestion {
	var qs []web.AnnotateQuestion
	for _, label := range v.Study.Labels {
		if label == models.StudyLabelRubric {
			for _, it := range v.RubricItems {
				qs = append(qs, web.AnnotateQuestion{
					Name: models.RubricLabelKey(it.ID), Title: "Rubric: " + rubricItemName(it), Prompt: it.Requirement,
					Key: labelShortcut(label), Rubric: true,
					Options: []web.AnnotateOption{{Value: models.RubricPass, Display: "Pass"}, {Value: models.RubricFail, Display: "Fail"}},
				})
			}
			continue
		}
		spec, ok := agreement.SpecOf(agreement.Label(label))
		if !ok {
			continue
		}
		q := web.AnnotateQuestion{Name: label, Title: labelTitle(label), Prompt: labelPrompt(label), Key: labelShortcut(label)}
		for i, c := range spec.Categories {
			q.Options = append(q.Options, web.AnnotateOption{Value: c, Display: spec.Display[i]})
		}
		if spec.AllowsUnsure {
			q.Options = append(q.Options, web.AnnotateOption{Value: agreement.Unsure, Display: spec.DisplayOf(agreement.Unsure)})
		}
		qs = append(qs, q)
	}
	return qs
}

// rubricItemName is a rubric item's key, or its position when it has none.
func rubricItemName(it models.RubricItem) string {
	if it.Key != "" {
		return it.Key
	}
	return "item " + strconv.Itoa(it.Position+1)
}

// labelReview lays out what the store revealed: a column per question, a
// row per annotator and per study judge, and the attempt's evaluations.
func labelReview(v *models.StudyItemView, canManage bool) *web.AnnotateReview {
	r := &web.AnnotateReview{Timeline: v.Timeline}
	r.Timeline.Evaluations = v.Reveal.Evaluations
	if canManage {
		r.AttemptHref = "/runs/" + strconv.FormatInt(v.Timeline.Attempt.RunID, 10) + "/attempts/" + strconv.FormatInt(v.Timeline.Attempt.ID, 10)
	}
	for _, q := range labelQuestions(v) {
		title := q.Title
		if q.Rubric {
			title = q.Prompt
		}
		r.Columns = append(r.Columns, web.AnnotateColumn{Key: strings.TrimPrefix(q.Title, "Rubric: "), Title: title})
	}
	for _, l := range v.Reveal.Labels {
		r.Humans = append(r.Humans, web.AnnotateRow{Who: l.Annotator, Status: l.Status, Note: l.Reason, Values: displayValues(v, l.Labels)})
	}
	for _, j := range v.Reveal.Verdicts {
		row := web.AnnotateRow{Who: j.Judge, Note: j.Rationale, Values: displayValues(v, j.Labels)}
		if j.Imported {
			row.Who += " (imported)"
		}
		if j.Error != "" {
			row.Note, row.Error = j.Error, true
		}
		r.Judges = append(r.Judges, row)
	}
	return r
}

// displayValues spells labels as the form does, in question order.
func displayValues(v *models.StudyItemView, labels models.StudyLabels) []string {
	qs := labelQuestions(v)
	out := make([]string, len(qs))
	for i, q := range qs {
		val := labels[q.Name]
		out[i] = val
		for _, o := range q.Options {
			if o.Value == val {
				out[i] = o.Display
			}
		}
	}
	return out
}

// studyItemSteps is the item's attempt with its steps, for the per-step
// parts; the store has checked that the actor may see the item.
func (s *Server) studyItemSteps(c echo.Context) (*models.StudyItemView, *models.AttemptSteps, error) {
	studyID, itemID, err := studyItemIDs(c)
	if err != nil {
		return nil, nil, err
	}
	v, err := s.deps.Studies.StudyItem(c.Request().Context(), studyID, itemID)
	if err != nil {
		return nil, nil, err
	}
	as := &models.AttemptSteps{Attempt: v.Timeline.Attempt, Task: v.Timeline.Task, Steps: make([]models.Step, len(v.Timeline.Steps))}
	for i, st := range v.Timeline.Steps {
		as.Steps[i] = st.Step
	}
	return v, as, nil
}

// showStudyStepAXText is one step's accessibility text on an annotation
// page (answerStepAXText), never cached: the page is an annotator's own.
func (s *Server) showStudyStepAXText(c echo.Context) error {
	v, as, err := s.studyItemSteps(c)
	if err != nil {
		return err
	}
	i, err := stepOf(c, as)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "private, no-store")
	return s.answerStepAXText(c, as, i, web.AXTextView{}, func(view web.AXTextView) templ.Component {
		return web.AnnotateStepAXPage(s.page(c, fmt.Sprintf("Accessibility text of step %d", i+1)), v, view)
	})
}

// showStudyStepNetwork lists the requests made during one step on an
// annotation page: a fragment for the viewer, a page of its own otherwise.
func (s *Server) showStudyStepNetwork(c echo.Context) error {
	v, as, err := s.studyItemSteps(c)
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
	h := c.Response().Header()
	h.Add("Vary", "HX-Request")
	h.Set("Cache-Control", "private, no-store")
	view := web.StepNetworkView{Network: *nw}
	if wantsFragment(c) {
		return s.render(c, http.StatusOK, web.StepNetworkFragment(view))
	}
	return s.render(c, http.StatusOK, web.AnnotateStepNetworkPage(s.page(c, fmt.Sprintf("Network requests of step %d", i+1)), v, view))
}
