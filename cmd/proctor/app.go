package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"proctor/config"
	"proctor/eval"
	"proctor/eval/judge"
	"proctor/models"
	"proctor/netguard"
	"proctor/runner"
	"proctor/runner/connect"
	"proctor/runner/episode"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/artifact"
	"proctor/vault"
)

// App is the wired set of services a command uses.
type App struct {
	Config    *config.Config
	Log       *slog.Logger
	DB        *storage.DB
	Artifacts artifact.Store
	Vault     *vault.Vault
	// ArtifactHandler serves signed URLs of the local store; nil on S3.
	ArtifactHandler http.Handler
	// Evaluators is the evaluator registry (evaluators.go).
	Evaluators *eval.Registry
}

// commonFlags are the settings every verb accepts as flags over the
// environment (config.Flags), keyed by the variable each overrides.
type commonFlags struct {
	values map[string]*string
}

func (f *commonFlags) register(fs *flag.FlagSet) {
	f.values = make(map[string]*string)
	for _, fl := range config.Flags() {
		f.values[fl.Env] = fs.String(fl.Name, "", fl.Usage)
	}
}

func (f *commonFlags) overrides() map[string]string {
	o := make(map[string]string, len(f.values))
	for env, v := range f.values {
		o[env] = *v
	}
	return o
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func (p *Program) newFlagSet(name string) (*flag.FlagSet, *commonFlags) {
	fs := flag.NewFlagSet("proctor "+name, flag.ContinueOnError)
	fs.SetOutput(p.Stderr)
	cf := &commonFlags{}
	cf.register(fs)
	return fs, cf
}

// parseFlags parses args, turning flag mistakes into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	return nil
}

// openApp loads the configuration and opens the database (migrating it when
// migrate is set), the artifact store and the vault.
func (p *Program) openApp(ctx context.Context, cf *commonFlags, migrate bool) (*App, error) {
	cfg, err := config.Load(p.Getenv, cf.overrides())
	if err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	if err := cfg.EnsureSecretKey(); err != nil {
		return nil, err
	}
	log := newLogger(p.Stderr, cfg)
	v, err := vault.New(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	kinds, err := evaluators()
	if err != nil {
		return nil, err
	}
	app := &App{Config: cfg, Log: log, Vault: v, Evaluators: kinds}
	// config parses the database URL; storage takes the same fields.
	if app.DB, err = storage.Open(ctx, storage.DatabaseLocation(cfg.Database)); err != nil {
		return nil, err
	}
	app.DB.UseAgentSecrets(v)
	if migrate {
		if _, err := app.DB.Migrate(ctx, log); err != nil {
			app.Close()
			return nil, err
		}
	}
	if err := app.openArtifacts(ctx, migrate); err != nil {
		app.Close()
		return nil, err
	}
	return app, nil
}

func (app *App) openArtifacts(ctx context.Context, create bool) error {
	cfg := app.Config
	switch cfg.Artifacts.Kind {
	case config.ArtifactsS3:
		s3, err := artifact.NewS3(ctx, artifact.S3Config{
			Endpoint: cfg.S3.Endpoint, AccessKey: cfg.S3.AccessKey, SecretKey: cfg.S3.SecretKey,
			Region: cfg.S3.Region, UseSSL: cfg.S3.UseSSL, Bucket: cfg.Artifacts.Bucket, Prefix: cfg.Artifacts.Prefix,
		})
		if err != nil {
			return fmt.Errorf("open artifact store: %w", err)
		}
		if create {
			if err := s3.EnsureBucket(ctx); err != nil {
				return fmt.Errorf("open artifact store: %w", err)
			}
		}
		app.Artifacts = s3
	default:
		signer := artifact.NewURLSigner(app.Vault.SigningKey())
		// Relative URLs: pages are served from the same origin, whatever address
		// the server ends up listening on.
		local, err := artifact.NewLocal(cfg.Artifacts.Dir, signer, "")
		if err != nil {
			return fmt.Errorf("open artifact store: %w", err)
		}
		local.SetMinFreeBytes(cfg.Artifacts.MinFreeBytes)
		app.Artifacts = local
		app.ArtifactHandler = artifact.NewLocalHandler(local, signer)
	}
	return nil
}

// Close releases the services in reverse order of opening.
func (app *App) Close() {
	if c, ok := app.Artifacts.(io.Closer); ok {
		c.Close()
	}
	if app.DB != nil {
		app.DB.Close()
	}
}

func newLogger(w io.Writer, cfg *config.Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// newRunner builds the queue and workers of this process; episodes 0 makes it
// insert jobs only. episodeURL is where it serves its connecting episodes to
// serve processes ("": it is the serve process).
func (p *Program) newRunner(app *App, episodes int, episodeURL string) (*runner.Runner, error) {
	guard := netguard.New(app.Config.AgentAllowHosts, nil)
	return runner.New(runner.Config{
		DB: app.DB, Artifacts: app.Artifacts, Logger: app.Log, EpisodeURL: episodeURL,
		Browser:     episode.BrowserOptionsFromEnv(p.Getenv),
		AgentClient: guard.Client,
		Guard:       guard,
		Judges:      judgeFactory(app.Config.Judge),
		Evaluators:  app.Evaluators,
		Options: runner.Options{
			Episodes: episodes, DailyRunQuota: app.Config.RunQuota,
			RescueAfter: app.Config.RescueAfter, LeaseTTL: app.Config.WorkerLease,
			TeamEpisodes: app.Config.TeamEpisodes, TeamHiddenJobs: app.Config.TeamHiddenJobs, EnvironmentRetries: app.Config.EnvironmentRetries,
			Submissions: runner.SubmissionOptions{
				DailyQuota: app.Config.Submission.Quota, PartBytes: app.Config.Submission.PartBytes,
				Limits: app.Config.Submission.Limits,
			},
		},
	})
}

// judgeFactory builds LLM judges: a benchmark's own endpoint when it names
// one (with the server's timeouts, concurrency and prices), else the server's
// judge, with another model when the settings name one (a study's judge
// configuration). Without either it returns nil judges, and attempts stay
// "not judged".
func judgeFactory(server config.Judge) runner.JudgeFactory {
	return func(s models.JudgeSettings) (runner.Judges, error) {
		cfg := judge.Config{BaseURL: server.BaseURL, Model: server.Model, APIKey: server.APIKey,
			Timeout: server.Timeout, Concurrency: server.Concurrency,
			PriceInputPerMTok: server.InputPrice, PriceOutputPerMTok: server.OutputPrice}
		switch {
		case s.BaseURL != "":
			cfg.BaseURL, cfg.Model, cfg.APIKey = s.BaseURL, s.Model, s.APIKey
		case s.Model != "":
			cfg.Model = s.Model
		}
		c, err := judge.New(cfg)
		if errors.Is(err, judge.ErrNotConfigured) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// teamService is the team service over this process's database, with the
// SSRF guard of agent endpoints.
func (app *App) teamService() *service.Teams {
	return service.NewTeams(app.DB, netguard.New(app.Config.AgentAllowHosts, nil))
}

// accountService is the account service over this process's database.
func (app *App) accountService() *service.Accounts {
	return service.NewAccounts(app.DB)
}

// candidateService is the candidate service over this process's database,
// enqueuing the hidden tests through run's queue under the daily run quota.
func (app *App) candidateService(run *runner.Runner) *service.Candidates {
	return service.NewCandidates(app.DB, run.Jobs(), netguard.New(app.Config.AgentAllowHosts, nil),
		service.CandidateOptions{DailyRunQuota: app.Config.RunQuota})
}

// runService is the run service over this process's database, enqueuing
// through run's queue.
func (app *App) runService(run *runner.Runner) *service.Runs {
	return service.NewRuns(app.DB, run.Jobs(), service.RunOptions{DailyRunQuota: app.Config.RunQuota})
}

// episodeService hands out and opens the episodes of connecting agents,
// queuing them through run's queue.
func (app *App) episodeService(run *runner.Runner) *service.Episodes {
	return service.NewEpisodes(app.DB, run.Jobs(), service.EpisodeOptions{LeaseTTL: app.Config.EpisodeLease,
		Share: models.Claimant{TTL: app.Config.WorkerLease, TeamEpisodes: app.Config.TeamEpisodes}})
}

// episodeGateway serves the calls on connecting episodes: from run's hub,
// or forwarded to the worker running the episode.
func (app *App) episodeGateway(run *runner.Runner) *connect.Gateway {
	return connect.NewGateway(run.Hub(), app.DB, app.Config.EpisodeLease, app.Log)
}

// benchmarkService is the benchmark service over this process's database.
func (app *App) benchmarkService() *service.Benchmarks {
	return service.NewBenchmarks(app.DB, app.Evaluators)
}

// moderationService is the publication and moderation service over this
// process's database.
func (app *App) moderationService() *service.Moderation {
	return service.NewModeration(app.DB)
}

// submissionService is the submission portal's service over this process's
// database and artifact store, enqueuing through run's queue.
func (app *App) submissionService(run *runner.Runner) *service.Submissions {
	return service.NewSubmissions(app.DB, app.Artifacts, run.Jobs(), service.SubmissionOptions{
		DailyQuota: app.Config.Submission.Quota, PartBytes: app.Config.Submission.PartBytes,
		Limits: run.SubmissionLimits(), Logger: app.Log,
	})
}

// studyService is the study service over this process's database, judging
// through run's queue.
func (app *App) studyService(run *runner.Runner) *service.Studies {
	return service.NewStudies(app.DB, run)
}
