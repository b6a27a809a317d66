package runner

import (
	"context"
	"time"

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

// Work refreshes the run's precomputed metrics. An evaluation recorded while
// it computed found this job running and enqueued none, so the job then runs
// again shortly.
func (w *metricsWorker) Work(ctx context.Context, job *river.Job[MetricsArgs]) error {
	ctx = models.WithActor(ctx, models.SystemActor())
	started := time.Now()
	if err := w.r.db.RefreshRunMetrics(ctx, job.Args.RunID); err != nil {
		return err
	}
	latest, err := w.r.db.LatestEvaluation(ctx, job.Args.RunID)
	if err != nil {
		return err
	}
	// The margin covers clocks of other workers that recorded evaluations.
	if latest.After(started.Add(-metricsClockMargin)) {
		return river.JobSnooze(time.Second)
	}
	return nil
}

// metricsClockMargin is how far apart the clocks of workers may be.
const metricsClockMargin = 2 * time.Second
