package storage

import (
	"context"

	"gorm.io/gorm"

	"proctor/models"
)

// resultBatch is how many attempts a results export reads per query.
const resultBatch = 200

// resultRow is a models.RunResult with its place in task order, the export's cursor.
type resultRow struct {
	models.RunResult
	Position int
}

// RunResults passes a run's attempts in task order, as its results export
// holds them, to emit in batches of at most resultBatch: each attempt with its
// task, its primary evaluation and its trajectory judge's score, read in one
// query per batch. No database connection is held while emit runs (a slow
// download does not hold up the database), and only one batch is in memory.
// Any scope but all runs' (administrators) gets the public view of evaluation
// details, which never quotes the task's hidden answers. ENOTFOUND when the
// scope does not see the run's attempts; emit's error ends the export and is
// returned.
func (db *DB) RunResults(ctx context.Context, scope models.RunScope, runID int64, emit func([]models.RunResult) error) error {
	q := db.q(ctx)
	if _, _, err := db.runAccess(q, scope, runID, false); err != nil {
		return err
	}
	privileged := scope.All
	var after *resultRow
	for {
		rows, err := resultPage(q, runID, after)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		batch := make([]models.RunResult, len(rows))
		for i, r := range rows {
			if !privileged {
				r.EvaluationDetails = publicEvaluationDetails(r.EvaluationKind, r.EvaluationDetails)
			}
			batch[i] = r.RunResult
		}
		if err := emit(batch); err != nil {
			return err
		}
		if len(rows) < resultBatch {
			return nil
		}
		after = &rows[len(rows)-1]
	}
}

// resultPage reads the batch of a run's results after the given row (from the
// start when nil), in task order.
func resultPage(q *gorm.DB, runID int64, after *resultRow) ([]resultRow, error) {
	tx := q.Table("attempts a").
		Joins("JOIN tasks t ON t.id = a.task_id").
		Joins("LEFT JOIN evaluations pe ON pe.attempt_id = a.id AND pe.is_primary = ?", true).
		Joins("LEFT JOIN evaluations je ON je.attempt_id = a.id AND je.kind = ? AND je.is_current = ?", models.EvaluationJudge, true).
		Where("a.run_id = ?", runID)
	if after != nil {
		tx = tx.Where("(t.position > ? OR (t.position = ? AND a.id > ?))", after.Position, after.Position, after.AttemptID)
	}
	var rows []resultRow
	err := tx.Select(`a.id AS attempt_id, t.external_id AS task_external_id, t.sites AS task_sites,
			t.revision AS task_revision, t.position, a.status, a.outcome, a.error_class, a.score, a.steps,
			a.tokens_in, a.tokens_out, a.cost, a.duration_ms, a.finished_at,
			COALESCE(pe.kind, '') AS evaluation_kind, COALESCE(pe.evaluator, '') AS evaluator,
			COALESCE(pe.evaluator_version, '') AS evaluator_version, COALESCE(pe.verdict, '') AS verdict,
			pe.score AS evaluation_score, COALESCE(pe.details, '') AS evaluation_details, je.judge_score`).
		Order("t.position, a.id").Limit(resultBatch).Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "results")
	}
	return rows, nil
}
