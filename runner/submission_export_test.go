package runner

import (
	"context"
	"time"
)

// ExpireUploadsBefore runs the abandoned-uploads job's work with a cutoff of
// the test's choosing.
func ExpireUploadsBefore(r *Runner, ctx context.Context, cutoff time.Time) (int, error) {
	return r.expireUploads(ctx, cutoff)
}
