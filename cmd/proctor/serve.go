package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"proctor/config"
	"proctor/docs"
	"proctor/handlers"
	"proctor/sandbox"
	"proctor/static"
)

// serve runs the web server until the context ends, then shuts down in a fixed
// order: HTTP server first (finishing in-flight requests), then the queue and
// browser (added by the runner), then the artifact store and the database.
func (p *Program) serve(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("serve")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	run, err := p.newRunner(app, app.Config.Episodes, "")
	if err != nil {
		return err
	}
	if err := run.Start(ctx); err != nil {
		return err
	}
	// Deferred after Close, so it runs before it: on every way out the queue and
	// the browser stop before the artifact store and the database close.
	stopRunner := func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := run.Stop(stopCtx); err != nil {
			app.Log.Warn("queue shutdown", "error", err.Error())
		}
	}
	var stopOnce sync.Once
	defer stopOnce.Do(stopRunner)

	queueUI, err := run.QueueUI(ctx, handlers.QueueUIPrefix)
	if err != nil {
		return err
	}
	srv, err := handlers.New(handlers.Options{
		BaseURL:        app.Config.BaseURL,
		SecureCookies:  strings.HasPrefix(app.Config.BaseURL, "https://"),
		TrustedProxies: app.Config.TrustedProxies,
		ServerJudge:    serverJudge(app.Config.Judge),
	}, handlers.Deps{
		Store: app.DB, Artifacts: app.Artifacts, ArtifactHandler: app.ArtifactHandler,
		Static: static.Files(), Docs: docs.Files(), Logger: app.Log,
		ArtifactURLs: app.Artifacts, Runs: app.runService(run), Benchmarks: app.benchmarkService(), Submissions: app.submissionService(run), Studies: app.studyService(run), QueueUI: queueUI,
		Teams: app.teamService(), Accounts: app.accountService(), Candidates: app.candidateService(run), Moderation: app.moderationService(),
		Evaluators: app.Evaluators, Episodes: app.episodeService(run), EpisodeGateway: app.episodeGateway(run),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", app.Config.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", app.Config.Addr, err)
	}
	// The bundled sandbox sites are served beside the application, not through
	// it: they are the agents' websites, with their own forms and headers.
	box := sandbox.New(sandbox.Options{})
	defer box.Close()
	mux := http.NewServeMux()
	mux.Handle(sandbox.PathPrefix, box)
	// The hidden-tests sample benchmark's two candidates, a copy of the shop
	// and a broken rebuild, so that a candidate run can be tried out.
	mux.Handle(sandbox.RebuildsPathPrefix, sandbox.Rebuilds())
	mux.Handle("/", srv)
	httpServer := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Bounds slow uploads; a 256 MiB benchmark import needs well under this.
		ReadTimeout: 15 * time.Minute,
		IdleTimeout: 120 * time.Second,
	}
	url := "http://" + ln.Addr().String()
	app.Log.Info("serving", "addr", ln.Addr().String(), "url", url, "base_url", app.Config.BaseURL,
		"database", app.DB.Dialect(), "artifacts", app.Config.Artifacts.Kind, "episodes", app.Config.Episodes,
		"submission_max_bytes", app.Config.Submission.MaxBytes, "submission_quota", app.Config.Submission.Quota)
	if p.Ready != nil {
		p.Ready <- url
	}
	errc := make(chan error, 1)
	go func() { errc <- httpServer.Serve(ln) }()

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	app.Log.Info("shutting down: http server")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		app.Log.Warn("http server shutdown", "error", err.Error())
	}
	app.Log.Info("shutting down: queue and browser")
	stopOnce.Do(stopRunner)
	app.Log.Info("shutting down: artifact store and database")
	return nil
}

// migrate applies migrations and reports what it did.
func (p *Program) migrate(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("migrate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	app, err := p.openApp(ctx, cf, false)
	if err != nil {
		return err
	}
	defer app.Close()
	status, err := app.DB.Migrate(ctx, app.Log)
	if err != nil {
		return err
	}
	if s3, ok := app.Artifacts.(interface{ EnsureBucket(context.Context) error }); ok {
		if err := s3.EnsureBucket(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(p.Stdout, "database (%s) at migration %d; applied %d now; queue migrations applied now: %d\n",
		app.DB.Dialect(), status.Current, len(status.Applied), len(status.RiverApplied))
	return nil
}

// serverJudge describes the configured judge for the admin pages (never its key).
func serverJudge(j config.Judge) string {
	if j.BaseURL == "" {
		return ""
	}
	return j.Model + " at " + j.BaseURL
}
