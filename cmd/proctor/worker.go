package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"proctor/config"
	"proctor/handlers"
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
	// Connecting agents' calls reach the episodes this worker runs through
	// the serve processes, which forward them here.
	ln, err := net.Listen("tcp", app.Config.WorkerAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (%s): %w", app.Config.WorkerAddr, config.EnvWorkerAddr, err)
	}
	episodeURL := app.Config.WorkerURL
	if episodeURL == "" {
		episodeURL = "http://" + ln.Addr().String()
	}
	run, err := p.newRunner(app, episodes, episodeURL)
	if err != nil {
		ln.Close()
		return err
	}
	episodeServer := &http.Server{
		Handler:           handlers.NewEpisodeServer(app.episodeService(run), app.episodeGateway(run), app.Log),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	go func() { _ = episodeServer.Serve(ln) }()
	defer episodeServer.Close()
	if err := run.Start(ctx); err != nil {
		return err
	}
	app.Log.Info("worker started", "episodes", episodes, "episode_url", episodeURL, "database", app.DB.Dialect(), "artifacts", app.Config.Artifacts.Kind,
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
