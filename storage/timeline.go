package storage

import (
	"context"

	"proctor/models"
)

// AttemptSteps returns an attempt with its task's public fields and its steps
// in order, in one query for the steps: what the timeline's per-step endpoints
// and its artifact download read. ENOTFOUND when the attempt is missing or its
// run is not visible to the scope.
func (db *DB) AttemptSteps(ctx context.Context, scope models.RunScope, attemptID int64) (*models.AttemptSteps, error) {
	q := db.q(ctx)
	notFound := models.Errorf(models.ENOTFOUND, "Attempt %d not found.", attemptID)
	var attempts []models.Attempt
	if err := q.Where("id = ?", attemptID).Limit(1).Find(&attempts).Error; err != nil {
		return nil, wrap(err, "attempt")
	}
	if len(attempts) == 0 {
		return nil, notFound
	}
	out := &models.AttemptSteps{Attempt: attempts[0]}
	if _, _, err := db.runAccess(q, scope, out.Attempt.RunID, false); err != nil {
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, notFound
		}
		return nil, err
	}
	var tasks []models.Task
	if err := q.Table("tasks t").Select(publicTaskColumns).Where("t.id = ?", out.Attempt.TaskID).Find(&tasks).Error; err != nil {
		return nil, wrap(err, "task")
	}
	if len(tasks) != 1 {
		return nil, notFound
	}
	out.Task = tasks[0]
	out.Task.HideSecrets()
	if err := q.Where("attempt_id = ?", attemptID).Order("step_index").Find(&out.Steps).Error; err != nil {
		return nil, wrap(err, "steps")
	}
	return out, nil
}

// AttemptExpectedAnswer returns what the attempt's task expects of its final
// answer (models.ExpectedAnswerOf), or nil when the task states none. It reads
// the task's hidden fields: the service lets only administrators ask.
// ENOTFOUND for a missing attempt.
func (db *DB) AttemptExpectedAnswer(ctx context.Context, attemptID int64) (*models.ExpectedAnswer, error) {
	var tasks []models.Task
	err := db.q(ctx).Table("tasks t").Select("t.id, t.eval_spec, t.reference_answers").
		Joins("JOIN attempts a ON a.task_id = t.id").Where("a.id = ?", attemptID).Find(&tasks).Error
	if err != nil {
		return nil, wrap(err, "task")
	}
	if len(tasks) != 1 {
		return nil, models.Errorf(models.ENOTFOUND, "Attempt %d not found.", attemptID)
	}
	return models.ExpectedAnswerOf(tasks[0]), nil
}
