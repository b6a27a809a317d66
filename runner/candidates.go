package runner

import (
	"context"
	"database/sql"

	"github.com/riverqueue/river"

	"proctor/models"
)

// HiddenTests enqueues one hidden-tests job per attempt of a candidate run
// inside tx (service.CandidateJobs).
func (q *Queue) HiddenTests(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error {
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
