package service

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"proctor/models"
)

// Limits of a candidate submission.
const (
	// maxCandidateURL is the longest base, restart or health URL accepted.
	maxCandidateURL = 2000
	// maxCandidateErrors bounds the problems one refusal lists, so a huge
	// malformed request costs neither a host lookup per line nor a page of
	// messages.
	maxCandidateErrors = 20
	// maxCandidateNotes bounds a candidate run's notes.
	maxCandidateNotes = 2000
)

// CandidateStore is what the candidate service needs from storage.
type CandidateStore interface {
	TeamBySlug(ctx context.Context, slug string) (*models.Team, error)
	Membership(ctx context.Context, teamID, userID int64) (*models.Membership, error)
	TeamAgent(ctx context.Context, teamID int64, slug string) (*models.Agent, error)
	Benchmark(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.Benchmark, error)
	SubsetTaskIDs(ctx context.Context, versionID int64, subset string) ([]int64, error)
	VersionTaskRefs(ctx context.Context, versionID int64) ([]models.Task, error)
	TaskIntents(ctx context.Context, ids []int64) ([]models.Task, error)
	VisibleRun(ctx context.Context, scope models.RunScope, runID int64) (*models.Run, error)
	RunCandidates(ctx context.Context, runID int64) ([]models.HiddenCandidate, error)
	AttemptCandidate(ctx context.Context, attemptID int64) (int64, *models.HiddenCandidate, error)
	InsertCandidateRun(ctx context.Context, run *models.Run, taskIDs []int64, candidates map[int64]models.CandidateSpec,
		details string, withinQuota func(recent int64) error,
		enqueue func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) error
}

// CandidateJobs enqueues the grading of a candidate run's attempts inside
// the transaction that writes them (the runner's queue).
type CandidateJobs interface {
	// HiddenTests enqueues one hidden-tests job per attempt.
	HiddenTests(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error
}

// CandidateOptions are the candidate service's settings.
type CandidateOptions struct {
	// DailyRunQuota is how many runs a team may create in 24 hours (0 =
	// unlimited; administrators are exempt).
	DailyRunQuota int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Candidates is the hidden-test candidate service: the candidate form's
// tasks, submitting a team's candidate websites as a hidden-tests run (the
// websites its agent built elsewhere; Proctor only grades them), and reading
// a run's candidates back, redacted for the caller.
type Candidates struct {
	store CandidateStore
	jobs  CandidateJobs
	guard HostGuard
	opts  CandidateOptions
}

// NewCandidates returns the candidate service over store, enqueuing through
// jobs and checking candidate URLs with guard (the SSRF guard of agent
// endpoints; nil fails every URL closed). nil jobs (a process without a
// queue) reads but answers EUNAVAILABLE to submitting.
func NewCandidates(store CandidateStore, jobs CandidateJobs, guard HostGuard, opts CandidateOptions) *Candidates {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Candidates{store: store, jobs: jobs, guard: guard, opts: opts}
}

// Available reports whether this process can queue candidate runs; the
// form offers submitting only then.
func (s *Candidates) Available() bool { return s.jobs != nil }

// RequireQueue is EUNAVAILABLE in a process that cannot grade candidates,
// so that a submission is refused before its input is read.
func (s *Candidates) RequireQueue() error {
	if s.jobs == nil {
		return noCandidateQueue()
	}
	return nil
}

// noCandidateQueue answers a submission in a process that cannot grade it.
func noCandidateQueue() error {
	return models.Errorf(models.EUNAVAILABLE, "Candidates cannot be graded on this server right now: it has no queue. Try again later or ask an administrator.")
}

// hiddenTestsBenchmark returns the visible hidden-tests benchmark with its
// current version; ENOTFOUND otherwise.
func (s *Candidates) candidateBenchmark(ctx context.Context, slug string) (*models.Benchmark, error) {
	bench, err := s.store.Benchmark(ctx, slug, scopeOf(ctx))
	if err != nil {
		return nil, err
	}
	if !bench.GradesCandidates() || bench.CurrentVersionID == nil {
		return nil, models.Errorf(models.ENOTFOUND, "Benchmark %s takes no candidate websites.", bench.Slug)
	}
	return bench, nil
}

// CandidateTasks lists the tasks of a hidden-tests benchmark's subset (""
// is the full set) for a signed-in caller. EUNAUTHORIZED when nobody is
// signed in; ENOTFOUND for an unknown, unpublished (to non-admins) or not
// hidden-tests benchmark; EINVALID on "subset" for an unknown subset.
func (s *Candidates) CandidateTasks(ctx context.Context, benchmarkSlug, subset string) (*models.CandidateTasks, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	bench, err := s.candidateBenchmark(ctx, benchmarkSlug)
	if err != nil {
		return nil, err
	}
	subset = strings.TrimSpace(subset)
	if subset == "" {
		subset = models.SubsetFull
	}
	ids, err := s.store.SubsetTaskIDs(ctx, *bench.CurrentVersionID, subset)
	if err != nil {
		return nil, err
	}
	out := &models.CandidateTasks{Benchmark: *bench, Subset: subset, Subsets: []string{models.SubsetFull}}
	if v := bench.CurrentVersion; v != nil {
		for _, sub := range v.Subsets {
			out.Subsets = append(out.Subsets, sub.Name)
		}
	}
	out.Benchmark.JudgeAPIKey, out.Benchmark.CurrentVersion, out.Benchmark.Sites = "", nil, nil
	if out.Tasks, err = s.store.TaskIntents(ctx, ids); err != nil {
		return nil, err
	}
	return out, nil
}

// SubmitCandidates creates a hidden-tests run of a team's candidate websites
// and queues their grading, in one transaction: the run (origin uploaded,
// status running: the agent built the sites elsewhere and only grading is
// left), one pending attempt per task of the subset carrying the team's
// reported cost, tokens and turns, each attempt's candidate, and one
// hidden-tests job per attempt. The caller must be a member of the team
// (admins and the system always may); the agent must be the team's, the
// benchmark a hidden-tests one, and every task of the subset must have
// exactly one candidate whose URLs are absolute http(s) URLs without
// credentials or fragment that the SSRF guard of agent endpoints accepts.
// The team must be under its daily run quota. EINVALID naming the field
// ("team", "agent", "benchmark", "subset", "candidates",
// "candidates[2].base_url", …; several problems at once come back joined,
// each with its own field), EUNAUTHORIZED, EFORBIDDEN, ERATELIMIT or
// EUNAVAILABLE (no queue) otherwise.
func (s *Candidates) SubmitCandidates(ctx context.Context, req models.CandidateRunRequest) (*models.Run, error) {
	req = normalizeCandidateRequest(req)
	switch {
	case req.TeamSlug == "":
		return nil, models.FieldError("team", "choose the team whose agent built the candidates")
	case req.AgentSlug == "":
		return nil, models.FieldError("agent", "choose the agent that built the candidates")
	case req.BenchmarkSlug == "":
		return nil, models.FieldError("benchmark", "choose the hidden-tests benchmark the candidates answer")
	case len(req.Notes) > maxCandidateNotes:
		return nil, models.FieldError("notes", "notes must be at most %d characters", maxCandidateNotes)
	}
	team, err := s.store.TeamBySlug(ctx, req.TeamSlug)
	if err != nil {
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, models.FieldError("team", "there is no team %q", req.TeamSlug)
		}
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
	bench, err := s.store.Benchmark(ctx, req.BenchmarkSlug, scopeOf(ctx))
	if err != nil {
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, models.FieldError("benchmark", "there is no benchmark %q", req.BenchmarkSlug)
		}
		return nil, err
	}
	if !bench.GradesCandidates() {
		return nil, models.FieldError("benchmark", "benchmark %s is graded by %s, not by hidden tests: candidate websites are submitted only to hidden-tests benchmarks", bench.Slug, bench.Evaluator)
	}
	if bench.CurrentVersionID == nil {
		return nil, models.FieldError("benchmark", "benchmark %s has no imported tasks", bench.Slug)
	}
	versionID := *bench.CurrentVersionID
	subsetIDs, err := s.store.SubsetTaskIDs(ctx, versionID, req.Subset)
	if err != nil {
		return nil, err
	}
	if len(subsetIDs) == 0 {
		return nil, models.FieldError("subset", "subset %q of %s holds no tasks", req.Subset, bench.Slug)
	}
	tasks, err := s.store.VersionTaskRefs(ctx, versionID)
	if err != nil {
		return nil, err
	}
	taskOf, err := s.checkCandidates(ctx, req, tasks, subsetIDs)
	if err != nil {
		return nil, err
	}
	if s.jobs == nil {
		return nil, noCandidateQueue()
	}
	snapshot, err := json.Marshal(models.SnapshotOf(agent))
	if err != nil {
		return nil, fmt.Errorf("snapshot agent: %w", err)
	}
	now := s.opts.Now().UTC()
	run := &models.Run{
		TeamID: team.ID, AgentID: agent.ID, VersionID: versionID, SubsetName: req.Subset,
		Status: models.RunRunning, Origin: models.OriginUploaded, AgentSnapshot: string(snapshot),
		MaxSteps: max(bench.DefaultMaxSteps, 1), Parallelism: 1, Notes: req.Notes,
		CreatedAt: now, StartedAt: &now, TasksTotal: len(subsetIDs),
	}
	if actor.UserID != 0 {
		run.CreatedBy = &actor.UserID
	}
	withinQuota := func(recent int64) error {
		return models.CheckDailyQuota(actor, team, recent, s.opts.DailyRunQuota)
	}
	details := fmt.Sprintf("%d candidates for %s/%s on %s (%s)", len(subsetIDs), team.Slug, agent.Slug, bench.Slug, req.Subset)
	enqueue := func(ctx context.Context, tx *sql.Tx, run *models.Run, ids []int64) error {
		return s.jobs.HiddenTests(ctx, tx, run, ids)
	}
	if err := s.store.InsertCandidateRun(ctx, run, subsetIDs, taskOf, details, withinQuota, enqueue); err != nil {
		return nil, err
	}
	return run, nil
}

// normalizeCandidateRequest trims what people type around names and URLs.
func normalizeCandidateRequest(req models.CandidateRunRequest) models.CandidateRunRequest {
	req.TeamSlug = strings.TrimSpace(req.TeamSlug)
	req.AgentSlug = strings.TrimSpace(req.AgentSlug)
	if team, agent, ok := strings.Cut(req.AgentSlug, "/"); ok && (req.TeamSlug == "" || req.TeamSlug == team) {
		req.TeamSlug, req.AgentSlug = team, agent
	}
	req.BenchmarkSlug = strings.TrimSpace(req.BenchmarkSlug)
	req.Subset = strings.TrimSpace(req.Subset)
	if req.Subset == "" {
		req.Subset = models.SubsetFull
	}
	req.Notes = strings.TrimSpace(req.Notes)
	specs := make([]models.CandidateSpec, len(req.Candidates))
	for i, c := range req.Candidates {
		c.TaskID = strings.TrimSpace(c.TaskID)
		c.BaseURL = strings.TrimSpace(c.BaseURL)
		c.RestartURL = strings.TrimSpace(c.RestartURL)
		c.HealthURL = strings.TrimSpace(c.HealthURL)
		specs[i] = c
	}
	req.Candidates = specs
	return req
}

// candidateErrors gathers a request's problems, each on its own field, up to
// maxCandidateErrors.
type candidateErrors []error

func (e *candidateErrors) add(field, format string, args ...any) {
	if len(*e) < maxCandidateErrors {
		*e = append(*e, models.FieldError(field, format, args...))
	}
}

func (e candidateErrors) full() bool { return len(e) >= maxCandidateErrors }

// checkCandidates checks every candidate against the version's tasks and the
// subset and returns the candidate of each subset task by task id. Task ids
// are checked first and host lookups only for candidates of good tasks, once
// per host.
func (s *Candidates) checkCandidates(ctx context.Context, req models.CandidateRunRequest, tasks []models.Task, subsetIDs []int64) (map[int64]models.CandidateSpec, error) {
	if len(req.Candidates) == 0 {
		return nil, models.FieldError("candidates", "list one candidate per task of subset %q", req.Subset)
	}
	byExternal := make(map[string]int64, len(tasks))
	for _, t := range tasks {
		byExternal[t.ExternalID] = t.ID
	}
	inSubset := make(map[int64]bool, len(subsetIDs))
	for _, id := range subsetIDs {
		inSubset[id] = true
	}
	var errs candidateErrors
	taskOf := make(map[int64]models.CandidateSpec, len(subsetIDs))
	firstAt := make(map[int64]int, len(subsetIDs))
	var good []int
	for i, c := range req.Candidates {
		field := fmt.Sprintf("candidates[%d].task_id", i)
		id, known := byExternal[c.TaskID]
		switch {
		case c.TaskID == "":
			errs.add(field, "name the task this candidate is for")
		case !known:
			errs.add(field, "benchmark %s has no task %q", req.BenchmarkSlug, c.TaskID)
		case !inSubset[id]:
			errs.add(field, "task %q is not in subset %q", c.TaskID, req.Subset)
		default:
			if j, dup := firstAt[id]; dup {
				errs.add(field, "task %q already has a candidate at candidates[%d]: list each task once", c.TaskID, j)
				continue
			}
			firstAt[id] = i
			taskOf[id] = c
			good = append(good, i)
		}
	}
	if len(errs) == 0 {
		var missing []string
		for _, t := range tasks {
			if inSubset[t.ID] {
				if _, ok := taskOf[t.ID]; !ok {
					missing = append(missing, t.ExternalID)
				}
			}
		}
		if len(missing) > 0 {
			errs.add("candidates", "every task of subset %q needs a candidate; missing: %s", req.Subset, listSome(missing, 10))
		}
	}
	hosts := map[string]error{}
	for _, i := range good {
		if errs.full() {
			break
		}
		c := req.Candidates[i]
		prefix := fmt.Sprintf("candidates[%d].", i)
		for _, u := range []struct {
			name, raw string
			required  bool
		}{{"base_url", c.BaseURL, true}, {"restart_url", c.RestartURL, false}, {"health_url", c.HealthURL, false}} {
			if err := s.checkCandidateURL(ctx, hosts, prefix+u.name, u.raw, u.required); err != nil {
				if models.ErrorCode(err) != models.EINVALID {
					return nil, err
				}
				errs = append(errs, err)
			}
		}
		switch {
		case math.IsNaN(c.CostUSD) || math.IsInf(c.CostUSD, 0) || c.CostUSD < 0:
			errs.add(prefix+"cost_usd", "the cost must be a number, zero or more")
		case c.TokensIn < 0:
			errs.add(prefix+"tokens_in", "tokens in must be zero or more")
		case c.TokensOut < 0:
			errs.add(prefix+"tokens_out", "tokens out must be zero or more")
		case c.Turns < 0:
			errs.add(prefix+"turns", "turns must be zero or more")
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return taskOf, nil
}

// checkCandidateURL checks one candidate URL: absolute http or https, no
// credentials, no fragment, at most maxCandidateURL characters, and accepted
// by the SSRF guard of agent endpoints (its verdict cached per host, which
// is all it depends on). EINVALID on field; other errors are internal.
func (s *Candidates) checkCandidateURL(ctx context.Context, hosts map[string]error, field, raw string, required bool) error {
	if raw == "" {
		if required {
			return models.FieldError(field, "give the URL the candidate answers at")
		}
		return nil
	}
	if len(raw) > maxCandidateURL {
		return models.FieldError(field, "the URL is %d characters long; at most %d are accepted", len(raw), maxCandidateURL)
	}
	u, err := models.ParseHTTPURL(raw, "candidate URL")
	if err != nil {
		return models.FieldError(field, "%s", models.ErrorMessage(err))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return models.FieldError(field, "%q has a fragment (#…); give the URL without it", raw)
	}
	key := strings.ToLower(u.Host)
	verdict, seen := hosts[key]
	if !seen {
		verdict = checkURL(ctx, s.guard, raw)
		hosts[key] = verdict
	}
	if verdict == nil {
		return nil
	}
	if me := (*models.Error)(nil); errors.As(verdict, &me) && me.Code == models.EINVALID {
		return models.FieldError(field, "%s", me.Message)
	}
	return verdict
}

// listSome joins up to n items and says how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// managesRun reports whether the caller may manage run: a member of its
// team, an administrator or the system.
func (s *Candidates) managesRun(ctx context.Context, run *models.Run) (bool, error) {
	a := models.ActorFrom(ctx)
	if a.Privileged() {
		return true, nil
	}
	if a.UserID == 0 {
		return false, nil
	}
	_, err := s.store.Membership(ctx, run.TeamID, a.UserID)
	switch models.ErrorCode(err) {
	case "":
		return true, nil
	case models.ENOTFOUND:
		return false, nil
	}
	return false, err
}

// redactCandidate blanks the restart and health hooks, which only the run's
// team and administrators see.
func redactCandidate(c *models.HiddenCandidate) {
	c.RestartURL, c.HealthURL = "", ""
}

// HiddenCandidates lists the candidates of a run's attempts, in attempt
// order, to whoever may see the run; the restart and health hooks are
// blanked for everyone but the run's team and administrators. ENOTFOUND
// when the run does not exist or is not visible to the caller.
func (s *Candidates) HiddenCandidates(ctx context.Context, runID int64) ([]models.HiddenCandidate, error) {
	run, err := s.store.VisibleRun(ctx, runScope(ctx), runID)
	if err != nil {
		return nil, err
	}
	manage, err := s.managesRun(ctx, run)
	if err != nil {
		return nil, err
	}
	out, err := s.store.RunCandidates(ctx, runID)
	if err != nil {
		return nil, err
	}
	if !manage {
		for i := range out {
			redactCandidate(&out[i])
		}
	}
	return out, nil
}

// HiddenCandidate is one attempt's candidate, with the visibility of
// HiddenCandidates. ENOTFOUND when the attempt has none or is not visible.
func (s *Candidates) HiddenCandidate(ctx context.Context, attemptID int64) (*models.HiddenCandidate, error) {
	notFound := models.Errorf(models.ENOTFOUND, "Attempt %d has no candidate website.", attemptID)
	runID, c, err := s.store.AttemptCandidate(ctx, attemptID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, notFound
	} else if err != nil {
		return nil, err
	}
	run, err := s.store.VisibleRun(ctx, runScope(ctx), runID)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, notFound
	}
	manage, err := s.managesRun(ctx, run)
	if err != nil {
		return nil, err
	}
	if !manage {
		redactCandidate(c)
	}
	return c, nil
}
