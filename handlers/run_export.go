package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
)

// checkDetails are the parts of a deterministic check's details an export line
// carries over.
type checkDetails struct {
	EvaluatorsResults json.RawMessage `json:"evaluators_results"`
	ErrorMsg          *string         `json:"error_msg"`
}

// resultLineOf shapes one attempt's export line. Details were already reduced
// to the public view by the store for anyone but administrators.
func resultLineOf(runID int64, r models.RunResult) api.ResultLine {
	l := api.ResultLine{
		TaskID: r.TaskExternalID, Sites: []string(r.TaskSites), TaskRevision: r.TaskRevision, Score: r.Score,
		Evaluator: r.Evaluator, EvaluatorVersion: r.EvaluatorVersion,
		AttemptID: r.AttemptID, AttemptStatus: r.Status, ErrorClass: r.ErrorClass, Steps: r.Steps,
		TokensIn: r.TokensIn, TokensOut: r.TokensOut, Cost: r.Cost, DurationMS: r.DurationMS, JudgeScore: r.JudgeScore,
		TimelineURL: runPath(runID) + "/attempts/" + strconv.FormatInt(r.AttemptID, 10),
	}
	if n, err := strconv.ParseInt(r.TaskExternalID, 10, 64); err == nil && strconv.FormatInt(n, 10) == r.TaskExternalID {
		l.TaskID = n
	}
	if l.Sites == nil {
		l.Sites = []string{}
	}
	if r.Verdict != "" {
		l.Status = &r.Verdict
	}
	if r.EvaluationScore != nil {
		l.Score = r.EvaluationScore
	}
	if r.Outcome != "" {
		l.Outcome = &r.Outcome
	}
	if r.EvaluationKind == models.EvaluationCheck && r.EvaluationDetails != "" {
		var d checkDetails
		if json.Unmarshal([]byte(r.EvaluationDetails), &d) == nil {
			if len(d.EvaluatorsResults) > 0 && string(d.EvaluatorsResults) != "null" {
				l.EvaluatorsResults = d.EvaluatorsResults
			}
			l.ErrorMsg = d.ErrorMsg
		}
	}
	return l
}

// exportRunResults streams a run's results as JSON Lines, one attempt per line
// in task order, batch by batch: the whole file is never held in memory.
// Visibility is the run page's (a private run is 404 to outsiders; a hidden
// run's results stay with its team and the administrators).
func (s *Server) exportRunResults(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	w := c.Response()
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set(echo.HeaderContentType, "application/jsonl; charset=utf-8")
		h.Set(echo.HeaderContentDisposition, `attachment; filename="run-`+strconv.FormatInt(id, 10)+`-results.jsonl"`)
		w.WriteHeader(http.StatusOK)
	}
	enc := json.NewEncoder(w)
	err = s.deps.Runs.RunResults(c.Request().Context(), id, func(batch []models.RunResult) error {
		start()
		for _, r := range batch {
			if err := enc.Encode(resultLineOf(id, r)); err != nil {
				return err
			}
		}
		w.Flush()
		return nil
	})
	if err != nil && !started {
		return err
	}
	if err != nil {
		// The status is sent: all that can be done is to stop and say why in the log.
		s.requestLogger(c).Warn("results export interrupted", "run", id, "error", err.Error())
		return nil
	}
	start() // a run without attempts exports an empty file
	return nil
}
