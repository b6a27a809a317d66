package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"proctor/models"
)

// dispatchWorker turns a queued run into attempts and episode jobs.
type dispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	r *Runner
}

// Work creates the run's attempts and queues the first of their episodes,
// as many as the run's parallelism allows, in one transaction.
func (w *dispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	ctx = models.WithActor(ctx, models.SystemActor())
	return w.r.db.DispatchRun(ctx, job.Args.RunID, w.r.queue.RunEpisodes)
}

// housekeepingWorker removes what expires: sessions past their end, and the
// artifacts of tries a newer try replaced.
type housekeepingWorker struct {
	river.WorkerDefaults[HousekeepingArgs]
	r *Runner
}

// supersededGrace is how long a replaced try's artifacts stay: a worker
// presumed dead that still lives stops at its next step, well within it.
const supersededGrace = 10 * time.Minute

// Work deletes expired sessions and superseded tries' artifacts.
func (w *housekeepingWorker) Work(ctx context.Context, _ *river.Job[HousekeepingArgs]) error {
	n, err := w.r.db.DeleteExpiredSessions(ctx)
	if err != nil {
		return err
	}
	tries, err := w.r.RemoveSupersededTries(ctx, time.Now().UTC().Add(-supersededGrace))
	w.r.log.Debug("housekeeping", "expired_sessions", n, "superseded_tries", tries)
	return err
}

// RemoveSupersededTries deletes the artifacts of every try replaced before
// the given time, then its record; a try whose artifacts cannot all be
// deleted keeps its record for the next round. It returns how many went.
func (r *Runner) RemoveSupersededTries(ctx context.Context, before time.Time) (int, error) {
	removed := 0
	for {
		tries, err := r.db.SupersededTries(ctx, before, 100)
		if err != nil || len(tries) == 0 {
			return removed, err
		}
		for _, t := range tries {
			stored, err := r.artifacts.List(ctx, t.Prefix)
			if err != nil {
				return removed, fmt.Errorf("list the artifacts of %s: %w", t.Prefix, err)
			}
			for _, a := range stored {
				if err := r.artifacts.Delete(ctx, a.Key); err != nil {
					return removed, fmt.Errorf("delete %s: %w", a.Key, err)
				}
			}
			if err := r.db.ForgetSupersededTry(ctx, t.ID); err != nil {
				return removed, err
			}
			removed++
		}
	}
}

// metricsWorker recomputes a run's metrics and leaderboard rows after its
// evaluations changed.
type metricsWorker struct {
	river.WorkerDefaults[MetricsArgs]
	r *Runner
}

// Work refreshes the run's precomputed metrics when they are behind.
func (w *metricsWorker) Work(ctx context.Context, job *river.Job[MetricsArgs]) error {
	return w.r.metrics.RefreshRunMetrics(models.WithActor(ctx, models.SystemActor()), job.Args.RunID)
}
