package storage_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/internal/hiddenfixture"
	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// hiddenReadFixture is the read fixture's users and teams with a graded
// hidden-tests run of the lab team (hiddenfixture), unpublished and its
// benchmark's tests hidden until a test changes that.
type hiddenReadFixture struct {
	*readFixture
	seed *hiddenfixture.Seed
}

func newHiddenReadFixture(t *testing.T, db *storage.DB) *hiddenReadFixture {
	t.Helper()
	f := &hiddenReadFixture{readFixture: newReadFixture(t, db)}
	var team models.Team
	require.NoError(t, db.Gorm().Where("slug = ?", "lab").Take(&team).Error)
	var agent models.Agent
	require.NoError(t, db.Gorm().Where("team_id = ? AND slug = ?", team.ID, "walker").Take(&agent).Error)
	seed, err := hiddenfixture.Write(context.Background(), db, hiddenfixture.Options{
		TeamID: team.ID, AgentID: agent.ID, Cost: 0.5, TokensIn: 9000, TokensOut: 1000, Turns: 12,
	})
	require.NoError(t, err)
	f.seed = seed
	return f
}

func (f *hiddenReadFixture) reveal(t *testing.T, reveal bool) {
	t.Helper()
	require.NoError(t, f.db.SetRevealReferences(f.system, f.seed.BenchmarkSlug, reveal))
}

func rate(passed, total int) float64 { return float64(passed) / float64(total) }

func TestStore_RunHiddenResults(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newHiddenReadFixture(t, db)
		runID := f.seed.RunID

		t.Run("Numbers", func(t *testing.T) {
			h, err := servicetest.Runs(db, 0).RunHiddenResults(f.member, runID)
			require.NoError(t, err)
			require.NotNil(t, h)
			var ids []string
			for _, task := range h.Tasks {
				ids = append(ids, task.ExternalID)
			}
			require.Equal(t, []string{hiddenfixture.ShopA, hiddenfixture.ShopB, hiddenfixture.ForumA, hiddenfixture.ForumB}, ids, "task order")

			a := h.Tasks[0].Summary
			require.NotNil(t, a)
			require.Equal(t, models.HiddenTally{Total: 43, Passed: 40, Failed: 2, Errored: 1, Flaky: 1}, a.Overall)
			require.Equal(t, models.HiddenTally{Total: 13, Passed: 13}, a.Request)
			require.Equal(t, models.HiddenTally{Total: 22, Passed: 20, Failed: 2, Flaky: 1}, a.Browser)
			require.Equal(t, models.HiddenTally{Total: 8, Passed: 7, Errored: 1}, a.System)
			require.Equal(t, models.HiddenTally{Total: 9, Passed: 8, Failed: 1}, a.L1)
			require.Equal(t, models.HiddenTally{Total: 7, Passed: 6, Failed: 1}, a.L2)
			require.Equal(t, models.HiddenTally{Total: 6, Passed: 6, Flaky: 1}, a.L3)
			require.Equal(t, models.HiddenTally{Total: 8, Failed: 8}, h.Tasks[2].Summary.System)
			require.Nil(t, h.Tasks[3].Summary, "forum-b was never tested")
			require.Equal(t, models.OutcomeError, h.Tasks[3].Outcome)

			require.InDelta(t, (rate(40, 43)+rate(41, 43)+rate(35, 43)+0)/4, *h.Mean.Overall, 1e-9, "an untested task counts 0")
			require.InDelta(t, (1+rate(12, 13)+1+0)/4, *h.Mean.Request, 1e-9)
			require.InDelta(t, (rate(20, 22)+rate(21, 22)+1+0)/4, *h.Mean.Browser, 1e-9)
			require.InDelta(t, (rate(7, 8)+1+0+0)/4, *h.Mean.System, 1e-9)

			require.Len(t, h.Sites, 2)
			forum, shop := h.Sites[0], h.Sites[1]
			require.Equal(t, "forum", forum.Site)
			require.Equal(t, 2, forum.Tasks)
			require.Equal(t, 1, forum.Tested)
			require.InDelta(t, rate(35, 43)/2, *forum.Rates.Overall, 1e-9)
			require.InDelta(t, 0.0, *forum.Rates.System, 1e-9)
			require.Equal(t, "shop", shop.Site)
			require.Equal(t, 2, shop.Tested)
			require.InDelta(t, (rate(40, 43)+rate(41, 43))/2, *shop.Rates.Overall, 1e-9)
			require.InDelta(t, (rate(8, 9)+rate(8, 9))/2, *shop.Rates.L1, 1e-9)
		})

		t.Run("Visibility", func(t *testing.T) {
			for name, ctx := range map[string]context.Context{"anonymous": f.anon, "other team": f.outsider} {
				_, err := servicetest.Runs(db, 0).RunHiddenResults(ctx, runID)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "%s may not see an unpublished run", name)
			}
			h, err := servicetest.Runs(db, 0).RunHiddenResults(f.member, runID)
			require.NoError(t, err)
			require.False(t, h.CanBrowse, "the tests are hidden from the team")
			h, err = servicetest.Runs(db, 0).RunHiddenResults(f.admin, runID)
			require.NoError(t, err)
			require.True(t, h.CanBrowse)

			f.publish(t, runID, true)
			defer f.publish(t, runID, false)
			h, err = servicetest.Runs(db, 0).RunHiddenResults(f.anon, runID)
			require.NoError(t, err)
			require.False(t, h.CanBrowse)
			require.Len(t, h.Tasks, 4, "a published run's tallies are public")
			f.reveal(t, true)
			defer f.reveal(t, false)
			h, err = servicetest.Runs(db, 0).RunHiddenResults(f.anon, runID)
			require.NoError(t, err)
			require.True(t, h.CanBrowse, "a benchmark that reveals its references shows its tests")

			_, err = servicetest.Moderation(db).HideRun(f.admin, runID, "Under review.")
			require.NoError(t, err)
			_, err = servicetest.Runs(db, 0).RunHiddenResults(f.anon, runID)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "a hidden run's results stay with its team")
			_, err = servicetest.Moderation(db).UnhideRun(f.admin, runID)
			require.NoError(t, err)
		})

		t.Run("OtherBenchmarks", func(t *testing.T) {
			h, err := servicetest.Runs(db, 0).RunHiddenResults(f.member, f.run.ID)
			require.NoError(t, err)
			require.Nil(t, h, "a run of a benchmark without hidden tests has no hidden results")
		})

		t.Run("FixedQueryCount", func(t *testing.T) {
			// A second run with one task and two tests.
			var run models.Run
			require.NoError(t, db.Gorm().First(&run, runID).Error)
			run.ID, run.TasksTotal = 0, 1
			require.NoError(t, db.Gorm().Create(&run).Error)
			now := time.Now().UTC()
			var task models.Task
			require.NoError(t, db.Gorm().Where("version_id = ? AND external_id = ?", run.VersionID, hiddenfixture.ShopA).Take(&task).Error)
			attempt := &models.Attempt{RunID: run.ID, TaskID: task.ID, Status: models.AttemptDone, Outcome: models.OutcomeFailure, CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.Gorm().Create(attempt).Error)
			require.NoError(t, db.Gorm().Create(&[]models.HiddenTestResult{
				{AttemptID: attempt.ID, TestID: "req-home-page", Group: models.HiddenGroupRequest, Result: models.HiddenPassed, Runs: "[]", CreatedAt: now},
				{AttemptID: attempt.ID, TestID: "sys-health", Position: 1, Group: models.HiddenGroupSystem, Result: models.HiddenFailed, Runs: "[]", CreatedAt: now},
			}).Error)

			log := countStatements(t, db.Gorm())
			small, err := servicetest.Runs(db, 0).RunHiddenResults(f.admin, run.ID)
			require.NoError(t, err)
			few := len(log.reset())
			large, err := servicetest.Runs(db, 0).RunHiddenResults(f.admin, runID)
			require.NoError(t, err)
			many := len(log.reset())
			require.Len(t, small.Tasks, 1)
			require.Len(t, large.Tasks, 4)
			require.InDelta(t, 0.5, *small.Mean.Overall, 1e-9)
			require.Equal(t, few, many, "more tasks and tests, no more queries")
			require.LessOrEqual(t, few, 7, "run, benchmark, blind check, attempts, tallies")

			tests, err := servicetest.Runs(db, 0).AttemptHiddenTests(f.admin, attempt.ID, models.HiddenTestFilter{})
			require.NoError(t, err)
			few = len(log.reset())
			tests2, err := servicetest.Runs(db, 0).AttemptHiddenTests(f.admin, f.seed.Attempts[hiddenfixture.ShopA], models.HiddenTestFilter{})
			require.NoError(t, err)
			require.Len(t, tests.Tests, 2)
			require.Len(t, tests2.Tests, 43)
			require.Equal(t, few, len(log.reset()), "the test browser reads a fixed number of queries too")
		})
	})
}

func TestStore_AttemptHiddenTests(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newHiddenReadFixture(t, db)
		shopA := f.seed.Attempts[hiddenfixture.ShopA]
		list := func(ctx context.Context, filter models.HiddenTestFilter) []string {
			t.Helper()
			got, err := servicetest.Runs(db, 0).AttemptHiddenTests(ctx, shopA, filter)
			require.NoError(t, err)
			ids := []string{}
			for _, test := range got.Tests {
				ids = append(ids, test.TestID)
			}
			return ids
		}

		t.Run("Access", func(t *testing.T) {
			cases := []struct {
				name            string
				ctx             context.Context
				published, open bool
				code            string
			}{
				{"AnonymousUnpublished", f.anon, false, false, models.ENOTFOUND},
				{"OtherTeamUnpublished", f.outsider, false, true, models.ENOTFOUND},
				{"MemberHidden", f.member, false, false, models.EFORBIDDEN},
				{"AdminHidden", f.admin, false, false, ""},
				{"AnonymousPublishedHidden", f.anon, true, false, models.EUNAUTHORIZED},
				{"OtherTeamPublishedHidden", f.outsider, true, false, models.EFORBIDDEN},
				{"MemberRevealed", f.member, false, true, ""},
				{"AnonymousPublishedRevealed", f.anon, true, true, ""},
				{"OtherTeamPublishedRevealed", f.outsider, true, true, ""},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					f.publish(t, f.seed.RunID, c.published)
					f.reveal(t, c.open)
					defer f.publish(t, f.seed.RunID, false)
					defer f.reveal(t, false)
					_, err := servicetest.Runs(db, 0).AttemptHiddenTests(c.ctx, shopA, models.HiddenTestFilter{})
					require.Equal(t, c.code, models.ErrorCode(err), "%v", err)
					_, err = servicetest.Runs(db, 0).AttemptHiddenTest(c.ctx, shopA, hiddenfixture.ImageTest)
					require.Equal(t, c.code, models.ErrorCode(err), "%v", err)
				})
			}
			_, err := servicetest.Runs(db, 0).AttemptHiddenTests(f.admin, 999999, models.HiddenTestFilter{})
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			ids := f.dispatch(t, f.run.ID)
			_, err = servicetest.Runs(db, 0).AttemptHiddenTests(f.admin, ids[0], models.HiddenTestFilter{})
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "an attempt of a benchmark without hidden tests has none")
		})

		t.Run("Timeline", func(t *testing.T) {
			// The attempt's page carries the tally; who may browse the tests
			// is decided as for the test browser.
			for _, c := range []struct {
				name   string
				ctx    context.Context
				reveal bool
				browse bool
			}{
				{"MemberHidden", f.member, false, false},
				{"AdminHidden", f.admin, false, true},
				{"MemberRevealed", f.member, true, true},
			} {
				t.Run(c.name, func(t *testing.T) {
					f.reveal(t, c.reveal)
					defer f.reveal(t, false)
					tl, err := db.AttemptTimeline(c.ctx, runScope(c.ctx), shopA)
					require.NoError(t, err)
					require.NotNil(t, tl.Hidden)
					require.Equal(t, c.browse, tl.Hidden.CanBrowse)
					require.Equal(t, models.HiddenTally{Passed: 40, Failed: 2, Errored: 1, Flaky: 1, Total: 43}, tl.Hidden.Summary.Overall)
					require.Empty(t, tl.Steps)
				})
			}
			ids := f.dispatch(t, f.run.ID)
			tl, err := db.AttemptTimeline(f.admin, runScope(f.admin), ids[0])
			require.NoError(t, err)
			require.Nil(t, tl.Hidden, "an attempt of a benchmark without hidden tests has no tally")

			// While another attempt of the run is in an open blind study the
			// member annotates, the run's results are kept from them (as
			// RunHiddenResults refuses them), the tally on this page too.
			g := db.Gorm()
			now := time.Now().UTC()
			study := models.Study{OwnerID: models.ActorFrom(f.admin).UserID, Name: "Blind look", Status: models.StudyOpen, Blind: true,
				Sampling: models.SampleRandom, SampleSize: 1, ItemCount: 1, OverlapAnnotators: 2, Labels: models.JSONStrings{"success"},
				CreatedAt: now, UpdatedAt: now, OpenedAt: &now}
			require.NoError(t, g.Create(&study).Error)
			item := models.StudyItem{StudyID: study.ID, AttemptID: f.seed.Attempts[hiddenfixture.ShopB], Position: 1}
			require.NoError(t, g.Create(&item).Error)
			require.NoError(t, g.Create(&models.StudyAssignment{StudyID: study.ID, StudyItemID: item.ID, UserID: models.ActorFrom(f.member).UserID,
				Position: 1, Status: models.AssignmentPending, Labels: models.StudyLabels{}, CreatedAt: now, UpdatedAt: now}).Error)
			defer func() {
				require.NoError(t, g.Model(&models.Study{}).Where("id = ?", study.ID).Update("status", models.StudyClosed).Error)
			}()
			_, err = servicetest.Runs(db, 0).RunHiddenResults(f.member, f.seed.RunID)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "%v", err)
			tl, err = servicetest.Runs(db, 0).AttemptTimeline(f.member, shopA)
			require.NoError(t, err)
			require.Nil(t, tl.Hidden, "no tally for a blind annotator")
			tl, err = servicetest.Runs(db, 0).AttemptTimeline(f.admin, shopA)
			require.NoError(t, err)
			require.NotNil(t, tl.Hidden, "the study's blindness is the annotator's only")
		})

		t.Run("List", func(t *testing.T) {
			got, err := servicetest.Runs(db, 0).AttemptHiddenTests(f.admin, shopA, models.HiddenTestFilter{})
			require.NoError(t, err)
			require.Equal(t, 43, got.TotalTests)
			require.Len(t, got.Tests, 43)
			require.Equal(t, f.seed.RunID, got.RunID)
			require.Equal(t, hiddenfixture.ShopA, got.TaskID)
			require.Equal(t, "shop", got.SiteKey)
			require.Equal(t, 40, got.Summary.Overall.Passed)
			first := got.Tests[0]
			require.Equal(t, "req-home-page", first.TestID)
			require.Equal(t, "The home page lists every product", first.Title, "titles come from the task's suite")
			require.Nil(t, first.Runs, "the list leaves the runs out")
			raw, err := json.Marshal(got)
			require.NoError(t, err)
			require.NotContains(t, string(raw), "locator", "the suite itself is never returned")
			require.NotContains(t, string(raw), "journey")
		})

		t.Run("Filters", func(t *testing.T) {
			require.Equal(t, []string{hiddenfixture.ImageTest, "b2-cart-read-back"}, list(f.admin, models.HiddenTestFilter{Result: models.HiddenFailed}))
			require.Equal(t, []string{"sys-restart"}, list(f.admin, models.HiddenTestFilter{Result: models.HiddenErrored}))
			require.Equal(t, []string{hiddenfixture.FlakyTest}, list(f.admin, models.HiddenTestFilter{Result: models.HiddenFlaky}))
			require.Len(t, list(f.admin, models.HiddenTestFilter{Group: models.HiddenGroupSystem}), 8)
			require.Len(t, list(f.admin, models.HiddenTestFilter{Level: 1}), 9)
			require.Equal(t, []string{"b2-cart-read-back"}, list(f.admin, models.HiddenTestFilter{Result: models.HiddenFailed, Group: models.HiddenGroupBrowser, Level: 2}))
			require.Empty(t, list(f.admin, models.HiddenTestFilter{Result: models.HiddenFailed, Group: models.HiddenGroupRequest}))
			got, err := servicetest.Runs(db, 0).AttemptHiddenTests(f.admin, shopA, models.HiddenTestFilter{Result: models.HiddenFailed})
			require.NoError(t, err)
			require.Equal(t, 43, got.TotalTests, "the total is before the filter")
			require.Equal(t, 40, got.Summary.Overall.Passed, "so is the tally")

			for _, c := range []struct {
				filter models.HiddenTestFilter
				field  string
			}{
				{models.HiddenTestFilter{Result: "bogus"}, "result"},
				{models.HiddenTestFilter{Group: "visual"}, "group"},
				{models.HiddenTestFilter{Level: 4}, "level"},
			} {
				_, err := servicetest.Runs(db, 0).AttemptHiddenTests(f.admin, shopA, c.filter)
				require.Equal(t, models.EINVALID, models.ErrorCode(err))
				require.Equal(t, c.field, models.ErrorField(err))
			}
		})

		t.Run("OneTest", func(t *testing.T) {
			got, err := servicetest.Runs(db, 0).AttemptHiddenTest(f.admin, shopA, hiddenfixture.ImageTest)
			require.NoError(t, err)
			require.Equal(t, f.seed.RunID, got.RunID)
			require.Equal(t, models.HiddenFailed, got.Test.Result)
			require.Equal(t, "The home page shows the header and twenty product cards", got.Test.Title)
			require.Len(t, got.Test.Runs, 2, "a failed test keeps both runs")
			cp := got.Test.Runs[0].Checkpoints[0]
			require.Equal(t, f.seed.ImageKeys, [3]string{cp.ReferenceKey, cp.CandidateKey, cp.MapKey})
			require.False(t, cp.Passed)
			require.Less(t, cp.Score, cp.Threshold)
			require.NotEmpty(t, got.Test.Runs[0].Steps[0].ScreenshotKey)

			flaky, err := servicetest.Runs(db, 0).AttemptHiddenTest(f.admin, shopA, hiddenfixture.FlakyTest)
			require.NoError(t, err)
			require.True(t, flaky.Test.Flaky)
			require.Equal(t, []string{models.HiddenFailed, models.HiddenPassed}, []string{flaky.Test.Runs[0].Result, flaky.Test.Runs[1].Result})

			_, err = servicetest.Runs(db, 0).AttemptHiddenTest(f.admin, shopA, "no-such-test")
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			_, err = servicetest.Runs(db, 0).AttemptHiddenTest(f.admin, f.seed.Attempts[hiddenfixture.ForumB], hiddenfixture.ImageTest)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "an untested attempt has no results")
		})
	})
}

func TestStore_HiddenLeaderboard(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newHiddenReadFixture(t, db)
		f.publish(t, f.seed.RunID, true)
		lb, err := db.Leaderboard(f.anon, f.seed.BenchmarkSlug, models.SubsetFull, models.LeaderboardQuery{}, benchScope(f.anon))
		require.NoError(t, err)
		require.True(t, lb.HiddenTests)
		require.Len(t, lb.Rows, 1)
		r := lb.Rows[0]
		require.Equal(t, 4, r.Tasks)
		require.Equal(t, 0, r.Successes, "no task passed every test")
		require.InDelta(t, (rate(40, 43)+rate(41, 43)+rate(35, 43))/4, *r.HiddenOverall, 1e-9)
		require.InDelta(t, (1+rate(12, 13)+1)/4, *r.HiddenRequest, 1e-9)
		require.InDelta(t, (rate(20, 22)+rate(21, 22)+1)/4, *r.HiddenBrowser, 1e-9)
		require.InDelta(t, (rate(7, 8)+1)/4, *r.HiddenSystem, 1e-9)
		require.InDelta(t, 0.5, r.CostPerTask, 1e-9)
		require.InDelta(t, 10000, r.TokensPerTask(), 1e-9)
		require.InDelta(t, 12, r.MeanSteps, 1e-9, "turns per task")

		shops, err := db.Leaderboard(f.anon, f.seed.BenchmarkSlug, hiddenfixture.ShopsSubset, models.LeaderboardQuery{}, benchScope(f.anon))
		require.NoError(t, err)
		require.Len(t, shops.Rows, 1)
		require.True(t, shops.Rows[0].Restricted)
		require.Equal(t, 2, shops.Rows[0].Tasks)
		require.InDelta(t, (rate(40, 43)+rate(41, 43))/2, *shops.Rows[0].HiddenOverall, 1e-9, "a subset's board means over its own tasks")
		require.InDelta(t, (rate(7, 8)+1)/2, *shops.Rows[0].HiddenSystem, 1e-9)

		// A run of another benchmark has no hidden numbers.
		f.publish(t, f.run.ID, true)
		ids := f.dispatch(t, f.run.ID)
		for _, id := range ids {
			f.finish(t, id, models.EpisodeOutcome{Steps: 2}, &models.Evaluation{Evaluator: "check", Verdict: models.OutcomeSuccess, Score: score(1)})
		}
		require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.system, f.run.ID))
		mini, err := db.Leaderboard(f.anon, "mini", models.SubsetFull, models.LeaderboardQuery{}, benchScope(f.anon))
		require.NoError(t, err)
		require.False(t, mini.HiddenTests)
		require.Len(t, mini.Rows, 1)
		require.Nil(t, mini.Rows[0].HiddenOverall)
		require.Nil(t, mini.Rows[0].HiddenSystem)
	})
}
