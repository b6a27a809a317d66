package storage_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// runFixture is a database with the mini benchmark, a team with a replay agent,
// a member and an outsider with an agent of their own. Runs are queued through
// the run service, with no job.
type runFixture struct {
	db               *storage.DB
	member, outsider context.Context
	system           context.Context
}

func newRunFixture(t *testing.T, db *storage.DB) *runFixture {
	t.Helper()
	af := newAgentFixture(t, db)
	importBenchFixture(t, db)
	require.NoError(t, servicetest.CreateAgent(db, af.member, "lab", &models.Agent{Name: "Walker", Kind: models.AgentReplay}, nil))
	require.NoError(t, servicetest.CreateAgent(db, af.member, "lab", &models.Agent{Name: "Uploader", Kind: models.AgentUpload}, nil))
	require.NoError(t, servicetest.CreateAgent(db, af.stranger, "other", &models.Agent{Name: "Theirs", Kind: models.AgentReplay}, nil))
	require.NoError(t, db.SetRevealReferences(af.system, "mini", true))
	return &runFixture{db: db, member: af.member, outsider: af.stranger, system: af.system}
}

func (f *runFixture) queue(t *testing.T, ctx context.Context, req models.RunRequest, quota int) (*models.Run, error) {
	t.Helper()
	return servicetest.Runs(f.db, quota).QueueRun(ctx, req)
}

func TestStore_RunLifecycle(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRunFixture(t, db)
		run, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Parallelism: 2}, 0)
		require.NoError(t, err)

		var episodes []int64
		dispatch := func() {
			require.NoError(t, db.DispatchRun(f.system, run.ID, func(_ context.Context, _ *sql.Tx, _ *models.Run, ids []int64) error {
				episodes = ids
				return nil
			}))
		}
		require.Error(t, db.DispatchRun(f.member, run.ID, nil), "only the queue dispatches")
		dispatch()
		require.Len(t, episodes, 2, "as many episodes as the run's parallelism are queued")
		episodes = nil
		dispatch() // redelivered: the first delivery's transaction already queued them
		require.Empty(t, episodes)

		stale := time.Hour
		status, spec, err := db.ClaimAttempt(f.system, episodes0(t, db, run.ID)[0], storagetest.Claimant(stale))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.Equal(t, 1, spec.Try)
		require.NotEmpty(t, spec.Namespace)
		require.Equal(t, "walker", spec.Agent.Slug)
		ids := episodes0(t, db, run.ID)
		status, _, err = db.ClaimAttempt(f.system, ids[1], storagetest.Claimant(stale))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		status, _, err = db.ClaimAttempt(f.system, ids[2], storagetest.Claimant(stale))
		require.NoError(t, err)
		require.Equal(t, models.ClaimWait, status, "parallelism 2 is full")

		// A step of the first try, then a restart (stale claim) starts clean.
		require.NoError(t, db.RecordStep(f.system, &models.Step{AttemptID: ids[0], Index: 0, URL: "http://x"}, 1))
		status, spec, err = db.ClaimAttempt(f.system, ids[0], storagetest.Claimant(0))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.Equal(t, 2, spec.Try)
		var steps int64
		require.NoError(t, db.Gorm().Model(&models.Step{}).Where("attempt_id = ?", ids[0]).Count(&steps).Error)
		require.Zero(t, steps, "a restarted try starts without the old steps")

		// A stale try's result is ignored; the current one is recorded.
		var evals []int64
		enqueueEval := func(id int64) func(context.Context, *sql.Tx) error {
			return func(context.Context, *sql.Tx) error { evals = append(evals, id); return nil }
		}
		require.NoError(t, db.FinishEpisode(f.system, ids[0], 1, models.EpisodeOutcome{Steps: 9}, enqueueEval(ids[0]), nil))
		require.Empty(t, evals)
		finishAll := func(id int64, try int, verdict string) bool {
			require.NoError(t, db.FinishEpisode(f.system, id, try, models.EpisodeOutcome{Steps: 3, Cost: 0.5}, enqueueEval(id), nil))
			score := 0.0
			if verdict == models.OutcomeSuccess {
				score = 1
			}
			done, err := db.RecordEvaluation(f.system, id, &models.Evaluation{Evaluator: "test", Verdict: verdict, Score: &score})
			require.NoError(t, err)
			return done
		}
		require.False(t, finishAll(ids[0], 2, models.OutcomeSuccess))
		require.False(t, finishAll(ids[1], 1, models.OutcomeFailure))
		for _, id := range ids[2:] {
			status, spec, err := db.ClaimAttempt(f.system, id, storagetest.Claimant(stale))
			require.NoError(t, err)
			require.Equal(t, models.ClaimOK, status)
			last := finishAll(id, spec.Try, models.OutcomeSuccess)
			require.Equal(t, id == ids[len(ids)-1], last)
		}
		var got models.Run
		require.NoError(t, db.Gorm().First(&got, run.ID).Error)
		require.Equal(t, models.RunCompleted, got.Status)
		require.Equal(t, 4, got.TasksDone)
		require.Equal(t, 3, got.Successes)
		require.Equal(t, 1, got.Failures)
		require.InDelta(t, 2.0, got.Cost, 1e-9)
		require.Len(t, evals, 4)
	})
}

// episodes0 lists a run's attempt ids in order.
func episodes0(t *testing.T, db *storage.DB, runID int64) []int64 {
	t.Helper()
	var ids []int64
	require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", runID).Order("id").Pluck("id", &ids).Error)
	return ids
}

// TestStore_ClaimHonoursSiteCaps: a site's concurrency cap holds across runs and
// workers, because claims are counted in the database.
func TestStore_ClaimHonoursSiteCaps(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRunFixture(t, db)
		_, err := db.UpdateSite(f.system, "mini", "gitlab", "http://gitlab.test", "", 1)
		require.NoError(t, err)
		req := models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Parallelism: 4}
		claimByTask := func(runID int64) map[string]int64 {
			require.NoError(t, db.DispatchRun(f.system, runID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
			var rows []struct {
				ID         int64
				ExternalID string
			}
			require.NoError(t, db.Gorm().Table("attempts a").Select("a.id, t.external_id").Joins("JOIN tasks t ON t.id = a.task_id").
				Where("a.run_id = ?", runID).Scan(&rows).Error)
			out := map[string]int64{}
			for _, r := range rows {
				out[r.ExternalID] = r.ID
			}
			return out
		}
		run1, err := f.queue(t, f.member, req, 0)
		require.NoError(t, err)
		run2, err := f.queue(t, f.member, req, 0)
		require.NoError(t, err)
		a1, a2 := claimByTask(run1.ID), claimByTask(run2.ID)

		status, _, err := db.ClaimAttempt(f.system, a1["t2"], storagetest.Claimant(time.Hour)) // gitlab
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		status, _, err = db.ClaimAttempt(f.system, a1["t3"], storagetest.Claimant(time.Hour)) // reddit + gitlab
		require.NoError(t, err)
		require.Equal(t, models.ClaimWait, status, "gitlab allows one episode at a time")
		status, _, err = db.ClaimAttempt(f.system, a2["t2"], storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimWait, status, "the cap holds across runs")
		status, _, err = db.ClaimAttempt(f.system, a1["t1"], storagetest.Claimant(time.Hour)) // shopping: no cap
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
	})
}
