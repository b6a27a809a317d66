package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gorm.io/gorm"

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
)

// SubmitCandidates creates a hidden-tests run of a team's candidate websites
// in one transaction: the Run (origin uploaded, status running: the agent
// built the sites elsewhere and only grading is left), one pending attempt
// per task of the subset carrying the team's reported cost, tokens and turns
// (as Steps), each attempt's HiddenCandidate, and the jobs enqueue inserts
// for the attempts inside the transaction. The caller must be a member of the
// team (admins and the system always may); the agent must be the team's, the
// benchmark a hidden-tests one, and every task of the subset must have
// exactly one candidate whose URLs are absolute http(s) URLs without
// credentials or fragment that the SSRF guard of agent endpoints accepts.
// The team must be under its daily run quota (0 = unlimited). EINVALID naming
// the field ("team", "agent", "benchmark", "subset", "candidates",
// "candidates[2].base_url", …; several problems at once come back joined,
// each with its own field), EUNAUTHORIZED, EFORBIDDEN or ERATELIMIT otherwise.
func (db *DB) SubmitCandidates(ctx context.Context, req models.CandidateRunRequest, dailyQuota int, enqueue func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) (*models.Run, error) {
	req = normalizeCandidateRequest(req)
	switch {
	case req.TeamSlug == "":
		return nil, models.FieldError("team", "choose the team whose agent built the candidates")
	case req.AgentSlug == "":
		return nil, models.FieldError("agent", "choose the agent that built the candidates")
	case req.BenchmarkSlug == "":
		return nil, models.FieldError("benchmark", "choose the hidden-tests benchmark the candidates answer")
	case len(req.Notes) > 2000:
		return nil, models.FieldError("notes", "notes must be at most 2000 characters")
	}
	q := db.q(ctx)
	team, err := teamBySlug(q, req.TeamSlug, false)
	if err != nil {
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, models.FieldError("team", "there is no team %q", req.TeamSlug)
		}
		return nil, err
	}
	actor, err := requireTeamRole(ctx, q, team.ID, false)
	if err != nil {
		return nil, err
	}
	var agents []models.Agent
	if err := q.Select(agentColumns).Where("team_id = ? AND slug = ?", team.ID, req.AgentSlug).Limit(1).Find(&agents).Error; err != nil {
		return nil, wrap(err, "agent")
	}
	if len(agents) == 0 {
		return nil, models.FieldError("agent", "team %s has no agent %q", team.Slug, req.AgentSlug)
	}
	agent := &agents[0]
	bench, err := visibleBenchmark(ctx, q, req.BenchmarkSlug)
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
	subsetIDs, err := db.subsetTaskIDs(ctx, q, versionID, req.Subset)
	if err != nil {
		return nil, err
	}
	if len(subsetIDs) == 0 {
		return nil, models.FieldError("subset", "subset %q of %s holds no tasks", req.Subset, bench.Slug)
	}
	var tasks []models.Task
	if err := q.Select("id, external_id, position").Where("version_id = ?", versionID).Find(&tasks).Error; err != nil {
		return nil, wrap(err, "tasks")
	}
	taskOf, err := db.checkCandidates(ctx, req, tasks, subsetIDs)
	if err != nil {
		return nil, err
	}
	snapshot, err := json.Marshal(models.SnapshotOf(agent))
	if err != nil {
		return nil, fmt.Errorf("snapshot agent: %w", err)
	}
	now := db.now()
	run := &models.Run{
		TeamID: team.ID, AgentID: agent.ID, VersionID: versionID, SubsetName: req.Subset,
		Status: models.RunRunning, Origin: models.OriginUploaded, AgentSnapshot: string(snapshot),
		MaxSteps: max(bench.DefaultMaxSteps, 1), Parallelism: 1, Notes: req.Notes,
		CreatedAt: now, StartedAt: &now, TasksTotal: len(subsetIDs),
	}
	if actor.UserID != 0 {
		run.CreatedBy = &actor.UserID
	}
	err = db.tx(ctx, func(tx *gorm.DB) error {
		// Submissions for one team take turns on its row, so that two at once
		// under PostgreSQL's read committed cannot both pass the quota.
		if err := lockRow(tx, db.dialect).Select("id").First(&models.Team{}, team.ID).Error; err != nil {
			return wrap(err, "team")
		}
		recent, err := recentRuns(tx, team.ID, now)
		if err != nil {
			return err
		}
		if err := models.CheckDailyQuota(actor, team, recent, dailyQuota); err != nil {
			return err
		}
		if err := tx.Create(run).Error; err != nil {
			return wrap(err, "run")
		}
		attempts := make([]models.Attempt, len(subsetIDs))
		for i, id := range subsetIDs {
			c := taskOf[id]
			attempts[i] = models.Attempt{
				RunID: run.ID, TaskID: id, Status: models.AttemptPending, Steps: c.Turns,
				TokensIn: c.TokensIn, TokensOut: c.TokensOut, Cost: c.CostUSD, CreatedAt: now, UpdatedAt: now,
			}
		}
		if err := tx.CreateInBatches(&attempts, 500).Error; err != nil {
			return wrap(err, "attempts")
		}
		// Read the ids back rather than trusting every driver's batch insert
		// to fill them in.
		var created []models.Attempt
		if err := tx.Select("id, task_id").Where("run_id = ?", run.ID).Order("id").Find(&created).Error; err != nil {
			return wrap(err, "attempts")
		}
		candidates := make([]models.HiddenCandidate, len(created))
		ids := make([]int64, len(created))
		for i, a := range created {
			c := taskOf[a.TaskID]
			ids[i] = a.ID
			candidates[i] = models.HiddenCandidate{AttemptID: a.ID, BaseURL: c.BaseURL, RestartURL: c.RestartURL, HealthURL: c.HealthURL, CreatedAt: now}
		}
		if err := tx.CreateInBatches(&candidates, 500).Error; err != nil {
			return wrap(err, "candidates")
		}
		if _, err := db.refreshRunTotals(tx, run.ID); err != nil {
			return err
		}
		details := fmt.Sprintf("run %d: %d candidates for %s/%s on %s (%s)", run.ID, len(candidates), team.Slug, agent.Slug, bench.Slug, req.Subset)
		if err := db.auditTx(ctx, tx, "candidates.submit", "run "+strconv.FormatInt(run.ID, 10), details, &team.ID); err != nil {
			return err
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		if err := enqueue(ctx, t, run, ids); err != nil {
			return err
		}
		return wrap(tx.First(run, run.ID).Error, "run")
	})
	if err != nil {
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
func (db *DB) checkCandidates(ctx context.Context, req models.CandidateRunRequest, tasks []models.Task, subsetIDs []int64) (map[int64]models.CandidateSpec, error) {
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
			if err := db.checkCandidateURL(ctx, hosts, prefix+u.name, u.raw, u.required); err != nil {
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
func (db *DB) checkCandidateURL(ctx context.Context, hosts map[string]error, field, raw string, required bool) error {
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
		verdict = db.checkEndpoint(ctx, raw)
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

// HiddenCandidates lists the candidates of a run's attempts, in attempt
// order, to whoever may see the run's attempts; the restart and health hooks
// are blanked for everyone but the run's team and administrators. ENOTFOUND
// when the run does not exist or is not visible.
func (db *DB) HiddenCandidates(ctx context.Context, runID int64) ([]models.HiddenCandidate, error) {
	q := db.q(ctx)
	_, manage, err := db.runAccess(ctx, q, runID, false)
	if err != nil {
		return nil, err
	}
	out := []models.HiddenCandidate{}
	err = q.Table("hidden_candidates c").Select("c.*").Joins("JOIN attempts a ON a.id = c.attempt_id").
		Where("a.run_id = ?", runID).Order("a.id").Scan(&out).Error
	if err != nil {
		return nil, wrap(err, "candidates")
	}
	if !manage {
		for i := range out {
			out[i].RestartURL, out[i].HealthURL = "", ""
		}
	}
	return out, nil
}

// HiddenCandidate is one attempt's candidate, with the visibility of
// HiddenCandidates. ENOTFOUND when the attempt has none or is not visible.
func (db *DB) HiddenCandidate(ctx context.Context, attemptID int64) (*models.HiddenCandidate, error) {
	q := db.q(ctx)
	var attempts []models.Attempt
	if err := q.Select("id, run_id").Where("id = ?", attemptID).Limit(1).Find(&attempts).Error; err != nil {
		return nil, wrap(err, "attempt")
	}
	notFound := models.Errorf(models.ENOTFOUND, "Attempt %d has no candidate website.", attemptID)
	if len(attempts) == 0 {
		return nil, notFound
	}
	_, manage, err := db.runAccess(ctx, q, attempts[0].RunID, false)
	if err != nil {
		return nil, err
	}
	var found []models.HiddenCandidate
	if err := q.Where("attempt_id = ?", attemptID).Limit(1).Find(&found).Error; err != nil {
		return nil, wrap(err, "candidate")
	}
	if len(found) == 0 {
		return nil, notFound
	}
	c := found[0]
	if !manage {
		c.RestartURL, c.HealthURL = "", ""
	}
	return &c, nil
}

// CandidateTasks is what the candidate form of a hidden-tests benchmark
// shows: the benchmark, its subsets ("full" first) and the tasks of the
// chosen subset in order, one form row each.
type CandidateTasks struct {
	Benchmark models.Benchmark
	Subset    string
	Subsets   []string
	Tasks     []models.Task // ExternalID and Intent only
}

// CandidateTasks lists the tasks of a hidden-tests benchmark's subset ("" is
// the full set) for a signed-in caller. EUNAUTHORIZED when nobody is signed
// in; ENOTFOUND for an unknown, unpublished (to non-admins) or not
// hidden-tests benchmark; EINVALID on "subset" for an unknown subset.
func (db *DB) CandidateTasks(ctx context.Context, benchmarkSlug, subset string) (*CandidateTasks, error) {
	if _, err := models.RequireUser(ctx); err != nil {
		return nil, err
	}
	q := db.q(ctx)
	bench, err := visibleBenchmark(ctx, q, benchmarkSlug)
	if err != nil {
		return nil, err
	}
	if !bench.GradesCandidates() || bench.CurrentVersionID == nil {
		return nil, models.Errorf(models.ENOTFOUND, "Benchmark %s takes no candidate websites.", bench.Slug)
	}
	subset = strings.TrimSpace(subset)
	if subset == "" {
		subset = models.SubsetFull
	}
	versionID := *bench.CurrentVersionID
	ids, err := db.subsetTaskIDs(ctx, q, versionID, subset)
	if err != nil {
		return nil, err
	}
	names, err := subsetNamesByVersion(q, []int64{versionID})
	if err != nil {
		return nil, err
	}
	out := &CandidateTasks{Benchmark: *bench, Subset: subset, Subsets: append([]string{models.SubsetFull}, names[versionID]...), Tasks: []models.Task{}}
	out.Benchmark.JudgeAPIKey = ""
	if err := q.Select("id, external_id, intent, position").Where("id IN ?", append(ids, 0)).Order("position").Find(&out.Tasks).Error; err != nil {
		return nil, wrap(err, "tasks")
	}
	return out, nil
}
