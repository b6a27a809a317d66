package storage_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStore_BoardVersion: every write that changes what mini's boards show
// moves mini's board version, whatever path makes it (the moderation
// service, the metrics job, a re-scoring's verdicts, the benchmark's
// settings and imports, an agent's or team's new name); writes the boards
// do not show leave it. Both dialects' triggers are checked.
func TestStore_BoardVersion(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newLeaderboardFixture(t, db)
		mod := servicetest.Moderation(db)
		benchmarks := servicetest.Benchmarks(db)
		teams := servicetest.Teams(db)
		version := func(ctx context.Context) models.BoardVersion {
			t.Helper()
			v, err := db.BoardVersion(ctx, "mini", models.BenchmarkScopeFor(models.ActorFrom(ctx)))
			require.NoError(t, err)
			return v
		}
		ids := map[int64][]int64{}
		for _, r := range []*models.Run{f.a, f.b, f.c, f.d} {
			ids[r.ID] = f.attempts[r.ID]
		}
		rescore := func(t *testing.T, run *models.Run, verdict string) {
			var rescoreID string
			var attempts []int64
			_, err := db.RescoreAttempts(f.admin, models.RescoreScope{RunID: run.ID}, func(_ context.Context, _ *sql.Tx, a []int64, id string) error {
				attempts, rescoreID = a, id
				return nil
			})
			require.NoError(t, err)
			require.NotEmpty(t, attempts)
			_, err = db.RecordEvaluations(f.system, ids[run.ID][0], models.EvaluationBatch{RescoreID: rescoreID,
				Primary: &models.Evaluation{Evaluator: "check", Verdict: verdict, Score: score(0)}}, nil)
			require.NoError(t, err)
		}
		cases := []struct {
			name  string
			write func(t *testing.T)
			moves bool
		}{
			{"Withdraw", func(t *testing.T) { _, err := mod.WithdrawRun(f.member, f.a.ID); require.NoError(t, err) }, true},
			{"Publish", func(t *testing.T) { _, err := mod.PublishRun(f.member, f.a.ID); require.NoError(t, err) }, true},
			{"Verify", func(t *testing.T) { _, err := mod.VerifyRun(f.admin, f.a.ID); require.NoError(t, err) }, true},
			{"Hide", func(t *testing.T) { _, err := mod.HideRun(f.admin, f.b.ID, "spam"); require.NoError(t, err) }, true},
			{"Unhide", func(t *testing.T) { _, err := mod.UnhideRun(f.admin, f.b.ID); require.NoError(t, err) }, true},
			{"RescoreVerdicts", func(t *testing.T) { rescore(t, f.a, models.OutcomeFailure) }, true},
			{"MetricsRecomputed", func(t *testing.T) {
				require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.system, f.a.ID))
			}, true},
			{"UnpublishedRunRescored", func(t *testing.T) { rescore(t, f.d, models.OutcomeFailure) }, false},
			{"UnpublishedRunProgress", func(t *testing.T) {
				require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.d.ID).Updates(map[string]any{"successes": 0, "tasks_done": 1}).Error)
			}, false},
			{"PublishedRunUnshownColumn", func(t *testing.T) {
				require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.a.ID).Update("notes", "a note").Error)
			}, false},
			{"BenchmarkUnpublished", func(t *testing.T) { require.NoError(t, benchmarks.SetPublished(f.admin, "mini", false)) }, true},
			{"BenchmarkPublished", func(t *testing.T) { require.NoError(t, benchmarks.SetPublished(f.admin, "mini", true)) }, true},
			{"BenchmarkRenamed", func(t *testing.T) {
				require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "mini").Update("name", "Mini renamed").Error)
			}, true},
			{"VersionSettings", func(t *testing.T) {
				require.NoError(t, db.Gorm().Model(&models.BenchmarkVersion{}).Where("id = ?", f.a.VersionID).Update("task_count", 5).Error)
			}, true},
			{"SubsetChanged", func(t *testing.T) {
				require.NoError(t, db.Gorm().Model(&models.Subset{}).Where("version_id = ? AND name = ?", f.a.VersionID, "smoke").Update("task_count", 3).Error)
			}, true},
			{"AgentRenamed", func(t *testing.T) {
				_, err := teams.PatchAgent(f.member, "lab", "walker", &models.AgentPatch{Name: new("Walker II")}, nil, nil)
				require.NoError(t, err)
			}, true},
			{"TeamRenamed", func(t *testing.T) {
				require.NoError(t, db.Gorm().Model(&models.Team{}).Where("slug = ?", "lab").Update("name", "The Lab").Error)
			}, true},
			{"TeamDescription", func(t *testing.T) {
				require.NoError(t, db.Gorm().Model(&models.Team{}).Where("slug = ?", "lab").Update("description", "About us").Error)
			}, false},
			{"EntryDeleted", func(t *testing.T) {
				require.NoError(t, db.Gorm().Where("run_id = ?", f.c.ID).Delete(&models.LeaderboardEntry{}).Error)
			}, true},
		}
		for _, tc := range cases {
			before := version(f.admin)
			tc.write(t)
			after := version(f.admin)
			if tc.moves {
				require.NotEqual(t, before.Key(), after.Key(), "%s moves the board version", tc.name)
			} else {
				require.Equal(t, before.Key(), after.Key(), "%s leaves the board version", tc.name)
			}
		}

		// The version is the caller's: an unpublished benchmark has none for
		// anyone but administrators, and theirs differs from everyone's.
		anon := version(f.anon)
		admin := version(f.admin)
		require.NotEqual(t, anon.Key(), admin.Key(), "the scope is part of the key")
		require.NoError(t, benchmarks.SetPublished(f.admin, "mini", false))
		_, err := db.BoardVersion(f.anon, "mini", models.BenchmarkScopeFor(models.ActorFrom(f.anon)))
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		_, err = db.BoardVersion(f.anon, "nope", models.BenchmarkScope{Unpublished: true})
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
	})
}
