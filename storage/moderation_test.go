package storage_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// secretDetails are a check's details quoting the task's hidden answer, as
// WebArena-Verified's evaluators do in expected values and messages.
const secretDetails = `{"task_id":"t1","status":"success","score":1,"evaluators_results":[{"evaluator_name":"AgentResponseEvaluator","status":"success","score":1,"actual":"cable","expected":{"retrieved_data":["SECRET-ANSWER-42"]},"assertions":[{"name":"retrieved_data","passed":true,"message":"Expected SECRET-ANSWER-42"}],"error_msg":null}]}`

// complete dispatches a run and grades every attempt: t1 succeeds (with a
// trajectory judge's 4/5 beside the check), t2 fails, t3 ends in an agent
// error, t4 succeeds. It returns the attempt ids in task order.
func (f *readFixture) complete(t *testing.T, runID int64) []int64 {
	t.Helper()
	ids := f.dispatch(t, runID)
	require.Len(t, ids, 4)
	grade := func(id int64, out models.EpisodeOutcome, b models.EvaluationBatch) {
		status, spec, err := f.db.ClaimAttempt(f.system, id, storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.NoError(t, f.db.FinishEpisode(f.system, id, spec.Try, out, func(context.Context, *sql.Tx) error { return nil }, nil))
		_, err = f.db.RecordEvaluations(f.system, id, b, nil)
		require.NoError(t, err)
	}
	check := func(verdict string, s float64) *models.Evaluation {
		return &models.Evaluation{Evaluator: "webarena-verified", EvaluatorVersion: "webarena-verified@1", Kind: models.EvaluationCheck,
			Verdict: verdict, Score: score(s), Details: fmt.Sprintf(`{"status":%q,"score":%v,"evaluators_results":[]}`, verdict, s)}
	}
	four := 4
	first := check(models.OutcomeSuccess, 1)
	first.Details = secretDetails
	grade(ids[0], models.EpisodeOutcome{Steps: 3, Duration: 5 * time.Second}, models.EvaluationBatch{Primary: first, Others: []*models.Evaluation{{
		Evaluator: "llm-judge:test:trajectory-v2", Kind: models.EvaluationJudge, Verdict: models.OutcomeSuccess, Score: score(0.75), JudgeScore: &four,
		Details: `{"judge":"trajectory","success":true,"score":4,"rationale":"fine"}`,
	}}})
	grade(ids[1], models.EpisodeOutcome{Steps: 2, Duration: time.Second}, models.EvaluationBatch{Primary: check(models.OutcomeFailure, 0)})
	grade(ids[2], models.EpisodeOutcome{Steps: 1, Duration: time.Second, ErrorClass: models.ErrorClassAgent, ErrorMessage: "agent answered 500"},
		models.EvaluationBatch{Primary: check(models.OutcomeFailure, 0)})
	grade(ids[3], models.EpisodeOutcome{Steps: 4, Duration: 2 * time.Second}, models.EvaluationBatch{Primary: check(models.OutcomeSuccess, 1)})
	var run models.Run
	require.NoError(t, f.db.Gorm().First(&run, runID).Error)
	require.Equal(t, models.RunCompleted, run.Status)
	return ids
}

// events lists a run's change log kinds in order.
func events(t *testing.T, db *storage.DB, runID int64) []models.LeaderboardEvent {
	t.Helper()
	var out []models.LeaderboardEvent
	require.NoError(t, db.Gorm().Where("run_id = ?", runID).Order("id").Find(&out).Error)
	return out
}

func kinds(evs []models.LeaderboardEvent) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// TestStore_HiddenRunVisibility: a run the administrators hid shows others
// only its summary and the public reason; its team and administrators still
// see everything. (The moderation rules are tested in service.)
func TestStore_HiddenRunVisibility(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.complete(t, f.run.ID)
		_, err := servicetest.Moderation(db).PublishRun(f.member, f.run.ID)
		require.NoError(t, err)
		_, err = servicetest.Moderation(db).HideRun(f.admin, f.run.ID, "  The agent read the answers from a leaked file.  ")
		require.NoError(t, err)

		t.Run("HiddenRunVisibility", func(t *testing.T) {
			for name, ctx := range map[string]context.Context{"anonymous": f.anon, "outsider": f.outsider} {
				ov, err := servicetest.Runs(db, 0).RunOverview(ctx, f.run.ID, models.AttemptFilter{Page: 1, PerPage: 10})
				require.NoError(t, err, name)
				require.True(t, ov.AttemptsWithheld, name)
				require.Empty(t, ov.Page.Attempts, name)
				require.Equal(t, "The agent read the answers from a leaked file.", ov.Moderation.HiddenReason, "the reason is public")
				_, _, err = servicetest.Runs(db, 0).RunAttempts(ctx, f.run.ID, 1, 10)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), name)
				_, err = db.AttemptTimeline(ctx, runScope(ctx), ids[0])
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), name)
				_, err = servicetest.Runs(db, 0).RunMetrics(ctx, f.run.ID)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), name)
				err = servicetest.Runs(db, 0).RunResults(ctx, f.run.ID, func([]models.RunResult) error { return nil })
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), name)
				_, err = servicetest.Runs(db, 0).RunProgress(ctx, f.run.ID)
				require.NoError(t, err, "%s: the summary stays public", name)
			}
			for name, ctx := range map[string]context.Context{"member": f.member, "admin": f.admin} {
				ov, err := servicetest.Runs(db, 0).RunOverview(ctx, f.run.ID, models.AttemptFilter{Page: 1, PerPage: 10})
				require.NoError(t, err, name)
				require.False(t, ov.AttemptsWithheld, name)
				require.Len(t, ov.Page.Attempts, 4, name)
				_, err = db.AttemptTimeline(ctx, runScope(ctx), ids[0])
				require.NoError(t, err, name)
			}
		})

	})
}

func TestStore_RecordRescoredEvent(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		f.complete(t, f.run.ID)
		record := func(rescoreID string) {
			t.Helper()
			require.NoError(t, db.Gorm().Transaction(func(tx *gorm.DB) error {
				return storage.RecordRescoredEvent(tx, f.run.ID, rescoreID, time.Now().UTC(), models.RescoreChange{})
			}))
		}
		record("r1")
		require.Empty(t, events(t, db, f.run.ID), "an unpublished run is not logged")

		_, err := servicetest.Moderation(db).PublishRun(f.member, f.run.ID)
		require.NoError(t, err)
		record("r2")
		record("r2") // the same re-scoring grading another attempt
		record("")   // not a re-scoring
		record("r3")
		evs := events(t, db, f.run.ID)
		require.Equal(t, []string{models.EventAdded, models.EventRescored, models.EventRescored}, kinds(evs))
		require.Equal(t, models.ActorRoleSystem, evs[1].ActorRole)
		require.Equal(t, "r2", evs[1].RescoreID)

		err = db.Gorm().Transaction(func(tx *gorm.DB) error {
			return storage.RecordLeaderboardEvent(tx, &models.LeaderboardEvent{RunID: f.run.ID, Kind: "deleted", ActorRole: models.ActorRoleAdmin})
		})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
	})
}

func TestStore_LeaderboardChanges(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		f.complete(t, f.run.ID)
		smoke, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Subset: "smoke"}, 0)
		require.NoError(t, err)
		require.NoError(t, db.DispatchRun(f.system, smoke.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
		for _, id := range episodes0(t, db, smoke.ID) {
			f.finish(t, id, models.EpisodeOutcome{Steps: 1, Duration: time.Second}, &models.Evaluation{Evaluator: "test", Verdict: models.OutcomeSuccess, Score: score(1)})
		}
		_, err = servicetest.Moderation(db).PublishRun(f.member, f.run.ID)
		require.NoError(t, err)
		_, err = servicetest.Moderation(db).PublishRun(f.member, smoke.ID)
		require.NoError(t, err)
		_, err = servicetest.Moderation(db).HideRun(f.admin, smoke.ID, "Reproduction failed.")
		require.NoError(t, err)
		_, err = servicetest.Moderation(db).WithdrawRun(f.member, f.run.ID)
		require.NoError(t, err)

		page := func(ctx context.Context, filter models.ChangeFilter) *models.LeaderboardChanges {
			t.Helper()
			ch, err := servicetest.Moderation(db).LeaderboardChanges(ctx, "mini", filter)
			require.NoError(t, err)
			return ch
		}
		all := page(f.anon, models.ChangeFilter{Page: 1, PerPage: 10})
		require.Equal(t, 4, all.Total)
		require.Equal(t, []string{"full", "smoke"}, all.Subsets)
		got := []string{}
		for _, c := range all.Changes {
			got = append(got, fmt.Sprintf("%d %s %s", c.RunID, c.Kind, c.SubsetName))
		}
		require.Equal(t, []string{
			fmt.Sprintf("%d withdrawn full", f.run.ID), fmt.Sprintf("%d hidden smoke", smoke.ID),
			fmt.Sprintf("%d added smoke", smoke.ID), fmt.Sprintf("%d added full", f.run.ID),
		}, got, "newest first")
		require.Equal(t, "Reproduction failed.", all.Changes[1].Reason)
		require.Equal(t, "Walker", all.Changes[0].AgentName)
		require.Equal(t, "lab", all.Changes[0].TeamSlug)
		require.False(t, all.Changes[0].RunPublished, "the withdrawn run is no longer linked")
		require.True(t, all.Changes[1].RunPublished)

		require.Equal(t, 2, page(f.anon, models.ChangeFilter{Subset: "full", Page: 1, PerPage: 10}).Total)
		require.Equal(t, 4, page(f.anon, models.ChangeFilter{Subset: "smoke", Page: 1, PerPage: 10}).Total, "a full run shows on every subset's board")
		second := page(f.anon, models.ChangeFilter{Page: 2, PerPage: 3})
		require.Len(t, second.Changes, 1)
		require.False(t, second.HasMore())

		_, err = servicetest.Moderation(db).LeaderboardChanges(f.anon, "mini", models.ChangeFilter{Subset: "nope", Page: 1, PerPage: 10})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Equal(t, "subset", models.ErrorField(err))
		_, err = servicetest.Moderation(db).LeaderboardChanges(f.anon, "nope", models.ChangeFilter{Page: 1, PerPage: 10})
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		_, err = servicetest.Moderation(db).LeaderboardChanges(f.anon, "mini", models.ChangeFilter{Page: 0, PerPage: 10})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))

		require.NoError(t, db.SetBenchmarkPublished(f.system, "mini", false))
		for name, ctx := range map[string]context.Context{"anonymous": f.anon, "member": f.member} {
			_, err = servicetest.Moderation(db).LeaderboardChanges(ctx, "mini", models.ChangeFilter{Page: 1, PerPage: 10})
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), name)
		}
		require.Equal(t, 4, page(f.admin, models.ChangeFilter{Page: 1, PerPage: 10}).Total)
	})
}

func TestStore_RunOverviewFilters(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)

		ov, err := servicetest.Runs(db, 0).RunOverview(f.member, f.run.ID, models.AttemptFilter{Page: 1, PerPage: 10})
		require.NoError(t, err)
		require.Zero(t, ov.Page.AttemptsTotal, "no attempt before dispatch")
		require.Equal(t, []string{"gitlab", "reddit", "shopping", models.MultiSite}, ov.Facets.Sites)
		require.Equal(t, []string{"easy", "hard", "medium"}, ov.Facets.Difficulties)

		f.complete(t, f.run.ID)
		tasks := func(filter models.AttemptFilter) []string {
			t.Helper()
			if filter.Page == 0 {
				filter.Page, filter.PerPage = 1, 10
			}
			ov, err := servicetest.Runs(db, 0).RunOverview(f.member, f.run.ID, filter)
			require.NoError(t, err)
			out := []string{}
			for _, a := range ov.Page.Attempts {
				out = append(out, a.TaskExternalID)
			}
			if filter.Page == 1 {
				require.Equal(t, len(out), ov.Page.AttemptsTotal)
			}
			require.Equal(t, filter, ov.Filter)
			return out
		}
		require.Equal(t, []string{"t1", "t2", "t3", "t4"}, tasks(models.AttemptFilter{}))
		require.Equal(t, []string{"t1", "t4"}, tasks(models.AttemptFilter{Outcome: models.OutcomeSuccess}))
		require.Equal(t, []string{"t2"}, tasks(models.AttemptFilter{Outcome: models.OutcomeFailure}))
		require.Equal(t, []string{"t3"}, tasks(models.AttemptFilter{Outcome: models.OutcomeError}))
		require.Equal(t, []string{}, tasks(models.AttemptFilter{Outcome: models.OutcomeNone}))
		require.Equal(t, []string{"t3"}, tasks(models.AttemptFilter{ErrorClass: models.ErrorClassAgent}))
		require.Equal(t, []string{}, tasks(models.AttemptFilter{ErrorClass: models.ErrorClassEvaluation}))
		require.Equal(t, []string{"t1", "t4"}, tasks(models.AttemptFilter{Site: "shopping"}))
		require.Equal(t, []string{"t2", "t3"}, tasks(models.AttemptFilter{Site: "gitlab"}), "a multi-site task touches gitlab too")
		require.Equal(t, []string{"t3"}, tasks(models.AttemptFilter{Site: models.MultiSite}))
		require.Equal(t, []string{"t1", "t4"}, tasks(models.AttemptFilter{Difficulty: "easy"}))
		require.Equal(t, []string{"t4"}, tasks(models.AttemptFilter{Difficulty: "easy", Outcome: models.OutcomeSuccess, Site: "shopping", Page: 2, PerPage: 1}))

		for _, tc := range []struct {
			filter models.AttemptFilter
			field  string
		}{
			{models.AttemptFilter{Outcome: "won"}, "outcome"},
			{models.AttemptFilter{ErrorClass: "cosmic-ray"}, "error_class"},
			{models.AttemptFilter{Site: "wikipedia"}, "site"},
			{models.AttemptFilter{Difficulty: "impossible"}, "difficulty"},
		} {
			tc.filter.Page, tc.filter.PerPage = 1, 10
			_, err := servicetest.Runs(db, 0).RunOverview(f.member, f.run.ID, tc.filter)
			require.Equal(t, models.EINVALID, models.ErrorCode(err), tc.field)
			require.Equal(t, tc.field, models.ErrorField(err))
			_, err = servicetest.Runs(db, 0).RunOverview(f.outsider, f.run.ID, tc.filter)
			if tc.field == "outcome" || tc.field == "error_class" {
				require.Equal(t, models.EINVALID, models.ErrorCode(err), "checked before the run is read: reveals nothing")
			} else {
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "a private run is not found before its filter is checked")
			}
		}
		_, err = servicetest.Runs(db, 0).RunOverview(f.member, f.run.ID, models.AttemptFilter{Page: 0, PerPage: 10})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
	})
}

func TestStore_RunResults(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		f.complete(t, f.run.ID)
		collect := func(ctx context.Context) []models.RunResult {
			t.Helper()
			var out []models.RunResult
			require.NoError(t, servicetest.Runs(db, 0).RunResults(ctx, f.run.ID, func(b []models.RunResult) error { out = append(out, b...); return nil }))
			return out
		}
		rs := collect(f.member)
		require.Len(t, rs, 4)
		require.Equal(t, "t1", rs[0].TaskExternalID)
		require.Equal(t, []string{"shopping"}, []string(rs[0].TaskSites))
		require.Equal(t, models.EvaluationCheck, rs[0].EvaluationKind)
		require.Equal(t, "webarena-verified", rs[0].Evaluator)
		require.Equal(t, models.OutcomeSuccess, rs[0].Verdict)
		require.Equal(t, 3, rs[0].Steps)
		require.Equal(t, int64(5000), rs[0].DurationMS)
		require.NotNil(t, rs[0].JudgeScore)
		require.Equal(t, 4, *rs[0].JudgeScore)
		require.Nil(t, rs[1].JudgeScore)
		require.Equal(t, models.OutcomeError, rs[2].Outcome, "the agent's error overrides the check's failure")
		require.Equal(t, models.OutcomeFailure, rs[2].Verdict)
		require.Equal(t, models.ErrorClassAgent, rs[2].ErrorClass)
		require.NotContains(t, rs[0].EvaluationDetails, "SECRET-ANSWER-42", "team members get the public view")
		require.Contains(t, rs[0].EvaluationDetails, `"evaluators_results":[{"evaluator_name":"AgentResponseEvaluator"`)

		require.Contains(t, collect(f.admin)[0].EvaluationDetails, "SECRET-ANSWER-42", "administrators see what the evaluator expected")
		err := servicetest.Runs(db, 0).RunResults(f.outsider, f.run.ID, func([]models.RunResult) error { return nil })
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		f.publish(t, f.run.ID, true)
		for _, r := range collect(f.anon) {
			require.NotContains(t, r.EvaluationDetails, "SECRET")
		}
	})
}

// TestStore_RunResultsBatches: a run larger than one batch comes out whole, in
// task order, in batches that each end before the next query.
func TestStore_RunResultsBatches(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		var b strings.Builder
		b.WriteString(`{"proctor_benchmark": 1, "name": "Wide", "evaluator": "rubric"}` + "\n")
		const n = 450
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, `{"id": "%d", "intent": "Task %d", "start_urls": ["__SHOPPING__"], "sites": ["shopping"], "rubric": [{"requirement": "Done"}]}`+"\n", i, i)
		}
		_, err := db.ImportBenchmark(f.system, "wide", parseBenchFixture(t, b.String()), "wide.jsonl", 0)
		require.NoError(t, err)
		require.NoError(t, db.SetRevealReferences(f.system, "wide", true))
		run, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "wide"}, 0)
		require.NoError(t, err)
		require.NoError(t, db.DispatchRun(f.system, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))

		var sizes []int
		var got []string
		require.NoError(t, servicetest.Runs(db, 0).RunResults(f.member, run.ID, func(batch []models.RunResult) error {
			sizes = append(sizes, len(batch))
			for _, r := range batch {
				got = append(got, r.TaskExternalID)
			}
			return nil
		}))
		require.Equal(t, []int{200, 200, 50}, sizes)
		require.Len(t, got, n)
		for i, id := range got {
			require.Equal(t, fmt.Sprint(i+1), id, "task order across batches")
		}

		stop := fmt.Errorf("client went away")
		calls := 0
		err = servicetest.Runs(db, 0).RunResults(f.member, run.ID, func([]models.RunResult) error { calls++; return stop })
		require.ErrorIs(t, err, stop)
		require.Equal(t, 1, calls, "an error from emit ends the export")
	})
}
