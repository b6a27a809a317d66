package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"gorm.io/gorm"

	"proctor/models"
)

// InsertCandidateRun writes a hidden-tests run of candidate websites in one
// transaction: the run (through the one run insert, under the team's quota
// as withinQuota decides), one pending attempt per task of taskIDs carrying
// the team's reported cost, tokens and turns (as Steps) from its candidate,
// each attempt's HiddenCandidate, the audit event ("run <id>: " + details), and the jobs
// enqueue inserts for the attempts. The caller has decided that the run may
// be created and checked every candidate; run is reloaded as stored.
func (db *DB) InsertCandidateRun(ctx context.Context, run *models.Run, taskIDs []int64, candidates map[int64]models.CandidateSpec,
	details string, withinQuota func(recent int64) error,
	enqueue func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		if err := db.insertRun(tx, run, withinQuota); err != nil {
			return err
		}
		now := run.CreatedAt
		attempts := make([]models.Attempt, len(taskIDs))
		for i, id := range taskIDs {
			c := candidates[id]
			attempts[i] = models.Attempt{
				RunID: run.ID, TaskID: id, Status: models.AttemptPending, Steps: c.Turns,
				TokensIn: c.TokensIn, TokensOut: c.TokensOut, Cost: c.CostUSD, CreatedAt: now, UpdatedAt: now,
			}
		}
		if err := tx.CreateInBatches(&attempts, 500).Error; err != nil {
			return wrap(err, "attempts")
		}
		// Read the ids back rather than trusting every driver's batch insert
		// to fill them in.
		var created []models.Attempt
		if err := tx.Select("id, task_id").Where("run_id = ?", run.ID).Order("id").Find(&created).Error; err != nil {
			return wrap(err, "attempts")
		}
		rows := make([]models.HiddenCandidate, len(created))
		ids := make([]int64, len(created))
		for i, a := range created {
			c := candidates[a.TaskID]
			ids[i] = a.ID
			rows[i] = models.HiddenCandidate{AttemptID: a.ID, BaseURL: c.BaseURL, RestartURL: c.RestartURL, HealthURL: c.HealthURL, CreatedAt: now}
		}
		if err := tx.CreateInBatches(&rows, 500).Error; err != nil {
			return wrap(err, "candidates")
		}
		if _, err := db.refreshRunTotals(tx, run.ID); err != nil {
			return err
		}
		if err := db.auditTx(ctx, tx, "candidates.submit", "run "+strconv.FormatInt(run.ID, 10), fmt.Sprintf("run %d: %s", run.ID, details), &run.TeamID); err != nil {
			return err
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		if err := enqueue(ctx, t, run, ids); err != nil {
			return err
		}
		return wrap(tx.First(run, run.ID).Error, "run")
	})
}

// VersionTaskRefs returns every task of a version with its id, external id
// and position only.
func (db *DB) VersionTaskRefs(ctx context.Context, versionID int64) ([]models.Task, error) {
	var tasks []models.Task
	err := db.q(ctx).Select("id, external_id, position").Where("version_id = ?", versionID).Find(&tasks).Error
	return tasks, wrap(err, "tasks")
}

// TaskIntents returns the tasks with the given ids in position order, with
// their id, external id, intent and position only.
func (db *DB) TaskIntents(ctx context.Context, ids []int64) ([]models.Task, error) {
	out := []models.Task{}
	err := db.q(ctx).Select("id, external_id, intent, position").Where("id IN ?", append(ids, 0)).Order("position").Find(&out).Error
	return out, wrap(err, "tasks")
}

// RunCandidates lists the candidates of a run's attempts, in attempt order.
func (db *DB) RunCandidates(ctx context.Context, runID int64) ([]models.HiddenCandidate, error) {
	out := []models.HiddenCandidate{}
	err := db.q(ctx).Table("hidden_candidates c").Select("c.*").Joins("JOIN attempts a ON a.id = c.attempt_id").
		Where("a.run_id = ?", runID).Order("a.id").Scan(&out).Error
	return out, wrap(err, "candidates")
}

// AttemptCandidate returns an attempt's run id and its candidate, nil when
// it has none; ENOTFOUND for an unknown attempt.
func (db *DB) AttemptCandidate(ctx context.Context, attemptID int64) (int64, *models.HiddenCandidate, error) {
	q := db.q(ctx)
	var attempts []models.Attempt
	if err := q.Select("id, run_id").Where("id = ?", attemptID).Limit(1).Find(&attempts).Error; err != nil {
		return 0, nil, wrap(err, "attempt")
	}
	if len(attempts) == 0 {
		return 0, nil, models.Errorf(models.ENOTFOUND, "attempt not found.")
	}
	var found []models.HiddenCandidate
	if err := q.Where("attempt_id = ?", attemptID).Limit(1).Find(&found).Error; err != nil {
		return 0, nil, wrap(err, "candidate")
	}
	if len(found) == 0 {
		return attempts[0].RunID, nil, nil
	}
	return attempts[0].RunID, &found[0], nil
}
