package main

import (
	"context"
	"time"
)

// worker runs only queued jobs: start any number of these, on any machines,
// against the same PostgreSQL and S3 store.
func (p *Program) worker(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("worker")
	browsers := fs.Int("browsers", 0, "episodes run at once in this process (default PROCTOR_EPISODES)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	episodes := app.Config.Episodes
	if *browsers > 0 {
		episodes = *browsers
	}
	if episodes < 1 {
		return usagef("--browsers must be at least 1")
	}
	run, err := p.newRunner(app, episodes)
	if err != nil {
		return err
	}
	if err := run.Start(ctx); err != nil {
		return err
	}
	app.Log.Info("worker started", "episodes", episodes, "database", app.DB.Dialect(), "artifacts", app.Config.Artifacts.Kind,
		"submission_max_bytes", app.Config.Submission.MaxBytes)
	if p.Ready != nil {
		p.Ready <- "worker"
	}
	<-ctx.Done()
	app.Log.Info("shutting down: queue and browser")
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return run.Stop(stopCtx)
}
