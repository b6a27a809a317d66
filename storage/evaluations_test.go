package storage_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/stats"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// evaluate finishes an attempt's episode and records batch for it, returning
// the run ids the refresh callback was called with.
func (f *readFixture) evaluate(t *testing.T, attemptID int64, out models.EpisodeOutcome, batch models.EvaluationBatch) []int64 {
	t.Helper()
	status, spec, err := f.db.ClaimAttempt(f.system, attemptID, storagetest.Claimant(time.Hour))
	require.NoError(t, err)
	require.Equal(t, models.ClaimOK, status)
	require.NoError(t, f.db.FinishEpisode(f.system, attemptID, spec.Try, out, func(context.Context, *sql.Tx) error { return nil }, nil))
	var refreshed []int64
	_, err = f.db.RecordEvaluations(f.system, attemptID, batch, func(_ context.Context, _ *sql.Tx, runID int64) error {
		refreshed = append(refreshed, runID)
		return nil
	})
	require.NoError(t, err)
	return refreshed
}

func judgeScore(n int) *int { return &n }

// rubricItems returns the rubric items of an attempt's task, in order.
func rubricItems(t *testing.T, db *storage.DB, attemptID int64) []models.RubricItem {
	t.Helper()
	var items []models.RubricItem
	require.NoError(t, db.Gorm().Where("task_id = (SELECT task_id FROM attempts WHERE id = ?)", attemptID).Order("position").Find(&items).Error)
	return items
}

func TestStore_RecordEvaluations(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.dispatch(t, f.run.ID)
		require.Len(t, ids, 4)
		items := rubricItems(t, db, ids[0])
		require.Len(t, items, 2)

		rubric := &models.Evaluation{Evaluator: "llm-judge:m:rubric-v1", EvaluatorVersion: "rubric-v1", Kind: models.EvaluationRubric,
			Verdict: models.OutcomeFailure, Score: score(0.6), InputsChecksum: "abc", TokensIn: 1200, TokensOut: 80, Cost: 0.004,
			RubricJudgments: []models.RubricJudgment{
				{RubricItemID: items[0].ID, Passed: true, Rationale: "one cable in the cart", EvidenceSteps: models.JSONInts{2, 3}},
				{RubricItemID: items[1].ID, Passed: false, Rationale: "a dearer cable"},
			}}
		judge := &models.Evaluation{Evaluator: "llm-judge:m:trajectory-v1", EvaluatorVersion: "trajectory-v1", Kind: models.EvaluationJudge,
			Verdict: models.OutcomeFailure, Score: score(0), JudgeScore: judgeScore(3)}
		refreshed := f.evaluate(t, ids[0], models.EpisodeOutcome{Steps: 4}, models.EvaluationBatch{Primary: rubric, Others: []*models.Evaluation{judge}})
		require.Equal(t, []int64{f.run.ID}, refreshed, "the metrics refresh is enqueued in the same transaction")

		var evs []models.Evaluation
		require.NoError(t, db.Gorm().Preload("RubricJudgments").Where("attempt_id = ?", ids[0]).Order("id").Find(&evs).Error)
		require.Len(t, evs, 2)
		require.True(t, evs[0].IsPrimary)
		require.True(t, evs[0].IsCurrent)
		require.Equal(t, models.EvaluationRubric, evs[0].Kind)
		require.Equal(t, int64(1200), evs[0].TokensIn)
		require.Len(t, evs[0].RubricJudgments, 2)
		require.Equal(t, models.JSONInts{2, 3}, evs[0].RubricJudgments[0].EvidenceSteps)
		require.False(t, evs[1].IsPrimary)
		require.Equal(t, 3, *evs[1].JudgeScore)

		var a models.Attempt
		require.NoError(t, db.Gorm().First(&a, ids[0]).Error)
		require.Equal(t, models.AttemptDone, a.Status)
		require.Equal(t, models.OutcomeFailure, a.Outcome)
		require.InDelta(t, 0.6, *a.Score, 1e-9)

		// A redelivered job records nothing twice.
		_, err := db.RecordEvaluations(f.system, ids[0], models.EvaluationBatch{Primary: &models.Evaluation{Evaluator: "x", Verdict: models.OutcomeSuccess}}, nil)
		require.NoError(t, err)
		var n int64
		require.NoError(t, db.Gorm().Model(&models.Evaluation{}).Where("attempt_id = ?", ids[0]).Count(&n).Error)
		require.EqualValues(t, 2, n)

		// No judge: the attempt is done but not judged, and keeps no outcome.
		f.evaluate(t, ids[1], models.EpisodeOutcome{Steps: 2}, models.EvaluationBatch{})
		a = models.Attempt{}
		require.NoError(t, db.Gorm().First(&a, ids[1]).Error)
		require.Equal(t, models.AttemptDone, a.Status)
		require.Empty(t, a.Outcome)

		_, err = db.RecordEvaluations(f.member, ids[2], models.EvaluationBatch{}, nil)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "only the queue records evaluations")
	})
}

func TestStore_Rescore(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.dispatch(t, f.run.ID)
		check := func(verdict string, s float64) *models.Evaluation {
			return &models.Evaluation{Evaluator: "webarena-verified", EvaluatorVersion: "webarena-verified@1", Verdict: verdict, Score: score(s)}
		}
		f.evaluate(t, ids[0], models.EpisodeOutcome{Steps: 3}, models.EvaluationBatch{Primary: check(models.OutcomeFailure, 0)})
		f.evaluate(t, ids[1], models.EpisodeOutcome{Steps: 3}, models.EvaluationBatch{Primary: check(models.OutcomeSuccess, 1)})

		var queued []int64
		var rescoreID string
		enqueue := func(_ context.Context, _ *sql.Tx, attemptIDs []int64, id string) error {
			queued, rescoreID = attemptIDs, id
			return nil
		}
		for _, ctx := range []context.Context{f.anon, f.member} {
			_, err := servicetest.Runs(db, 0).Rescore(ctx, models.RescoreScope{RunID: f.run.ID})
			require.Contains(t, []string{models.EUNAUTHORIZED, models.EFORBIDDEN}, models.ErrorCode(err))
		}
		_, err := db.RescoreAttempts(f.admin, models.RescoreScope{RunID: 999999}, enqueue)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		_, err = db.RescoreAttempts(f.admin, models.RescoreScope{BenchmarkID: 999999}, enqueue)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

		n, err := db.RescoreAttempts(f.admin, models.RescoreScope{}, enqueue)
		require.NoError(t, err)
		require.Equal(t, 2, n, "only finished attempts are re-scored")
		require.Equal(t, ids[:2], queued)

		// The run is on the public board, so its change log notes the re-scoring.
		f.publish(t, f.run.ID, true)
		// The new verdict flips the first attempt; the old one stays as history.
		batch := models.EvaluationBatch{Primary: check(models.OutcomeSuccess, 1), RescoreID: rescoreID}
		_, err = db.RecordEvaluations(f.system, ids[0], batch, nil)
		require.NoError(t, err)
		batch.Primary = check(models.OutcomeSuccess, 1)
		_, err = db.RecordEvaluations(f.system, ids[0], batch, nil)
		require.NoError(t, err, "a redelivered re-scoring job")
		// The second attempt keeps its verdict: graded again, not changed.
		_, err = db.RecordEvaluations(f.system, ids[1], models.EvaluationBatch{Primary: check(models.OutcomeSuccess, 1), RescoreID: rescoreID}, nil)
		require.NoError(t, err)

		var evs []models.Evaluation
		require.NoError(t, db.Gorm().Where("attempt_id = ?", ids[0]).Order("id").Find(&evs).Error)
		require.Len(t, evs, 2, "history kept, the redelivery recorded nothing")
		require.False(t, evs[0].IsPrimary)
		require.False(t, evs[0].IsCurrent)
		require.True(t, evs[1].IsPrimary)
		require.True(t, evs[1].Rescore)

		var run models.Run
		require.NoError(t, db.Gorm().First(&run, f.run.ID).Error)
		require.Equal(t, 2, run.Successes, "run totals follow the new verdict")
		require.NotNil(t, run.RescoredAt)
		require.Equal(t, "webarena-verified@1", run.RescoredWith)
		var events int64
		require.NoError(t, db.Gorm().Table("leaderboard_events").Where("run_id = ? AND kind = ?", f.run.ID, "rescored").Count(&events).Error)
		require.EqualValues(t, 1, events, "one change-log line per re-scoring request")
		require.Equal(t, rescoreID, run.RescoreID)
		require.NotNil(t, run.RescoreSuccessesBefore)
		require.Equal(t, 1, *run.RescoreSuccessesBefore, "the run's successes before the request graded its first attempt")
		require.Equal(t, 1, run.RescoreChanged, "one of the two attempts graded again changed its outcome")

		changes, err := db.LeaderboardChanges(f.anon, models.BenchmarkScope{}, "mini", models.ChangeFilter{Page: 1, PerPage: 10})
		require.NoError(t, err)
		var rescored *models.LeaderboardChange
		for i := range changes.Changes {
			if changes.Changes[i].Kind == models.EventRescored {
				rescored = &changes.Changes[i]
			}
		}
		require.NotNil(t, rescored, "the public log lists the re-scoring")
		require.True(t, rescored.Known())
		require.Equal(t, 1, *rescored.SuccessesBefore)
		require.Equal(t, 2, *rescored.SuccessesAfter)
		require.Equal(t, run.TasksTotal, *rescored.Tasks)
		require.Equal(t, 1, rescored.SuccessDelta())
		require.Equal(t, 1, rescored.ChangedAttempts)
		require.Equal(t, "webarena-verified@1", rescored.Evaluators)

		// A later request starts its own count from the run's totals then.
		second := models.EvaluationBatch{Primary: check(models.OutcomeFailure, 0), RescoreID: rescoreID + "-2"}
		_, err = db.RecordEvaluations(f.system, ids[1], second, nil)
		require.NoError(t, err)
		require.NoError(t, db.Gorm().First(&run, f.run.ID).Error)
		require.Equal(t, 2, *run.RescoreSuccessesBefore)
		require.Equal(t, 1, run.RescoreChanged)
		require.Equal(t, 1, run.Successes)
	})
}

func TestStore_RunMetrics(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.dispatch(t, f.run.ID)
		// t1 and t3 are the "smoke" subset. t1: perfect rubric, judge 5;
		// t2: rubric 0.5, judge 2; t3: rubric 0, judge error (left out);
		// t4: not judged at all.
		grade := func(id int64, rubricScore float64, judge *int, judgeVerdict string) models.EvaluationBatch {
			verdict := models.OutcomeFailure
			if rubricScore == 1 {
				verdict = models.OutcomeSuccess
			}
			b := models.EvaluationBatch{Primary: &models.Evaluation{Evaluator: "r", Kind: models.EvaluationRubric, Verdict: verdict, Score: score(rubricScore)}}
			b.Others = append(b.Others, &models.Evaluation{Evaluator: "j", Kind: models.EvaluationJudge, Verdict: judgeVerdict, Score: score(0), JudgeScore: judge})
			return b
		}
		f.evaluate(t, ids[0], models.EpisodeOutcome{Steps: 4, Cost: 0.2}, grade(ids[0], 1, judgeScore(5), models.OutcomeSuccess))
		f.evaluate(t, ids[1], models.EpisodeOutcome{Steps: 2, Cost: 0.2}, grade(ids[1], 0.5, judgeScore(2), models.OutcomeFailure))
		f.evaluate(t, ids[2], models.EpisodeOutcome{Steps: 10, ErrorClass: models.ErrorClassBudget, ErrorMessage: "step budget"}, grade(ids[2], 0, nil, models.OutcomeFailure))
		f.evaluate(t, ids[3], models.EpisodeOutcome{Steps: 1}, models.EvaluationBatch{})

		_, err := servicetest.Runs(db, 0).RunMetrics(f.anon, f.run.ID)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "an unpublished run's metrics are the team's")
		live, err := servicetest.Runs(db, 0).RunMetrics(f.member, f.run.ID)
		require.NoError(t, err, "computed on the fly before the first refresh")

		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(service.NewMetrics(db).RefreshRunMetrics(f.member, f.run.ID)))
		require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.system, f.run.ID))
		require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.system, f.run.ID), "refreshing twice replaces the rows")
		all, err := servicetest.Runs(db, 0).RunMetrics(f.member, f.run.ID)
		require.NoError(t, err)
		require.Equal(t, live, all, "the precomputed rows match the live computation")
		require.Len(t, all, 2)

		full := all[0]
		require.Equal(t, "full", full.Subset)
		require.False(t, full.Restricted)
		m := full.Metrics
		require.Equal(t, 4, m.N)
		require.Equal(t, 3, m.Graded, "the not-judged attempt has no outcome")
		require.Equal(t, 1, m.Successes)
		require.Equal(t, 0, m.Errors, "the budget stop is no error")
		require.Equal(t, 2, m.Failures, "but a failure")
		require.Equal(t, 2, m.JudgeScore.N, "the judge's error is left out")
		require.InDelta(t, 3.5, m.JudgeScore.Mean, 1e-9)
		require.InDelta(t, 0.5, m.RubricScore.Mean, 1e-9)
		require.InDelta(t, 1.0/3, *m.PerfectRate, 1e-9)
		require.Equal(t, 1, m.ErrorClasses[models.ErrorClassBudget])
		require.Len(t, full.Breakdowns[stats.DimensionDifficulty], 2+1, "easy, hard, medium")

		smoke := all[1]
		require.Equal(t, "smoke", smoke.Subset)
		require.True(t, smoke.Restricted, "a full run's numbers on the smoke subset")
		require.Equal(t, 2, smoke.Metrics.N)
		require.Equal(t, 1, smoke.Metrics.Successes)

		var entries []models.LeaderboardEntry
		require.NoError(t, db.Gorm().Where("run_id = ?", f.run.ID).Order("subset_name").Find(&entries).Error)
		require.Len(t, entries, 2)
		require.Equal(t, 4, entries[0].Tasks)
		require.InDelta(t, 1.0/3, entries[0].SuccessRate, 1e-9)
		require.Less(t, entries[0].CILow, entries[0].SuccessRate)
		require.InDelta(t, 3.5, *entries[0].JudgeScore, 1e-9)
		require.Equal(t, 2, entries[0].Judged)
		require.True(t, entries[1].Restricted)
		require.Equal(t, models.Unknown{}, entries[0].Unknown, "an executed run knows its usage")

		// An attempt whose upload did not state its cost leaves the board
		// entry's cost unknown, not a smaller sum.
		require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("id = ?", ids[0]).Update("cost_unknown", true).Error)
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.run.ID).Update("evaluations_version", gorm.Expr("evaluations_version + 1")).Error)
		require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.system, f.run.ID))
		require.NoError(t, db.Gorm().Where("run_id = ?", f.run.ID).Order("subset_name").Find(&entries).Error)
		require.Equal(t, models.Unknown{Cost: true}, entries[0].Unknown)
		rows, err := servicetest.Runs(db, 0).RunMetrics(f.member, f.run.ID)
		require.NoError(t, err)
		require.True(t, rows[0].Metrics.Unknown.Cost)
	})
}

func TestStore_BenchmarkJudge(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		key := "sk-judge-secret"
		// Who may set a judge and which settings are valid is the benchmark
		// service's (service/benchmarks_test.go); storage seals and stores.
		update := models.JudgeUpdate{BaseURL: "https://judge.example.org/v1", Model: "judge-1", APIKey: &key}
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(db.SetBenchmarkJudge(f.admin, "nope", update)))
		require.NoError(t, db.SetBenchmarkJudge(f.admin, "mini", update))

		var raw models.Benchmark
		require.NoError(t, db.Gorm().Where("slug = ?", "mini").Take(&raw).Error)
		require.NotContains(t, raw.JudgeAPIKey, key, "the key is stored sealed")
		require.NotEmpty(t, raw.JudgeAPIKey)

		ids := f.dispatch(t, f.run.ID)
		spec := f.claimedSpec(t, ids[0])
		require.Equal(t, models.JudgeSettings{BaseURL: "https://judge.example.org/v1", Model: "judge-1", APIKey: key}, spec.Judge)
		require.Len(t, spec.Task.RubricItems, 2, "the evaluation sees the task's rubric")

		// Keeping the key while changing the model, then going back to the server's judge.
		require.NoError(t, db.SetBenchmarkJudge(f.admin, "mini", models.JudgeUpdate{BaseURL: "https://judge.example.org/v1", Model: "judge-2"}))
		spec, err := db.EvaluationSpec(f.system, ids[0])
		require.NoError(t, err)
		require.Equal(t, key, spec.Judge.APIKey)
		// A key that cannot be opened (the server's secret changed) does not
		// stop grading: the evaluation knows why the judge is unusable.
		require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "mini").Update("judge_api_key", "bm90IHNlYWxlZA==").Error)
		spec, err = db.EvaluationSpec(f.system, ids[0])
		require.NoError(t, err)
		require.NotEmpty(t, spec.Judge.KeyError)
		require.Empty(t, spec.Judge.APIKey)

		// A stored key never follows the judge to another host.
		require.NoError(t, db.SetBenchmarkJudge(f.admin, "mini", update))
		require.NoError(t, db.SetBenchmarkJudge(f.admin, "mini", models.JudgeUpdate{BaseURL: "https://other.example.org/v1", Model: "judge-2"}))
		spec, err = db.EvaluationSpec(f.system, ids[0])
		require.NoError(t, err)
		require.Empty(t, spec.Judge.APIKey)

		require.NoError(t, db.SetBenchmarkJudge(f.admin, "mini", models.JudgeUpdate{}))
		spec, err = db.EvaluationSpec(f.system, ids[0])
		require.NoError(t, err)
		require.Equal(t, models.JudgeSettings{}, spec.Judge)
	})
}

// TestStore_ConcurrentEvaluationsCompleteTheRun: the last attempts of a run
// evaluated at the same moment still complete it (each transaction recounts
// the open attempts only after the previous one committed).
func TestStore_ConcurrentEvaluationsCompleteTheRun(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		for round := range 5 {
			run := f.run
			if round > 0 {
				var err error
				run, err = f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Parallelism: 4}, 0)
				require.NoError(t, err)
			}
			ids := f.dispatch(t, run.ID)
			for _, id := range ids {
				status, spec, err := db.ClaimAttempt(f.system, id, storagetest.Claimant(time.Hour))
				require.NoError(t, err)
				require.Equal(t, models.ClaimOK, status)
				require.NoError(t, db.FinishEpisode(f.system, id, spec.Try, models.EpisodeOutcome{Steps: 1}, func(context.Context, *sql.Tx) error { return nil }, nil))
			}
			errs := make(chan error, len(ids))
			for _, id := range ids {
				go func() {
					_, err := db.RecordEvaluations(f.system, id, models.EvaluationBatch{Primary: &models.Evaluation{Evaluator: "x", Verdict: models.OutcomeSuccess, Score: score(1)}}, nil)
					errs <- err
				}()
			}
			for range ids {
				require.NoError(t, <-errs)
			}
			status, err := db.RunStatus(f.system, run.ID)
			require.NoError(t, err)
			require.Equal(t, models.RunCompleted, status, "round %d", round)
		}
	})
}

func TestStore_SetBenchmarkEvaluator(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		// The fixture's benchmark is rubric-graded: make it a WebArena-Verified one.
		require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "mini").Update("evaluator", models.EvaluatorWebArenaVerified).Error)

		lenient := models.EvaluatorWebArenaVerifiedLenient
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(db.SetBenchmarkEvaluator(f.admin, "nope", lenient, evaltest.Registry().Readings)))
		err := db.SetBenchmarkEvaluator(f.admin, "mini", models.EvaluatorRubric, evaltest.Registry().Readings)
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Equal(t, "evaluator", models.ErrorField(err))

		require.NoError(t, db.SetBenchmarkEvaluator(f.admin, "mini", lenient, evaltest.Registry().Readings))
		spec := f.claimedSpec(t, f.dispatch(t, f.run.ID)[0])
		require.Equal(t, lenient, spec.Evaluator, "attempts are graded by the reading chosen now")
		board, err := db.Leaderboard(f.admin, "mini", models.SubsetFull, models.LeaderboardQuery{}, benchScope(f.admin))
		require.NoError(t, err)
		require.Equal(t, lenient, board.Evaluator, "the board names the reading it is graded by (the registry says it is lenient)")

		require.NoError(t, db.SetBenchmarkEvaluator(f.admin, "mini", models.EvaluatorWebArenaVerified, evaltest.Registry().Readings))
		require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "mini").Update("evaluator", models.EvaluatorRubric).Error)
		err = db.SetBenchmarkEvaluator(f.admin, "mini", lenient, evaltest.Registry().Readings)
		require.Equal(t, models.EINVALID, models.ErrorCode(err), "only WebArena-Verified benchmarks have a lenient reading")
	})
}

// claimedSpec claims an attempt and returns what its evaluation is given.
func (f *readFixture) claimedSpec(t *testing.T, attemptID int64) *models.EpisodeSpec {
	t.Helper()
	status, _, err := f.db.ClaimAttempt(f.system, attemptID, storagetest.Claimant(time.Hour))
	require.NoError(t, err)
	require.Equal(t, models.ClaimOK, status)
	spec, err := f.db.EvaluationSpec(f.system, attemptID)
	require.NoError(t, err)
	return spec
}
