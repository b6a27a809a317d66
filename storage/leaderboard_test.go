package storage_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// leaderboardFixture has four graded runs of "mini" (four tasks; "smoke" is t1
// and t3), all but d published:
//
//	a  lab's walker, full:   t1 ✓  t2 ✗  t3 ✓  t4 error   (2/4 = 50%)
//	b  other's theirs, full: t1 ✓  t2 ✓  t3 ✗  t4 —       (2/3 graded)
//	c  lab's walker, smoke:  t1 ✗  t3 ✓                   (1/2)
//	d  lab's walker, full:   all ✓, private
type leaderboardFixture struct {
	*breakdownFixture
}

func newLeaderboardFixture(t *testing.T, db *storage.DB) *leaderboardFixture {
	t.Helper()
	return &leaderboardFixture{breakdownFixture: newBreakdownFixture(t, db)}
}

func boardRunIDs(lb *models.Leaderboard) []int64 {
	ids := []int64{}
	for _, r := range lb.Rows {
		ids = append(ids, r.RunID)
	}
	return ids
}

func TestStore_Leaderboard(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newLeaderboardFixture(t, db)
		board := func(ctx context.Context, subset string, q models.LeaderboardQuery) *models.Leaderboard {
			t.Helper()
			lb, err := db.Leaderboard(ctx, "mini", subset, q, benchScope(ctx))
			require.NoError(t, err)
			return lb
		}

		t.Run("PublishedOnly", func(t *testing.T) {
			for name, ctx := range map[string]context.Context{"anonymous": f.anon, "team member": f.member, "admin": f.admin} {
				lb := board(ctx, models.SubsetFull, models.LeaderboardQuery{})
				require.Equal(t, []int64{f.b.ID, f.a.ID}, boardRunIDs(lb), "%s sees the published full runs, best first; never d", name)
				require.Equal(t, 2, lb.Published)
			}
			lb := board(f.anon, models.SubsetFull, models.LeaderboardQuery{})
			require.Equal(t, "Mini bench", lb.BenchmarkName)
			require.Equal(t, 1, lb.Version)
			require.Equal(t, 4, lb.SubsetTasks)
			require.Equal(t, []string{"full", "smoke"}, lb.Subsets)
			b, a := lb.Rows[0], lb.Rows[1]
			require.InDelta(t, 2.0/3, b.SuccessRate, 1e-9)
			require.Equal(t, 2, b.Successes)
			require.Less(t, b.CILow, b.SuccessRate)
			require.Greater(t, b.CIHigh, b.SuccessRate)
			require.Equal(t, "Theirs", b.AgentName)
			require.Equal(t, "OTHER", b.TeamName)
			require.Equal(t, "other", b.TeamSlug)
			require.Equal(t, models.OriginExecuted, b.Origin)
			require.False(t, b.Restricted)
			require.InDelta(t, 0.10, a.CostPerTask, 1e-9)
			require.InDelta(t, 3.5, a.MeanSteps, 1e-9, "steps 2, 3, 4, 5")
			require.Equal(t, "1–2", a.RankText(), "three or four graded tasks cannot tell 50% from 67%")
			require.Equal(t, 1, b.RankBest)
			require.Equal(t, 2, b.RankWorst)
			require.False(t, lb.Shows(models.SortJudgeScore), "nothing is judged: the column is hidden")
		})

		t.Run("EveryEntryFigureReachesTheRow", func(t *testing.T) {
			// Every figure of an entry, each given a value of its own, is on
			// the board's row: a figure added to models.LeaderboardEntry (and
			// its column) reaches the board with no change to the query.
			var e models.LeaderboardEntry
			require.NoError(t, db.Gorm().Where("run_id = ? AND subset_name = ?", f.a.ID, models.SubsetFull).Take(&e).Error)
			saved := e
			t.Cleanup(func() { require.NoError(t, db.Gorm().Save(&saved).Error) })
			figures := fillEntryFigures(t, &e)
			require.NoError(t, db.Gorm().Save(&e).Error)
			lb := board(f.anon, models.SubsetFull, models.LeaderboardQuery{})
			i := slices.IndexFunc(lb.Rows, func(r models.LeaderboardRow) bool { return r.RunID == f.a.ID })
			require.GreaterOrEqual(t, i, 0)
			got := reflect.ValueOf(lb.Rows[i].LeaderboardEntry)
			for _, name := range figures {
				require.Equal(t, reflect.ValueOf(e).FieldByName(name).Interface(), got.FieldByName(name).Interface(), name)
			}
			require.Empty(t, lb.Rows[i].Metrics, "the metrics JSON is not read")
		})

		t.Run("RestrictedRowsOnSubsetBoard", func(t *testing.T) {
			lb := board(f.anon, "smoke", models.LeaderboardQuery{})
			require.Equal(t, 2, lb.SubsetTasks)
			require.Equal(t, []int64{f.a.ID, f.b.ID, f.c.ID}, boardRunIDs(lb))
			byRun := map[int64]models.LeaderboardRow{}
			for _, r := range lb.Rows {
				byRun[r.RunID] = r
			}
			require.True(t, byRun[f.a.ID].Restricted, "a full run on the smoke board is restricted to its tasks")
			require.Equal(t, models.SubsetFull, byRun[f.a.ID].RunSubset)
			require.InDelta(t, 1.0, byRun[f.a.ID].SuccessRate, 1e-9, "a solved t1 and t3")
			require.Equal(t, 2, byRun[f.a.ID].Tasks)
			require.True(t, byRun[f.b.ID].Restricted)
			require.False(t, byRun[f.c.ID].Restricted, "c ran the smoke subset itself")
			require.Equal(t, "smoke", byRun[f.c.ID].RunSubset)
		})

		t.Run("BestPerAgent", func(t *testing.T) {
			lb := board(f.anon, "smoke", models.LeaderboardQuery{BestPerAgent: true})
			require.Equal(t, []int64{f.a.ID, f.b.ID}, boardRunIDs(lb), "walker's best of a and c is a")
			require.Equal(t, 3, lb.Published)
		})

		t.Run("SortAndFilter", func(t *testing.T) {
			lb := board(f.anon, "smoke", models.LeaderboardQuery{Sort: models.SortCostPerTask, Dir: models.SortAsc})
			require.Equal(t, []int64{f.c.ID, f.a.ID, f.b.ID}, boardRunIDs(lb), "cheapest first")

			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.b.ID).Update("origin", models.OriginUploaded).Error)
			lb = board(f.anon, models.SubsetFull, models.LeaderboardQuery{Origin: models.OriginUploaded})
			require.Equal(t, []int64{f.b.ID}, boardRunIDs(lb))
			require.Equal(t, 2, lb.Published, "the count before filters")
			require.Equal(t, 1, lb.Rows[0].Rank, "ranks are among the rows shown")

			require.NoError(t, db.Gorm().Model(&models.Agent{}).Where("slug = ?", "theirs").Updates(map[string]any{"open_source": true, "model": "qwen2.5-vl-72b"}).Error)
			open := true
			lb = board(f.anon, models.SubsetFull, models.LeaderboardQuery{OpenSource: &open})
			require.Equal(t, []int64{f.b.ID}, boardRunIDs(lb), "an agent open-sourced since its run counts as open source")
			lb = board(f.anon, models.SubsetFull, models.LeaderboardQuery{Model: "QWEN"})
			require.Equal(t, []int64{f.b.ID}, boardRunIDs(lb), "no model in the snapshot: the agent's")

			finished := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.a.ID).Update("finished_at", finished).Error)
			day := func(s string) *time.Time { d, _ := time.Parse(time.DateOnly, s); return &d }
			lb = board(f.anon, models.SubsetFull, models.LeaderboardQuery{From: day("2026-03-04"), To: day("2026-03-04")})
			require.Equal(t, []int64{f.a.ID}, boardRunIDs(lb))
			require.True(t, lb.Rows[0].FinishedAt.Equal(finished))
		})

		t.Run("OneQueryForTheRows", func(t *testing.T) {
			var queries atomic.Int64
			count := func(*gorm.DB) { queries.Add(1) }
			cb := db.Gorm().Callback()
			require.NoError(t, cb.Query().After("gorm:query").Register("test:count_queries", count))
			require.NoError(t, cb.Row().After("gorm:row").Register("test:count_rows", count))
			t.Cleanup(func() {
				_ = cb.Query().Remove("test:count_queries")
				_ = cb.Row().Remove("test:count_rows")
			})
			queries.Store(0)
			small := board(f.anon, models.SubsetFull, models.LeaderboardQuery{})
			few := queries.Load()
			f.publish(t, f.d.ID, true)
			t.Cleanup(func() { f.publish(t, f.d.ID, false) })
			queries.Store(0)
			large := board(f.anon, "smoke", models.LeaderboardQuery{})
			require.Len(t, small.Rows, 2)
			require.Len(t, large.Rows, 4)
			require.Equal(t, few, queries.Load(), "more rows, no more queries")
			require.LessOrEqual(t, few, int64(4), "benchmark, versions, subsets, entries")
		})

		t.Run("HiddenRunsLeave", func(t *testing.T) {
			_, err := servicetest.Moderation(db).HideRun(f.admin, f.b.ID, "Reproduction failed.")
			require.NoError(t, err)
			for _, ctx := range []context.Context{f.anon, f.outsider, f.admin} {
				require.Equal(t, []int64{f.a.ID}, boardRunIDs(board(ctx, models.SubsetFull, models.LeaderboardQuery{})), "a hidden run is on no board")
			}
			_, err = servicetest.Moderation(db).UnhideRun(f.admin, f.b.ID)
			require.NoError(t, err)
			require.Equal(t, []int64{f.b.ID, f.a.ID}, boardRunIDs(board(f.anon, models.SubsetFull, models.LeaderboardQuery{})))
		})

		t.Run("NotFound", func(t *testing.T) {
			_, err := db.Leaderboard(f.anon, "mini", "nope", models.LeaderboardQuery{}, benchScope(f.anon))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "unknown subset")
			_, err = db.Leaderboard(f.anon, "nope", models.SubsetFull, models.LeaderboardQuery{}, benchScope(f.anon))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "unknown benchmark")
			_, err = db.Leaderboard(f.anon, "mini", models.SubsetFull, models.LeaderboardQuery{Version: 9}, benchScope(f.anon))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "unknown version")
		})

		t.Run("UnpublishedBenchmark", func(t *testing.T) {
			require.NoError(t, db.SetBenchmarkPublished(f.system, "mini", false))
			t.Cleanup(func() { require.NoError(t, db.SetBenchmarkPublished(f.system, "mini", true)) })
			for _, ctx := range []context.Context{f.anon, f.member} {
				_, err := db.Leaderboard(ctx, "mini", models.SubsetFull, models.LeaderboardQuery{}, benchScope(ctx))
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			}
			lb := board(f.admin, models.SubsetFull, models.LeaderboardQuery{})
			require.False(t, lb.BenchmarkPublished)
			require.NotEmpty(t, lb.Rows, "admins review the board before publishing")
		})
	})
}

// fillEntryFigures gives every figure of an entry (every field but its keys,
// its metrics JSON and its time) a distinct value that survives a round trip
// through either database, and returns the fields' names.
func fillEntryFigures(t *testing.T, e *models.LeaderboardEntry) []string {
	t.Helper()
	keys := map[string]bool{"ID": true, "RunID": true, "BenchmarkID": true, "VersionID": true, "SubsetName": true, "Metrics": true, "ComputedAt": true}
	v := reflect.ValueOf(e).Elem()
	var names []string
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if keys[name] {
			continue
		}
		f := v.Field(i)
		n := i + 1 // distinct per field, exact as a float of any width
		switch {
		case f.Kind() == reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		case f.Type() == reflect.TypeFor[models.Unknown]():
			f.Set(reflect.ValueOf(models.Unknown{Steps: true, Tokens: true, Cost: true}))
			names = append(names, name)
			continue
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(100 + n))
		case reflect.Float64:
			f.SetFloat(float64(n) / 64)
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("no test value for the entry's %s (%s): give it one here", name, f.Type())
		}
		names = append(names, name)
	}
	return names
}

// TestStore_LeaderboardVersions: a board is of one version; a new version
// starts an empty board and the old one stays reachable by number.
func TestStore_LeaderboardVersions(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newLeaderboardFixture(t, db)
		changed := strings.Replace(benchFixture, "Which project has the most stars?", "Which project has the most forks?", 1)
		res, err := db.ImportBenchmark(f.system, "mini", parseBenchFixture(t, changed), "mini-2.jsonl", 0)
		require.NoError(t, err)
		require.Equal(t, 2, res.Version.Version)

		lb, err := db.Leaderboard(f.anon, "mini", models.SubsetFull, models.LeaderboardQuery{}, benchScope(f.anon))
		require.NoError(t, err)
		require.Equal(t, 2, lb.Version)
		require.Empty(t, lb.Rows, "no run of version 2 yet")

		lb, err = db.Leaderboard(f.anon, "mini", models.SubsetFull, models.LeaderboardQuery{Version: 1}, benchScope(f.anon))
		require.NoError(t, err)
		require.Equal(t, 1, lb.Version)
		require.Equal(t, 2, lb.CurrentVersion)
		require.Equal(t, []int64{f.b.ID, f.a.ID}, boardRunIDs(lb))
	})
}
