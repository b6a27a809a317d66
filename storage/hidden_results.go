package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"gorm.io/gorm"

	"proctor/models"
)

// hiddenEvaluatorVersion versions how a hidden-tests attempt is graded: every
// test through its suite, a failed one run again, the pass rate over the
// tests that ran as the score, and success when it reaches the version's
// pass threshold (2: tests not run here are left out, a threshold decides).
const hiddenEvaluatorVersion = "2"

// HiddenTask loads a hidden-tests attempt's spec. System actor only
// (EFORBIDDEN otherwise); ENOTFOUND when the attempt, its run or its task is
// gone.
func (db *DB) HiddenTask(ctx context.Context, attemptID int64) (*models.HiddenTaskSpec, error) {
	if err := requireQueue(ctx, "runs hidden tests"); err != nil {
		return nil, err
	}
	var spec models.HiddenTaskSpec
	q := db.q(ctx)
	if err := q.First(&spec.Attempt, attemptID).Error; err != nil {
		return nil, wrap(err, "attempt")
	}
	if err := q.First(&spec.Run, spec.Attempt.RunID).Error; err != nil {
		return nil, wrap(err, "run")
	}
	if spec.Finished() {
		return &spec, nil
	}
	if err := q.First(&spec.Task, spec.Attempt.TaskID).Error; err != nil {
		return nil, wrap(err, "task")
	}
	var cands []models.HiddenCandidate
	if err := q.Where("attempt_id = ?", attemptID).Limit(1).Find(&cands).Error; err != nil {
		return nil, wrap(err, "candidate")
	}
	if len(cands) == 1 {
		spec.Candidate = &cands[0]
	}
	caps, err := db.ReferenceCaptures(ctx, spec.Task.ID)
	if err != nil {
		return nil, err
	}
	spec.Captures = caps
	return &spec, nil
}

// HiddenSuite returns the suite (canonical JSON) of a hidden-tests attempt's
// task, without its captures: what the job's time limit is derived from.
// System actor only; ENOTFOUND when the attempt or its task is gone.
func (db *DB) HiddenSuite(ctx context.Context, attemptID int64) (string, error) {
	if err := requireQueue(ctx, "runs hidden tests"); err != nil {
		return "", err
	}
	var specs []string
	err := db.q(ctx).Table("attempts a").Joins("JOIN tasks t ON t.id = a.task_id").
		Where("a.id = ?", attemptID).Limit(1).Pluck("t.eval_spec", &specs).Error
	if err != nil {
		return "", wrap(err, "task")
	}
	if len(specs) == 0 {
		return "", models.Errorf(models.ENOTFOUND, "Attempt %d not found.", attemptID)
	}
	return specs[0], nil
}

// StartHiddenAttempt marks a hidden-tests attempt running and counts a try
// (its artifacts go under the try's prefix), starting the run if it was
// queued. It reports the try and models.ClaimOK; models.ClaimWait, with no change, while
// the team runs its share of hidden-test jobs and another team's wait;
// models.ClaimFinished, with no change, when the attempt is done or its run has
// ended. System actor only; ENOTFOUND when the attempt is gone.
func (db *DB) StartHiddenAttempt(ctx context.Context, attemptID int64, by models.Claimant) (int, string, error) {
	if err := requireQueue(ctx, "runs hidden tests"); err != nil {
		return 0, "", err
	}
	try, status := 0, models.ClaimFinished
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var a models.Attempt
		if err := lockRow(tx, db.dialect).First(&a, attemptID).Error; err != nil {
			return wrap(err, "attempt")
		}
		var run models.Run
		if err := lockRow(tx, db.dialect).Select("id, team_id, status, started_at").First(&run, a.RunID).Error; err != nil {
			return wrap(err, "run")
		}
		if a.Status == models.AttemptDone || run.Finished() {
			return nil
		}
		now := db.now()
		if over, err := db.overShare(tx, run.TeamID, a.ID, true, by, now); err != nil || over {
			status = models.ClaimWait
			return err
		}
		if err := holdLease(tx, by.Lease, now); err != nil {
			return err
		}
		try, status = a.Tries+1, models.ClaimOK
		if err := tx.Model(&a).Updates(map[string]any{
			"tries": try, "status": models.AttemptRunning, "started_at": now, "updated_at": now, "worker_id": by.Lease.ID,
		}).Error; err != nil {
			return wrap(err, "attempt")
		}
		if run.Status != models.RunQueued {
			return nil
		}
		updates := map[string]any{"status": models.RunRunning}
		if run.StartedAt == nil {
			updates["started_at"] = now
		}
		return wrap(tx.Model(&models.Run{}).Where("id = ?", run.ID).Updates(updates).Error, "run")
	})
	return try, status, err
}

// hiddenDetails is a hidden-tests evaluation's details: the attempt's
// HiddenSummary, and why no test ran when none could.
type hiddenDetails struct {
	models.HiddenSummary
	Error string `json:"error,omitempty"`
}

// SaveHiddenResults records a hidden-tests attempt's results in one
// transaction: the test result rows (replacing those an interrupted try left),
// the attempt's hidden-tests evaluation (primary and current, its details the
// HiddenSummary), the attempt done with the pass rate over the tests that ran
// as its score and its outcome by the version's pass threshold
// (models.HiddenTally.Outcome: success when the rate reaches it, error when
// no test ran), the run's totals
// and, for its last attempt, its completion; refresh (may be nil) is called
// inside the transaction with the run's id to enqueue its metrics. The
// team's reported cost, tokens and turns stay as submitted. An attempt that is
// done already, or whose try is not out.Try, records nothing (a redelivered or
// stale job). It reports whether the run finished. System actor only.
func (db *DB) SaveHiddenResults(ctx context.Context, attemptID int64, out models.HiddenOutcome, refresh func(ctx context.Context, tx *sql.Tx, runID int64) error) (bool, error) {
	if err := requireQueue(ctx, "records hidden-test results"); err != nil {
		return false, err
	}
	summary := models.SummarizeHiddenResults(out.Results)
	finished := false
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var a models.Attempt
		if err := lockRow(tx, db.dialect).First(&a, attemptID).Error; err != nil {
			return wrap(err, "attempt")
		}
		if a.Status == models.AttemptDone || a.Tries != out.Try {
			return nil
		}
		// As in RecordEvaluations: one attempt of a run at a time recounts the
		// run's open attempts, so that the last one always completes it.
		var run models.Run
		if err := lockRow(tx, db.dialect).Select("id, version_id").First(&run, a.RunID).Error; err != nil {
			return wrap(err, "run")
		}
		threshold, err := passThresholdOf(tx, run.VersionID)
		if err != nil {
			return err
		}
		ev, outcome := hiddenEvaluation(summary, out, threshold)
		now := db.now()
		if err := tx.Where("attempt_id = ?", a.ID).Delete(&models.HiddenTestResult{}).Error; err != nil {
			return wrap(err, "hidden test results")
		}
		if len(out.Results) > 0 {
			rows := make([]models.HiddenTestResult, len(out.Results))
			for i, r := range out.Results {
				r.ID, r.AttemptID, r.CreatedAt = 0, a.ID, now
				if r.Runs == "" {
					r.Runs = "[]"
				}
				rows[i] = r
			}
			if err := tx.CreateInBatches(&rows, 200).Error; err != nil {
				return wrap(err, "hidden test results")
			}
		}
		if err := db.insertEvaluations(tx, &a, models.EvaluationBatch{Primary: ev}, now); err != nil {
			return err
		}
		updates := map[string]any{
			"status": models.AttemptDone, "outcome": outcome, "score": ev.Score,
			"finished_at": now, "duration_ms": out.Duration.Milliseconds(), "updated_at": now,
		}
		if out.Error != "" {
			withColumns(updates, attemptErrorColumns(models.ErrorClassPlatform, out.Error))
		} else {
			withColumns(updates, noAttemptError())
		}
		if a.StartedAt == nil {
			updates["started_at"] = now
		}
		if err := tx.Model(&a).Updates(updates).Error; err != nil {
			return wrap(err, "attempt")
		}
		if finished, err = db.refreshRunTotals(tx, a.RunID); err != nil {
			return err
		}
		if err := tx.Model(&models.Run{}).Where("id = ?", a.RunID).
			Update("evaluations_version", gorm.Expr("evaluations_version + 1")).Error; err != nil {
			return wrap(err, "run")
		}
		if refresh == nil {
			return nil
		}
		stx, err := sqlTx(tx)
		if err != nil {
			return err
		}
		return refresh(ctx, stx, a.RunID)
	})
	return finished, err
}

// passThresholdOf is the pass threshold of a benchmark version: the pass
// rate its hidden-tests tasks need to succeed.
func passThresholdOf(q *gorm.DB, versionID int64) (float64, error) {
	var thresholds []float64
	if err := q.Model(&models.BenchmarkVersion{}).Where("id = ?", versionID).Limit(1).Pluck("pass_threshold", &thresholds).Error; err != nil {
		return 0, wrap(err, "benchmark version")
	}
	if len(thresholds) == 0 {
		return 0, models.Errorf(models.ENOTFOUND, "Benchmark version %d not found.", versionID)
	}
	return thresholds[0], nil
}

// hiddenEvaluation is the evaluation row of a hidden-tests attempt and the
// attempt's outcome by the pass threshold (models.HiddenTally.Outcome):
// success when the pass rate over the tests that ran reaches it, failure
// when it does not, error when no test ran or none could (out.Error). The
// score is that pass rate (none when no test ran).
func hiddenEvaluation(summary models.HiddenSummary, out models.HiddenOutcome, threshold float64) (*models.Evaluation, string) {
	outcome := summary.Overall.Outcome(threshold)
	rate := summary.Overall.Rate()
	if out.Error != "" {
		outcome = models.OutcomeError
	}
	if outcome == models.OutcomeError {
		rate = nil
	}
	details := hiddenDetails{HiddenSummary: summary, Error: out.Error}
	switch {
	case outcome != models.OutcomeError || details.Error != "":
	case summary.Overall.Total == 0:
		details.Error = "the suite has no tests"
	default:
		details.Error = "none of the suite's tests can run on this platform"
	}
	raw, err := json.Marshal(details)
	if err != nil {
		// A struct of counters and a string always encodes.
		raw = fmt.Appendf(nil, `{"error":%q}`, err.Error())
	}
	return &models.Evaluation{
		Evaluator: models.EvaluatorHiddenTests, EvaluatorVersion: hiddenEvaluatorVersion, Kind: models.EvaluationCheck,
		Verdict: outcome, Score: rate, Details: string(raw), InputsChecksum: out.InputsChecksum,
	}, outcome
}
