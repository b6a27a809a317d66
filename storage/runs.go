package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/migrations"
	"proctor/models"
)

// sqlTx returns the database/sql transaction under a GORM transaction.
func sqlTx(tx *gorm.DB) (*sql.Tx, error) {
	t, ok := tx.Statement.ConnPool.(*sql.Tx)
	if !ok {
		return nil, fmt.Errorf("not inside a database/sql transaction (%T)", tx.Statement.ConnPool)
	}
	return t, nil
}

// InsertRun writes a new run and, in the same transaction, its dispatch job
// (enqueue). withinQuota is first given how many runs the run's team has
// created in the 24 hours before run.CreatedAt, counted inside the
// transaction so that concurrent requests cannot both pass; its error aborts
// the insert. The caller has decided that the run may be created.
func (db *DB) InsertRun(ctx context.Context, run *models.Run, withinQuota func(recent int64) error,
	enqueue func(ctx context.Context, tx *sql.Tx, runID int64) error) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		if err := db.insertRun(tx, run, withinQuota); err != nil {
			return err
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		return enqueue(ctx, t, run.ID)
	})
}

// insertRun writes a new run inside tx: the one way a run row is created,
// whether it is queued (InsertRun) or uploaded (CreateUploadedRun). With
// withinQuota, it is first given how many runs the team created in the last
// 24 hours, and refuses with its error.
func (db *DB) insertRun(tx *gorm.DB, run *models.Run, withinQuota func(recent int64) error) error {
	if withinQuota != nil {
		// Runs for one team take turns on its row, so that two at once under
		// PostgreSQL's read committed cannot both pass the quota.
		if err := lockRow(tx, db.dialect).Select("id").First(&models.Team{}, run.TeamID).Error; err != nil {
			return wrap(err, "team")
		}
		recent, err := recentRuns(tx, run.TeamID, run.CreatedAt)
		if err != nil {
			return err
		}
		if err := withinQuota(recent); err != nil {
			return err
		}
	}
	return wrap(tx.Create(run).Error, "run")
}

// recentRuns counts the runs a team created in the 24 hours before now.
func recentRuns(tx *gorm.DB, teamID int64, now time.Time) (int64, error) {
	var n int64
	err := tx.Model(&models.Run{}).Where("team_id = ? AND created_at > ?", teamID, now.Add(-24*time.Hour)).Count(&n).Error
	return n, wrap(err, "runs")
}

// TeamAgent returns a team's agent by slug, unredacted (its configuration
// is what a run's snapshot copies); ENOTFOUND when the team has none.
func (db *DB) TeamAgent(ctx context.Context, teamID int64, slug string) (*models.Agent, error) {
	var agent models.Agent
	if err := db.q(ctx).Where("team_id = ? AND slug = ?", teamID, slug).First(&agent).Error; err != nil {
		return nil, wrap(err, "agent")
	}
	return &agent, nil
}

// TeamByID returns a team; ENOTFOUND for an unknown id.
func (db *DB) TeamByID(ctx context.Context, id int64) (*models.Team, error) {
	return teamByID(db.q(ctx), id, false)
}

// VersionBenchmark returns the benchmark a version belongs to.
func (db *DB) VersionBenchmark(ctx context.Context, versionID int64) (*models.Benchmark, error) {
	var bench models.Benchmark
	if err := db.q(ctx).Table("benchmarks b").Joins("JOIN benchmark_versions v ON v.benchmark_id = b.id").
		Where("v.id = ?", versionID).Select("b.*").Take(&bench).Error; err != nil {
		return nil, wrap(err, "benchmark")
	}
	return &bench, nil
}

// VisibleRun returns a run whose attempts the scope sees (as its pages
// do); ENOTFOUND otherwise.
func (db *DB) VisibleRun(ctx context.Context, scope models.RunScope, runID int64) (*models.Run, error) {
	run, _, err := db.runAccess(db.q(ctx), scope, runID, false)
	return run, err
}

// SubsetTaskIDs lists the task ids of a version's subset in order ("full" =
// every task); EINVALID on "subset" for an unknown subset.
func (db *DB) SubsetTaskIDs(ctx context.Context, versionID int64, subset string) ([]int64, error) {
	return db.subsetTaskIDs(ctx, db.q(ctx), versionID, subset)
}

// subsetTaskIDs lists the task ids of a version's subset ("full" = every task).
func (db *DB) subsetTaskIDs(ctx context.Context, q *gorm.DB, versionID int64, subset string) ([]int64, error) {
	var ids []int64
	if subset == models.SubsetFull {
		err := q.Model(&models.Task{}).Where("version_id = ?", versionID).Order("position").Pluck("id", &ids).Error
		return ids, wrap(err, "tasks")
	}
	var s models.Subset
	if err := q.Where("version_id = ? AND name = ?", versionID, subset).First(&s).Error; err != nil {
		if models.ErrorCode(wrap(err, "subset")) == models.ENOTFOUND {
			return nil, models.FieldError("subset", "there is no subset %q", subset)
		}
		return nil, wrap(err, "subset")
	}
	err := q.Table("subset_tasks st").Joins("JOIN tasks t ON t.id = st.task_id").
		Where("st.subset_id = ?", s.ID).Order("t.position").Pluck("t.id", &ids).Error
	return ids, wrap(err, "subset tasks")
}

// DispatchRun creates the run's attempts (idempotently: a re-delivered dispatch
// job adds nothing twice), marks the run running and queues the first of
// its episodes, as many as its parallelism allows (offer; see
// offerEpisodes). System actor only (the queue's workers).
func (db *DB) DispatchRun(ctx context.Context, runID int64, offer OfferFunc) error {
	if err := requireQueue(ctx, "dispatches runs"); err != nil {
		return err
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		if err := db.lockScheduling(tx); err != nil {
			return err
		}
		var run models.Run
		if err := lockRow(tx, db.dialect).First(&run, runID).Error; err != nil {
			return wrap(err, "run")
		}
		if run.Status != models.RunQueued {
			return nil // canceled before dispatch, or dispatched already
		}
		taskIDs, err := db.subsetTaskIDs(ctx, tx, run.VersionID, run.SubsetName)
		if err != nil {
			return err
		}
		now := db.now()
		rows := make([]models.Attempt, len(taskIDs))
		for i, id := range taskIDs {
			rows[i] = models.Attempt{RunID: run.ID, TaskID: id, Status: models.AttemptPending, CreatedAt: now, UpdatedAt: now}
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, 500).Error; err != nil {
			return wrap(err, "attempts")
		}
		if err := tx.Model(&run).Updates(map[string]any{"status": models.RunRunning, "started_at": now, "tasks_total": len(taskIDs)}).Error; err != nil {
			return wrap(err, "run")
		}
		return db.offerEpisodes(ctx, tx, offer)
	})
}

// lockRow adds FOR UPDATE on PostgreSQL; SQLite's immediate transactions already
// serialise writers.
func lockRow(tx *gorm.DB, dialect string) *gorm.DB {
	if dialect == migrations.Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}

// ClaimAttempt starts a try of an attempt if the run's parallelism and every
// site's concurrency cap allow it (counted across all workers in the database).
// A new try starts clean: steps of an earlier, interrupted try are deleted
// and its artifacts left to housekeeping. When the run, a site or the team's
// share is full it answers models.ClaimWait and the attempt is no longer
// queued: it is offered again when an episode ends. An attempt another
// worker is running is models.ClaimHeld while that worker's lease is
// renewed. It returns what the worker needs, hidden task fields included.
// System actor only.
func (db *DB) ClaimAttempt(ctx context.Context, attemptID int64, by models.Claimant) (string, *models.EpisodeSpec, error) {
	if err := requireQueue(ctx, "runs episodes"); err != nil {
		return "", nil, err
	}
	status := models.ClaimFinished
	var spec models.EpisodeSpec
	err := db.tx(ctx, func(tx *gorm.DB) error {
		if err := db.lockScheduling(tx); err != nil {
			return err
		}
		var a models.Attempt
		if err := lockRow(tx, db.dialect).First(&a, attemptID).Error; err != nil {
			return wrap(err, "attempt")
		}
		var run models.Run
		if err := lockRow(tx, db.dialect).First(&run, a.RunID).Error; err != nil {
			return wrap(err, "run")
		}
		// wait gives the attempt up until room frees: its job ends, and the
		// episode that frees the room offers it again.
		wait := func() error {
			status = models.ClaimWait
			return wrap(tx.Model(&models.Attempt{}).Where("id = ? AND status = ?", a.ID, models.AttemptPending).
				Update("queued", false).Error, "attempt")
		}
		if run.Finished() || a.Status == models.AttemptDone || a.Status == models.AttemptEvaluating {
			return nil
		}
		var task models.Task
		if err := tx.First(&task, a.TaskID).Error; err != nil {
			return wrap(err, "task")
		}
		sites, err := versionSites(tx, run.VersionID)
		if err != nil {
			return err
		}
		now := db.now()
		// An attempt still marked running belongs to a live worker while that
		// worker's lease is renewed; a lapsed holder's try restarts.
		if a.Status == models.AttemptRunning {
			live, err := liveHolder(tx, a.WorkerID, now, by.TTL)
			if err != nil || live {
				status = models.ClaimHeld
				return err
			}
		}
		var running int64
		if err := tx.Model(&models.Attempt{}).Where("run_id = ? AND status = ? AND id <> ?", run.ID, models.AttemptRunning, a.ID).Count(&running).Error; err != nil {
			return wrap(err, "attempts")
		}
		if running >= int64(run.Parallelism) {
			return wait()
		}
		for _, s := range sites {
			if s.MaxConcurrency <= 0 || !containsString(task.Sites, s.Name) {
				continue
			}
			var busy int64
			err := tx.Table("attempts a").Joins("JOIN task_sites ts ON ts.task_id = a.task_id").
				Joins("JOIN runs r ON r.id = a.run_id").
				Where("a.status = ? AND ts.site = ? AND r.version_id IN (SELECT id FROM benchmark_versions WHERE benchmark_id = ?) AND a.id <> ?",
					models.AttemptRunning, s.Name, s.BenchmarkID, a.ID).Count(&busy).Error
			if err != nil {
				return wrap(err, "site load")
			}
			if busy >= int64(s.MaxConcurrency) {
				return wait()
			}
		}
		if over, err := db.overShare(tx, run.TeamID, a.ID, false, by, now); err != nil || over {
			if err != nil {
				return err
			}
			return wait()
		}
		if err := holdLease(tx, by.Lease, now); err != nil {
			return err
		}
		if err := tx.Where("attempt_id = ?", a.ID).Delete(&models.Step{}).Error; err != nil {
			return wrap(err, "steps")
		}
		if err := db.supersede(tx, run.ID, a.ID, a.Tries); err != nil {
			return err
		}
		a.Tries++
		a.Status, a.StartedAt, a.UpdatedAt, a.WorkerID = models.AttemptRunning, &now, now, by.Lease.ID
		a.Namespace = models.Namespace(a.ID, a.Tries)
		a.Steps, a.TokensIn, a.TokensOut, a.Cost, a.ErrorClass, a.ErrorMessage, a.HARKey, a.FinalAnswer = 0, 0, 0, 0, "", "", "", ""
		err = tx.Model(&a).Updates(withColumns(map[string]any{
			"tries": a.Tries, "status": a.Status, "started_at": now, "updated_at": now, "namespace": a.Namespace,
			"worker_id": by.Lease.ID, "queued": false,
			"steps": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0,
			"har_key": "", "page_state_key": "", "final_answer": "",
		}, noAttemptError())).Error
		if err != nil {
			return wrap(err, "attempt")
		}
		var snap models.AgentSnapshot
		if err := json.Unmarshal([]byte(run.AgentSnapshot), &snap); err != nil {
			return fmt.Errorf("run %d: agent snapshot: %w", run.ID, err)
		}
		var evaluators []string
		if err := tx.Table("benchmarks b").Joins("JOIN benchmark_versions v ON v.benchmark_id = b.id").
			Where("v.id = ?", run.VersionID).Pluck("b.evaluator", &evaluators).Error; err != nil {
			return wrap(err, "benchmark")
		}
		spec = models.EpisodeSpec{Run: run, Attempt: a, Task: task, Agent: snap, Sites: sites, Try: a.Tries, Namespace: a.Namespace}
		if len(evaluators) > 0 {
			spec.Evaluator = evaluators[0] // episodes of original WebArena tasks read the live page at the end
		}
		status = models.ClaimOK
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if status != models.ClaimOK {
		return status, nil, nil
	}
	return status, &spec, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// RecordStep writes one step row of the attempt's current try; the step's
// artifacts are already stored. A try that is no longer current writes
// nothing and gets models.ErrTrySuperseded, so a worker presumed dead never adds
// steps to the try that replaced its own.
func (db *DB) RecordStep(ctx context.Context, s *models.Step, try int) error {
	if s.CreatedAt.IsZero() {
		s.CreatedAt = db.now()
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		var a models.Attempt
		if err := lockRow(tx, db.dialect).Select("id, tries, status").First(&a, s.AttemptID).Error; err != nil {
			return wrap(err, "attempt")
		}
		if a.Tries != try || a.Status != models.AttemptRunning {
			return models.ErrTrySuperseded
		}
		return wrap(tx.Create(s).Error, "step")
	})
}

// FinishEpisode records an episode's result and, in the same transaction,
// enqueues its evaluation and queues the next episodes the room it frees
// allows (offer; see offerEpisodes). A try that is no longer current (the
// attempt was restarted elsewhere) is ignored. System actor only.
func (db *DB) FinishEpisode(ctx context.Context, attemptID int64, try int, out models.EpisodeOutcome, enqueue func(ctx context.Context, tx *sql.Tx) error, offer OfferFunc) error {
	if err := requireQueue(ctx, "finishes episodes"); err != nil {
		return err
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		if err := db.lockScheduling(tx); err != nil {
			return err
		}
		var a models.Attempt
		if err := lockRow(tx, db.dialect).First(&a, attemptID).Error; err != nil {
			return wrap(err, "attempt")
		}
		if a.Tries != try || a.Status != models.AttemptRunning {
			return nil
		}
		now := db.now()
		err := tx.Model(&a).Updates(withColumns(map[string]any{
			"status": models.AttemptEvaluating, "steps": out.Steps, "tokens_in": out.TokensIn, "tokens_out": out.TokensOut,
			"cost":         out.Cost,
			"final_answer": out.FinalAnswer, "har_key": out.HARKey, "page_state_key": out.PageStateKey, "finished_at": now,
			"duration_ms": out.Duration.Milliseconds(), "updated_at": now,
		}, attemptErrorColumns(out.ErrorClass, out.ErrorMessage))).Error
		if err != nil {
			return wrap(err, "attempt")
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		if err := enqueue(ctx, t); err != nil {
			return err
		}
		return db.offerEpisodes(ctx, tx, offer)
	})
}

// ReleaseAttempt puts a running attempt back to pending (an environment error
// to retry, or a worker shutting down), so it is not charged to the agent.
// It stays queued: the job that ran it runs again.
func (db *DB) ReleaseAttempt(ctx context.Context, attemptID int64, try int) error {
	res := db.q(ctx).Model(&models.Attempt{}).Where("id = ? AND tries = ? AND status = ?", attemptID, try, models.AttemptRunning).
		Updates(map[string]any{"status": models.AttemptPending, "worker_id": "", "queued": true, "updated_at": db.now()})
	return wrap(res.Error, "attempt")
}

// EvaluationSpec is what an evaluation job needs about an attempt.
func (db *DB) EvaluationSpec(ctx context.Context, attemptID int64) (*models.EpisodeSpec, error) {
	if err := requireQueue(ctx, "evaluates attempts"); err != nil {
		return nil, err
	}
	var spec models.EpisodeSpec
	q := db.q(ctx)
	if err := q.First(&spec.Attempt, attemptID).Error; err != nil {
		return nil, wrap(err, "attempt")
	}
	if err := q.First(&spec.Run, spec.Attempt.RunID).Error; err != nil {
		return nil, wrap(err, "run")
	}
	if err := q.First(&spec.Task, spec.Attempt.TaskID).Error; err != nil {
		return nil, wrap(err, "task")
	}
	sites, err := versionSites(q, spec.Run.VersionID)
	if err != nil {
		return nil, err
	}
	spec.Sites = sites
	var benchmarks []models.Benchmark
	if err := q.Table("benchmarks b").Select("b.id, b.evaluator, b.judge_base_url, b.judge_model, b.judge_api_key").
		Joins("JOIN benchmark_versions v ON v.benchmark_id = b.id").Where("v.id = ?", spec.Run.VersionID).
		Limit(1).Find(&benchmarks).Error; err != nil {
		return nil, wrap(err, "benchmark")
	}
	if len(benchmarks) > 0 {
		b := benchmarks[0]
		spec.Evaluator = b.Evaluator
		spec.Judge = models.JudgeSettings{BaseURL: b.JudgeBaseURL, Model: b.JudgeModel}
		if b.JudgeAPIKey != "" {
			key, err := db.openJudgeKey(b.ID, b.JudgeAPIKey)
			if err != nil {
				// Grading goes on without this judge; the evaluator says why.
				spec.Judge.KeyError = err.Error()
			}
			spec.Judge.APIKey = key
		}
	}
	tasks := []models.Task{spec.Task}
	if err := loadRubrics(q, tasks); err != nil {
		return nil, err
	}
	spec.Task = tasks[0]
	if err := q.Where("attempt_id = ?", attemptID).Order("step_index").Find(&spec.Steps).Error; err != nil {
		return nil, wrap(err, "steps")
	}
	spec.Try, spec.Namespace = spec.Attempt.Tries, spec.Attempt.Namespace
	return &spec, nil
}

// RunStatus returns a run's status, for episodes watching for cancellation.
func (db *DB) RunStatus(ctx context.Context, runID int64) (string, error) {
	var status []string
	if err := db.q(ctx).Model(&models.Run{}).Where("id = ?", runID).Pluck("status", &status).Error; err != nil {
		return "", wrap(err, "run")
	}
	if len(status) == 0 {
		return "", models.Errorf(models.ENOTFOUND, "Run not found.")
	}
	return status[0], nil
}

// RecordEvaluation stores one evaluation as the attempt's primary verdict
// (RecordEvaluations with no other evaluations and no refresh).
func (db *DB) RecordEvaluation(ctx context.Context, attemptID int64, ev *models.Evaluation) (bool, error) {
	return db.RecordEvaluations(ctx, attemptID, models.EvaluationBatch{Primary: ev}, nil)
}

// refreshRunTotals recomputes a run's totals from its attempts and completes it
// when no attempt is left.
func (db *DB) refreshRunTotals(tx *gorm.DB, runID int64) (bool, error) {
	var t struct {
		Done, Successes, Failures, Errors, Open int
		ScoreSum                                float64
		StepsSum                                int
		TokensIn, TokensOut                     int64
		Cost                                    float64
	}
	err := tx.Model(&models.Attempt{}).Where("run_id = ?", runID).Select(`
		COALESCE(SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END), 0) AS done,
		COALESCE(SUM(CASE WHEN outcome = 'success' THEN 1 ELSE 0 END), 0) AS successes,
		COALESCE(SUM(CASE WHEN outcome = 'failure' THEN 1 ELSE 0 END), 0) AS failures,
		COALESCE(SUM(CASE WHEN outcome = 'error' THEN 1 ELSE 0 END), 0) AS errors,
		COALESCE(SUM(CASE WHEN status <> 'done' THEN 1 ELSE 0 END), 0) AS open,
		COALESCE(SUM(COALESCE(score, 0)), 0) AS score_sum,
		COALESCE(SUM(steps), 0) AS steps_sum,
		COALESCE(SUM(tokens_in), 0) AS tokens_in,
		COALESCE(SUM(tokens_out), 0) AS tokens_out,
		COALESCE(SUM(cost), 0) AS cost`).Scan(&t).Error
	if err != nil {
		return false, wrap(err, "run totals")
	}
	updates := map[string]any{
		"tasks_done": t.Done, "successes": t.Successes, "failures": t.Failures, "errors": t.Errors,
		"score_sum": t.ScoreSum, "steps_sum": t.StepsSum, "tokens_in": t.TokensIn, "tokens_out": t.TokensOut, "cost": t.Cost,
	}
	finished := false
	if t.Open == 0 {
		var run models.Run
		if err := tx.Select("status").First(&run, runID).Error; err != nil {
			return false, wrap(err, "run")
		}
		if !run.Finished() {
			updates["status"], updates["finished_at"] = models.RunCompleted, db.now()
			finished = true
		}
	}
	return finished, wrap(tx.Model(&models.Run{}).Where("id = ?", runID).Updates(updates).Error, "run")
}

// versionSites lists the sites of the benchmark a version belongs to, by name.
func versionSites(q *gorm.DB, versionID int64) ([]models.Site, error) {
	var sites []models.Site
	err := q.Table("sites").Joins("JOIN benchmark_versions v ON v.benchmark_id = sites.benchmark_id").
		Where("v.id = ?", versionID).Order("sites.name").Find(&sites).Error
	return sites, wrap(err, "sites")
}
