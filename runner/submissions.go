package runner

import (
	"context"
	"io"
	"time"

	"proctor/models"
)

func errSubmissionsPending() error {
	return models.Errorf(models.EUNAVAILABLE, "The submission portal is not implemented yet.")
}

// CreateSubmission starts an upload, or resumes the caller's unfinished upload
// of the same bundle.
func (r *Runner) CreateSubmission(ctx context.Context, req models.SubmissionRequest) (*models.SubmissionView, bool, error) {
	return nil, false, errSubmissionsPending()
}

// Submission is one submission with its received parts and report.
func (r *Runner) Submission(ctx context.Context, id int64) (*models.SubmissionView, error) {
	return nil, errSubmissionsPending()
}

// PutSubmissionPart stores one part of an upload.
func (r *Runner) PutSubmissionPart(ctx context.Context, id int64, n int, body io.Reader, size int64, md5 []byte) (*models.SubmissionPart, error) {
	return nil, errSubmissionsPending()
}

// SubmissionPartURL presigns a direct upload of one part to S3.
func (r *Runner) SubmissionPartURL(ctx context.Context, id int64, n int) (string, time.Time, error) {
	return "", time.Time{}, errSubmissionsPending()
}

// CompleteSubmission assembles the parts and queues validation.
func (r *Runner) CompleteSubmission(ctx context.Context, id int64) (*models.SubmissionView, error) {
	return nil, errSubmissionsPending()
}

// UploadSubmission stores a whole bundle streamed in one request.
func (r *Runner) UploadSubmission(ctx context.Context, req models.SubmissionRequest, body io.Reader) (*models.SubmissionView, error) {
	return nil, errSubmissionsPending()
}

// IngestSubmission queues the ingest of a validated submission.
func (r *Runner) IngestSubmission(ctx context.Context, id int64) (*models.SubmissionView, error) {
	return nil, errSubmissionsPending()
}

// DiscardSubmission deletes an unfinished submission's bytes.
func (r *Runner) DiscardSubmission(ctx context.Context, id int64) error {
	return errSubmissionsPending()
}
