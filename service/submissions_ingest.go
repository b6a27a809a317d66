package service

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"proctor/models"
)

// UploadedRunRules are how an ingested submission's run is made: the ingest
// job passes them to storage.CreateUploadedRun, which calls them inside its
// transaction. The run takes the manifest's budgets, date, notes, model and
// framework; a task the bundle did not attempt, or does not hold, is a
// failure charged to the agent.
func UploadedRunRules() models.UploadedRunRules {
	return models.UploadedRunRules{Run: uploadedRun, Attempt: uploadedAttempt}
}

// Messages of the attempts an uploaded run holds for tasks it did not attempt.
const (
	notAttemptedMessage = "not attempted (marked .missing)"
	absentMessage       = "absent from the bundle"
)

// uploadedRun is the run row of an ingested submission, with the agent's
// snapshot carrying the manifest's model and framework.
func uploadedRun(s *models.Submission, agent *models.Agent, bench *models.Benchmark, m *models.BundleManifest, tasks int, now time.Time) (models.Run, error) {
	run := uploadedRunRow(s, agent, bench, m, tasks, now)
	snap := models.SnapshotOf(agent)
	if m != nil {
		snap.Model = orDefault(strings.TrimSpace(m.Model), snap.Model)
		snap.Framework = orDefault(strings.TrimSpace(m.AgentFramework), snap.Framework)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		return models.Run{}, fmt.Errorf("snapshot agent: %w", err)
	}
	run.AgentSnapshot = string(raw)
	return run, nil
}

// uploadedRunRow is the run row of an ingested submission: the manifest's
// budgets, date and notes, or the benchmark's defaults.
func uploadedRunRow(s *models.Submission, agent *models.Agent, bench *models.Benchmark, m *models.BundleManifest, tasks int, now time.Time) models.Run {
	run := models.Run{
		TeamID: s.TeamID, AgentID: agent.ID, VersionID: s.VersionID, SubsetName: s.SubsetName,
		Status: models.RunEvaluating, Origin: models.OriginUploaded, MaxSteps: bench.DefaultMaxSteps, Parallelism: 1,
		CreatedBy: s.CreatedBy, CreatedAt: now, StartedAt: &now, TasksTotal: tasks,
		Notes: fmt.Sprintf("Uploaded as submission %d (%s).", s.ID, s.Filename),
	}
	if m == nil {
		return run
	}
	if m.Budgets.MaxSteps > 0 {
		run.MaxSteps = m.Budgets.MaxSteps
	}
	run.MaxEpisodeSeconds = max(m.Budgets.MaxEpisodeSeconds, 0)
	run.MaxCost = m.Budgets.MaxCost
	if at, ok := manifestDate(m.Date); ok {
		run.StartedAt = &at
	}
	if notes := strings.TrimSpace(m.Notes); notes != "" {
		run.Notes = truncateText(notes+"\n\n"+run.Notes, 4000)
	}
	return run
}

// manifestDate reads a manifest's date: RFC 3339 or YYYY-MM-DD.
func manifestDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), true
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}

// uploadedAttempt is the attempt row of one task of an uploaded run: the
// bundle's task waiting for evaluation, or a failure charged to the agent
// when the bundle did not attempt it (t nil: absent).
func uploadedAttempt(runID, taskID int64, t *models.UploadedTask, now time.Time) models.Attempt {
	a := models.Attempt{RunID: runID, TaskID: taskID, Tries: 1, CreatedAt: now, UpdatedAt: now}
	if t == nil || t.NotAttempted {
		msg := absentMessage
		if t != nil {
			msg = notAttemptedMessage
		}
		a.Status, a.Outcome, a.ErrorClass, a.ErrorMessage = models.AttemptDone, models.OutcomeFailure, models.ErrorClassAgent, msg
		a.FinishedAt = &now
		zero := 0.0
		a.Score = &zero
		return a
	}
	a.Status = models.AttemptEvaluating
	a.Steps, a.TokensIn, a.TokensOut, a.Cost = len(t.Steps), t.TokensIn, t.TokensOut, t.Cost
	// A bundle without the trajectory says nothing of the steps taken.
	a.Unknown = models.Unknown{Steps: len(t.Steps) == 0, Tokens: !t.TokensStated, Cost: !t.CostStated}
	a.FinalAnswer, a.HARKey, a.DurationMS = t.FinalAnswer, t.HARKey, max(t.DurationMS, 0)
	if t.ErrorMessage != "" {
		a.ErrorClass, a.ErrorMessage = models.ErrorClassAgent, truncateText(t.ErrorMessage, 2000)
	}
	a.StartedAt, a.FinishedAt = t.StartedAt, &now
	if t.StartedAt != nil && t.DurationMS > 0 {
		end := t.StartedAt.Add(time.Duration(t.DurationMS) * time.Millisecond)
		a.FinishedAt = &end
	}
	return a
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// truncateText cuts s to at most n bytes, as storage cuts long text.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
