package storage

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// Who sees a run: members of its team and admins always; everyone else only
// once it is published. A run the caller may not see does not exist for them
// (ENOTFOUND), so its id leaks nothing.

// canManageTeam reports whether the scope acts for the team: all teams for
// administrators and the system, a user's own teams.
func canManageTeam(q *gorm.DB, scope models.RunScope, teamID int64) (bool, error) {
	switch {
	case scope.All:
		return true, nil
	case scope.UserID == 0:
		return false, nil
	}
	_, err := membershipOf(q, teamID, scope.UserID)
	switch models.ErrorCode(err) {
	case "":
		return true, nil
	case models.ENOTFOUND:
		return false, nil
	}
	return false, err
}

func runNotFound(runID int64) error {
	return models.Errorf(models.ENOTFOUND, "Run %d not found.", runID)
}

// runAccess loads a run whose attempts the scope sees (locked for update
// when lock is set) and tells whether it acts for the run's team. A run hidden by
// administrators keeps its attempts from everyone outside its team (its page
// shows only its summary and the reason). ENOTFOUND otherwise.
func (db *DB) runAccess(q *gorm.DB, scope models.RunScope, runID int64, lock bool) (*models.Run, bool, error) {
	run, manage, err := db.runSummaryAccess(q, scope, runID, lock)
	if err != nil || manage {
		return run, manage, err
	}
	h, err := runHidingOf(q, runID)
	if err != nil {
		return nil, false, err
	}
	if h.HiddenAt != nil {
		return nil, false, models.Errorf(models.ENOTFOUND, "Run %d was hidden by the administrators: %s", runID, h.HiddenReason)
	}
	return run, manage, nil
}

// runSummaryAccess loads a run whose summary the scope sees (locked for
// update when lock is set) and tells whether it acts for the run's team: its
// team's members and admins see it, everyone once it is published.
// ENOTFOUND otherwise.
func (db *DB) runSummaryAccess(q *gorm.DB, scope models.RunScope, runID int64, lock bool) (*models.Run, bool, error) {
	var runs []models.Run
	qq := q
	if lock {
		qq = lockRow(q, db.dialect)
	}
	if err := qq.Where("id = ?", runID).Limit(1).Find(&runs).Error; err != nil {
		return nil, false, wrap(err, "run")
	}
	if len(runs) == 0 {
		return nil, false, runNotFound(runID)
	}
	manage, err := canManageTeam(q, scope, runs[0].TeamID)
	if err != nil {
		return nil, false, err
	}
	if !manage && !runs[0].Published {
		return nil, false, runNotFound(runID)
	}
	return &runs[0], manage, nil
}

// shownOriginColumn is a run's origin as pages show it (models.ShownOrigin),
// over runListFrom.
const shownOriginColumn = `CASE WHEN r.origin = '` + models.OriginUploaded + `' AND b.grades = '` + models.GradesCandidates +
	`' THEN '` + models.OriginCandidates + `' ELSE r.origin END`

// runListColumns are the columns of a models.RunListItem over runListFrom;
// the origin is the shown one.
const runListColumns = `r.id, r.status, ` + shownOriginColumn + ` AS origin, a.name AS agent_name, a.slug AS agent_slug,
	t.slug AS team_slug, t.name AS team_name, b.slug AS benchmark_slug, b.name AS benchmark_name,
	r.subset_name AS subset, r.tasks_done, r.tasks_total, r.successes, r.errors, r.published,
	r.created_at, r.finished_at`

// runListFrom joins a run to its agent, team and benchmark.
func runListFrom(q *gorm.DB) *gorm.DB {
	return q.Table("runs r").
		Joins("JOIN agents a ON a.id = r.agent_id").
		Joins("JOIN teams t ON t.id = r.team_id").
		Joins("JOIN benchmark_versions v ON v.id = r.version_id").
		Joins("JOIN benchmarks b ON b.id = v.benchmark_id")
}

// ListRuns returns one page (from 1) of the runs the scope sees, newest
// first, and their total. With a team: its members and admins see all of the
// team's runs, everyone else its published ones (ENOTFOUND for an unknown team).
// Without: admins see every run, users the published runs and their teams'
// runs, anonymous visitors the published runs. EINVALID for bad page bounds.
func (db *DB) ListRuns(ctx context.Context, scope models.RunScope, f models.RunFilter) ([]models.RunListItem, int, error) {
	if f.Page < 1 || f.PerPage < 1 {
		return nil, 0, models.Errorf(models.EINVALID, "page and per_page must be positive")
	}
	q := db.q(ctx)
	var where []func(*gorm.DB) *gorm.DB
	switch {
	case f.TeamSlug != "":
		team, err := teamBySlug(q, f.TeamSlug, false)
		if err != nil {
			return nil, 0, err
		}
		manage, err := canManageTeam(q, scope, team.ID)
		if err != nil {
			return nil, 0, err
		}
		where = append(where, func(s *gorm.DB) *gorm.DB { return s.Where("r.team_id = ?", team.ID) })
		if !manage {
			where = append(where, func(s *gorm.DB) *gorm.DB { return s.Where("r.published = ?", true) })
		}
	case scope.All:
	case scope.UserID != 0:
		where = append(where, func(s *gorm.DB) *gorm.DB {
			return s.Where("(r.published = ? OR r.team_id IN (SELECT m.team_id FROM memberships m WHERE m.user_id = ?))", true, scope.UserID)
		})
	default:
		where = append(where, func(s *gorm.DB) *gorm.DB { return s.Where("r.published = ?", true) })
	}
	scoped := func() *gorm.DB {
		s := runListFrom(q)
		for _, w := range where {
			s = w(s)
		}
		return s
	}
	var total int64
	if err := scoped().Count(&total).Error; err != nil {
		return nil, 0, wrap(err, "runs")
	}
	var out []models.RunListItem
	err := scoped().Select(runListColumns).Order("r.created_at DESC, r.id DESC").
		Offset((f.Page - 1) * f.PerPage).Limit(f.PerPage).Scan(&out).Error
	if err != nil {
		return nil, 0, wrap(err, "runs")
	}
	return out, int(total), nil
}

// TeamRuns returns one page of a team's runs as ListRuns does, with the team and
// whether the scope may queue runs for it. ENOTFOUND for an unknown team.
func (db *DB) TeamRuns(ctx context.Context, scope models.RunScope, teamSlug string, page, perPage int) (*models.TeamRunList, error) {
	q := db.q(ctx)
	team, err := teamBySlug(q, teamSlug, false)
	if err != nil {
		return nil, err
	}
	manage, err := canManageTeam(q, scope, team.ID)
	if err != nil {
		return nil, err
	}
	runs, total, err := db.ListRuns(ctx, scope, models.RunFilter{TeamSlug: teamSlug, Page: page, PerPage: perPage})
	if err != nil {
		return nil, err
	}
	return &models.TeamRunList{Team: *team, Runs: runs, Total: total, CanQueue: manage}, nil
}

// RunProgress returns a run's live state: attempts by status, errors by class,
// an ETA and the names of what it runs. ENOTFOUND when the scope does not see it.
func (db *DB) RunProgress(ctx context.Context, scope models.RunScope, runID int64) (*models.RunProgress, error) {
	q := db.q(ctx)
	run, _, err := db.runSummaryAccess(q, scope, runID, false)
	if err != nil {
		return nil, err
	}
	return progressOf(q, run)
}

// progressOf computes a run's progress with two queries. The progress's copy
// of the run carries its origin as pages show it (models.ShownOrigin).
func progressOf(q *gorm.DB, run *models.Run) (*models.RunProgress, error) {
	p := &models.RunProgress{Run: *run, ErrorsBy: map[string]int{}}
	var names []struct {
		AgentName, TeamSlug, TeamName, Benchmark, Grades string
		BenchmarkID                                      int64
	}
	err := runListFrom(q).Select("a.name AS agent_name, t.slug AS team_slug, t.name AS team_name, b.slug AS benchmark, b.grades, b.id AS benchmark_id").
		Where("r.id = ?", run.ID).Scan(&names).Error
	if err != nil {
		return nil, wrap(err, "run")
	}
	if len(names) == 1 {
		n := names[0]
		p.AgentName, p.TeamSlug, p.TeamName, p.Benchmark, p.BenchmarkID = n.AgentName, n.TeamSlug, n.TeamName, n.Benchmark, n.BenchmarkID
		p.Run.Origin = models.ShownOrigin(run.Origin, n.Grades == models.GradesCandidates)
	}
	var groups []struct {
		Status, Outcome, ErrorClass string
		Queued                      bool
		N                           int
		DurationSum                 int64
		Timed                       int
	}
	err = q.Model(&models.Attempt{}).Select(`status, outcome, error_class, queued, COUNT(*) AS n,
		COALESCE(SUM(CASE WHEN status = 'done' AND duration_ms > 0 THEN duration_ms ELSE 0 END), 0) AS duration_sum,
		COALESCE(SUM(CASE WHEN status = 'done' AND duration_ms > 0 THEN 1 ELSE 0 END), 0) AS timed`).
		Where("run_id = ?", run.ID).Group("status, outcome, error_class, queued").Scan(&groups).Error
	if err != nil {
		return nil, wrap(err, "attempts")
	}
	var durationSum int64
	var timed, attempts int
	for _, g := range groups {
		attempts += g.N
		switch g.Status {
		case models.AttemptPending:
			p.Pending += g.N
			if run.AgentConnects && !g.Queued {
				p.WaitingForAgent += g.N
			}
		case models.AttemptRunning, models.AttemptEvaluating:
			p.Running += g.N
		case models.AttemptDone:
			p.Done += g.N
			switch {
			case g.Outcome == models.OutcomeError:
				p.ErrorsBy[g.ErrorClass] += g.N
			case g.Outcome == models.OutcomeFailure && models.BudgetExhausted(g.ErrorClass):
				p.OutOfBudget += g.N
			}
		}
		durationSum += g.DurationSum
		timed += g.Timed
	}
	if attempts == 0 && !run.Finished() {
		p.Pending = run.TasksTotal // not dispatched yet
		if run.AgentConnects {
			p.WaitingForAgent = run.TasksTotal
		}
	}
	if left := p.Pending + p.Running; !run.Finished() && timed > 0 && left > 0 {
		mean := time.Duration(durationSum/int64(timed)) * time.Millisecond
		p.ETA = mean * time.Duration(left) / time.Duration(max(run.Parallelism, 1))
	}
	return p, nil
}

// RunAttempts returns one page (from 1) of a run's attempts in task order with
// their tasks' ids and intents, and their total. ENOTFOUND when the caller may
// not see the run's attempts; EINVALID for bad page bounds.
func (db *DB) RunAttempts(ctx context.Context, scope models.RunScope, runID int64, page, perPage int) ([]models.AttemptListItem, int, error) {
	if page < 1 || perPage < 1 {
		return nil, 0, models.Errorf(models.EINVALID, "page and per_page must be positive")
	}
	q := db.q(ctx)
	if _, _, err := db.runAccess(q, scope, runID, false); err != nil {
		return nil, 0, err
	}
	return attemptsOf(q, runID, models.AttemptFilter{Page: page, PerPage: perPage})
}

// attemptsOf returns one page of a run's attempts matching f in task order,
// and how many match, in two queries.
func attemptsOf(q *gorm.DB, runID int64, f models.AttemptFilter) ([]models.AttemptListItem, int, error) {
	matching := func() *gorm.DB {
		return filterAttempts(q.Table("attempts a").Joins("JOIN tasks t ON t.id = a.task_id").Where("a.run_id = ?", runID), f)
	}
	var total int64
	if err := matching().Count(&total).Error; err != nil {
		return nil, 0, wrap(err, "attempts")
	}
	var out []models.AttemptListItem
	err := matching().
		Select(`a.id, a.run_id, t.external_id AS task_external_id, t.intent, a.status, a.outcome,
			a.error_class, a.error_message, a.score, a.steps, a.cost, a.steps_unknown, a.tokens_unknown, a.cost_unknown,
			a.duration_ms, a.tries`).
		Order("t.position, a.id").
		Offset((f.Page - 1) * f.PerPage).Limit(f.PerPage).Scan(&out).Error
	if err != nil {
		return nil, 0, wrap(err, "attempts")
	}
	return out, int(total), nil
}

// filterAttempts narrows a query over "attempts a JOIN tasks t" to f.
func filterAttempts(tx *gorm.DB, f models.AttemptFilter) *gorm.DB {
	switch f.Outcome {
	case "":
	case models.OutcomeNone:
		tx = tx.Where("a.outcome = ?", "")
	default:
		tx = tx.Where("a.outcome = ?", f.Outcome)
	}
	switch f.ErrorClass {
	case "":
	case models.ErrorClassEvaluation:
		tx = tx.Where("a.outcome = ? AND a.error_class = ?", models.OutcomeError, "")
	default:
		tx = tx.Where("a.error_class = ?", f.ErrorClass)
	}
	switch f.Site {
	case "":
	case models.MultiSite:
		tx = tx.Where("t.site_key = ?", models.MultiSite)
	default:
		tx = tx.Where("EXISTS (SELECT 1 FROM task_sites ts WHERE ts.task_id = t.id AND ts.site = ?)", f.Site)
	}
	if f.Difficulty != "" {
		tx = tx.Where("t.difficulty = ?", f.Difficulty)
	}
	return tx
}

// attemptFacets lists the sites (with multi-site when tasks span several) and
// difficulties of a benchmark version's tasks, sorted.
func attemptFacets(q *gorm.DB, versionID int64) (*models.AttemptFacets, error) {
	f := &models.AttemptFacets{}
	if err := q.Table("task_sites ts").Joins("JOIN tasks t ON t.id = ts.task_id").Where("t.version_id = ?", versionID).
		Distinct().Order("ts.site").Pluck("ts.site", &f.Sites).Error; err != nil {
		return nil, wrap(err, "sites")
	}
	var multi int64
	if err := q.Model(&models.Task{}).Where("version_id = ? AND site_key = ?", versionID, models.MultiSite).
		Count(&multi).Error; err != nil {
		return nil, wrap(err, "sites")
	}
	if multi > 0 {
		f.Sites = append(f.Sites, models.MultiSite)
	}
	if err := q.Model(&models.Task{}).Where("version_id = ? AND difficulty <> ?", versionID, "").
		Distinct().Order("difficulty").Pluck("difficulty", &f.Difficulties).Error; err != nil {
		return nil, wrap(err, "difficulties")
	}
	f.Sites = uniqueNonEmpty(f.Sites)
	return f, nil
}

// checkFacetFilter checks a filter's site and difficulty against the run's
// choices: EINVALID naming the parameter otherwise.
func checkFacetFilter(f models.AttemptFilter, facets *models.AttemptFacets) error {
	if f.Site != "" && !slices.Contains(facets.Sites, f.Site) {
		return models.FieldError("site", "site must be one of the benchmark's sites (%s), not %q", strings.Join(facets.Sites, ", "), f.Site)
	}
	if f.Difficulty != "" && !slices.Contains(facets.Difficulties, f.Difficulty) {
		if len(facets.Difficulties) == 0 {
			return models.FieldError("difficulty", "the benchmark's tasks have no difficulty to filter by")
		}
		return models.FieldError("difficulty", "difficulty must be one of %s, not %q", strings.Join(facets.Difficulties, ", "), f.Difficulty)
	}
	return nil
}

// RunPage returns what a run's page shows: its progress, whether the caller may
// act on it and one page of its attempts. ENOTFOUND when the caller may not see
// its attempts; EINVALID for bad page bounds.
func (db *DB) RunPage(ctx context.Context, scope models.RunScope, runID int64, page, perPage int) (*models.RunPage, error) {
	if page < 1 || perPage < 1 {
		return nil, models.Errorf(models.EINVALID, "page and per_page must be positive")
	}
	q := db.q(ctx)
	run, manage, err := db.runAccess(q, scope, runID, false)
	if err != nil {
		return nil, err
	}
	p, err := progressOf(q, run)
	if err != nil {
		return nil, err
	}
	attempts, total, err := attemptsOf(q, runID, models.AttemptFilter{Page: page, PerPage: perPage})
	if err != nil {
		return nil, err
	}
	return &models.RunPage{Progress: *p, CanManage: manage, Attempts: attempts, AttemptsTotal: total, Page: page, PerPage: perPage}, nil
}

// RunOverview returns what a run's page shows: its progress, whether the
// caller may act on it, one page of its attempts matching the filter, the
// filter's choices and the run's publication state. Visitors outside the
// team see no attempts of a run the administrators hid (AttemptsWithheld),
// only its summary and the public reason. ENOTFOUND when the caller may not
// see the run; EINVALID naming the parameter for a bad filter value or page
// bounds.
func (db *DB) RunOverview(ctx context.Context, scope models.RunScope, runID int64, f models.AttemptFilter) (*models.RunOverview, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	q := db.q(ctx)
	run, manage, err := db.runSummaryAccess(q, scope, runID, false)
	if err != nil {
		return nil, err
	}
	facets, err := attemptFacets(q, run.VersionID)
	if err != nil {
		return nil, err
	}
	if err := checkFacetFilter(f, facets); err != nil {
		return nil, err
	}
	mod, err := moderationOf(q, run)
	if err != nil {
		return nil, err
	}
	p, err := progressOf(q, run)
	if err != nil {
		return nil, err
	}
	out := &models.RunOverview{
		Page:   models.RunPage{Progress: *p, CanManage: manage, Page: f.Page, PerPage: f.PerPage},
		Filter: f, Facets: *facets, Moderation: *mod,
	}
	if mod.Hidden() && !manage {
		out.AttemptsWithheld = true
		return out, nil
	}
	out.Page.Attempts, out.Page.AttemptsTotal, err = attemptsOf(q, runID, f)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AttemptTimeline returns an attempt with its task's public fields and rubric,
// its run, its steps in order and every evaluation (newest first; the primary
// one also as Evaluation). A scope of all runs (administrators) sees
// evaluations' full details and the attempt's error detail; any other sees
// an allowlisted public view (publicEvaluationDetails), as details can carry
// the task's hidden answers. ENOTFOUND when the attempt is missing or its run
// is not visible to the scope.
func (db *DB) AttemptTimeline(ctx context.Context, scope models.RunScope, attemptID int64) (*models.Timeline, error) {
	q := db.q(ctx)
	notFound := models.Errorf(models.ENOTFOUND, "Attempt %d not found.", attemptID)
	var attempts []models.Attempt
	if err := q.Where("id = ?", attemptID).Limit(1).Find(&attempts).Error; err != nil {
		return nil, wrap(err, "attempt")
	}
	if len(attempts) == 0 {
		return nil, notFound
	}
	tl := &models.Timeline{Attempt: attempts[0]}
	run, manage, err := db.runAccess(q, scope, tl.Attempt.RunID, false)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	tl.CanManage = manage
	if scope.All {
		var detail []string
		if err := q.Model(&models.Attempt{}).Where("id = ?", attemptID).Pluck("error_detail", &detail).Error; err != nil {
			return nil, wrap(err, "attempt")
		}
		if len(detail) == 1 {
			tl.ErrorDetail = detail[0]
		}
	}
	var runs []models.RunListItem
	if err := runListFrom(q).Select(runListColumns).Where("r.id = ?", tl.Attempt.RunID).Scan(&runs).Error; err != nil {
		return nil, wrap(err, "run")
	}
	if len(runs) != 1 {
		return nil, notFound
	}
	tl.Run = runs[0]
	var tasks []models.Task
	if err := q.Table("tasks t").Select(publicTaskColumns).Where("t.id = ?", tl.Attempt.TaskID).Find(&tasks).Error; err != nil {
		return nil, wrap(err, "task")
	}
	if len(tasks) != 1 {
		return nil, notFound
	}
	tl.Task = tasks[0]
	tl.Task.HideSecrets() // not even read; admins see them on the task's own page
	var steps []models.Step
	if err := q.Where("attempt_id = ?", tl.Attempt.ID).Order("step_index").Find(&steps).Error; err != nil {
		return nil, wrap(err, "steps")
	}
	tl.Steps = make([]models.TimelineStep, len(steps))
	for i, s := range steps {
		tl.Steps[i] = models.TimelineStepOf(s)
	}
	tl.FinalAction = models.DecodeAction(tl.Attempt.FinalAnswer)
	var evs []models.Evaluation
	if err := q.Preload("RubricJudgments").Where("attempt_id = ?", tl.Attempt.ID).Order("created_at DESC, id DESC").Find(&evs).Error; err != nil {
		return nil, wrap(err, "evaluations")
	}
	for i := range evs {
		if !scope.All {
			evs[i].Details = publicEvaluationDetails(evs[i].Kind, evs[i].Details)
		}
		if evs[i].IsPrimary && tl.Evaluation == nil {
			tl.Evaluation = &evs[i]
		}
	}
	tl.Evaluations = evs
	tasks = []models.Task{tl.Task}
	if err := loadRubrics(q, tasks); err != nil {
		return nil, err
	}
	tl.Task = tasks[0]
	if tl.Hidden, err = attemptHiddenTally(q, scope, run, tl.Attempt.ID); err != nil {
		return nil, err
	}
	return tl, nil
}

// CancelRun cancels a queued, running or evaluating run: the run ends canceled
// and its pending and running attempts end as errors of class "canceled"
// (episodes in flight notice the run's status and stop; attempts already being
// evaluated keep their verdicts). ENOTFOUND when the scope does not see the
// run; then mayManage, told whether the scope acts for the run's team, refuses
// (service.Runs: EUNAUTHORIZED or EFORBIDDEN for non-members); ECONFLICT when
// it has already finished.
func (db *DB) CancelRun(ctx context.Context, scope models.RunScope, runID int64, mayManage func(manage bool) error) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		run, manage, err := db.runAccess(tx, scope, runID, true)
		if err != nil {
			return err
		}
		if err := mayManage(manage); err != nil {
			return err
		}
		if run.Finished() {
			return models.Errorf(models.ECONFLICT, "Run %d has already finished (%s).", run.ID, run.Status)
		}
		now := db.now()
		if err := tx.Model(&models.Run{}).Where("id = ?", run.ID).
			Updates(map[string]any{"status": models.RunCanceled, "finished_at": now}).Error; err != nil {
			return wrap(err, "run")
		}
		err = tx.Model(&models.Attempt{}).Where("run_id = ? AND status IN ?", run.ID, []string{models.AttemptPending, models.AttemptRunning}).
			Updates(withColumns(map[string]any{
				"status": models.AttemptDone, "outcome": models.OutcomeError, "finished_at": now, "updated_at": now,
				// The steps recorded so far stay visible on the timeline; count them.
				"steps": gorm.Expr("(SELECT COUNT(*) FROM steps WHERE steps.attempt_id = attempts.id)"),
			}, attemptErrorColumns(models.ErrorClassCanceled, "The run was canceled before this attempt finished."))).Error
		if err != nil {
			return wrap(err, "attempts")
		}
		if _, err := db.refreshRunTotals(tx, run.ID); err != nil {
			return err
		}
		return db.auditTx(ctx, tx, "run.canceled", "run "+strconv.FormatInt(run.ID, 10), "", &run.TeamID)
	})
}

// ResetErroredAttempts puts a run's attempts that ended in an error (canceled
// ones included) back to pending, clearing their outcome, score and error but
// keeping their try count, reopens the run if it had finished, and queues
// their episodes in the same transaction as the run's parallelism allows
// (offer; see offerEpisodes). It returns how many attempts it
// reset (0 when none had failed). ENOTFOUND and mayManage's refusal as in
// CancelRun.
func (db *DB) ResetErroredAttempts(ctx context.Context, scope models.RunScope, runID int64, mayManage func(manage bool) error,
	offer OfferFunc) (int, error) {
	n := 0
	err := db.tx(ctx, func(tx *gorm.DB) error {
		if err := db.lockScheduling(tx); err != nil {
			return err
		}
		run, manage, err := db.runAccess(tx, scope, runID, true)
		if err != nil {
			return err
		}
		if err := mayManage(manage); err != nil {
			return err
		}
		if run.Origin != models.OriginExecuted {
			// Its attempts were run elsewhere: there is no agent to run them again.
			if origin, err := shownOriginOf(tx, run); err == nil && origin == models.OriginCandidates {
				return models.Errorf(models.ECONFLICT, "Run %d tested candidate websites its team submitted: its errored attempts cannot be retried here; submit the candidates again instead.", run.ID)
			}
			return models.Errorf(models.ECONFLICT, "Run %d was uploaded, not executed by Proctor: its errored attempts cannot be retried here; submit a new bundle instead.", run.ID)
		}
		var ids []int64
		if err := tx.Model(&models.Attempt{}).Where("run_id = ? AND status = ? AND outcome = ?", run.ID, models.AttemptDone, models.OutcomeError).
			Order("id").Pluck("id", &ids).Error; err != nil {
			return wrap(err, "attempts")
		}
		if len(ids) == 0 {
			return nil
		}
		now := db.now()
		if run.Finished() {
			if err := tx.Model(&models.Run{}).Where("id = ?", run.ID).
				Updates(map[string]any{"status": models.RunRunning, "finished_at": nil}).Error; err != nil {
				return wrap(err, "run")
			}
		}
		err = tx.Model(&models.Attempt{}).Where("id IN ?", ids).Updates(withColumns(map[string]any{
			"status": models.AttemptPending, "outcome": "", "score": nil, "queued": false,
			"finished_at": nil, "duration_ms": 0, "updated_at": now,
		}, noAttemptError())).Error
		if err != nil {
			return wrap(err, "attempts")
		}
		if _, err := db.refreshRunTotals(tx, run.ID); err != nil {
			return err
		}
		if err := db.auditTx(ctx, tx, "run.retried", "run "+strconv.FormatInt(run.ID, 10), fmt.Sprintf("%d attempts", len(ids)), &run.TeamID); err != nil {
			return err
		}
		if err := db.offerEpisodes(ctx, tx, offer); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// RunFormOptions returns what the queue-a-run form offers a team: its agents
// that Proctor can execute (not upload-only ones) and the benchmarks with tasks
// the scope sees (unpublished ones too for a scope of all runs), with their
// named subsets. The service checks that the caller acts for the team.
// ENOTFOUND for an unknown team.
func (db *DB) RunFormOptions(ctx context.Context, scope models.RunScope, teamSlug string) (*models.RunFormOptions, error) {
	q := db.q(ctx)
	team, err := teamBySlug(q, teamSlug, false)
	if err != nil {
		return nil, err
	}
	out := &models.RunFormOptions{Team: *team}
	if err := q.Select(agentColumns).Where("team_id = ? AND kind <> ?", team.ID, models.AgentUpload).
		Order("LOWER(name), id").Find(&out.Agents).Error; err != nil {
		return nil, wrap(err, "agents")
	}
	var benches []struct {
		Slug, Name string
		VersionID  int64
		Tasks      int
	}
	bq := q.Table("benchmarks b").Select("b.slug, b.name, v.id AS version_id, v.task_count AS tasks").
		Joins("JOIN benchmark_versions v ON v.id = b.current_version_id").
		// A hidden-tests benchmark grades submitted websites, not agent runs.
		Where("b.grades <> ?", models.GradesCandidates).
		Order("LOWER(b.name), b.slug")
	if !scope.All {
		bq = bq.Where("b.published = ?", true)
	}
	if err := bq.Scan(&benches).Error; err != nil {
		return nil, wrap(err, "benchmarks")
	}
	versionIDs := make([]int64, len(benches))
	for i, b := range benches {
		versionIDs[i] = b.VersionID
	}
	byVersion, err := subsetNamesByVersion(q, versionIDs)
	if err != nil {
		return nil, err
	}
	for _, b := range benches {
		out.Benchmarks = append(out.Benchmarks, models.RunFormBenchmark{Slug: b.Slug, Name: b.Name, Tasks: b.Tasks, Subsets: byVersion[b.VersionID]})
	}
	return out, nil
}

// subsetNamesByVersion lists the named subsets of benchmark versions by name,
// for the forms that offer them.
func subsetNamesByVersion(q *gorm.DB, versionIDs []int64) (map[int64][]string, error) {
	byVersion := map[int64][]string{}
	if len(versionIDs) == 0 {
		return byVersion, nil
	}
	var subsets []models.Subset
	if err := q.Where("version_id IN ?", versionIDs).Order("name").Find(&subsets).Error; err != nil {
		return nil, wrap(err, "subsets")
	}
	for _, s := range subsets {
		byVersion[s.VersionID] = append(byVersion[s.VersionID], s.Name)
	}
	return byVersion, nil
}
