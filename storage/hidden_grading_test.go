package storage_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/internal/hiddenfixture"
	"proctor/migrations"
	"proctor/models"
	"proctor/service/servicetest"
	"proctor/stats"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// rebuildsFixture is the read fixture, on which write grades the sample's
// two candidates on a one-task hidden-tests benchmark of its own
// (hiddenfixture.WriteRebuilds): the copy by lab's walker, the broken
// rebuild by lab's uploader, both runs published.
type rebuildsFixture struct {
	*readFixture
}

func newRebuildsFixture(t *testing.T, db *storage.DB) *rebuildsFixture {
	t.Helper()
	return &rebuildsFixture{readFixture: newReadFixture(t, db)}
}

// write imports the benchmark slug with the pass threshold (0 for the
// default) and writes the two candidates' runs.
func (f *rebuildsFixture) write(t *testing.T, slug string, threshold float64) *hiddenfixture.Rebuilds {
	t.Helper()
	agent := func(slug string) int64 {
		var a models.Agent
		require.NoError(t, f.db.Gorm().Where("slug = ?", slug).Take(&a).Error)
		return a.ID
	}
	var team models.Team
	require.NoError(t, f.db.Gorm().Where("slug = ?", "lab").Take(&team).Error)
	r, err := hiddenfixture.WriteRebuilds(context.Background(), f.db, hiddenfixture.RebuildsOptions{
		Slug: slug, TeamID: team.ID, CopyAgentID: agent("walker"), BrokenAgentID: agent("uploader"), Published: true, PassThreshold: threshold,
	})
	require.NoError(t, err)
	return r
}

// attempt is an attempt with its primary evaluation's details: the tally
// and why no test ran, if none did.
func (f *rebuildsFixture) attempt(t *testing.T, id int64) (models.Attempt, models.HiddenSummary, string) {
	t.Helper()
	var a models.Attempt
	require.NoError(t, f.db.Gorm().Take(&a, id).Error)
	var ev models.Evaluation
	require.NoError(t, f.db.Gorm().Where("attempt_id = ? AND is_primary = ? AND is_current = ?", a.ID, true, true).Take(&ev).Error)
	var details struct {
		models.HiddenSummary
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(ev.Details), &details))
	require.Equal(t, a.Outcome, ev.Verdict)
	return a, details.HiddenSummary, details.Error
}

// TestStore_HiddenOutcomeRule grades the sample's two candidates as the
// hidden-tests job records them: the offline build is not run and decides
// nothing, the score is the pass rate over the tests that ran, and the
// outcome follows it against the version's pass threshold, every test
// that ran by default.
func TestStore_HiddenOutcomeRule(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRebuildsFixture(t, db)
		t.Run("DefaultThreshold", func(t *testing.T) {
			r := f.write(t, "rebuilds-default", 0)
			copyAttempt, copySummary, _ := f.attempt(t, r.Attempts[r.CopyRunID])
			require.Equal(t, models.HiddenTally{Total: 43, Passed: 42, NotRun: 1}, copySummary.Overall)
			require.Equal(t, models.OutcomeSuccess, copyAttempt.Outcome, "every test that ran passed; the offline build decides nothing")
			require.InDelta(t, 1.0, *copyAttempt.Score, 1e-9, "42 of the 42 that ran")

			brokenAttempt, brokenSummary, _ := f.attempt(t, r.Attempts[r.BrokenRunID])
			require.Equal(t, models.HiddenTally{Total: 43, Passed: 31, Failed: 11, NotRun: 1}, brokenSummary.Overall)
			require.Equal(t, models.OutcomeFailure, brokenAttempt.Outcome)
			require.InDelta(t, 31.0/42, *brokenAttempt.Score, 1e-9)

			var run models.Run
			require.NoError(t, db.Gorm().Take(&run, r.CopyRunID).Error)
			require.Equal(t, models.RunCompleted, run.Status)
			require.Equal(t, 1, run.Successes)
			require.Zero(t, run.Errors)

			h, err := servicetest.Runs(db, 0).RunHiddenResults(f.anon, r.BrokenRunID)
			require.NoError(t, err)
			require.InDelta(t, models.DefaultPassThreshold, h.PassThreshold, 1e-9)
			require.Equal(t, models.HiddenTally{Total: 43, Passed: 31, Failed: 11, NotRun: 1}, h.PassRate.Tests)
			require.InDelta(t, 31.0/42, *h.PassRate.Rate, 1e-9)
			ci := stats.Wilson95(31, 42)
			require.InDelta(t, ci.Low, h.PassRate.Low, 1e-12)
			require.InDelta(t, ci.High, h.PassRate.High, 1e-12)
		})

		t.Run("StatedThreshold", func(t *testing.T) {
			r := f.write(t, "rebuilds-lenient", 0.7)
			brokenAttempt, _, _ := f.attempt(t, r.Attempts[r.BrokenRunID])
			require.Equal(t, models.OutcomeSuccess, brokenAttempt.Outcome, "31 of 42 (73.8%) reaches a threshold of 70%")
			require.InDelta(t, 31.0/42, *brokenAttempt.Score, 1e-9)
			h, err := servicetest.Runs(db, 0).RunHiddenResults(f.anon, r.BrokenRunID)
			require.NoError(t, err)
			require.InDelta(t, 0.7, h.PassThreshold, 1e-12)
			sum, err := db.BenchmarkSummary(f.anon, "rebuilds-lenient", benchScope(f.anon))
			require.NoError(t, err)
			require.InDelta(t, 0.7, sum.PassThreshold, 1e-12, "the benchmark's page states it")
		})

		t.Run("NothingRan", func(t *testing.T) {
			r := f.write(t, "rebuilds-none", 0)
			// A second try of the copy's attempt whose every test is not run.
			id := r.Attempts[r.CopyRunID]
			require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("id = ?", id).
				Updates(map[string]any{"status": models.AttemptRunning, "tries": 2}).Error)
			results := []models.HiddenTestResult{
				{TestID: "sys-offline-build", Group: models.HiddenGroupSystem, Result: models.HiddenNotRun, Reason: "not run here"},
			}
			_, err := db.SaveHiddenResults(f.system, id, models.HiddenOutcome{Try: 2, Results: results}, nil)
			require.NoError(t, err)
			a, _, why := f.attempt(t, id)
			require.Equal(t, models.OutcomeError, a.Outcome, "no test ran: nothing was learnt about the candidate")
			require.Nil(t, a.Score)
			require.Equal(t, "none of the suite's tests can run on this platform", why)
		})
	})
}

// TestStore_HiddenPassRateBoard: a hidden-tests board ranks runs by their
// overall pass rate (tests passed of tests run) with its Wilson interval,
// so that the near-perfect copy ranks first and the broken rebuild second,
// each in a place of its own; both show where they come from.
func TestStore_HiddenPassRateBoard(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRebuildsFixture(t, db)
		r := f.write(t, "rebuilds-board", 0)
		lb, err := db.Leaderboard(f.anon, "rebuilds-board", models.SubsetFull, models.LeaderboardQuery{}, benchScope(f.anon))
		require.NoError(t, err)
		require.True(t, lb.HiddenTests)
		require.Equal(t, "Pass rate", lb.RateLabel())
		require.InDelta(t, models.DefaultPassThreshold, lb.PassThreshold, 1e-12)
		require.Len(t, lb.Rows, 2)
		first, second := lb.Rows[0], lb.Rows[1]
		require.Equal(t, r.CopyRunID, first.RunID, "the copy ranks first")
		require.Equal(t, r.BrokenRunID, second.RunID)
		for _, c := range []struct {
			row            models.LeaderboardRow
			passed, ran    int
			rank           int
			counts, origin string
		}{
			{first, 42, 42, 1, "42 of 42 tests", models.OriginCandidates},
			{second, 31, 42, 2, "31 of 42 tests", models.OriginCandidates},
		} {
			row := c.row
			ci := stats.Wilson95(c.passed, c.ran)
			require.InDelta(t, float64(c.passed)/float64(c.ran), row.SuccessRate, 1e-12, "the pass rate is the board's rate")
			require.InDelta(t, ci.Low, row.CILow, 1e-12)
			require.InDelta(t, ci.High, row.CIHigh, 1e-12)
			require.Equal(t, c.passed, *row.HiddenPassed)
			require.Equal(t, c.ran, *row.HiddenRan)
			require.Equal(t, c.counts, row.CountsText())
			require.True(t, row.PassRateBoard())
			require.Equal(t, c.rank, row.Rank)
			require.Equal(t, strconv.Itoa(c.rank), row.RankText(), "the intervals do not overlap: each run has a place of its own")
			require.Equal(t, c.origin, row.Origin)
		}
		require.Greater(t, first.CILow, second.CIHigh)
		require.False(t, second.OverlapsAbove)

		// The origin filter tells candidate runs from uploads.
		only, err := db.Leaderboard(f.anon, "rebuilds-board", models.SubsetFull, models.LeaderboardQuery{Origin: models.OriginUploaded}, benchScope(f.anon))
		require.NoError(t, err)
		require.Empty(t, only.Rows)
		only, err = db.Leaderboard(f.anon, "rebuilds-board", models.SubsetFull, models.LeaderboardQuery{Origin: models.OriginCandidates}, benchScope(f.anon))
		require.NoError(t, err)
		require.Len(t, only.Rows, 2)

		// Boards of other benchmarks keep their task success rate.
		mini, err := db.Leaderboard(f.anon, "mini", models.SubsetFull, models.LeaderboardQuery{}, benchScope(f.anon))
		require.NoError(t, err)
		require.Equal(t, "Success rate", mini.RateLabel())
	})
}

// TestStore_CandidateRunOrigin: a run of candidate websites is shown as
// such wherever its origin is (the run list, its progress, its publication
// state), while trajectory uploads stay "uploaded"; it is verified
// directly, never marked reproduced.
func TestStore_CandidateRunOrigin(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRebuildsFixture(t, db)
		r := f.write(t, "rebuilds-origin", 0)
		id := r.CopyRunID
		var stored models.Run
		require.NoError(t, db.Gorm().Take(&stored, id).Error)
		require.Equal(t, models.OriginUploaded, stored.Origin, "stored as an upload")

		items, _, err := servicetest.Runs(db, 0).ListRuns(f.anon, models.RunFilter{TeamSlug: "lab", Page: 1, PerPage: 50})
		require.NoError(t, err)
		origins := map[int64]string{}
		for _, it := range items {
			origins[it.ID] = it.Origin
		}
		require.Equal(t, models.OriginCandidates, origins[id])
		require.Equal(t, models.OriginCandidates, origins[r.BrokenRunID])

		p, err := servicetest.Runs(db, 0).RunProgress(f.anon, id)
		require.NoError(t, err)
		require.Equal(t, models.OriginCandidates, p.Run.Origin)
		m, _, err := db.RunModeration(f.anon, runScope(f.anon), id)
		require.NoError(t, err)
		require.Equal(t, models.OriginCandidates, m.Origin)
		require.Equal(t, "candidates submitted, tested by Proctor", models.OriginLabel(m.Origin))

		_, err = servicetest.Moderation(db).MarkRunReproduced(f.admin, id)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "tested by Proctor")
		verified, err := servicetest.Moderation(db).VerifyRun(f.admin, id)
		require.NoError(t, err, "Proctor ran the tests itself: nothing to reproduce first")
		require.True(t, verified.Verified)
		require.Equal(t, models.OriginCandidates, verified.Origin)
		require.NoError(t, db.Gorm().Take(&stored, id).Error)
		require.Equal(t, models.OriginUploaded, stored.Origin, "moderating writes no shown origin")

		_, err = db.ResetErroredAttempts(f.member, runScope(f.member), id, refuseOutsiders, nil)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "submit the candidates again")
	})
}

// TestMigrate_HiddenResultsKeepTheirRows replays the part of migration 12
// that SQLite needs to accept not_run, copying hidden_test_results into a
// new table, on a database holding graded results with foreign keys on:
// every row comes through unchanged, ids keep counting up, and not_run is
// accepted. (PostgreSQL changes its constraint in place.)
func TestMigrate_HiddenResultsKeepTheirRows(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	f := newRebuildsFixture(t, db)
	f.write(t, "rebuilds-migrated", 0)
	list, err := migrations.For(migrations.SQLite)
	require.NoError(t, err)
	var rebuild string
	for _, m := range list {
		if m.Version == 12 {
			_, rebuild, _ = strings.Cut(m.SQL, "CREATE TABLE hidden_test_results_new")
			rebuild = "CREATE TABLE hidden_test_results_new" + rebuild
		}
	}
	require.Contains(t, rebuild, "RENAME TO hidden_test_results")

	type row struct {
		ID                     int64
		AttemptID              int64
		TestID, Result, Reason string
	}
	read := func() []row {
		var rows []row
		require.NoError(t, db.Gorm().Table("hidden_test_results").Select("id, attempt_id, test_id, result, reason").Order("id").Scan(&rows).Error)
		return rows
	}
	before := read()
	require.Len(t, before, 86, "two candidates' 43 tests")
	ctx := context.Background()
	tx, err := db.SQL().BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, rebuild)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.Equal(t, before, read())

	next := models.HiddenTestResult{AttemptID: before[0].AttemptID, TestID: "added-after", Group: models.HiddenGroupSystem,
		Result: models.HiddenNotRun, Runs: "[]", CreatedAt: time.Now()}
	require.NoError(t, db.Gorm().Create(&next).Error)
	require.Greater(t, next.ID, before[len(before)-1].ID)
	bad := models.HiddenTestResult{AttemptID: before[0].AttemptID, TestID: "bad", Group: models.HiddenGroupSystem, Result: "skipped", Runs: "[]", CreatedAt: time.Now()}
	require.Error(t, db.Gorm().Create(&bad).Error, "the constraint still holds")
}
