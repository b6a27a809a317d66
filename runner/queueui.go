package runner

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"riverqueue.com/riverui"
)

// QueueUI returns River UI, a ready admin view of the queue's jobs and queues,
// serving its pages, assets and JSON API under prefix (such as /admin/queue).
// Its background count caches run until ctx ends. It checks no permission:
// mount it behind an administrators-only route.
func (r *Runner) QueueUI(ctx context.Context, prefix string) (http.Handler, error) {
	log := r.log.With("component", "riverui")
	q := r.queue
	pool := q.db.PgxPool()
	if pool == nil { // SQLite
		return startQueueUI(ctx, q.inserter, prefix, log)
	}
	// River UI runs its queries through its client's driver and is built on
	// pgx, while this process's pgx client exists only when it works jobs: a
	// client of its own, never started, so it fetches no jobs.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("queue ui: %w", err)
	}
	return startQueueUI(ctx, client, prefix, log)
}

// startQueueUI builds River UI on client's driver and starts its background
// services.
func startQueueUI[TTx any](ctx context.Context, client *river.Client[TTx], prefix string, log *slog.Logger) (http.Handler, error) {
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(client, nil),
		Logger:    log,
		Prefix:    prefix,
	})
	if err != nil {
		return nil, fmt.Errorf("queue ui: %w", err)
	}
	if err := h.Start(ctx); err != nil {
		return nil, fmt.Errorf("queue ui: start: %w", err)
	}
	return h, nil
}
