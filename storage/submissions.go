package storage

import (
	"context"

	"proctor/models"
)

// ListSubmissions lists submissions: a team's for its members, every one for
// administrators.
func (db *DB) ListSubmissions(ctx context.Context, f models.SubmissionFilter) ([]models.SubmissionView, int, error) {
	return nil, 0, models.Errorf(models.EUNAVAILABLE, "Submissions are not implemented yet.")
}

// SubmissionFormOptions lists the agents the caller may submit for and the
// benchmarks with their subsets.
func (db *DB) SubmissionFormOptions(ctx context.Context) (*models.SubmissionFormOptions, error) {
	return nil, models.Errorf(models.EUNAVAILABLE, "Submissions are not implemented yet.")
}
