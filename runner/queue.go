package runner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"proctor/bundle"
	"proctor/models"
)

// Options configure the queue in this process.
type Options struct {
	// Episodes is how many episodes this process runs at once (one browser, one
	// context each); 0 makes the process insert jobs only (no worker).
	Episodes int
	// DailyRunQuota caps the runs a team may queue in 24 hours; 0 = unlimited.
	DailyRunQuota int
	// RescueAfter is how long a job may run before River rescues it as stuck
	// (the bound for a worker that hangs while its process lives; a killed
	// process's jobs are taken over once its lease lapses).
	RescueAfter time.Duration
	// LeaseTTL is how long this process's lease lasts unrenewed before the
	// other processes take its episodes and jobs over (default 45 s). A
	// restarted process takes over its dead predecessor's at once.
	LeaseTTL time.Duration
	// EnvironmentRetries is how often an attempt whose sites failed is retried
	// before the failure counts (never against the agent).
	EnvironmentRetries int
	// CancelPoll is how often running episodes check whether their run was canceled.
	CancelPoll time.Duration
	// CandidateAnswerLimit is how long the hidden-tests job waits for a
	// candidate website's first answer before it runs no test (default 30s):
	// a candidate that is down or never answers does not hold a worker for
	// its suite's whole time budget.
	CandidateAnswerLimit time.Duration
	// TeamEpisodes and TeamHiddenJobs are each team's fair share: how many
	// episodes and hidden-test jobs one team runs at once while another
	// team's wait (0: half of the live workers' slots, at least 1).
	TeamEpisodes, TeamHiddenJobs int
	// Submissions configure the submission portal's uploads and jobs.
	Submissions SubmissionOptions
	Logger      *slog.Logger
}

// SubmissionOptions configure the submission portal.
type SubmissionOptions struct {
	// DailyQuota caps the submissions a team may start in 24 hours; 0 = unlimited.
	DailyQuota int
	// PartBytes is the size of every part of an upload but the last
	// (default 16 MiB; S3 takes no part under 5 MiB but the last).
	PartBytes int64
	// Limits cap what a bundle may hold; MaxBundleBytes is also the largest
	// upload accepted. Zero fields take bundle.DefaultLimits().
	Limits bundle.Limits
	// TempDir is where a bundle is spooled when the artifact store cannot
	// read it at an offset; "" is the system's temporary folder.
	TempDir string
	// AbandonAfter is how long an upload may wait for its next part before
	// it is discarded with its parts (default a week).
	AbandonAfter time.Duration
}

// withDefaults fills the unset options.
func (o SubmissionOptions) withDefaults() SubmissionOptions {
	if o.PartBytes <= 0 {
		o.PartBytes = 16 << 20
	}
	if o.AbandonAfter <= 0 {
		o.AbandonAfter = 7 * 24 * time.Hour
	}
	def := bundle.DefaultLimits()
	lim := &o.Limits
	if lim.MaxBundleBytes <= 0 {
		lim.MaxBundleBytes = def.MaxBundleBytes
	}
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = def.MaxFiles
	}
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = def.MaxFileBytes
	}
	if lim.MaxTotalBytes <= 0 {
		lim.MaxTotalBytes = def.MaxTotalBytes
	}
	if lim.MaxRatio <= 0 {
		lim.MaxRatio = def.MaxRatio
	}
	if lim.MaxJSONBytes <= 0 {
		lim.MaxJSONBytes = def.MaxJSONBytes
	}
	if lim.MaxHARBytes <= 0 {
		lim.MaxHARBytes = def.MaxHARBytes
	}
	if lim.MaxImagePixels <= 0 {
		lim.MaxImagePixels = def.MaxImagePixels
	}
	return o
}

// hiddenTestSlots is how many hidden-tests jobs a worker runs at once: each
// runs a task's tests in parallel itself (within its suite's cap), so few.
const hiddenTestSlots = 2

// workClient is the part of a River client that runs jobs.
type workClient interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Queue is Proctor's job queue: River on the app's own database.
type Queue struct {
	db       Store
	opts     Options
	inserter *river.Client[*sql.Tx] // inserts jobs inside GORM's transactions
	worker   workClient             // nil in insert-only processes
	log      *slog.Logger
	// lease is this process's worker lease (workers only); its ID is the
	// River client's, so running jobs name the process that runs them.
	lease     models.WorkerLease
	inflight  *inFlight
	stopLease context.CancelFunc
	leaseDone chan struct{}
	// judgeReady says why no LLM judge can be used (nil when one can); the
	// Runner sets it from its judge factory.
	judgeReady func() error
}

// NewQueue builds the River clients for the database's dialect: the SQLite
// driver in the embedded default, pgx on PostgreSQL (with a database/sql client
// for transactional inserts through GORM's connection).
func NewQueue(db Store, workers *river.Workers, opts Options) (*Queue, error) {
	if opts.RescueAfter == 0 {
		opts.RescueAfter = 20 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.CancelPoll == 0 {
		opts.CancelPoll = 2 * time.Second
	}
	if opts.CandidateAnswerLimit <= 0 {
		opts.CandidateAnswerLimit = 30 * time.Second
	}
	opts.Submissions = opts.Submissions.withDefaults()
	q := &Queue{db: db, opts: opts, log: opts.Logger}
	cfg := &river.Config{
		Logger:               opts.Logger.With("component", "river"),
		RescueStuckJobsAfter: opts.RescueAfter,
		// Jobs without a timeout are never rescued, so every job has one; the
		// episode worker derives its own from the run's budget.
		JobTimeout:  min(5*time.Minute, opts.RescueAfter),
		MaxAttempts: 10,
	}
	if opts.Episodes > 0 {
		lease, err := newLease()
		if err != nil {
			return nil, err
		}
		lease.EpisodeSlots, lease.HiddenSlots = opts.Episodes, hiddenTestSlots
		q.lease, cfg.ID, q.inflight = lease, lease.ID, newInFlight()
		cfg.Middleware = []rivertype.Middleware{river.WorkerMiddlewareFunc(q.trackJob)}
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{
			QueueDispatch:     {MaxWorkers: 2},
			QueueEpisode:      {MaxWorkers: opts.Episodes},
			QueueEvaluate:     {MaxWorkers: 4},
			QueueMetrics:      {MaxWorkers: 1},
			QueueHousekeeping: {MaxWorkers: 1},
			// Validations and ingests stream whole bundles: two at a time
			// keep the disk, network and memory of a worker bounded.
			QueueSubmissions: {MaxWorkers: 2},
			// Each study judge job judges a few items at once; the judge
			// client's concurrency cap bounds the requests of them all.
			QueueStudies:     {MaxWorkers: 2},
			QueueHiddenTests: {MaxWorkers: hiddenTestSlots},
		}
		cfg.PeriodicJobs = []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
			func() (river.JobArgs, *river.InsertOpts) {
				return HousekeepingArgs{}, &river.InsertOpts{Queue: QueueHousekeeping}
			}, &river.PeriodicJobOpts{RunOnStart: true}),
			river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
				func() (river.JobArgs, *river.InsertOpts) {
					return ExpireUploadsArgs{}, &river.InsertOpts{Queue: QueueSubmissions}
				}, &river.PeriodicJobOpts{RunOnStart: true})}
		if db.PgxPool() == nil { // SQLite
			cfg.FetchPollInterval = 200 * time.Millisecond
		}
	}
	var err error
	if pool := db.PgxPool(); pool == nil { // SQLite: River shares the one writer connection
		q.inserter, err = river.NewClient(riversqlite.New(db.SQL()), cfg)
		if err == nil && opts.Episodes > 0 {
			q.worker = q.inserter
		}
	} else {
		q.inserter, err = river.NewClient(riverdatabasesql.New(db.SQL()), &river.Config{Logger: cfg.Logger})
		if err == nil && opts.Episodes > 0 {
			q.worker, err = river.NewClient(riverpgxv5.New(pool), cfg)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return q, nil
}

// Start registers this process's lease, releases at once the claims of
// its dead predecessors on this host, and starts working jobs (a no-op for
// insert-only processes).
func (q *Queue) Start(ctx context.Context) error {
	if q.worker == nil {
		return nil
	}
	if err := q.db.RegisterLease(ctx, q.lease); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	if err := q.releaseDead(ctx, false); err != nil {
		q.log.Warn("releasing the work of dead workers failed", "error", err.Error())
	}
	if err := q.worker.Start(ctx); err != nil {
		return err
	}
	leaseCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	q.stopLease, q.leaseDone = stop, make(chan struct{})
	go func() {
		defer close(q.leaseDone)
		q.keepLease(leaseCtx)
	}()
	return nil
}

// Stop stops fetching jobs and waits for the running ones to finish or to
// notice their cancelled contexts (handing their attempts back), then drops
// this process's lease.
func (q *Queue) Stop(ctx context.Context) error {
	if q.worker == nil {
		return nil
	}
	err := q.worker.Stop(ctx)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if q.stopLease != nil {
		q.stopLease()
		<-q.leaseDone
	}
	if err == nil {
		// Jobs still running keep the lease, so that they are taken over.
		err = q.db.DropLease(context.WithoutCancel(ctx), q.lease.ID)
	}
	return err
}

// DispatchRun enqueues inside tx the job that creates a new run's attempts
// (service.RunJobs).
func (q *Queue) DispatchRun(ctx context.Context, tx *sql.Tx, runID int64) error {
	_, err := q.inserter.InsertTx(ctx, tx, DispatchArgs{RunID: runID}, &river.InsertOpts{Queue: QueueDispatch})
	return err
}

// RunEpisodes enqueues one episode job per attempt inside tx; storage
// decides which attempts, as room frees (storage.OfferFunc).
func (q *Queue) RunEpisodes(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error {
	if len(attemptIDs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(attemptIDs))
	for i, id := range attemptIDs {
		args := EpisodeArgs{AttemptID: id, RunID: run.ID, MaxSeconds: run.MaxEpisodeSeconds}
		params[i] = river.InsertManyParams{Args: args, InsertOpts: &river.InsertOpts{Queue: QueueEpisode}}
	}
	_, err := q.inserter.InsertManyTx(ctx, tx, params)
	return err
}

// insertEvaluation enqueues an attempt's evaluation inside tx.
func (q *Queue) insertEvaluation(ctx context.Context, tx *sql.Tx, attemptID int64) error {
	_, err := q.inserter.InsertTx(ctx, tx, EvaluateArgs{AttemptID: attemptID}, &river.InsertOpts{Queue: QueueEvaluate})
	return err
}

// rescorePriority is River's lowest priority (1 is the highest).
const rescorePriority = 4

// insertMetricsRefresh enqueues the recomputation of a run's metrics inside
// tx. Every evaluation enqueues one; the first to run after a burst computes,
// and the rest find the metrics current (the run's evaluation count matches)
// and do nothing, so no evaluation is ever missed.
func (q *Queue) insertMetricsRefresh(ctx context.Context, tx *sql.Tx, runID int64) error {
	_, err := q.inserter.InsertTx(ctx, tx, MetricsArgs{RunID: runID}, &river.InsertOpts{
		Queue: QueueMetrics,
		// A short delay gathers the evaluations finishing together.
		ScheduledAt: time.Now().Add(time.Second),
	})
	return err
}

// Rescore enqueues inside tx a re-evaluation of each attempt, below live work.
func (q *Queue) Rescore(ctx context.Context, tx *sql.Tx, attemptIDs []int64, rescoreID string) error {
	params := make([]river.InsertManyParams, len(attemptIDs))
	for i, id := range attemptIDs {
		// Below live evaluations, so that re-scoring everything does not
		// hold up the runs in progress.
		params[i] = river.InsertManyParams{Args: EvaluateArgs{AttemptID: id, RescoreID: rescoreID},
			InsertOpts: &river.InsertOpts{Queue: QueueEvaluate, Priority: rescorePriority}}
	}
	_, err := q.inserter.InsertManyTx(ctx, tx, params)
	return err
}

// submissionJobAttempts is how often a submission job is tried: a bundle's
// problems are final at once, so only failures of the platform are retried.
const submissionJobAttempts = 3

// ValidateSubmission enqueues a submission's validation inside tx.
func (q *Queue) ValidateSubmission(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := q.inserter.InsertTx(ctx, tx, ValidateSubmissionArgs{SubmissionID: id},
		&river.InsertOpts{Queue: QueueSubmissions, MaxAttempts: submissionJobAttempts})
	return err
}

// IngestSubmission enqueues a submission's ingest inside tx.
func (q *Queue) IngestSubmission(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := q.inserter.InsertTx(ctx, tx, IngestSubmissionArgs{SubmissionID: id},
		&river.InsertOpts{Queue: QueueSubmissions, MaxAttempts: submissionJobAttempts})
	return err
}

// insertUploadedEvaluations enqueues, inside the transaction that creates an
// uploaded run, the evaluation of each of its attempts waiting for one, or the
// run's metrics when none waits (every task was missing: the run is complete).
func (q *Queue) insertUploadedEvaluations(ctx context.Context, tx *sql.Tx, runID int64, attemptIDs []int64) error {
	if len(attemptIDs) == 0 {
		return q.insertMetricsRefresh(ctx, tx, runID)
	}
	params := make([]river.InsertManyParams, len(attemptIDs))
	for i, id := range attemptIDs {
		params[i] = river.InsertManyParams{Args: EvaluateArgs{AttemptID: id}, InsertOpts: &river.InsertOpts{Queue: QueueEvaluate}}
	}
	_, err := q.inserter.InsertManyTx(ctx, tx, params)
	return err
}

// studyJudgeUnique keeps one job per study and configuration waiting or
// running: a second click queues nothing more, while a configuration whose
// job has finished may be queued again (for items added or errors to redo).
func studyJudgeUnique() river.UniqueOpts {
	return river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}
}

// JudgeStudy queues the named judge configurations of a study, one job each
// over the items it has not judged yet; a configuration already waiting or
// running is not queued twice. The study service decides who may and which
// names; EUNAVAILABLE (logged when the judge is configured but broken) when
// no LLM judge can be used.
func (q *Queue) JudgeStudy(ctx context.Context, studyID int64, judges []string) error {
	if err := q.judgeAvailable(); err != nil {
		return err
	}
	params := make([]river.InsertManyParams, len(judges))
	for i, name := range judges {
		params[i] = river.InsertManyParams{Args: StudyJudgeArgs{StudyID: studyID, Judge: name}, InsertOpts: &river.InsertOpts{
			Queue: QueueStudies, MaxAttempts: studyJudgeAttempts, UniqueOpts: studyJudgeUnique(),
		}}
	}
	if _, err := q.inserter.InsertMany(ctx, params); err != nil {
		return fmt.Errorf("queue judges of study %d: %w", studyID, err)
	}
	return nil
}

// NoJudgeConfigured is why judges cannot run on a server without an LLM
// judge, and how to configure one.
const NoJudgeConfigured = "No LLM judge is configured on this server: an administrator sets PROCTOR_JUDGE_BASE_URL, PROCTOR_JUDGE_MODEL and PROCTOR_JUDGE_API_KEY and restarts it (/docs/judge.md)."

// judgeAvailable is EUNAVAILABLE when no LLM judge can be used, logging
// why when the judge is configured but broken.
func (q *Queue) judgeAvailable() error {
	err := q.JudgeAvailable()
	if err != nil && !errors.Is(err, errNoJudge) {
		q.log.Error("the LLM judge cannot be used", "error", err.Error())
	}
	return err
}

// JudgeAvailable is nil when an LLM judge can be used, else EUNAVAILABLE
// saying what to do: configure one, or read the server's log.
func (q *Queue) JudgeAvailable() error {
	var err error = errNoJudge
	if q.judgeReady != nil {
		err = q.judgeReady()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNoJudge):
		return &models.Error{Code: models.EUNAVAILABLE, Message: NoJudgeConfigured, Err: errNoJudge}
	}
	return &models.Error{Code: models.EUNAVAILABLE, Message: "The LLM judge cannot be used right now; an administrator can see why in the server's log.", Err: err}
}
