package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// UploadedTask is one task of an ingested bundle, its files already in the
// artifact store under the submission's prefix.
type UploadedTask struct {
	ExternalID string
	// NotAttempted marks a task the bundle says the agent did not attempt
	// (an empty .missing marker, an empty result).
	NotAttempted bool
	FinalAnswer  string // the final action as models.Action JSON, or ""
	HARKey       string
	TokensIn     int64
	TokensOut    int64
	Cost         float64
	// TokensStated, CostStated: the bundle stated them (else unknown).
	TokensStated bool
	CostStated   bool
	DurationMS   int64
	StartedAt    *time.Time
	ErrorMessage string        // the agent's own error, when the bundle records one
	Steps        []models.Step // AttemptID is filled in here
}

// SubmissionIngest is what the ingest job read from a validated bundle.
type SubmissionIngest struct {
	Manifest *models.BundleManifest
	// Tasks are the bundle's tasks of the submission's subset; the subset's
	// other tasks are absent from the bundle.
	Tasks []UploadedTask
}

// Messages of the attempts an uploaded run holds for tasks it did not attempt.
const (
	notAttemptedMessage = "not attempted (marked .missing)"
	absentMessage       = "absent from the bundle"
)

// CreateUploadedRun turns an ingesting submission into a run in one
// transaction: the Run (origin uploaded, status evaluating, the agent's
// snapshot with the manifest's model and framework, the manifest's budgets),
// one attempt per task of the subset — a bundle task with its steps, final
// answer, network log, tokens and cost waits for evaluation; a task marked
// not attempted or absent from the bundle is done, a failure charged to the
// agent — and the evaluation jobs, which enqueue inserts (with the attempts
// waiting for evaluation) inside the transaction. The submission becomes
// ingested with the run's id. A run whose every attempt is already done
// completes at once. A redelivered job finding the run made returns it and
// does nothing. System only; ECONFLICT when the submission is not ingesting.
func (db *DB) CreateUploadedRun(ctx context.Context, id int64, in SubmissionIngest, enqueue func(ctx context.Context, tx *sql.Tx, runID int64, evaluate []int64) error) (*models.Run, error) {
	if !models.ActorFrom(ctx).System {
		return nil, models.Errorf(models.EFORBIDDEN, "Only the queue ingests submissions.")
	}
	var run models.Run
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var s models.Submission
		if err := lockRow(tx, db.dialect).First(&s, id).Error; err != nil {
			return wrap(err, "submission")
		}
		if s.RunID != nil {
			return wrap(tx.First(&run, *s.RunID).Error, "run")
		}
		if s.Status != models.SubmissionIngesting {
			return models.SubmissionStateError(&s)
		}
		var agent models.Agent
		if err := tx.Select(agentColumns).First(&agent, s.AgentID).Error; err != nil {
			return wrap(err, "agent")
		}
		var bench models.Benchmark
		if err := tx.First(&bench, s.BenchmarkID).Error; err != nil {
			return wrap(err, "benchmark")
		}
		var tasks []models.Task
		ids, err := db.subsetTaskIDs(ctx, tx, s.VersionID, s.SubsetName)
		if err != nil {
			return err
		}
		if err := tx.Select("id, external_id, position").Where("id IN ?", append(ids, 0)).Order("position").Find(&tasks).Error; err != nil {
			return wrap(err, "tasks")
		}
		now := db.now()
		run = uploadedRun(&s, &agent, &bench, in.Manifest, len(tasks), now)
		snap := models.SnapshotOf(&agent)
		if m := in.Manifest; m != nil {
			snap.Model = orDefault(strings.TrimSpace(m.Model), snap.Model)
			snap.Framework = orDefault(strings.TrimSpace(m.AgentFramework), snap.Framework)
		}
		raw, err := json.Marshal(snap)
		if err != nil {
			return fmt.Errorf("snapshot agent: %w", err)
		}
		run.AgentSnapshot = string(raw)
		// Uploaded runs count against the submission quota, not the run quota.
		if err := db.insertRun(tx, &run, nil); err != nil {
			return err
		}
		byID := make(map[string]*UploadedTask, len(in.Tasks))
		for i := range in.Tasks {
			byID[in.Tasks[i].ExternalID] = &in.Tasks[i]
		}
		attempts := make([]models.Attempt, len(tasks))
		for i, t := range tasks {
			attempts[i] = uploadedAttempt(run.ID, t.ID, byID[t.ExternalID], now)
		}
		if err := tx.CreateInBatches(&attempts, 500).Error; err != nil {
			return wrap(err, "attempts")
		}
		var created []models.Attempt
		if err := tx.Select("id, task_id, status").Where("run_id = ?", run.ID).Find(&created).Error; err != nil {
			return wrap(err, "attempts")
		}
		attemptOf := make(map[int64]models.Attempt, len(created))
		for _, a := range created {
			attemptOf[a.TaskID] = a
		}
		var steps []models.Step
		var evaluate []int64
		for _, t := range tasks {
			a := attemptOf[t.ID]
			if a.Status != models.AttemptEvaluating {
				continue
			}
			evaluate = append(evaluate, a.ID)
			for _, st := range byID[t.ExternalID].Steps {
				st.ID, st.AttemptID = 0, a.ID
				if st.CreatedAt.IsZero() {
					st.CreatedAt = now
				}
				steps = append(steps, st)
			}
		}
		if len(steps) > 0 {
			if err := tx.CreateInBatches(&steps, 500).Error; err != nil {
				return wrap(err, "steps")
			}
		}
		if _, err := db.refreshRunTotals(tx, run.ID); err != nil {
			return err
		}
		if err := tx.Model(&models.Submission{}).Where("id = ?", s.ID).Updates(map[string]any{
			"status": models.SubmissionIngested, "run_id": run.ID, "ingested_at": now, "updated_at": now,
			"progress_done": gorm.Expr("progress_total"), "error": "",
		}).Error; err != nil {
			return wrap(err, "submission")
		}
		details := fmt.Sprintf("run %d: %d tasks, %d to evaluate, %d steps", run.ID, len(tasks), len(evaluate), len(steps))
		if err := db.auditTx(ctx, tx, "submission.ingest", submissionSubject(s.ID), details, &s.TeamID); err != nil {
			return err
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		if err := enqueue(ctx, t, run.ID, evaluate); err != nil {
			return err
		}
		return wrap(tx.First(&run, run.ID).Error, "run")
	})
	if err != nil {
		return nil, err
	}
	return &run, nil
}

// uploadedRun is the run row of an ingested submission.
func uploadedRun(s *models.Submission, agent *models.Agent, bench *models.Benchmark, m *models.BundleManifest, tasks int, now time.Time) models.Run {
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
		run.Notes = truncate(notes+"\n\n"+run.Notes, 4000)
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
func uploadedAttempt(runID, taskID int64, t *UploadedTask, now time.Time) models.Attempt {
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
		a.ErrorClass, a.ErrorMessage = models.ErrorClassAgent, truncate(t.ErrorMessage, 2000)
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
