package storage_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// compareFixture holds runs of the mini benchmark with known outcomes:
//
//	a     lab, full:  t1 success, t2 failure, t3 success, t4 error    (metrics precomputed)
//	b     lab, full:  t1 success, t2 success, t3 failure, t4 pending  (no metrics rows yet)
//	smoke lab, smoke: t1 failure, t3 success
//	their other team, smoke, private: t1 success, t3 success
type compareFixture struct {
	*readFixture
	a, b, smoke, their *models.Run
}

func newCompareFixture(t *testing.T, db *storage.DB) *compareFixture {
	t.Helper()
	f := &compareFixture{readFixture: newReadFixture(t, db)}
	f.a = f.run
	queue := func(ctx context.Context, team, agent, subset string) *models.Run {
		run, err := f.queue(t, ctx, models.RunRequest{TeamSlug: team, AgentSlug: agent, BenchmarkSlug: "mini", Subset: subset}, 0)
		require.NoError(t, err)
		return run
	}
	f.b = queue(f.member, "lab", "walker", "")
	f.smoke = queue(f.member, "lab", "walker", "smoke")
	f.their = queue(f.outsider, "other", "theirs", "smoke")
	f.play(t, f.a, models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeSuccess, models.OutcomeError)
	f.play(t, f.b, models.OutcomeSuccess, models.OutcomeSuccess, models.OutcomeFailure, "")
	f.play(t, f.smoke, models.OutcomeFailure, models.OutcomeSuccess)
	f.play(t, f.their, models.OutcomeSuccess, models.OutcomeSuccess)
	require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.system, f.a.ID))
	return f
}

// play dispatches a run and gives its attempts these verdicts in task order;
// "" leaves an attempt pending.
func (f *compareFixture) play(t *testing.T, run *models.Run, verdicts ...string) []int64 {
	t.Helper()
	ids := f.dispatch(t, run.ID)
	require.Len(t, ids, len(verdicts))
	for i, v := range verdicts {
		if v == "" {
			continue
		}
		s := 0.0
		if v == models.OutcomeSuccess {
			s = 1
		}
		f.finish(t, ids[i], models.EpisodeOutcome{Steps: i + 1, TokensIn: 100, TokensOut: 10}, &models.Evaluation{Evaluator: "webarena-verified", Verdict: v, Score: &s})
	}
	return ids
}

func (f *compareFixture) compare(ctx context.Context, runs ...*models.Run) (*models.Comparison, error) {
	ids := make([]int64, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return servicetest.Runs(f.db, 0).CompareRuns(ctx, ids)
}

func metricOf(t *testing.T, c *models.Comparison, key string) models.CompareMetric {
	t.Helper()
	for _, m := range c.Metrics {
		if m.Key == key {
			return m
		}
	}
	t.Fatalf("no metric %q in %+v", key, c.Metrics)
	return models.CompareMetric{}
}

func outcomes(task models.CompareTask) []string {
	out := make([]string, len(task.Cells))
	for i, c := range task.Cells {
		out[i] = c.Outcome
	}
	return out
}

func TestStore_CompareRuns(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newCompareFixture(t, db)

		t.Run("Visibility", func(t *testing.T) {
			check := func(ctx context.Context, code string, runs ...*models.Run) {
				t.Helper()
				_, err := f.compare(ctx, runs...)
				require.Equal(t, code, models.ErrorCode(err), "%v", err)
			}
			// Unpublished runs: their team and admins only.
			check(f.anon, models.ENOTFOUND, f.a, f.b)
			check(f.outsider, models.ENOTFOUND, f.a, f.b)
			check(f.member, "", f.a, f.b)
			check(f.admin, "", f.a, f.b)
			// Another team's private run is not found, whoever else is in the comparison.
			check(f.member, models.ENOTFOUND, f.smoke, f.their)
			check(f.outsider, models.ENOTFOUND, f.their, f.smoke)
			check(f.admin, "", f.smoke, f.their)
			// A run that does not exist looks the same.
			_, err := servicetest.Runs(db, 0).CompareRuns(f.member, []int64{f.a.ID, 999999})
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			require.Equal(t, "Run 999999 not found.", models.ErrorMessage(err))
			_, err = f.compare(f.member, f.a, f.their)
			require.Equal(t, "Run "+strconv.FormatInt(f.their.ID, 10)+" not found.", models.ErrorMessage(err), "the same words for a private run")

			f.publish(t, f.a.ID, true)
			f.publish(t, f.b.ID, true)
			t.Cleanup(func() { f.publish(t, f.a.ID, false); f.publish(t, f.b.ID, false) })
			check(f.anon, "", f.a, f.b)
			check(f.outsider, "", f.a, f.b)
			// Published runs of an unpublished benchmark stay with their team and admins.
			require.NoError(t, db.SetBenchmarkPublished(f.admin, "mini", false))
			check(f.anon, models.ENOTFOUND, f.a, f.b)
			check(f.outsider, models.ENOTFOUND, f.a, f.b)
			check(f.member, "", f.a, f.b)
			check(f.admin, "", f.a, f.b)
			require.NoError(t, db.SetBenchmarkPublished(f.admin, "mini", true))
			check(f.outsider, "", f.their, f.a)
			// A run hidden by administrators keeps its attempts from everyone
			// outside its team; the public reason is all that is said.
			_, err = servicetest.Moderation(db).HideRun(f.admin, f.b.ID, "Trained on the test tasks.")
			require.NoError(t, err)
			_, err = f.compare(f.anon, f.a, f.b)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "Trained on the test tasks.")
			check(f.outsider, models.ENOTFOUND, f.b, f.a)
			check(f.member, "", f.a, f.b)
			check(f.admin, "", f.a, f.b)
			_, err = servicetest.Moderation(db).UnhideRun(f.admin, f.b.ID)
			require.NoError(t, err)
			check(f.anon, "", f.a, f.b)
		})

		t.Run("BadInput", func(t *testing.T) {
			for name, ids := range map[string][]int64{
				"one run":    {f.a.ID},
				"five runs":  {f.a.ID, f.b.ID, f.smoke.ID, 999, 998},
				"repeated":   {f.a.ID, f.b.ID, f.a.ID},
				"no run":     nil,
				"repeated 2": {f.a.ID, f.a.ID},
			} {
				_, err := servicetest.Runs(db, 0).CompareRuns(f.member, ids)
				require.Equal(t, models.EINVALID, models.ErrorCode(err), name)
				require.Equal(t, models.CompareParam, models.ErrorField(err), name)
			}
		})

		t.Run("DifferentBenchmarks", func(t *testing.T) {
			_, err := db.ImportBenchmark(f.system, "mini2", parseBenchFixture(t, strings.Replace(benchFixture, `"Mini bench"`, `"Other bench"`, 1)), "mini2.jsonl", 0)
			require.NoError(t, err)
			require.NoError(t, db.SetRevealReferences(f.system, "mini2", true))
			other, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini2"}, 0)
			require.NoError(t, err)
			_, err = f.compare(f.member, f.a, other)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, models.CompareParam, models.ErrorField(err))
			require.Contains(t, models.ErrorMessage(err), "Mini bench")
			require.Contains(t, models.ErrorMessage(err), "Other bench")
			// An invisible run is not found before benchmarks are compared, so
			// the error does not tell which benchmark a private run is on.
			_, err = f.compare(f.member, other, f.their)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})

		t.Run("TwoRuns", func(t *testing.T) {
			c, err := f.compare(f.member, f.a, f.b)
			require.NoError(t, err)
			require.Equal(t, "mini", c.BenchmarkSlug)
			require.Equal(t, "Mini bench", c.BenchmarkName)
			require.Equal(t, []int64{f.a.ID, f.b.ID}, c.RunIDs())
			require.False(t, c.VersionsDiffer)
			require.Equal(t, models.SubsetFull, c.MetricsSubset)
			require.Equal(t, "walker", c.Runs[0].AgentSlug)
			require.Equal(t, 1, c.Runs[0].BenchmarkVersion)

			// Every task both attempted, in task order, with each run's attempt.
			require.Len(t, c.Tasks, 4)
			want := [][]string{
				{models.OutcomeSuccess, models.OutcomeSuccess},
				{models.OutcomeFailure, models.OutcomeSuccess},
				{models.OutcomeSuccess, models.OutcomeFailure},
				{models.OutcomeError, ""},
			}
			groups := []string{models.GroupBoth, models.GroupSecondOnly, models.GroupFirstOnly, models.GroupUngraded}
			for i, task := range c.Tasks {
				require.Equal(t, "t"+strconv.Itoa(i+1), task.ExternalID)
				require.Equal(t, want[i], outcomes(task), task.ExternalID)
				require.Equal(t, groups[i], task.PairGroup(0, 1), task.ExternalID)
				require.Equal(t, f.a.ID, task.Cells[0].RunID)
				require.Equal(t, f.b.ID, task.Cells[1].RunID)
				require.NotZero(t, task.Cells[0].AttemptID)
				require.NotEqual(t, task.Cells[0].AttemptID, task.Cells[1].AttemptID)
			}
			require.Equal(t, "Add the cheapest USB-C cable to the cart.", c.Tasks[0].Intent)
			require.Equal(t, "easy", c.Tasks[0].Difficulty)
			require.Len(t, c.Differing(), 3, "t1 agrees; t4 is graded in one run only")

			// t4 has no verdict in b, so the paired test uses t1–t3.
			require.Equal(t, []models.PairedTest{{RunID: f.b.ID, Tasks: 3, Both: 1, BaselineOnly: 1, RunOnly: 1, Discordant: 2, PValue: 1}}, c.Paired)

			// a: 2 of 4 graded (the error counts); b: 2 of 3 (t4 pending).
			success := metricOf(t, c, "success_rate")
			require.True(t, success.HigherIsBetter)
			require.InDelta(t, 0.5, *success.Values[0].Value, 1e-9)
			require.Equal(t, 2, success.Values[0].K)
			require.Equal(t, 4, success.Values[0].N)
			require.Nil(t, success.Values[0].Delta, "the baseline has no delta")
			require.InDelta(t, 2.0/3, *success.Values[1].Value, 1e-9)
			require.InDelta(t, 2.0/3-0.5, *success.Values[1].Delta, 1e-9)
			require.Equal(t, models.ChangeBetter, success.Values[1].Change(success.HigherIsBetter))
			require.NotNil(t, success.Values[1].Low)
			steps := metricOf(t, c, "mean_steps")
			require.False(t, steps.HigherIsBetter)
			require.InDelta(t, 2.5, *steps.Values[0].Value, 1e-9)
			for _, m := range c.Metrics {
				require.NotEqual(t, "judge_score", m.Key, "nobody was judged: no judge row")
			}

			// Breakdown deltas: difficulty easy is t1 and t4, hard is t3.
			var difficulty *models.CompareBreakdown
			for i := range c.Breakdowns {
				require.NotEqual(t, "intent_template", c.Breakdowns[i].Dimension)
				if c.Breakdowns[i].Dimension == "difficulty" {
					difficulty = &c.Breakdowns[i]
				}
			}
			require.NotNil(t, difficulty)
			keys := []string{}
			for _, g := range difficulty.Groups {
				keys = append(keys, g.Key)
			}
			require.Equal(t, []string{"easy", "hard", "medium"}, keys)
			hard := difficulty.Groups[1].Values
			require.InDelta(t, 1, *hard[0].Value, 1e-9)
			require.InDelta(t, 0, *hard[1].Value, 1e-9)
			require.InDelta(t, -1, *hard[1].Delta, 1e-9)
			require.Equal(t, models.ChangeWorse, hard[1].Change(true))
		})

		t.Run("FullRunRestrictedToSubset", func(t *testing.T) {
			// A full run beside a smoke run shows its numbers on smoke's tasks,
			// from its precomputed rows (a) or computed now (b).
			for _, full := range []*models.Run{f.a, f.b} {
				c, err := f.compare(f.member, f.smoke, full)
				require.NoError(t, err)
				require.Equal(t, "smoke", c.MetricsSubset)
				require.False(t, c.Runs[0].Restricted)
				require.True(t, c.Runs[1].Restricted)
				require.Len(t, c.Tasks, 2, "only t1 and t3 are shared")
				success := metricOf(t, c, "success_rate")
				require.Equal(t, 2, success.Values[1].N)
			}
			c, err := f.compare(f.admin, f.smoke, f.a, f.their)
			require.NoError(t, err)
			require.Equal(t, []string{"t1", "t3"}, []string{c.Tasks[0].ExternalID, c.Tasks[1].ExternalID})
			require.Len(t, c.Paired, 2)
			// smoke vs a: t1 a only, t3 both; smoke vs their: the same.
			require.Equal(t, models.PairedTest{RunID: f.a.ID, Tasks: 2, Both: 1, RunOnly: 1, Discordant: 1, PValue: 1}, c.Paired[0])
			require.Equal(t, [][]string{{"failure", "success", "success"}, {"success", "success", "success"}}, [][]string{outcomes(c.Tasks[0]), outcomes(c.Tasks[1])})
			require.Len(t, c.Differing(), 1)
		})

		t.Run("VersionsDiffer", func(t *testing.T) {
			// A new version drops t2 and adds t5: runs compare on t1, t3 and t4.
			lines := strings.Split(benchFixture, "\n")
			var kept []string
			for _, l := range lines {
				if !strings.Contains(l, `"id": "t2"`) {
					kept = append(kept, l)
				}
			}
			v2 := strings.Join(kept, "\n") + `{"id": "t5", "intent": "A new task.", "start_urls": ["__SHOPPING__"], "rubric": [{"requirement": "Answers"}]}` + "\n"
			res, err := db.ImportBenchmark(f.system, "mini", parseBenchFixture(t, v2), "mini-v2.jsonl", 0)
			require.NoError(t, err)
			require.Equal(t, 2, res.Version.Version)
			newer, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"}, 0)
			require.NoError(t, err)
			f.play(t, newer, models.OutcomeFailure, models.OutcomeFailure, models.OutcomeSuccess, models.OutcomeSuccess)

			c, err := f.compare(f.member, f.a, newer)
			require.NoError(t, err)
			require.True(t, c.VersionsDiffer)
			require.Equal(t, 2, c.Runs[1].BenchmarkVersion)
			var ids []string
			for _, task := range c.Tasks {
				ids = append(ids, task.ExternalID)
			}
			require.Equal(t, []string{"t1", "t3", "t4"}, ids)
			require.Equal(t, []string{models.OutcomeSuccess, models.OutcomeFailure}, outcomes(c.Tasks[0]))
			require.Equal(t, []string{models.OutcomeError, models.OutcomeSuccess}, outcomes(c.Tasks[2]))
		})

		t.Run("OneQueryForOutcomes", func(t *testing.T) {
			for _, r := range []*models.Run{f.b, f.smoke, f.their} {
				require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.system, r.ID))
			}
			counter := countStatements(t, db.Gorm())
			counter.reset()
			_, err := f.compare(f.admin, f.smoke, f.a)
			require.NoError(t, err)
			two := counter.reset()
			_, err = f.compare(f.admin, f.smoke, f.a, f.b, f.their)
			require.NoError(t, err)
			four := counter.reset()
			require.NotEmpty(t, two, "the statement log records")
			require.Equal(t, len(two), len(four), "the same queries for 2 and 4 runs: %v", four)
			var attempts int
			for _, q := range four {
				if strings.Contains(q, "attempts") {
					attempts++
				}
			}
			require.Equal(t, 1, attempts, "attempt outcomes of every run in one query: %v", four)
		})
	})
}

// statementLog records the SQL a gorm DB runs while a test watches.
type statementLog struct {
	mu  sync.Mutex
	sql []string
}

// reset returns the statements since the last reset and starts over.
func (l *statementLog) reset() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.sql
	l.sql = nil
	return out
}

// countStatements logs every query and row scan the DB runs from now on.
func countStatements(t *testing.T, g *gorm.DB) *statementLog {
	t.Helper()
	l := &statementLog{}
	record := func(tx *gorm.DB) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.sql = append(l.sql, tx.Statement.SQL.String())
	}
	require.NoError(t, g.Callback().Query().After("gorm:query").Register("compare_test:query", record))
	require.NoError(t, g.Callback().Row().After("gorm:row").Register("compare_test:row", record))
	return l
}
