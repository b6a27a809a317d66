package runner

import (
	"context"
	"database/sql"

	"github.com/riverqueue/river"

	"proctor/models"
)

// SubmitCandidates creates a hidden-tests run of the submitted candidate
// websites and queues one hidden-tests job per task (see
// storage.DB.SubmitCandidates for who may and what is refused).
func (r *Runner) SubmitCandidates(ctx context.Context, req models.CandidateRunRequest) (*models.Run, error) {
	return r.queue.SubmitCandidates(ctx, req)
}

// SubmitCandidates creates a candidate run and its hidden-tests jobs in one
// transaction, under the team's daily run quota.
func (q *Queue) SubmitCandidates(ctx context.Context, req models.CandidateRunRequest) (*models.Run, error) {
	return q.db.SubmitCandidates(ctx, req, q.opts.DailyRunQuota, q.insertHiddenTests)
}

// insertHiddenTests enqueues one hidden-tests job per attempt inside tx.
func (q *Queue) insertHiddenTests(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error {
	if len(attemptIDs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(attemptIDs))
	for i, id := range attemptIDs {
		params[i] = river.InsertManyParams{Args: HiddenTestsArgs{AttemptID: id, RunID: run.ID},
			InsertOpts: &river.InsertOpts{Queue: QueueHiddenTests}}
	}
	_, err := q.inserter.InsertManyTx(ctx, tx, params)
	return err
}
