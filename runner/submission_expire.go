package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"proctor/models"
)

// expireUploadsWorker discards uploads no part has reached for longer than
// AbandonAfter, deleting their parts: a multi-gigabyte upload given up
// half-way would otherwise hold its storage for ever.
type expireUploadsWorker struct {
	river.WorkerDefaults[ExpireUploadsArgs]
	r *Runner
}

// expireBatch bounds the uploads one job discards; the next job goes on.
const expireBatch = 100

// Work discards one batch of abandoned uploads.
func (w *expireUploadsWorker) Work(ctx context.Context, _ *river.Job[ExpireUploadsArgs]) error {
	_, err := w.r.expireUploads(systemContext(ctx), time.Now().UTC().Add(-w.r.opts.Submissions.AbandonAfter))
	return err
}

// expireUploads discards the uploads idle since before cutoff and returns
// how many it discarded.
func (r *Runner) expireUploads(ctx context.Context, cutoff time.Time) (int, error) {
	stale, err := r.db.AbandonedUploads(ctx, cutoff, expireBatch)
	if err != nil {
		return 0, err
	}
	reason := "The upload was abandoned: no part arrived for " + idleFor(time.Since(cutoff)) + "."
	var errs []error
	n := 0
	for _, s := range stale {
		expired, err := r.db.ExpireUpload(ctx, s.ID, cutoff, reason)
		if models.ErrorCode(err) == models.ECONFLICT {
			continue // a part arrived, or it was completed, meanwhile
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := r.deleteSubmissionBytes(ctx, expired); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n > 0 {
		r.log.Info("abandoned uploads discarded", "count", n)
	}
	return n, errors.Join(errs...)
}

// idleFor writes an age in days, or hours under two days.
func idleFor(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	return fmt.Sprintf("%d hours", int(d.Hours()))
}
