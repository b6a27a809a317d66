package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// resultLine is one line of a run's results export: the WebArena-Verified
// evaluation result of the attempt's task (task_id, sites, task_revision,
// status, score and, from the benchmark's deterministic check,
// evaluators_results), then Proctor's own fields about the attempt.
type resultLine struct {
	TaskID            any             `json:"task_id"` // a number when the benchmark's task id is one, as in WebArena-Verified
	Sites             []string        `json:"sites"`
	TaskRevision      int             `json:"task_revision"`
	Status            *string         `json:"status"` // the primary evaluation's verdict; null until evaluated
	Score             *float64        `json:"score"`
	EvaluatorsResults json.RawMessage `json:"evaluators_results,omitempty"`
	ErrorMsg          *string         `json:"error_msg,omitempty"`
	Evaluator         string          `json:"evaluator,omitempty"`
	EvaluatorVersion  string          `json:"evaluator_version,omitempty"`

	AttemptID     int64   `json:"attempt_id"`
	AttemptStatus string  `json:"attempt_status"`
	Outcome       *string `json:"outcome"` // success | failure | error; null without one
	ErrorClass    string  `json:"error_class,omitempty"`
	Steps         int     `json:"steps"`
	TokensIn      int64   `json:"tokens_in"`
	TokensOut     int64   `json:"tokens_out"`
	Cost          float64 `json:"cost"`
	DurationMS    int64   `json:"duration_ms"`
	JudgeScore    *int    `json:"judge_score"`
	TimelineURL   string  `json:"timeline_url"`
}

// checkDetails are the parts of a deterministic check's details an export line
// carries over.
type checkDetails struct {
	EvaluatorsResults json.RawMessage `json:"evaluators_results"`
	ErrorMsg          *string         `json:"error_msg"`
}

// resultLineOf shapes one attempt's export line. Details were already reduced
// to the public view by the store for anyone but administrators.
func resultLineOf(runID int64, r models.RunResult) resultLine {
	l := resultLine{
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
