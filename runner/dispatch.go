package runner

import (
	"context"

	"github.com/riverqueue/river"

	"proctor/models"
)

// dispatchWorker turns a queued run into attempts and episode jobs.
type dispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	r *Runner
}

// Work creates the run's attempts and enqueues their episodes in one transaction.
func (w *dispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	ctx = models.WithActor(ctx, models.SystemActor())
	return w.r.db.DispatchRun(ctx, job.Args.RunID, w.r.queue.insertEpisodes)
}

// housekeepingWorker removes what expires: sessions past their end.
type housekeepingWorker struct {
	river.WorkerDefaults[HousekeepingArgs]
	r *Runner
}

// Work deletes expired sessions.
func (w *housekeepingWorker) Work(ctx context.Context, _ *river.Job[HousekeepingArgs]) error {
	n, err := w.r.db.DeleteExpiredSessions(ctx)
	if err != nil {
		return err
	}
	w.r.log.Debug("housekeeping", "expired_sessions", n)
	return nil
}

// metricsWorker recomputes a run's metrics and leaderboard rows after its
// evaluations changed.
type metricsWorker struct {
	river.WorkerDefaults[MetricsArgs]
	r *Runner
}

// Work refreshes the run's precomputed metrics when they are behind.
func (w *metricsWorker) Work(ctx context.Context, job *river.Job[MetricsArgs]) error {
	return w.r.db.RefreshRunMetrics(models.WithActor(ctx, models.SystemActor()), job.Args.RunID)
}
