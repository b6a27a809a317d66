package storage_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// breakdownFixture is the mini benchmark (t1 easy shopping, t2 medium, t3
// hard multi-site, t4 easy; smoke = t1 and t3) with four graded runs:
//
//	A  lab's walker, full, published:   t1 ✓  t2 ✗  t3 ✓  t4 error
//	B  other's theirs, full, published: t1 ✓  t2 ✓  t3 ✗  t4 not graded
//	C  lab's walker, smoke, published:  t1 ✗  t3 ✓
//	D  lab's walker, full, unpublished: every task ✓
type breakdownFixture struct {
	*readFixture
	a, b, c, d *models.Run
	attempts   map[int64][]int64 // run id -> attempt ids in task order
}

func newBreakdownFixture(t *testing.T, db *storage.DB) *breakdownFixture {
	t.Helper()
	f := &breakdownFixture{readFixture: newReadFixture(t, db), attempts: map[int64][]int64{}}
	f.a = f.run
	var err error
	f.b, err = f.queue(t, f.outsider, models.RunRequest{TeamSlug: "other", AgentSlug: "theirs", BenchmarkSlug: "mini"}, 0)
	require.NoError(t, err)
	f.c, err = f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Subset: "smoke"}, 0)
	require.NoError(t, err)
	f.d, err = f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"}, 0)
	require.NoError(t, err)
	const s, x, e = models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError
	f.grade(t, f.a, []string{s, x, s, e}, 0.10)
	f.grade(t, f.b, []string{s, s, x, ""}, 0.40)
	f.grade(t, f.c, []string{x, s}, 0.05)
	f.grade(t, f.d, []string{s, s, s, s}, 0.01)
	for _, r := range []*models.Run{f.a, f.b, f.c} {
		f.publish(t, r.ID, true)
	}
	return f
}

// grade dispatches a run and finishes its attempts in task order with the
// given verdicts ("" finishes without one), each attempt costing cost, then
// computes the run's leaderboard entries.
func (f *breakdownFixture) grade(t *testing.T, run *models.Run, verdicts []string, cost float64) {
	t.Helper()
	ids := f.dispatch(t, run.ID)
	require.Len(t, ids, len(verdicts))
	f.attempts[run.ID] = ids
	for i, id := range ids {
		out := models.EpisodeOutcome{Steps: 2 + i, Cost: cost}
		if verdicts[i] == "" {
			status, spec, err := f.db.ClaimAttempt(f.system, id, storagetest.Claimant(time.Hour))
			require.NoError(t, err)
			require.Equal(t, models.ClaimOK, status)
			require.NoError(t, f.db.FinishEpisode(f.system, id, spec.Try, out, func(context.Context, *sql.Tx) error { return nil }, nil))
			continue
		}
		f.finish(t, id, out, &models.Evaluation{Evaluator: "check", Verdict: verdicts[i], Score: score(0)})
	}
	require.NoError(t, service.NewMetrics(f.db).RefreshRunMetrics(f.system, run.ID))
}

func entryRuns(entries []models.BreakdownEntry) []int64 {
	ids := make([]int64, len(entries))
	for i, e := range entries {
		ids[i] = e.RunID
	}
	return ids
}

func TestStore_BreakdownBoard(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newBreakdownFixture(t, db)
		full := models.BreakdownQuery{Slug: "mini", Subset: models.SubsetFull}

		t.Run("FullBoardBySite", func(t *testing.T) {
			q := full
			q.Dimension = models.BreakdownSite
			board, err := servicetest.Runs(db, 0).BreakdownBoard(f.anon, q)
			require.NoError(t, err)
			require.Equal(t, models.BoardRef{
				BenchmarkSlug: "mini", BenchmarkName: "Mini bench", BenchmarkPublished: true,
				Version: 1, CurrentVersion: 1, Subset: "full", Subsets: []string{"full", "smoke"},
			}, board.Board)
			require.Equal(t, []int64{f.b.ID, f.a.ID}, entryRuns(board.Entries), "best first; the smoke run and the unpublished run are not on the full board")

			b, a := board.Entries[0], board.Entries[1]
			require.Equal(t, "Theirs", b.AgentName)
			require.Equal(t, "OTHER", b.TeamName)
			require.Equal(t, models.OriginExecuted, b.Origin)
			require.False(t, b.Restricted)
			require.Equal(t, 2, b.Success.Successes)
			require.Equal(t, 3, b.Success.Graded, "the attempt without a verdict is not graded")
			require.InDelta(t, 2.0/3, b.Success.Rate, 1e-9)
			require.Less(t, b.Success.Low, b.Success.Rate)
			require.Greater(t, b.Success.High, b.Success.Rate)
			require.InDelta(t, 0.40, b.CostPerTask, 1e-9)
			require.InDelta(t, 3.5, b.MeanSteps, 1e-9, "steps 2, 3, 4, 5")
			require.Equal(t, 4, b.Tasks)

			require.Equal(t, 4, a.Success.Graded, "an error counts against the rate")
			require.InDelta(t, 0.5, a.Success.Rate, 1e-9)

			require.Equal(t, []string{"gitlab", "multi-site", "shopping"}, board.Groups)
			require.Equal(t, models.RateCell{Successes: 1, Graded: 2, Rate: 0.5, Low: a.Groups["shopping"].Low, High: a.Groups["shopping"].High}, a.Groups["shopping"], "t1 ✓ and t4 error")
			require.Equal(t, 1, b.Groups["shopping"].Graded, "t4 has no verdict")
			require.Equal(t, []string{"easy", "medium", "hard"}, board.Difficulties, "easy to hard, not by name")
			require.Equal(t, 1, a.Difficulty["hard"].Successes)
		})
		t.Run("Dimensions", func(t *testing.T) {
			for dim, groups := range map[string][]string{
				models.BreakdownDifficulty: {"easy", "medium", "hard"},
				models.BreakdownDomain:     {"e-commerce", "software", models.UnlabeledGroup},
				models.BreakdownAttribute:  {"action-based", "multi-website", "multihop", "structured", models.UnlabeledGroup},
				models.BreakdownTaskType:   {"action", "qa"},
			} {
				q := full
				q.Dimension = dim
				board, err := servicetest.Runs(db, 0).BreakdownBoard(f.anon, q)
				require.NoError(t, err, dim)
				require.Equal(t, dim, board.Dimension)
				require.Equal(t, groups, board.Groups, dim)
			}
			q := full
			board, err := servicetest.Runs(db, 0).BreakdownBoard(f.anon, q)
			require.NoError(t, err)
			require.Equal(t, models.BreakdownSite, board.Dimension, "the site is the default")
		})
		t.Run("SubsetBoard", func(t *testing.T) {
			board, err := servicetest.Runs(db, 0).BreakdownBoard(f.anon, models.BreakdownQuery{Slug: "mini", Subset: "smoke", Dimension: models.BreakdownDifficulty})
			require.NoError(t, err)
			require.Equal(t, []int64{f.a.ID, f.b.ID, f.c.ID}, entryRuns(board.Entries), "ties on rate and interval keep run order")
			require.True(t, board.Entries[0].Restricted, "a full run restricted to the subset's tasks")
			require.False(t, board.Entries[2].Restricted)
			require.Equal(t, 2, board.Entries[0].Success.Graded, "only t1 and t3 count")
			require.Equal(t, []string{"easy", "hard"}, board.Groups)
		})
		t.Run("UnpublishedRunsNeverAppear", func(t *testing.T) {
			for _, ctx := range []context.Context{f.anon, f.member, f.admin} {
				board, err := servicetest.Runs(db, 0).BreakdownBoard(ctx, full)
				require.NoError(t, err)
				require.NotContains(t, entryRuns(board.Entries), f.d.ID)
			}
		})
		t.Run("HiddenRunsLeave", func(t *testing.T) {
			_, err := servicetest.Moderation(db).HideRun(f.admin, f.b.ID, "Ran with the answers in its prompt.")
			require.NoError(t, err)
			t.Cleanup(func() {
				_, err := servicetest.Moderation(db).UnhideRun(f.admin, f.b.ID)
				require.NoError(t, err)
			})
			for _, ctx := range []context.Context{f.anon, f.outsider, f.admin} {
				board, err := servicetest.Runs(db, 0).BreakdownBoard(ctx, full)
				require.NoError(t, err)
				require.Equal(t, []int64{f.a.ID}, entryRuns(board.Entries), "a hidden run leaves the board, for its team and admins too")
				m, err := servicetest.Runs(db, 0).TaskMatrix(ctx, models.BreakdownQuery{Slug: "mini", Subset: "smoke", Page: 1, PerPage: 10})
				require.NoError(t, err)
				require.Equal(t, []models.MatrixEntry{
					{RunID: f.a.ID, AgentName: "Walker", TeamName: "LAB", Restricted: true},
					{RunID: f.c.ID, AgentName: "Walker", TeamName: "LAB"},
				}, m.Entries)
				require.Equal(t, []int{1, 2}, []int{m.Tasks[0].Solved, m.Tasks[0].Graded}, "its outcomes leave the solve counts")
			}
		})
		t.Run("Errors", func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				q     models.BreakdownQuery
				code  string
				field string
			}{
				{"UnknownDimension", models.BreakdownQuery{Slug: "mini", Subset: "full", Dimension: "colour"}, models.EINVALID, "dim"},
				{"IntentTemplateIsNotOffered", models.BreakdownQuery{Slug: "mini", Subset: "full", Dimension: "intent_template"}, models.EINVALID, "dim"},
				{"UnknownSubset", models.BreakdownQuery{Slug: "mini", Subset: "nope"}, models.ENOTFOUND, ""},
				{"UnknownBenchmark", models.BreakdownQuery{Slug: "nope", Subset: "full"}, models.ENOTFOUND, ""},
				{"UnknownVersion", models.BreakdownQuery{Slug: "mini", Subset: "full", Version: 2}, models.ENOTFOUND, ""},
			} {
				_, err := servicetest.Runs(db, 0).BreakdownBoard(f.anon, tc.q)
				require.Equal(t, tc.code, models.ErrorCode(err), tc.name)
				require.Equal(t, tc.field, models.ErrorField(err), tc.name)
			}
			_, err := servicetest.Runs(db, 0).BreakdownBoard(f.anon, models.BreakdownQuery{Slug: "mini", Subset: "full", Version: 1})
			require.NoError(t, err, "the current version by number")
		})
		t.Run("UnpublishedBenchmark", func(t *testing.T) {
			require.NoError(t, db.SetBenchmarkPublished(f.admin, "mini", false))
			t.Cleanup(func() { require.NoError(t, db.SetBenchmarkPublished(f.admin, "mini", true)) })
			for _, ctx := range []context.Context{f.anon, f.member} {
				_, err := servicetest.Runs(db, 0).BreakdownBoard(ctx, full)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
				_, err = servicetest.Runs(db, 0).TaskMatrix(ctx, models.BreakdownQuery{Slug: "mini", Subset: "full", Page: 1, PerPage: 10})
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			}
			board, err := servicetest.Runs(db, 0).BreakdownBoard(f.admin, full)
			require.NoError(t, err)
			require.False(t, board.Board.BenchmarkPublished)
		})
	})
}

func TestStore_TaskMatrix(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newBreakdownFixture(t, db)
		externalIDs := func(m *models.TaskMatrix) []string {
			var ids []string
			for _, task := range m.Tasks {
				ids = append(ids, task.ExternalID)
			}
			return ids
		}
		cell := func(run *models.Run, task int, outcome string) models.MatrixCell {
			return models.MatrixCell{AttemptID: f.attempts[run.ID][task], Outcome: outcome}
		}
		const s, x, e = models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError

		t.Run("FullBoard", func(t *testing.T) {
			m, err := servicetest.Runs(db, 0).TaskMatrix(f.anon, models.BreakdownQuery{Slug: "mini", Subset: "full", Page: 1, PerPage: 100})
			require.NoError(t, err)
			require.Equal(t, []models.MatrixEntry{
				{RunID: f.b.ID, AgentName: "Theirs", TeamName: "OTHER"},
				{RunID: f.a.ID, AgentName: "Walker", TeamName: "LAB"},
			}, m.Entries, "the board's published entries, best first; never the unpublished run")
			require.Equal(t, 4, m.Total)
			require.Equal(t, 1, m.Pages())
			// Easy first: t1 (2 of 2 solved) before t4 (0 of 1); then medium
			// t2, then hard t3.
			require.Equal(t, []string{"t1", "t4", "t2", "t3"}, externalIDs(m))
			require.Equal(t, "easy", m.Tasks[0].Difficulty)
			require.Equal(t, "Add the cheapest USB-C cable to the cart.", m.Tasks[0].Intent)
			require.Equal(t, []int{2, 2}, []int{m.Tasks[0].Solved, m.Tasks[0].Graded})
			require.Equal(t, []int{0, 1}, []int{m.Tasks[1].Solved, m.Tasks[1].Graded})
			require.Equal(t, []models.MatrixCell{cell(f.b, 0, s), cell(f.a, 0, s)}, m.Tasks[0].Cells)
			require.Equal(t, []models.MatrixCell{cell(f.b, 3, ""), cell(f.a, 3, e)}, m.Tasks[1].Cells, "an attempt without a verdict has an id and no outcome")
			require.Equal(t, []models.MatrixCell{cell(f.b, 2, x), cell(f.a, 2, s)}, m.Tasks[3].Cells)
		})
		t.Run("SubsetBoardRestrictsFullRuns", func(t *testing.T) {
			m, err := servicetest.Runs(db, 0).TaskMatrix(f.anon, models.BreakdownQuery{Slug: "mini", Subset: "smoke", Page: 1, PerPage: 100})
			require.NoError(t, err)
			require.Equal(t, []int64{f.a.ID, f.b.ID, f.c.ID}, []int64{m.Entries[0].RunID, m.Entries[1].RunID, m.Entries[2].RunID})
			require.True(t, m.Entries[0].Restricted)
			require.Equal(t, []string{"t1", "t3"}, externalIDs(m), "only the subset's tasks")
			require.Equal(t, []models.MatrixCell{cell(f.a, 0, s), cell(f.b, 0, s), cell(f.c, 0, x)}, m.Tasks[0].Cells)
			require.Equal(t, []int{2, 3}, []int{m.Tasks[0].Solved, m.Tasks[0].Graded})
		})
		t.Run("Pages", func(t *testing.T) {
			q := models.BreakdownQuery{Slug: "mini", Subset: "full", Page: 2, PerPage: 3}
			m, err := servicetest.Runs(db, 0).TaskMatrix(f.anon, q)
			require.NoError(t, err)
			require.Equal(t, 2, m.Pages())
			require.Equal(t, []string{"t3"}, externalIDs(m))
			require.Len(t, m.Entries, 2, "every page has every entry")

			q.Page = 3
			_, err = servicetest.Runs(db, 0).TaskMatrix(f.anon, q)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "page", models.ErrorField(err))
			q.Page = 0
			_, err = servicetest.Runs(db, 0).TaskMatrix(f.anon, q)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
		})
		t.Run("NoEntries", func(t *testing.T) {
			for _, r := range []*models.Run{f.a, f.b, f.c} {
				f.publish(t, r.ID, false)
			}
			t.Cleanup(func() {
				for _, r := range []*models.Run{f.a, f.b, f.c} {
					f.publish(t, r.ID, true)
				}
			})
			m, err := servicetest.Runs(db, 0).TaskMatrix(f.admin, models.BreakdownQuery{Slug: "mini", Subset: "full", Page: 1, PerPage: 100})
			require.NoError(t, err)
			require.Empty(t, m.Entries, "not even for admins: the board is public")
			require.Equal(t, []string{"t1", "t4", "t2", "t3"}, externalIDs(m), "tasks are listed without outcomes")
			require.Empty(t, m.Tasks[0].Cells)
			board, err := servicetest.Runs(db, 0).BreakdownBoard(f.admin, models.BreakdownQuery{Slug: "mini", Subset: "full"})
			require.NoError(t, err)
			require.Empty(t, board.Entries)
			require.Empty(t, board.Groups)
		})
	})
}
