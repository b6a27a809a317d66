package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// apiStudyRoutes registers the agreement studies' API. Every route needs a
// signed-in caller; the store decides the rest, as for the pages: managers
// (the owner and admins) everything, annotators their own queue and items
// (and, in studies that are not blind, the judges' verdicts), anyone else
// 404.
func (s *Server) apiStudyRoutes(g *echo.Group) {
	g.GET("/studies", s.apiListStudies, requireUser)
	g.POST("/studies", s.apiCreateStudy, requireUser)
	g.GET("/studies/:id", s.apiShowStudy, requireUser)
	g.GET("/studies/:id/queue", s.apiStudyQueue, requireUser)
	g.GET("/studies/:id/items/:itemID", s.apiStudyItem, requireUser)
	g.PUT("/studies/:id/items/:itemID/labels", s.apiSaveStudyLabels, requireUser)
	g.GET("/studies/:id/verdicts", s.apiStudyVerdicts, requireUser)
	g.GET("/studies/:id/report", s.apiStudyReport, requireUser)
}

func apiStudyPath(id int64) string { return apiBasePath + web.StudyPath(id) }

// apiStudyInput is POST /api/v1/studies: models.StudyRequest with its judges
// in a type of their own (answers describe judges with models.StudyJudge).
type apiStudyInput struct {
	Name              string               `json:"name"`
	Description       string               `json:"description"`
	RunIDs            []int64              `json:"run_ids"`
	Benchmarks        []string             `json:"benchmarks"` // slugs
	Sampling          string               `json:"sampling"`
	StratifyBy        string               `json:"stratify_by"`
	Seed              int64                `json:"seed"`
	SampleSize        int                  `json:"sample_size"`
	OverlapFraction   float64              `json:"overlap_fraction"`
	OverlapAnnotators int                  `json:"overlap_annotators"`
	Blind             bool                 `json:"blind"`
	Labels            []string             `json:"labels"`
	Judges            []apiStudyJudgeInput `json:"judges"`
	Annotators        []string             `json:"annotators"` // emails
}

// apiStudyJudgeInput is a judge configuration in a request.
type apiStudyJudgeInput struct {
	Name          string `json:"name"`
	Model         string `json:"model"`
	Prompt        string `json:"prompt"`
	Screenshots   bool   `json:"screenshots"`
	Accessibility bool   `json:"accessibility"`
}

func (in apiStudyInput) request() models.StudyRequest {
	req := models.StudyRequest{
		Name: in.Name, Description: in.Description, RunIDs: in.RunIDs, Benchmarks: in.Benchmarks, Sampling: in.Sampling,
		StratifyBy: in.StratifyBy, Seed: in.Seed, SampleSize: in.SampleSize, OverlapFraction: in.OverlapFraction,
		OverlapAnnotators: in.OverlapAnnotators, Blind: in.Blind, Labels: in.Labels, Annotators: in.Annotators,
	}
	for _, j := range in.Judges {
		req.Judges = append(req.Judges, models.StudyJudge(j))
	}
	return req
}

// apiStudy is a study's settings.
type apiStudy struct {
	ID                int64               `json:"id"`
	Name              string              `json:"name"`
	Description       string              `json:"description"`
	Status            string              `json:"status"` // draft, open or closed
	OwnerID           int64               `json:"owner_id"`
	RunIDs            []int64             `json:"run_ids"`
	BenchmarkIDs      []int64             `json:"benchmark_ids"`
	Sampling          string              `json:"sampling"`
	StratifyBy        string              `json:"stratify_by"`
	Seed              int64               `json:"seed"`
	SampleSize        int                 `json:"sample_size"` // asked for
	ItemCount         int                 `json:"item_count"`  // drawn
	OverlapFraction   float64             `json:"overlap_fraction"`
	OverlapAnnotators int                 `json:"overlap_annotators"`
	Blind             bool                `json:"blind"`
	Labels            []string            `json:"labels"`
	Judges            []models.StudyJudge `json:"judges"`
	CreatedAt         time.Time           `json:"created_at"`
	UpdatedAt         time.Time           `json:"updated_at"`
	OpenedAt          *time.Time          `json:"opened_at"`
	ClosedAt          *time.Time          `json:"closed_at"`
	URL               string              `json:"url"`
	APIURL            string              `json:"api_url"`
}

func toAPIStudy(st models.Study) apiStudy {
	return apiStudy{
		ID: st.ID, Name: st.Name, Description: st.Description, Status: st.Status, OwnerID: st.OwnerID,
		RunIDs: nonNil([]int64(st.RunIDs)), BenchmarkIDs: nonNil([]int64(st.BenchmarkIDs)), Sampling: st.Sampling,
		StratifyBy: st.StratifyBy, Seed: st.Seed, SampleSize: st.SampleSize, ItemCount: st.ItemCount,
		OverlapFraction: st.OverlapFraction, OverlapAnnotators: st.OverlapAnnotators, Blind: st.Blind,
		Labels: nonNil([]string(st.Labels)), Judges: nonNil([]models.StudyJudge(st.Judges)),
		CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, OpenedAt: st.OpenedAt, ClosedAt: st.ClosedAt,
		URL: web.StudyPath(st.ID), APIURL: apiStudyPath(st.ID),
	}
}

// apiStudyListItem is a study in the caller's list, with their role and
// their own progress.
type apiStudyListItem struct {
	apiStudy
	OwnerName string `json:"owner_name"`
	Role      string `json:"role"`     // owner, annotator or admin
	Assigned  int    `json:"assigned"` // the caller's assignments
	Finished  int    `json:"finished"` // of which done, skipped or flagged
}

// apiStudyList is GET /api/v1/studies.
type apiStudyList struct {
	Items []apiStudyListItem `json:"items"`
}

// apiStudyProgress counts assignments by status.
type apiStudyProgress struct {
	Assigned int `json:"assigned"`
	Done     int `json:"done"`
	Skipped  int `json:"skipped"`
	Flagged  int `json:"flagged"`
	Finished int `json:"finished"` // done, skipped and flagged
}

func toAPIStudyProgress(p models.StudyProgress) apiStudyProgress {
	return apiStudyProgress{Assigned: p.Assigned, Done: p.Done, Skipped: p.Skipped, Flagged: p.Flagged, Finished: p.Finished()}
}

// apiStudyOverview is GET /api/v1/studies/{id}: the study with the whole
// study's progress, its annotators and judges for managers; for an annotator
// the settings and their own progress.
type apiStudyOverview struct {
	Study      apiStudy            `json:"study"`
	OwnerName  string              `json:"owner_name"`
	Role       string              `json:"role"`
	CanManage  bool                `json:"can_manage"`
	Progress   apiStudyProgress    `json:"progress"`
	Annotators []apiStudyAnnotator `json:"annotators"`
	Judges     []apiStudyJudgeRun  `json:"judges"`
}

// apiStudyAnnotator is an invited annotator with their progress.
type apiStudyAnnotator struct {
	UserID      int64            `json:"user_id"`
	Name        string           `json:"name"`
	Email       string           `json:"email"`
	Progress    apiStudyProgress `json:"progress"`
	TimeSpentMS int64            `json:"time_spent_ms"`
}

// apiStudyJudgeRun is what one judge configuration has judged.
type apiStudyJudgeRun struct {
	models.StudyJudge
	Judged    int     `json:"judged"`
	Errors    int     `json:"errors"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Cost      float64 `json:"cost"`
}

func toAPIStudyOverview(v *models.StudyView) apiStudyOverview {
	out := apiStudyOverview{
		Study: toAPIStudy(v.Study), OwnerName: v.OwnerName, Role: v.Role, CanManage: v.CanManage,
		Progress: toAPIStudyProgress(v.Progress), Annotators: []apiStudyAnnotator{}, Judges: []apiStudyJudgeRun{},
	}
	for _, a := range v.Annotators {
		out.Annotators = append(out.Annotators, apiStudyAnnotator{UserID: a.UserID, Name: a.Name, Email: a.Email,
			Progress: toAPIStudyProgress(a.Progress), TimeSpentMS: a.TimeSpentMS})
	}
	for _, j := range v.Judges {
		out.Judges = append(out.Judges, apiStudyJudgeRun{StudyJudge: j.StudyJudge, Judged: j.Judged, Errors: j.Errors,
			TokensIn: j.TokensIn, TokensOut: j.TokensOut, Cost: j.Cost})
	}
	return out
}

// apiStudyQueue is the caller's own queue in a study.
type apiStudyQueue struct {
	Study    apiStudy             `json:"study"`
	Entries  []apiStudyQueueEntry `json:"entries"`
	Progress apiStudyProgress     `json:"progress"`
	// NextItemID is the first pending item, 0 when none is left.
	NextItemID int64 `json:"next_item_id"`
}

// apiStudyQueueEntry is one assignment in the queue.
type apiStudyQueueEntry struct {
	ItemID      int64      `json:"item_id"`
	Position    int        `json:"position"`
	Status      string     `json:"status"` // pending, done, skipped or flagged
	Reason      string     `json:"reason"`
	TaskIntent  string     `json:"task_intent"`
	TimeSpentMS int64      `json:"time_spent_ms"`
	SubmittedAt *time.Time `json:"submitted_at"`
	URL         string     `json:"url"`
	APIURL      string     `json:"api_url"`
}

func studyItemPaths(studyID, itemID int64) (page, api string) {
	page = web.StudyPath(studyID) + "/items/" + strconv.FormatInt(itemID, 10)
	return page, apiBasePath + page
}

// apiStudyItem is one item as the annotation page shows it. For an
// annotator of a blind study the timeline has no evaluation, the attempt no
// outcome or score, the run no success counts, and reveal is null.
type apiStudyItem struct {
	Study      apiStudy            `json:"study"`
	Item       apiStudyItemRef     `json:"item"`
	Role       string              `json:"role"`
	Assignment *apiStudyAssignment `json:"assignment"` // the caller's own; null for a manager without one
	Timeline   apiTimeline         `json:"timeline"`
	// RubricItems are the task's rubric items when the study asks rubric
	// labels; answer them under "rubric:<id>".
	RubricItems []apiStudyRubricItem `json:"rubric_items"`
	Reveal      *apiStudyReveal      `json:"reveal"`
	Position    int                  `json:"position"` // in the caller's queue (managers: in the sample)
	Total       int                  `json:"total"`
	PrevItemID  int64                `json:"prev_item_id"` // 0 at the start
	NextItemID  int64                `json:"next_item_id"` // 0 at the end
}

// apiStudyItemRef names a sampled attempt.
type apiStudyItemRef struct {
	ID        int64  `json:"id"`
	AttemptID int64  `json:"attempt_id"`
	Position  int    `json:"position"`
	Stratum   string `json:"stratum"`
	URL       string `json:"url"`
}

// apiStudyRubricItem is one rubric item of the item's task.
type apiStudyRubricItem struct {
	ID           int64   `json:"id"`
	Key          string  `json:"key"`
	LabelKey     string  `json:"label_key"` // the labels key of its answer: rubric:<id>
	Requirement  string  `json:"requirement"`
	Verification string  `json:"verification"`
	Weight       float64 `json:"weight"`
}

// apiStudyAssignment is the caller's labels for one item.
type apiStudyAssignment struct {
	ItemID      int64             `json:"item_id"`
	Position    int               `json:"position"`
	Status      string            `json:"status"`
	Reason      string            `json:"reason"`
	Labels      map[string]string `json:"labels"`
	TimeSpentMS int64             `json:"time_spent_ms"`
	SubmittedAt *time.Time        `json:"submitted_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

func toAPIStudyAssignment(a *models.StudyAssignment) *apiStudyAssignment {
	if a == nil {
		return nil
	}
	return &apiStudyAssignment{ItemID: a.StudyItemID, Position: a.Position, Status: a.Status, Reason: a.Reason,
		Labels: nonNilMap(a.Labels), TimeSpentMS: a.TimeSpentMS, SubmittedAt: a.SubmittedAt, UpdatedAt: a.UpdatedAt}
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// apiStudyReveal is what a blind study keeps from its annotators.
type apiStudyReveal struct {
	Evaluations []apiEvaluation           `json:"evaluations"`
	Verdicts    []apiStudyVerdict         `json:"verdicts"`
	Labels      []apiStudyAnnotatorLabels `json:"labels"`
}

// apiStudyAnnotatorLabels is one annotator's labels for an item.
type apiStudyAnnotatorLabels struct {
	Annotator string            `json:"annotator"`
	Status    string            `json:"status"`
	Reason    string            `json:"reason"`
	Labels    map[string]string `json:"labels"`
}

// apiStudyVerdict is one judge's labels for one item.
type apiStudyVerdict struct {
	ItemID        int64             `json:"item_id"`
	Judge         string            `json:"judge"`
	Imported      bool              `json:"imported"`
	Labels        map[string]string `json:"labels"`
	Rationale     string            `json:"rationale"`
	Error         string            `json:"error"` // why the judge gave no verdict
	PromptVersion string            `json:"prompt_version"`
	PromptSHA256  string            `json:"prompt_sha256"`
	TokensIn      int64             `json:"tokens_in"`
	TokensOut     int64             `json:"tokens_out"`
	Cost          float64           `json:"cost"`
	LatencyMS     int64             `json:"latency_ms"`
	CreatedAt     time.Time         `json:"created_at"`
}

func toAPIStudyVerdict(v models.StudyVerdict) apiStudyVerdict {
	return apiStudyVerdict{ItemID: v.StudyItemID, Judge: v.Judge, Imported: v.Imported, Labels: nonNilMap(v.Labels),
		Rationale: v.Rationale, Error: v.Error, PromptVersion: v.PromptVersion, PromptSHA256: v.PromptSHA256,
		TokensIn: v.TokensIn, TokensOut: v.TokensOut, Cost: v.Cost, LatencyMS: v.LatencyMS, CreatedAt: v.CreatedAt}
}

// apiStudyVerdictList is GET /api/v1/studies/{id}/verdicts.
type apiStudyVerdictList struct {
	Items []apiStudyVerdict `json:"items"`
}

func (s *Server) toAPIStudyItem(c echo.Context, v *models.StudyItemView) apiStudyItem {
	page, _ := studyItemPaths(v.Study.ID, v.Item.ID)
	out := apiStudyItem{
		Study: toAPIStudy(v.Study), Role: v.Role, Assignment: toAPIStudyAssignment(v.Assignment),
		Item:        apiStudyItemRef{ID: v.Item.ID, AttemptID: v.Item.AttemptID, Position: v.Item.Position, Stratum: v.Item.Stratum, URL: page},
		Timeline:    toAPITimeline(&v.Timeline, s.stepArtifactURLs(c.Request().Context(), v.Timeline.Steps)),
		RubricItems: []apiStudyRubricItem{}, Position: v.Position, Total: v.Total, PrevItemID: v.PrevID, NextItemID: v.NextID,
	}
	for _, ri := range v.RubricItems {
		out.RubricItems = append(out.RubricItems, apiStudyRubricItem{ID: ri.ID, Key: ri.Key, LabelKey: models.RubricLabelKey(ri.ID),
			Requirement: ri.Requirement, Verification: ri.Verification, Weight: ri.Weight})
	}
	if r := v.Reveal; r != nil {
		rv := &apiStudyReveal{Evaluations: []apiEvaluation{}, Verdicts: []apiStudyVerdict{}, Labels: []apiStudyAnnotatorLabels{}}
		for i := range r.Evaluations {
			rv.Evaluations = append(rv.Evaluations, toAPIEvaluation(&v.Timeline, &r.Evaluations[i]))
		}
		for _, vd := range r.Verdicts {
			rv.Verdicts = append(rv.Verdicts, toAPIStudyVerdict(vd))
		}
		for _, l := range r.Labels {
			rv.Labels = append(rv.Labels, apiStudyAnnotatorLabels{Annotator: l.Annotator, Status: l.Status, Reason: l.Reason, Labels: nonNilMap(l.Labels)})
		}
		out.Reveal = rv
	}
	return out
}

func (s *Server) apiListStudies(c echo.Context) error {
	items, err := s.store.Studies(c.Request().Context())
	if err != nil {
		return err
	}
	out := apiStudyList{Items: make([]apiStudyListItem, 0, len(items))}
	for _, it := range items {
		out.Items = append(out.Items, apiStudyListItem{apiStudy: toAPIStudy(it.Study), OwnerName: it.OwnerName, Role: it.Role,
			Assigned: it.Assigned, Finished: it.Finished})
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiCreateStudy(c echo.Context) error {
	var in apiStudyInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	st, err := s.store.CreateStudy(c.Request().Context(), in.request())
	if err != nil {
		return err
	}
	out := toAPIStudy(*st)
	c.Response().Header().Set(echo.HeaderLocation, out.APIURL)
	return c.JSON(http.StatusCreated, out)
}

func (s *Server) apiShowStudy(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	v, err := s.store.StudyOverview(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIStudyOverview(v))
}

func (s *Server) apiStudyQueue(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	q, err := s.store.StudyQueue(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := apiStudyQueue{Study: toAPIStudy(q.Study), Entries: make([]apiStudyQueueEntry, 0, len(q.Entries)),
		Progress: toAPIStudyProgress(q.Progress), NextItemID: q.Next}
	for _, e := range q.Entries {
		page, api := studyItemPaths(id, e.ItemID)
		out.Entries = append(out.Entries, apiStudyQueueEntry{ItemID: e.ItemID, Position: e.Position, Status: e.Status,
			Reason: e.Reason, TaskIntent: e.TaskIntent, TimeSpentMS: e.TimeSpentMS, SubmittedAt: e.SubmittedAt, URL: page, APIURL: api})
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiStudyItem(c echo.Context) error {
	studyID, itemID, err := studyItemIDs(c)
	if err != nil {
		return err
	}
	v, err := s.store.StudyItem(c.Request().Context(), studyID, itemID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.toAPIStudyItem(c, v))
}

func (s *Server) apiSaveStudyLabels(c echo.Context) error {
	studyID, itemID, err := studyItemIDs(c)
	if err != nil {
		return err
	}
	var in models.StudyLabelInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	a, err := s.store.SaveStudyLabels(c.Request().Context(), studyID, itemID, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIStudyAssignment(a))
}

func (s *Server) apiStudyVerdicts(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	list, err := s.store.StudyVerdicts(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := apiStudyVerdictList{Items: make([]apiStudyVerdict, 0, len(list))}
	for _, v := range list {
		out.Items = append(out.Items, toAPIStudyVerdict(v))
	}
	return c.JSON(http.StatusOK, out)
}

// apiStudyReport is the agreement report with every breakdown, the judge
// leaderboard and the disagreements, as report.json exports it.
func (s *Server) apiStudyReport(c echo.Context) error {
	_, r, err := s.studyReport(c, nil)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
