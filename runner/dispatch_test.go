package runner_test

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/sandbox"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// queueSubset is a subset of short sandbox tasks, four on the shop.
const queueSubset = "queue"

// withQueueSubset adds queueSubset to the sandbox benchmark's header line.
func withQueueSubset(t *testing.T) []byte {
	t.Helper()
	header, rest, ok := bytes.Cut(sandbox.Benchmark(), []byte("\n"))
	require.True(t, ok)
	var h map[string]any
	require.NoError(t, json.Unmarshal(header, &h))
	h["subsets"].(map[string]any)[queueSubset] = map[string]any{"task_ids": []string{
		"shop-out-of-stock", "shop-admin-biggest-order", "forum-top-post", "forum-zoe-not-found",
		"shop-cracked-glass-reviewer", "shop-last-order-total",
	}}
	header, err := json.Marshal(h)
	require.NoError(t, err)
	return append(append(header, '\n'), rest...)
}

// watchQueue samples, until the returned function is called, the run's
// episode jobs waiting or running in the queue (but for those whose episode
// has ended, which River marks completed a moment later) and its attempts
// running on the shop, and returns the most of each seen at once.
func watchQueue(t *testing.T, db *storage.DB, runID int64) (stop func() (jobs, shop int64)) {
	t.Helper()
	var maxJobs, maxShop atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	attemptOf := "json_extract(j.args, '$.attempt_id')"
	if db.Dialect() == "postgres" {
		attemptOf = "(j.args->>'attempt_id')::bigint"
	}
	wg.Go(func() {
		for {
			var jobs, shop int64
			err := db.Gorm().Raw("SELECT COUNT(*) FROM river_job j JOIN attempts a ON a.id = "+attemptOf+
				" WHERE j.kind = 'episode' AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled')"+
				" AND a.run_id = ? AND a.status IN ('pending', 'running')", runID).Scan(&jobs).Error
			if err == nil {
				err = db.Gorm().Table("attempts a").Joins("JOIN task_sites ts ON ts.task_id = a.task_id").
					Where("a.run_id = ? AND a.status = ? AND ts.site = ?", runID, models.AttemptRunning, "shop").Count(&shop).Error
			}
			if err != nil {
				t.Errorf("sample the queue: %v", err)
				return
			}
			maxJobs.Store(max(maxJobs.Load(), jobs))
			maxShop.Store(max(maxShop.Load(), shop))
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() (int64, int64) {
		close(done)
		wg.Wait()
		return maxJobs.Load(), maxShop.Load()
	}
}

// TestRunner_QueuesEpisodesAsRoomFrees runs six tasks with parallelism 2 on
// a worker with four slots, on SQLite and PostgreSQL: never more than two
// episode jobs wait or run at once, each attempt's job is queued once (no
// job waits its turn in the queue), and every task completes. With the
// shop capped at one episode and parallelism 3, never two shop episodes
// run at once and the run completes all the same.
func TestRunner_QueuesEpisodesAsRoomFrees(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		b := setupRunFrom(t, db, 4, nil, evaltest.Registry(), withQueueSubset(t))
		queue := func(parallelism int) int64 {
			run, err := runService(b.db, b.runner).QueueRun(b.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "replayer",
				BenchmarkSlug: sandbox.Slug, Subset: queueSubset, Parallelism: parallelism})
			require.NoError(t, err)
			return run.ID
		}
		// episodeJobs counts the episode jobs queued, less the copies of
		// jobs offered again as lost (a loaded machine's worker may find a
		// job whose end River has yet to record; its copy finds the
		// attempt done and does nothing).
		reoffered := "json_extract(metadata, '$.cancel_attempted_at') IS NOT NULL"
		if db.Dialect() == "postgres" {
			reoffered = "metadata->>'cancel_attempted_at' IS NOT NULL"
		}
		episodeJobs := func() int64 {
			var n int64
			require.NoError(t, db.Gorm().Raw("SELECT COUNT(*) - SUM(CASE WHEN "+reoffered+" THEN 1 ELSE 0 END) FROM river_job WHERE kind = 'episode'").
				Scan(&n).Error)
			return n
		}

		runID := queue(2)
		stop := watchQueue(t, db, runID)
		got := b.waitRun(t, runID, 5*time.Minute)
		jobs, _ := stop()
		require.Equal(t, models.RunCompleted, got.Status)
		require.Equal(t, 6, got.TasksDone)
		require.Equal(t, 6, got.Successes)
		require.LessOrEqual(t, jobs, int64(2), "at most the run's parallelism of episode jobs at once")
		require.EqualValues(t, 6, episodeJobs(), "one episode job per attempt")

		var shop models.Site
		require.NoError(t, db.Gorm().Where("name = ?", "shop").First(&shop).Error)
		_, err := db.UpdateSite(b.system, sandbox.Slug, "shop", shop.URL, "", 1)
		require.NoError(t, err)
		runID = queue(3)
		stop = watchQueue(t, db, runID)
		got = b.waitRun(t, runID, 5*time.Minute)
		jobs, shopRunning := stop()
		require.Equal(t, models.RunCompleted, got.Status)
		require.Equal(t, 6, got.Successes, "every task runs once the shop frees")
		require.LessOrEqual(t, jobs, int64(3), "at most the run's parallelism of episode jobs at once")
		require.LessOrEqual(t, shopRunning, int64(1), "the shop's cap holds")
		require.EqualValues(t, 12, episodeJobs(), "one episode job per attempt: none queued while the shop was full")
	})
}
