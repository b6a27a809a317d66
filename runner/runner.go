package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"proctor/eval"
	"proctor/models"
	"proctor/netguard"
	"proctor/runner/connect"
	"proctor/runner/episode"
	"proctor/service"
	"proctor/storage/artifact"
)

// Config wires a Runner.
type Config struct {
	// DB is where the workers read and write (*storage.DB).
	DB        Store
	Artifacts artifact.Store
	Options   Options
	// Browser locates the Playwright driver and Chromium; the browser starts on
	// the first episode, so insert-only processes and idle servers never launch it.
	Browser episode.BrowserOptions
	// AgentClient returns the HTTP client agents are called through: the
	// SSRF-guarded client of netguard, which re-checks addresses at connect time.
	AgentClient func(timeout time.Duration) *http.Client
	// Guard is the SSRF guard hidden tests reach candidate websites
	// through (their HTTP client and their browser journeys).
	Guard *netguard.Guard
	// Judges builds LLM judges; nil when no judge can be configured at all.
	Judges JudgeFactory
	// Evaluators is the evaluator registry: how a benchmark's evaluator is
	// built and which page probes its episodes read. Required.
	Evaluators *eval.Registry
	Logger     *slog.Logger
	// Hub holds the mailboxes of the connecting agents' episodes this process
	// runs; the serve process's gateway shares it (nil: a hub of its own).
	Hub *connect.Hub
	// EpisodeURL is where this process serves its connecting episodes to the
	// serve processes that forward calls to it ("" when they run in the
	// serve process itself).
	EpisodeURL string
}

// Runner executes runs: it owns the queue, the workers and this process's browser.
type Runner struct {
	db          Store
	artifacts   artifact.Store
	queue       *Queue
	opts        Options
	log         *slog.Logger
	agentClient func(timeout time.Duration) *http.Client
	guard       *netguard.Guard
	browserMu   sync.Mutex
	browserOp   episode.BrowserOptions
	browser     *episode.Browser
	// proxy carries the browser's connections through the guard; it starts
	// with the browser (nil without a guard).
	proxy *netguard.Proxy

	judges     judgeCache
	evaluators *eval.Registry
	// metrics computes runs' leaderboard rows for the metrics job.
	metrics *service.Metrics
	// hub holds the mailboxes of the connecting episodes running here, served
	// at episodeURL.
	hub        *connect.Hub
	episodeURL string
}

// New builds the runner and its queue.
func New(cfg Config) (*Runner, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Evaluators == nil {
		return nil, errors.New("runner: Evaluators is required (the evaluator registry built in main)")
	}
	if cfg.AgentClient == nil {
		return nil, errors.New("runner: AgentClient is required (the SSRF-guarded client agents are called through)")
	}
	r := &Runner{db: cfg.DB, artifacts: cfg.Artifacts, log: cfg.Logger, browserOp: cfg.Browser, agentClient: cfg.AgentClient,
		guard: cfg.Guard, evaluators: cfg.Evaluators,
		judges: judgeCache{factory: cfg.Judges}, metrics: service.NewMetrics(cfg.DB), hub: cfg.Hub, episodeURL: cfg.EpisodeURL}
	if r.hub == nil {
		r.hub = connect.NewHub()
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &dispatchWorker{r: r})
	river.AddWorker(workers, &episodeWorker{r: r})
	river.AddWorker(workers, &evaluateWorker{r: r})
	river.AddWorker(workers, &housekeepingWorker{r: r})
	river.AddWorker(workers, &metricsWorker{r: r})
	river.AddWorker(workers, &validateSubmissionWorker{r: r})
	river.AddWorker(workers, &ingestSubmissionWorker{r: r})
	river.AddWorker(workers, &expireUploadsWorker{r: r})
	river.AddWorker(workers, &studyJudgeWorker{r: r})
	river.AddWorker(workers, &hiddenTestsWorker{r: r})
	opts := cfg.Options
	opts.Logger = cfg.Logger
	q, err := NewQueue(cfg.DB, workers, opts)
	if err != nil {
		return nil, err
	}
	q.judgeReady = func() error {
		_, err := r.judgesFor(models.JudgeSettings{})
		return err
	}
	r.queue, r.opts = q, q.opts
	return r, nil
}

// Hub holds the mailboxes of the connecting episodes this process runs.
func (r *Runner) Hub() *connect.Hub { return r.hub }

// Start starts the workers of this process.
func (r *Runner) Start(ctx context.Context) error { return r.queue.Start(ctx) }

// Stop stops the workers (in-flight episodes see their contexts cancelled),
// then closes the browser.
func (r *Runner) Stop(ctx context.Context) error {
	err := r.queue.Stop(ctx)
	r.browserMu.Lock()
	defer r.browserMu.Unlock()
	if r.browser != nil {
		err = errors.Join(err, r.browser.Close())
		r.browser = nil
	}
	if r.proxy != nil {
		err = errors.Join(err, r.proxy.Close())
		r.proxy = nil
	}
	return err
}

// Jobs is the queue's job inserter that the run service enqueues through.
func (r *Runner) Jobs() *Queue {
	return r.queue
}

// JudgeStudy queues an agreement study's judge configurations (see
// Queue.JudgeStudy).
func (r *Runner) JudgeStudy(ctx context.Context, studyID int64, judges []string) error {
	return r.queue.JudgeStudy(ctx, studyID, judges)
}

// JudgeAvailable is nil when an LLM judge can be used (see
// Queue.JudgeAvailable).
func (r *Runner) JudgeAvailable() error { return r.queue.JudgeAvailable() }

// sharedBrowser launches this process's Chromium on first use.
func (r *Runner) sharedBrowser() (*episode.Browser, error) {
	r.browserMu.Lock()
	defer r.browserMu.Unlock()
	if r.browser != nil {
		return r.browser, nil
	}
	if r.proxy == nil && r.guard != nil {
		p, err := r.guard.NewProxy(r.log)
		if err != nil {
			return nil, fmt.Errorf("start the browser's proxy: %w", err)
		}
		r.proxy = p
	}
	b, err := episode.LaunchBrowser(r.browserOp)
	if err != nil {
		return nil, fmt.Errorf("launch browser: %w", err)
	}
	r.browser = b
	return b, nil
}

// browserProxy is the proxy the browser's contexts connect through (nil
// without a guard); it is started with the browser.
func (r *Runner) browserProxy() *netguard.Proxy {
	r.browserMu.Lock()
	defer r.browserMu.Unlock()
	return r.proxy
}
