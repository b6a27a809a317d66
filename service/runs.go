// Package service is Proctor's application layer. Each service owns one
// aggregate's rules: who may do what, what a caller is shown, and which jobs
// follow a change. Handlers, the JSON API, the CLI and the runner call the
// services; the services call storage, which holds queries and transactions
// only. The caller is the actor in the context (models.ActorFrom).
package service

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"proctor/models"
)

// RunStore is what the run service needs from storage.
type RunStore interface {
	AccessStore
	RunReadStore
	TeamBySlug(ctx context.Context, slug string) (*models.Team, error)
	TeamByID(ctx context.Context, id int64) (*models.Team, error)
	Membership(ctx context.Context, teamID, userID int64) (*models.Membership, error)
	TeamAgent(ctx context.Context, teamID int64, slug string) (*models.Agent, error)
	Benchmark(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.Benchmark, error)
	VersionBenchmark(ctx context.Context, versionID int64) (*models.Benchmark, error)
	VisibleRun(ctx context.Context, scope models.RunScope, runID int64) (*models.Run, error)
	SubsetTaskIDs(ctx context.Context, versionID int64, subset string) ([]int64, error)
	InsertRun(ctx context.Context, run *models.Run, withinQuota func(recent int64) error,
		enqueue func(ctx context.Context, tx *sql.Tx, runID int64) error) error
	ResetErroredAttempts(ctx context.Context, scope models.RunScope, runID int64, mayManage func(manage bool) error,
		enqueue func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) (int, error)
	RescoreAttempts(ctx context.Context, scope models.RescoreScope,
		enqueue func(ctx context.Context, tx *sql.Tx, attemptIDs []int64, rescoreID string) error) (int, error)
}

// RunJobs enqueues the jobs that follow a run's changes, inside the
// transaction that writes them (the runner's queue).
type RunJobs interface {
	// DispatchRun enqueues the job that creates a new run's attempts.
	DispatchRun(ctx context.Context, tx *sql.Tx, runID int64) error
	// RunEpisodes enqueues one episode job per attempt.
	RunEpisodes(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error
	// Rescore enqueues a re-evaluation of each attempt, below live work.
	Rescore(ctx context.Context, tx *sql.Tx, attemptIDs []int64, rescoreID string) error
}

// RunOptions are the run service's settings.
type RunOptions struct {
	// DailyRunQuota is how many runs a team may queue in 24 hours (0 =
	// unlimited; administrators are exempt).
	DailyRunQuota int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Runs is the run service: queuing runs (afresh or as a re-run), retrying
// and re-scoring their attempts, and every read of a run, its attempts and
// their steps, redacted for the caller (Access).
type Runs struct {
	store  RunStore
	jobs   RunJobs
	access Access
	opts   RunOptions
}

// NewRuns returns the run service over store, enqueuing through jobs; nil
// jobs (a process without a queue) reads runs but answers EUNAVAILABLE to
// anything that would enqueue.
func NewRuns(store RunStore, jobs RunJobs, opts RunOptions) *Runs {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Runs{store: store, jobs: jobs, access: NewAccess(store), opts: opts}
}

// runPlan is everything a new run is made of, whether it was asked for
// afresh or copies an earlier run.
type runPlan struct {
	actor     models.Actor
	team      *models.Team
	agentID   int64
	agent     models.AgentSnapshot
	snapshot  string // agent as JSON, as stored on the run
	bench     *models.Benchmark
	versionID int64
	subset    string
	// emptySubset describes the subset in the refusal when it holds no tasks.
	emptySubset string
	budgets     models.Run // only the budgets, parallelism and notes are read
}

// QueueRun queues a run: the caller must be a member of the agent's team (or
// an admin), the agent executable, the subset non-empty and the team under
// its daily quota. The run and its dispatch job are written in one
// transaction. EINVALID (with the field), ENOTFOUND, EUNAUTHORIZED,
// EFORBIDDEN or ERATELIMIT otherwise.
func (s *Runs) QueueRun(ctx context.Context, req models.RunRequest) (*models.Run, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	team, err := s.store.TeamBySlug(ctx, req.TeamSlug)
	if err != nil {
		return nil, err
	}
	actor, err := requireRole(ctx, s.store, team.ID, false)
	if err != nil {
		return nil, err
	}
	agent, err := s.store.TeamAgent(ctx, team.ID, req.AgentSlug)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, models.FieldError("agent", "team %s has no agent %q", team.Slug, req.AgentSlug)
	} else if err != nil {
		return nil, err
	}
	if agent.Kind == models.AgentUpload {
		return nil, models.FieldError("agent", "%s is an upload-only agent: submit its results through the submission portal instead", agent.Name)
	}
	bench, err := s.store.Benchmark(ctx, req.BenchmarkSlug, scopeOf(ctx))
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, models.FieldError("benchmark", "there is no benchmark %q", req.BenchmarkSlug)
	} else if err != nil {
		return nil, err
	}
	if bench.CurrentVersionID == nil {
		return nil, models.FieldError("benchmark", "benchmark %s has no imported tasks", bench.Slug)
	}
	if bench.GradesCandidates() {
		return nil, models.FieldError("benchmark", "%s is a hidden-tests benchmark: its tasks are graded by testing the websites a team submits (/benchmarks/%s/candidates/new), not by running an agent here", bench.Slug, bench.Slug)
	}
	snap := models.SnapshotOf(agent)
	snapshot, err := json.Marshal(snap)
	if err != nil {
		return nil, fmt.Errorf("snapshot agent: %w", err)
	}
	return s.create(ctx, runPlan{
		actor: actor, team: team, agentID: agent.ID, agent: snap, snapshot: string(snapshot),
		bench: bench, versionID: *bench.CurrentVersionID, subset: req.Subset,
		emptySubset: fmt.Sprintf("subset %q of %s", req.Subset, bench.Slug),
		budgets: models.Run{MaxSteps: req.MaxSteps, MaxEpisodeSeconds: req.MaxEpisodeSeconds,
			MaxAgentCallSeconds: req.MaxAgentCallSeconds, MaxCost: req.MaxCost, Parallelism: req.Parallelism,
			Notes: strings.TrimSpace(req.Notes)},
	})
}

// rerunNotesLimit caps a re-run's notes, which quote the earlier run's.
const rerunNotesLimit = 2000

// RerunRun queues a new run with the configuration of run runID: the same
// team, agent snapshot, benchmark version, subset, budgets, parallelism and
// notes, under the same rules as QueueRun. Team members and admins only
// (ENOTFOUND for a run the caller may not see, EUNAUTHORIZED or EFORBIDDEN
// otherwise); EINVALID for an uploaded run, which was never executed here.
func (s *Runs) RerunRun(ctx context.Context, runID int64) (*models.Run, error) {
	src, err := s.store.VisibleRun(ctx, runScope(ctx), runID)
	if err != nil {
		return nil, err
	}
	actor, err := requireRole(ctx, s.store, src.TeamID, false)
	if err != nil {
		return nil, err
	}
	snap := models.RunAgentSnapshot(src)
	if src.Origin == models.OriginUploaded || snap.Kind == models.AgentUpload {
		return nil, models.Errorf(models.EINVALID, "Run %d was uploaded, not executed by Proctor: there is nothing to re-run.", src.ID)
	}
	team, err := s.store.TeamByID(ctx, src.TeamID)
	if err != nil {
		return nil, err
	}
	bench, err := s.store.VersionBenchmark(ctx, src.VersionID)
	if err != nil {
		return nil, err
	}
	notes := fmt.Sprintf("Re-run of run %d.", src.ID)
	if src.Notes != "" {
		notes += " " + src.Notes
	}
	if len(notes) > rerunNotesLimit {
		notes = notes[:rerunNotesLimit]
	}
	return s.create(ctx, runPlan{
		actor: actor, team: team, agentID: src.AgentID, agent: snap, snapshot: src.AgentSnapshot,
		bench: bench, versionID: src.VersionID, subset: src.SubsetName,
		emptySubset: fmt.Sprintf("subset %q of run %d", src.SubsetName, src.ID),
		budgets: models.Run{MaxSteps: src.MaxSteps, MaxEpisodeSeconds: src.MaxEpisodeSeconds,
			MaxAgentCallSeconds: src.MaxAgentCallSeconds, MaxCost: src.MaxCost, Parallelism: src.Parallelism, Notes: notes},
	})
}

// create is the one way a run is created for execution: the rules every run
// obeys, then the run and its dispatch job in one transaction.
func (s *Runs) create(ctx context.Context, p runPlan) (*models.Run, error) {
	if err := models.CheckReferenceReplay(p.actor, p.agent, p.bench); err != nil {
		return nil, err
	}
	taskIDs, err := s.store.SubsetTaskIDs(ctx, p.versionID, p.subset)
	if err != nil {
		return nil, err
	}
	if len(taskIDs) == 0 {
		return nil, models.FieldError("subset", "%s holds no tasks", p.emptySubset)
	}
	if s.jobs == nil {
		return nil, noQueue()
	}
	b := p.budgets
	run := &models.Run{
		TeamID: p.team.ID, AgentID: p.agentID, VersionID: p.versionID, SubsetName: p.subset,
		Status: models.RunQueued, Origin: models.OriginExecuted, AgentSnapshot: p.snapshot,
		MaxSteps: b.MaxSteps, MaxEpisodeSeconds: b.MaxEpisodeSeconds, MaxAgentCallSeconds: b.MaxAgentCallSeconds,
		MaxCost: b.MaxCost, Parallelism: b.Parallelism, Notes: b.Notes, AgentConnects: p.agent.Connects(),
		CreatedAt: s.opts.Now().UTC(), TasksTotal: len(taskIDs),
	}
	if p.actor.UserID != 0 {
		run.CreatedBy = &p.actor.UserID
	}
	withinQuota := func(recent int64) error {
		return models.CheckDailyQuota(p.actor, p.team, recent, s.opts.DailyRunQuota)
	}
	if err := s.store.InsertRun(ctx, run, withinQuota, s.jobs.DispatchRun); err != nil {
		return nil, err
	}
	return run, nil
}

// RetryAttempts re-enqueues a run's attempts that ended in error and returns
// how many (0 when none had failed). Team members and admins only: ENOTFOUND
// when the caller may not see the run, EUNAUTHORIZED or EFORBIDDEN when they
// may not act for its team.
func (s *Runs) RetryAttempts(ctx context.Context, runID int64) (int, error) {
	if s.jobs == nil {
		return 0, noQueue()
	}
	return s.store.ResetErroredAttempts(ctx, runScope(ctx), runID, teamManager(ctx), s.jobs.RunEpisodes)
}

// Rescore queues a new evaluation of the finished attempts in scope and
// returns how many (administrators only).
func (s *Runs) Rescore(ctx context.Context, scope models.RescoreScope) (int, error) {
	if s.jobs == nil {
		return 0, noQueue()
	}
	if _, err := models.RequireAdmin(ctx); err != nil {
		return 0, err
	}
	return s.store.RescoreAttempts(ctx, scope, s.jobs.Rescore)
}

// noQueue answers a request for work in a process that has no job queue.
func noQueue() error {
	return models.Errorf(models.EUNAVAILABLE, "Runs cannot be queued on this server right now: it has no run queue. Try again later or ask an administrator.")
}

// QueueAvailable reports whether this process can queue runs (it has a job
// queue); forms offer queuing only then.
func (s *Runs) QueueAvailable() bool {
	return s.jobs != nil
}

// RequireQueue is EUNAVAILABLE in a process that cannot queue runs, so that
// a request is refused before its input is read.
func (s *Runs) RequireQueue() error {
	if s.jobs == nil {
		return noQueue()
	}
	return nil
}
