package runner

import (
	"context"

	"proctor/models"
)

// SubmitCandidates creates a hidden-tests run of the submitted candidate
// websites and queues one hidden-tests job per task.
func (r *Runner) SubmitCandidates(ctx context.Context, req models.CandidateRunRequest) (*models.Run, error) {
	return nil, models.Errorf(models.EUNAVAILABLE, "Submitting candidates is not built yet.")
}
