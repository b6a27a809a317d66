package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// readFixture is a run fixture with an admin, an anonymous visitor and one run
// of the lab team queued by its member.
type readFixture struct {
	*runFixture
	admin, anon context.Context
	run         *models.Run
}

func newReadFixture(t *testing.T, db *storage.DB) *readFixture {
	t.Helper()
	f := &readFixture{runFixture: newRunFixture(t, db), anon: context.Background()}
	f.admin = actorCtx(agentTestUser(t, db, "admin@runs.test", true))
	run, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Parallelism: 2}, 0)
	require.NoError(t, err)
	f.run = run
	return f
}

// dispatch creates the run's attempts and returns their ids in task order.
func (f *readFixture) dispatch(t *testing.T, runID int64) []int64 {
	t.Helper()
	require.NoError(t, f.db.DispatchRun(f.system, runID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	return episodes0(t, f.db, runID)
}

// finish claims an attempt, records its steps and outcome and evaluates it.
func (f *readFixture) finish(t *testing.T, attemptID int64, out models.EpisodeOutcome, ev *models.Evaluation) {
	t.Helper()
	status, spec, err := f.db.ClaimAttempt(f.system, attemptID, storagetest.Claimant(time.Hour))
	require.NoError(t, err)
	require.Equal(t, models.ClaimOK, status)
	require.NoError(t, f.db.FinishEpisode(f.system, attemptID, spec.Try, out, func(context.Context, *sql.Tx) error { return nil }, nil))
	_, err = f.db.RecordEvaluation(f.system, attemptID, ev)
	require.NoError(t, err)
}

func (f *readFixture) publish(t *testing.T, runID int64, published bool) {
	t.Helper()
	require.NoError(t, f.db.Gorm().Model(&models.Run{}).Where("id = ?", runID).Update("published", published).Error)
}

func score(v float64) *float64 { return &v }

func TestStore_RunVisibility(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		theirs, err := f.queue(t, f.outsider, models.RunRequest{TeamSlug: "other", AgentSlug: "theirs", BenchmarkSlug: "mini", Subset: "smoke"}, 0)
		require.NoError(t, err)

		ids := func(items []models.RunListItem) []int64 {
			out := []int64{}
			for _, it := range items {
				out = append(out, it.ID)
			}
			return out
		}
		list := func(ctx context.Context, team string) []int64 {
			t.Helper()
			items, total, err := servicetest.Runs(db, 0).ListRuns(ctx, models.RunFilter{TeamSlug: team, Page: 1, PerPage: 10})
			require.NoError(t, err)
			require.Len(t, items, total)
			return ids(items)
		}
		check := func(ctx context.Context, runID int64, code string) {
			t.Helper()
			_, err := servicetest.Runs(db, 0).RunProgress(ctx, runID)
			require.Equal(t, code, models.ErrorCode(err), "%v", err)
			_, _, err = servicetest.Runs(db, 0).RunAttempts(ctx, runID, 1, 10)
			require.Equal(t, code, models.ErrorCode(err), "%v", err)
			_, err = db.RunPage(ctx, runScope(ctx), runID, 1, 10)
			require.Equal(t, code, models.ErrorCode(err), "%v", err)
		}

		t.Run("Unpublished", func(t *testing.T) {
			check(f.anon, f.run.ID, models.ENOTFOUND)
			check(f.outsider, f.run.ID, models.ENOTFOUND)
			check(f.member, f.run.ID, "")
			check(f.admin, f.run.ID, "")
			check(f.member, 999999, models.ENOTFOUND)

			require.Equal(t, []int64{}, list(f.anon, ""))
			require.Equal(t, []int64{theirs.ID}, list(f.outsider, ""))
			require.Equal(t, []int64{f.run.ID}, list(f.member, ""))
			require.Equal(t, []int64{theirs.ID, f.run.ID}, list(f.admin, ""), "newest first")
			require.Equal(t, []int64{f.run.ID}, list(f.member, "lab"))
			require.Equal(t, []int64{f.run.ID}, list(f.admin, "lab"))
			require.Equal(t, []int64{}, list(f.outsider, "lab"))
			require.Equal(t, []int64{}, list(f.anon, "lab"))
		})
		t.Run("Published", func(t *testing.T) {
			f.publish(t, f.run.ID, true)
			defer f.publish(t, f.run.ID, false)
			check(f.anon, f.run.ID, "")
			check(f.outsider, f.run.ID, "")
			require.Equal(t, []int64{f.run.ID}, list(f.anon, ""))
			require.Equal(t, []int64{theirs.ID, f.run.ID}, list(f.outsider, ""))
			require.Equal(t, []int64{f.run.ID}, list(f.outsider, "lab"))

			page, err := db.RunPage(f.outsider, runScope(f.outsider), f.run.ID, 1, 10)
			require.NoError(t, err)
			require.False(t, page.CanManage)
			page, err = db.RunPage(f.member, runScope(f.member), f.run.ID, 1, 10)
			require.NoError(t, err)
			require.True(t, page.CanManage)
		})
		t.Run("ListFields", func(t *testing.T) {
			items, _, err := servicetest.Runs(db, 0).ListRuns(f.member, models.RunFilter{Page: 1, PerPage: 10})
			require.NoError(t, err)
			require.Len(t, items, 1)
			it := items[0]
			require.Equal(t, "Walker", it.AgentName)
			require.Equal(t, "walker", it.AgentSlug)
			require.Equal(t, "lab", it.TeamSlug)
			require.Equal(t, "LAB", it.TeamName)
			require.Equal(t, "mini", it.BenchmarkSlug)
			require.Equal(t, models.SubsetFull, it.Subset)
			require.Equal(t, models.RunQueued, it.Status)
			require.Equal(t, models.OriginExecuted, it.Origin)
			require.Equal(t, 4, it.TasksTotal)
			require.WithinDuration(t, f.run.CreatedAt, it.CreatedAt, time.Second)
		})
		t.Run("TeamRuns", func(t *testing.T) {
			tr, err := servicetest.Runs(db, 0).TeamRuns(f.member, "lab", 1, 10)
			require.NoError(t, err)
			require.True(t, tr.CanQueue)
			require.Equal(t, 1, tr.Total)
			tr, err = servicetest.Runs(db, 0).TeamRuns(f.anon, "lab", 1, 10)
			require.NoError(t, err)
			require.False(t, tr.CanQueue)
			require.Zero(t, tr.Total)
			_, err = servicetest.Runs(db, 0).TeamRuns(f.anon, "nope", 1, 10)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})
		t.Run("Errors", func(t *testing.T) {
			_, _, err := servicetest.Runs(db, 0).ListRuns(f.member, models.RunFilter{TeamSlug: "nope", Page: 1, PerPage: 10})
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			_, _, err = servicetest.Runs(db, 0).ListRuns(f.member, models.RunFilter{Page: 0, PerPage: 10})
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			_, _, err = servicetest.Runs(db, 0).RunAttempts(f.member, f.run.ID, 1, 0)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
		})
		t.Run("Pagination", func(t *testing.T) {
			items, total, err := servicetest.Runs(db, 0).ListRuns(f.admin, models.RunFilter{Page: 2, PerPage: 1})
			require.NoError(t, err)
			require.Equal(t, 2, total)
			require.Equal(t, []int64{f.run.ID}, ids(items))
		})
	})
}

func TestStore_RunProgress(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)

		p, err := servicetest.Runs(db, 0).RunProgress(f.member, f.run.ID)
		require.NoError(t, err)
		require.Equal(t, 4, p.Pending, "before dispatch every task waits")
		require.Zero(t, p.ETA)
		require.Equal(t, "Walker", p.AgentName)
		require.Equal(t, "lab", p.TeamSlug)
		require.Equal(t, "LAB", p.TeamName)
		require.Equal(t, "mini", p.Benchmark)
		require.NotZero(t, p.BenchmarkID)

		ids := f.dispatch(t, f.run.ID)
		require.Len(t, ids, 4)
		f.finish(t, ids[0], models.EpisodeOutcome{Steps: 2, Duration: 4 * time.Second}, &models.Evaluation{Evaluator: "test", Verdict: models.OutcomeSuccess, Score: score(1)})
		f.finish(t, ids[1], models.EpisodeOutcome{Steps: 1, Duration: 2 * time.Second, ErrorClass: models.ErrorClassAgent, ErrorMessage: "agent answered 500"},
			&models.Evaluation{Evaluator: "test", Verdict: models.OutcomeFailure, Score: score(0)})
		status, _, err := db.ClaimAttempt(f.system, ids[2], storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)

		p, err = servicetest.Runs(db, 0).RunProgress(f.admin, f.run.ID)
		require.NoError(t, err)
		require.Equal(t, 1, p.Pending)
		require.Equal(t, 1, p.Running)
		require.Equal(t, 2, p.Done)
		require.Equal(t, 50, p.Percent())
		require.Equal(t, 1, p.Run.Successes)
		require.Equal(t, map[string]int{models.ErrorClassAgent: 1}, p.ErrorsBy)
		// Mean 3 s × 2 left ÷ parallelism 2.
		require.Equal(t, 3*time.Second, p.ETA)

		t.Run("Attempts", func(t *testing.T) {
			items, total, err := servicetest.Runs(db, 0).RunAttempts(f.member, f.run.ID, 1, 10)
			require.NoError(t, err)
			require.Equal(t, 4, total)
			require.Equal(t, []string{"t1", "t2", "t3", "t4"}, []string{items[0].TaskExternalID, items[1].TaskExternalID, items[2].TaskExternalID, items[3].TaskExternalID})
			require.Equal(t, "Add the cheapest USB-C cable to the cart.", items[0].Intent)
			require.Equal(t, models.OutcomeSuccess, items[0].Outcome)
			require.Equal(t, 2, items[0].Steps)
			require.Equal(t, int64(4000), items[0].DurationMS)
			require.Equal(t, 1, items[0].Tries)
			require.Equal(t, models.OutcomeError, items[1].Outcome)
			require.Equal(t, models.ErrorClassAgent, items[1].ErrorClass)
			require.Equal(t, "agent answered 500", items[1].ErrorMessage)
			require.Equal(t, models.AttemptRunning, items[2].Status)
			require.Equal(t, models.AttemptPending, items[3].Status)
			require.Nil(t, items[3].Score)

			items, total, err = servicetest.Runs(db, 0).RunAttempts(f.member, f.run.ID, 2, 3)
			require.NoError(t, err)
			require.Equal(t, 4, total)
			require.Len(t, items, 1)
			require.Equal(t, "t4", items[0].TaskExternalID)
		})
	})
}

func TestStore_AttemptTimeline(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.dispatch(t, f.run.ID)
		first := ids[0] // task t1, the one with hidden fields
		status, spec, err := db.ClaimAttempt(f.system, first, storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.NoError(t, db.RecordStep(f.system, &models.Step{AttemptID: first, Index: 1, Action: `{"type":"answer","text":"cable"}`, Thought: "done"}, 1))
		require.NoError(t, db.RecordStep(f.system, &models.Step{AttemptID: first, Index: 0, Action: `{"type":"click","target":{"x":640,"y":400}}`,
			URL: "http://shop.test/", Title: "Shop", ScreenshotKey: "s/0.jpg", ThumbnailKey: "s/0-thumb.jpg",
			BlockedRequests: `["http://evil.test/x"]`, ObserveMS: 12, AgentMS: 34, ActMS: 56, PersistMS: 78}, 1))
		require.NoError(t, db.FinishEpisode(f.system, first, spec.Try, models.EpisodeOutcome{Steps: 2, FinalAnswer: `{"type":"answer","text":"cable"}`},
			func(context.Context, *sql.Tx) error { return nil }, nil))
		_, err = db.RecordEvaluation(f.system, first, &models.Evaluation{Evaluator: "webarena-verified", EvaluatorVersion: "1", Verdict: models.OutcomeFailure, Score: score(0),
			Details: `{"status":"failure","evaluators_results":[{"evaluator_name":"AgentResponseEvaluator","actual":"cable","expected":{"retrieved_data":["SECRET-ANSWER-42"]},"assertions":[{"name":"match","passed":false,"message":"Expected SECRET-ANSWER-42, got cable"}]}]}`})
		require.NoError(t, err)

		for _, ctx := range []context.Context{f.anon, f.outsider} {
			_, err := db.AttemptTimeline(ctx, runScope(ctx), first)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		}
		_, err = db.AttemptTimeline(f.member, runScope(f.member), 999999)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

		tl, err := db.AttemptTimeline(f.member, runScope(f.member), first)
		require.NoError(t, err)
		require.True(t, tl.CanManage)
		require.Equal(t, f.run.ID, tl.Run.ID)
		require.Equal(t, "walker", tl.Run.AgentSlug)
		require.Equal(t, "t1", tl.Task.ExternalID)
		require.Equal(t, []string{"__SHOPPING__"}, []string(tl.Task.StartURLs))
		require.False(t, tl.Task.HasSecrets(), "hidden task fields never reach a timeline")
		require.Len(t, tl.Steps, 2)
		require.Equal(t, 0, tl.Steps[0].Step.Index)
		require.Equal(t, models.ActClick, tl.Steps[0].Action.Type)
		x, y, ok := tl.Steps[0].Point()
		require.True(t, ok)
		require.Equal(t, []float64{640, 400}, []float64{x, y})
		require.Equal(t, []string{"http://evil.test/x"}, tl.Steps[0].Blocked)
		require.Equal(t, int64(56), tl.Steps[0].Step.ActMS)
		require.Equal(t, int64(78), tl.Steps[0].Step.PersistMS)
		_, _, ok = tl.Steps[1].Point()
		require.False(t, ok)
		require.Equal(t, models.ActAnswer, tl.FinalAction.Type)
		require.Equal(t, "cable", tl.FinalAction.Text)
		require.NotNil(t, tl.Evaluation)
		require.Equal(t, models.OutcomeFailure, tl.Evaluation.Verdict)
		require.NotContains(t, tl.Evaluation.Details, "SECRET-ANSWER-42", "expected values are hidden answers")
		require.Contains(t, tl.Evaluation.Details, `"actual":"cable"`)
		require.Contains(t, tl.Evaluation.Details, `"passed":false`)

		tl, err = db.AttemptTimeline(f.admin, runScope(f.admin), first)
		require.NoError(t, err)
		require.False(t, tl.Task.HasSecrets())
		require.Contains(t, tl.Evaluation.Details, "SECRET-ANSWER-42", "admins see what the evaluator expected")

		f.publish(t, f.run.ID, true)
		tl, err = db.AttemptTimeline(f.anon, runScope(f.anon), first)
		require.NoError(t, err)
		require.False(t, tl.CanManage)
		require.NotContains(t, tl.Evaluation.Details, "SECRET-ANSWER-42")

		tl, err = db.AttemptTimeline(f.member, runScope(f.member), ids[1])
		require.NoError(t, err)
		require.Empty(t, tl.Steps)
		require.Nil(t, tl.Evaluation)
		require.Nil(t, tl.FinalAction)
	})
}

func TestStore_CancelRun(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.dispatch(t, f.run.ID)
		f.finish(t, ids[0], models.EpisodeOutcome{Steps: 1}, &models.Evaluation{Evaluator: "test", Verdict: models.OutcomeSuccess, Score: score(1)})
		status, spec, err := db.ClaimAttempt(f.system, ids[1], storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)

		t.Run("Permissions", func(t *testing.T) {
			for _, ctx := range []context.Context{f.anon, f.outsider} {
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(db.CancelRun(ctx, runScope(ctx), f.run.ID, refuseOutsiders)))
			}
			f.publish(t, f.run.ID, true)
			defer f.publish(t, f.run.ID, false)
			// Who sees the published run but does not act for its team is
			// refused by the service's gate (service.Runs: EUNAUTHORIZED or
			// EFORBIDDEN).
			for _, ctx := range []context.Context{f.anon, f.outsider} {
				err := db.CancelRun(ctx, runScope(ctx), f.run.ID, refuseOutsiders)
				require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
				require.Equal(t, errOutsider, models.ErrorMessage(err))
			}
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(db.CancelRun(f.member, runScope(f.member), 999999, refuseOutsiders)))
		})

		require.NoError(t, db.CancelRun(f.member, runScope(f.member), f.run.ID, refuseOutsiders))
		var run models.Run
		require.NoError(t, db.Gorm().First(&run, f.run.ID).Error)
		require.Equal(t, models.RunCanceled, run.Status)
		require.NotNil(t, run.FinishedAt)
		require.Equal(t, 4, run.TasksDone)
		require.Equal(t, 1, run.Successes)
		require.Equal(t, 3, run.Errors)

		items, _, err := servicetest.Runs(db, 0).RunAttempts(f.member, f.run.ID, 1, 10)
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, items[0].Outcome, "finished attempts keep their outcome")
		for _, it := range items[1:] {
			require.Equal(t, models.AttemptDone, it.Status)
			require.Equal(t, models.OutcomeError, it.Outcome)
			require.Equal(t, models.ErrorClassCanceled, it.ErrorClass)
		}
		p, err := servicetest.Runs(db, 0).RunProgress(f.member, f.run.ID)
		require.NoError(t, err)
		require.Equal(t, map[string]int{models.ErrorClassCanceled: 3}, p.ErrorsBy)
		require.Zero(t, p.ETA)

		// The episode in flight finds nothing to record, and nothing is claimable.
		require.NoError(t, db.FinishEpisode(f.system, ids[1], spec.Try, models.EpisodeOutcome{Steps: 5}, func(context.Context, *sql.Tx) error {
			return errors.New("must not enqueue an evaluation")
		}, nil))
		status, _, err = db.ClaimAttempt(f.system, ids[2], storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimFinished, status)

		err = db.CancelRun(f.admin, runScope(f.admin), f.run.ID, refuseOutsiders)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "already finished")

		t.Run("BeforeDispatch", func(t *testing.T) {
			run, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"}, 0)
			require.NoError(t, err)
			require.NoError(t, db.CancelRun(f.admin, runScope(f.admin), run.ID, refuseOutsiders))
			var got []int64
			require.NoError(t, db.DispatchRun(f.system, run.ID, func(_ context.Context, _ *sql.Tx, _ *models.Run, ids []int64) error { got = ids; return nil }))
			require.Empty(t, got, "a canceled run is never dispatched")
		})
	})
}

func TestStore_ResetErroredAttempts(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.dispatch(t, f.run.ID)
		f.finish(t, ids[0], models.EpisodeOutcome{Steps: 1}, &models.Evaluation{Evaluator: "test", Verdict: models.OutcomeSuccess, Score: score(1)})
		f.finish(t, ids[1], models.EpisodeOutcome{Steps: 1, ErrorClass: models.ErrorClassEnvironment, ErrorMessage: "site down"},
			&models.Evaluation{Evaluator: "test", Verdict: models.OutcomeFailure, Score: score(0)})
		f.finish(t, ids[2], models.EpisodeOutcome{Steps: 1}, &models.Evaluation{Evaluator: "test", Verdict: models.OutcomeFailure, Score: score(0)})
		f.finish(t, ids[3], models.EpisodeOutcome{Steps: 1, ErrorClass: models.ErrorClassAgent, ErrorMessage: "garbage"},
			&models.Evaluation{Evaluator: "test", Verdict: models.OutcomeError, Score: score(0)})
		var run models.Run
		require.NoError(t, db.Gorm().First(&run, f.run.ID).Error)
		require.Equal(t, models.RunCompleted, run.Status)
		require.Equal(t, 2, run.Errors)

		var enqueued []int64
		enqueue := func(_ context.Context, tx *sql.Tx, _ *models.Run, ids []int64) error {
			require.NotNil(t, tx)
			enqueued = ids
			return nil
		}
		t.Run("Permissions", func(t *testing.T) {
			for _, ctx := range []context.Context{f.anon, f.outsider} {
				_, err := db.ResetErroredAttempts(ctx, runScope(ctx), f.run.ID, refuseOutsiders, enqueue)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			}
			f.publish(t, f.run.ID, true)
			defer f.publish(t, f.run.ID, false)
			for _, ctx := range []context.Context{f.anon, f.outsider} {
				_, err := db.ResetErroredAttempts(ctx, runScope(ctx), f.run.ID, refuseOutsiders, enqueue)
				require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
				require.Equal(t, errOutsider, models.ErrorMessage(err), "the service's gate refuses")
			}
			require.Nil(t, enqueued)
		})
		t.Run("EnqueueFailureWritesNothing", func(t *testing.T) {
			_, err := db.ResetErroredAttempts(f.member, runScope(f.member), f.run.ID, refuseOutsiders, func(context.Context, *sql.Tx, *models.Run, []int64) error { return context.DeadlineExceeded })
			require.Error(t, err)
			var got models.Run
			require.NoError(t, db.Gorm().First(&got, f.run.ID).Error)
			require.Equal(t, models.RunCompleted, got.Status)
		})

		t.Run("UploadedRunsAreNotRetried", func(t *testing.T) {
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.run.ID).Update("origin", models.OriginUploaded).Error)
			defer func() {
				require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.run.ID).Update("origin", models.OriginExecuted).Error)
			}()
			_, err := db.ResetErroredAttempts(f.member, runScope(f.member), f.run.ID, refuseOutsiders, enqueue)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.ErrorContains(t, err, "was uploaded, not executed by Proctor")
			require.Nil(t, enqueued)
		})

		n, err := db.ResetErroredAttempts(f.member, runScope(f.member), f.run.ID, refuseOutsiders, enqueue)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []int64{ids[1], ids[3]}, enqueued)
		run = models.Run{}
		require.NoError(t, db.Gorm().First(&run, f.run.ID).Error)
		require.Equal(t, models.RunRunning, run.Status)
		require.Nil(t, run.FinishedAt)
		require.Equal(t, 2, run.TasksDone)
		require.Zero(t, run.Errors)
		var a models.Attempt
		require.NoError(t, db.Gorm().First(&a, ids[1]).Error)
		require.Equal(t, models.AttemptPending, a.Status)
		require.Empty(t, a.Outcome)
		require.Empty(t, a.ErrorClass)
		require.Empty(t, a.ErrorMessage)
		require.Nil(t, a.Score)
		require.Equal(t, 1, a.Tries, "tries are kept")

		// The retried attempts run again as a new try and complete the run.
		f.finish(t, ids[1], models.EpisodeOutcome{Steps: 1}, &models.Evaluation{Evaluator: "test", Verdict: models.OutcomeSuccess, Score: score(1)})
		f.finish(t, ids[3], models.EpisodeOutcome{Steps: 1}, &models.Evaluation{Evaluator: "test", Verdict: models.OutcomeSuccess, Score: score(1)})
		require.NoError(t, db.Gorm().First(&run, f.run.ID).Error)
		require.Equal(t, models.RunCompleted, run.Status)
		require.Equal(t, 3, run.Successes)

		enqueued = nil
		n, err = db.ResetErroredAttempts(f.admin, runScope(f.admin), f.run.ID, refuseOutsiders, enqueue)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Nil(t, enqueued, "nothing to retry, nothing enqueued")
	})
}

func TestStore_RunFormOptions(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRunFixture(t, db)
		opts, err := db.RunFormOptions(f.member, runScope(f.member), "lab")
		require.NoError(t, err)
		require.Equal(t, "lab", opts.Team.Slug)
		require.Len(t, opts.Agents, 1, "upload-only agents cannot be run")
		require.Equal(t, "walker", opts.Agents[0].Slug)
		require.Nil(t, opts.Agents[0].SecretsCiphertext)
		require.Len(t, opts.Benchmarks, 1)
		require.Equal(t, models.RunFormBenchmark{Slug: "mini", Name: "Mini bench", Tasks: 4, Subsets: []string{"smoke"}}, opts.Benchmarks[0])

		// Who may ask is the service's rule (service.Runs.RunFormOptions).
		_, err = db.RunFormOptions(f.member, runScope(f.member), "nope")
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

		require.NoError(t, db.SetBenchmarkPublished(f.system, "mini", false))
		opts, err = db.RunFormOptions(f.member, runScope(f.member), "lab")
		require.NoError(t, err)
		require.Empty(t, opts.Benchmarks, "unpublished benchmarks are offered to admins only")
		opts, err = db.RunFormOptions(f.system, runScope(f.system), "lab")
		require.NoError(t, err)
		require.Len(t, opts.Benchmarks, 1, "a scope of all runs is offered unpublished benchmarks")
	})
}
