package runner_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/sandbox"
	"proctor/storage/storagetest"
)

// benchRunEpisodes is how many episodes each run of BenchmarkRunParallel has.
const benchRunEpisodes = 12

// scrollBenchmark is the sandbox benchmark with n more tasks, each a
// 5-step replay on the shop (four scrolls, then the answer), in a subset of
// their own ("scrolls").
func scrollBenchmark(t testing.TB, n int) []byte {
	t.Helper()
	header, rest, ok := bytes.Cut(sandbox.Benchmark(), []byte("\n"))
	require.True(t, ok)
	var base map[string]any
	for line := range bytes.SplitSeq(rest, []byte("\n")) {
		var task map[string]any
		if len(line) > 0 && json.Unmarshal(line, &task) == nil && task["id"] == "shop-out-of-stock" {
			base = task
		}
	}
	require.NotNil(t, base)
	actions := base["reference_actions"].([]any)
	answer := actions[len(actions)-1]
	var ids []string
	var extra bytes.Buffer
	for i := range n {
		task := map[string]any{}
		for k, v := range base {
			task[k] = v
		}
		task["id"] = fmt.Sprintf("bench-scroll-%d", i)
		task["reference_actions"] = []any{
			map[string]any{"type": models.ActScroll, "delta_y": 400}, map[string]any{"type": models.ActScroll, "delta_y": -400},
			map[string]any{"type": models.ActScroll, "delta_y": 400}, map[string]any{"type": models.ActScroll, "delta_y": -400},
			answer,
		}
		line, err := json.Marshal(task)
		require.NoError(t, err)
		extra.Write(append(line, '\n'))
		ids = append(ids, task["id"].(string))
	}
	var h map[string]any
	require.NoError(t, json.Unmarshal(header, &h))
	h["subsets"].(map[string]any)["scrolls"] = map[string]any{"task_ids": ids}
	header, err := json.Marshal(h)
	require.NoError(t, err)
	out := append(append(header, '\n'), rest...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, extra.Bytes()...)
}

// BenchmarkRunParallel measures the worker's real path — dispatch, claims,
// the episode in the shared browser, steps and artifacts written to
// SQLite and a local folder, grading — with runs of 5-step replay episodes
// on the sandbox shop at parallelism 1 and 2, on one worker with two
// slots. One iteration is one episode. Metrics:
//
//	episodes/min  from queuing the run to its completion
//	x-parallel=1  throughput over that of parallelism 1 in the same run
//	p1-cores-busy the machine's busy cores during the parallelism-1 runs
//	x-cpu-bound   the most x-parallel=1 could be: 2, or the machine's cores
//	              over p1-cores-busy if fewer (see BenchmarkEpisodesParallel)
//
// The two parallelisms alternate run by run, so that a busy machine's ups
// and downs fall on both.
func BenchmarkRunParallel(b *testing.B) {
	rb := setupRunFrom(b, storagetest.OpenSQLite(b), 2, nil, evaltest.Registry(), scrollBenchmark(b, benchRunEpisodes))
	rounds := max(1, b.N/benchRunEpisodes)
	var (
		took [3]time.Duration
		busy [3]float64 // core-seconds
	)
	b.ResetTimer()
	for range rounds {
		for _, p := range []int{1, 2} {
			var d time.Duration
			_, cores := testenv.MeasureBusyCores(func() { d = rb.runEpisodes(b, p) })
			took[p] += d
			busy[p] += cores * d.Seconds()
		}
	}
	b.StopTimer()
	perMin := func(p int) float64 { return float64(rounds*benchRunEpisodes) / took[p].Minutes() }
	b.ReportMetric(perMin(1), "p1-episodes/min")
	b.ReportMetric(perMin(2), "p2-episodes/min")
	b.ReportMetric(perMin(2)/perMin(1), "x-parallel=1")
	if cores := busy[1] / took[1].Seconds(); cores > 0 {
		b.ReportMetric(cores, "p1-cores-busy")
		b.ReportMetric(min(2, float64(runtime.NumCPU())/cores), "x-cpu-bound")
	}
}

// runEpisodes queues a run of the scroll subset at the given parallelism,
// waits for it to complete and returns how long it took from queuing.
func (rb *runBundle) runEpisodes(tb testing.TB, parallelism int) time.Duration {
	tb.Helper()
	start := time.Now()
	run, err := runService(rb.db, rb.runner).QueueRun(rb.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "replayer",
		BenchmarkSlug: sandbox.Slug, Subset: "scrolls", Parallelism: parallelism})
	require.NoError(tb, err)
	for {
		status, err := rb.db.RunStatus(rb.system, run.ID)
		require.NoError(tb, err)
		if status != models.RunQueued && status != models.RunRunning {
			require.Equal(tb, models.RunCompleted, status)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	var steps int64
	require.NoError(tb, rb.db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Select("COALESCE(SUM(steps), 0)").Scan(&steps).Error)
	require.EqualValues(tb, 5*benchRunEpisodes, steps, "every episode took its five steps")
	return elapsed
}
