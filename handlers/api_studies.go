package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"proctor/api"
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

func toAPIStudy(st models.Study) api.Study {
	return api.Study{
		ID: st.ID, Name: st.Name, Description: st.Description, Status: st.Status, OwnerID: st.OwnerID,
		RunIDs: nonNil([]int64(st.RunIDs)), BenchmarkIDs: nonNil([]int64(st.BenchmarkIDs)), Sampling: st.Sampling,
		StratifyBy: st.StratifyBy, Seed: st.Seed, SampleSize: st.SampleSize, ItemCount: st.ItemCount,
		OverlapFraction: st.OverlapFraction, OverlapAnnotators: st.OverlapAnnotators, Blind: st.Blind,
		Labels: nonNil([]string(st.Labels)), Judges: nonNil([]models.StudyJudge(st.Judges)),
		CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, OpenedAt: st.OpenedAt, ClosedAt: st.ClosedAt,
		URL: web.StudyPath(st.ID), APIURL: apiStudyPath(st.ID),
	}
}

func toAPIStudyProgress(p models.StudyProgress) api.StudyProgress {
	return api.StudyProgress{Assigned: p.Assigned, Done: p.Done, Skipped: p.Skipped, Flagged: p.Flagged, Finished: p.Finished()}
}

func toAPIStudyOverview(v *models.StudyView) api.StudyOverview {
	out := api.StudyOverview{
		Study: toAPIStudy(v.Study), OwnerName: v.OwnerName, Role: v.Role, CanManage: v.CanManage,
		Progress: toAPIStudyProgress(v.Progress), Annotators: []api.StudyAnnotator{}, Judges: []api.StudyJudgeRun{},
	}
	for _, a := range v.Annotators {
		out.Annotators = append(out.Annotators, api.StudyAnnotator{UserID: a.UserID, Name: a.Name, Email: a.Email,
			Progress: toAPIStudyProgress(a.Progress), TimeSpentMS: a.TimeSpentMS})
	}
	for _, j := range v.Judges {
		out.Judges = append(out.Judges, api.StudyJudgeRun{StudyJudge: j.StudyJudge, Judged: j.Judged, Errors: j.Errors,
			TokensIn: j.TokensIn, TokensOut: j.TokensOut, Cost: j.Cost})
	}
	return out
}

func studyItemPaths(studyID, itemID int64) (page, apiURL string) {
	page = web.StudyPath(studyID) + "/items/" + strconv.FormatInt(itemID, 10)
	return page, apiBasePath + page
}

func toAPIStudyAssignment(a *models.StudyAssignment) *api.StudyAssignment {
	if a == nil {
		return nil
	}
	return &api.StudyAssignment{ItemID: a.StudyItemID, Position: a.Position, Status: a.Status, Reason: a.Reason,
		Labels: nonNilMap(a.Labels), TimeSpentMS: a.TimeSpentMS, SubmittedAt: a.SubmittedAt, UpdatedAt: a.UpdatedAt}
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func toAPIStudyVerdict(v models.StudyVerdict) api.StudyVerdict {
	return api.StudyVerdict{ItemID: v.StudyItemID, Judge: v.Judge, Imported: v.Imported, Labels: nonNilMap(v.Labels),
		Rationale: v.Rationale, Error: v.Error, PromptVersion: v.PromptVersion, PromptSHA256: v.PromptSHA256,
		TokensIn: v.TokensIn, TokensOut: v.TokensOut, Cost: v.Cost, LatencyMS: v.LatencyMS, CreatedAt: v.CreatedAt}
}

func (s *Server) toAPIStudyItem(c echo.Context, v *models.StudyItemView) api.StudyItem {
	page, _ := studyItemPaths(v.Study.ID, v.Item.ID)
	out := api.StudyItem{
		Study: toAPIStudy(v.Study), Role: v.Role, Assignment: toAPIStudyAssignment(v.Assignment),
		Item:        api.StudyItemRef{ID: v.Item.ID, AttemptID: v.Item.AttemptID, Position: v.Item.Position, Stratum: v.Item.Stratum, URL: page},
		Timeline:    toAPITimeline(&v.Timeline, s.stepArtifactURLs(c.Request().Context(), v.Timeline.Steps)),
		RubricItems: []api.StudyRubricItem{}, Position: v.Position, Total: v.Total, PrevItemID: v.PrevID, NextItemID: v.NextID,
	}
	for _, ri := range v.RubricItems {
		out.RubricItems = append(out.RubricItems, api.StudyRubricItem{ID: ri.ID, Key: ri.Key, LabelKey: models.RubricLabelKey(ri.ID),
			Requirement: ri.Requirement, Verification: ri.Verification, Weight: ri.Weight})
	}
	if r := v.Reveal; r != nil {
		rv := &api.StudyReveal{Evaluations: []api.Evaluation{}, Verdicts: []api.StudyVerdict{}, Labels: []api.StudyAnnotatorLabels{}}
		for i := range r.Evaluations {
			rv.Evaluations = append(rv.Evaluations, toAPIEvaluation(&v.Timeline, &r.Evaluations[i]))
		}
		for _, vd := range r.Verdicts {
			rv.Verdicts = append(rv.Verdicts, toAPIStudyVerdict(vd))
		}
		for _, l := range r.Labels {
			rv.Labels = append(rv.Labels, api.StudyAnnotatorLabels{Annotator: l.Annotator, Status: l.Status, Reason: l.Reason, Labels: nonNilMap(l.Labels)})
		}
		out.Reveal = rv
	}
	return out
}

func (s *Server) apiListStudies(c echo.Context) error {
	items, err := s.deps.Studies.Studies(c.Request().Context())
	if err != nil {
		return err
	}
	out := api.StudyList{Items: make([]api.StudyListItem, 0, len(items))}
	for _, it := range items {
		out.Items = append(out.Items, api.StudyListItem{Study: toAPIStudy(it.Study), OwnerName: it.OwnerName, Role: it.Role,
			Assigned: it.Assigned, Finished: it.Finished})
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiCreateStudy(c echo.Context) error {
	var in api.StudyInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	st, err := s.deps.Studies.CreateStudy(c.Request().Context(), models.StudyRequest(in))
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
	v, err := s.deps.Studies.StudyOverview(c.Request().Context(), id)
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
	q, err := s.deps.Studies.StudyQueue(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := api.StudyQueue{Study: toAPIStudy(q.Study), Entries: make([]api.StudyQueueEntry, 0, len(q.Entries)),
		Progress: toAPIStudyProgress(q.Progress), NextItemID: q.Next}
	for _, e := range q.Entries {
		page, apiURL := studyItemPaths(id, e.ItemID)
		out.Entries = append(out.Entries, api.StudyQueueEntry{ItemID: e.ItemID, Position: e.Position, Status: e.Status,
			Reason: e.Reason, TaskIntent: e.TaskIntent, TimeSpentMS: e.TimeSpentMS, SubmittedAt: e.SubmittedAt, URL: page, APIURL: apiURL})
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiStudyItem(c echo.Context) error {
	studyID, itemID, err := studyItemIDs(c)
	if err != nil {
		return err
	}
	v, err := s.deps.Studies.StudyItem(c.Request().Context(), studyID, itemID)
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
	var in api.StudyLabelInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	a, err := s.deps.Studies.SaveStudyLabels(c.Request().Context(), studyID, itemID, in)
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
	list, err := s.deps.Studies.StudyVerdicts(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := api.StudyVerdictList{Items: make([]api.StudyVerdict, 0, len(list))}
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
