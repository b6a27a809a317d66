package storage

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"

	"proctor/models"
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
func (db *DB) CreateUploadedRun(ctx context.Context, id int64, in models.SubmissionIngest, rules models.UploadedRunRules,
	enqueue func(ctx context.Context, tx *sql.Tx, runID int64, evaluate []int64) error) (*models.Run, error) {
	if err := requireQueue(ctx, "ingests submissions"); err != nil {
		return nil, err
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
		if run, err = rules.Run(&s, &agent, &bench, in.Manifest, len(tasks), now); err != nil {
			return err
		}
		// Uploaded runs count against the submission quota, not the run quota.
		if err := db.insertRun(tx, &run, nil); err != nil {
			return err
		}
		byID := make(map[string]*models.UploadedTask, len(in.Tasks))
		for i := range in.Tasks {
			byID[in.Tasks[i].ExternalID] = &in.Tasks[i]
		}
		attempts := make([]models.Attempt, len(tasks))
		for i, t := range tasks {
			attempts[i] = rules.Attempt(run.ID, t.ID, byID[t.ExternalID], now)
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
