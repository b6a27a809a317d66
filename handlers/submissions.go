package handlers

import (
	"context"
	"io"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// SubmissionStore reads submissions (storage.DB).
type SubmissionStore interface {
	ListSubmissions(ctx context.Context, f models.SubmissionFilter) ([]models.SubmissionView, int, error)
	SubmissionFormOptions(ctx context.Context) (*models.SubmissionFormOptions, error)
}

// SubmissionService moves uploads through the submission portal: it owns the
// artifact store and the queue (runner.Runner); nil answers 503.
type SubmissionService interface {
	// CreateSubmission starts an upload, or resumes the caller's unfinished
	// upload of the same bundle (resumed = true).
	CreateSubmission(ctx context.Context, req models.SubmissionRequest) (sub *models.SubmissionView, resumed bool, err error)
	// Submission is one submission with its received parts and report.
	Submission(ctx context.Context, id int64) (*models.SubmissionView, error)
	// PutSubmissionPart stores part n (from 1) of an upload; md5 (nil when the
	// client sent none) must match the received bytes.
	PutSubmissionPart(ctx context.Context, id int64, n int, r io.Reader, size int64, md5 []byte) (*models.SubmissionPart, error)
	// SubmissionPartURL presigns a direct upload of part n to S3 (ECONFLICT
	// with the local artifact store: parts go through the API there).
	SubmissionPartURL(ctx context.Context, id int64, n int) (url string, expires time.Time, err error)
	// CompleteSubmission assembles the parts and queues validation.
	CompleteSubmission(ctx context.Context, id int64) (*models.SubmissionView, error)
	// UploadSubmission stores a whole bundle streamed in one request (the
	// upload form without JavaScript) and queues validation.
	UploadSubmission(ctx context.Context, req models.SubmissionRequest, r io.Reader) (*models.SubmissionView, error)
	// IngestSubmission queues the ingest of a validated submission.
	IngestSubmission(ctx context.Context, id int64) (*models.SubmissionView, error)
	// DiscardSubmission deletes an unfinished submission's bytes.
	DiscardSubmission(ctx context.Context, id int64) error
}

// submissionRoutes registers the submission portal's pages.
func (s *Server) submissionRoutes(e *echo.Echo) {
}

// apiSubmissionRoutes registers /api/v1/submissions.
func (s *Server) apiSubmissionRoutes(g *echo.Group) {
}
