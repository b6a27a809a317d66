package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/sandbox"
)

// BenchmarkWebLoad puts the web tier under load: 50 concurrent clients
// (PROCTOR_BENCH_LOAD_CLIENTS) for 30 s (PROCTOR_BENCH_LOAD_SECONDS) on
// loopback, each asking in turn for a leaderboard, a run's page and an
// attempt's timeline, while `proctor serve` runs a sandbox run in its
// embedded worker. It reports requests/s, the median and 99th percentile
// latency and the requests that failed, on SQLite (local artifacts) and on
// PostgreSQL (S3). Run once (-benchtime 1x): its length is its own.
func BenchmarkWebLoad(b *testing.B) {
	clients := envInt(b, "PROCTOR_BENCH_LOAD_CLIENTS", 50)
	length := time.Duration(envInt(b, "PROCTOR_BENCH_LOAD_SECONDS", 30)) * time.Second
	for _, tc := range []struct {
		name string
		env  func(testing.TB) testEnv
	}{
		{"sqlite", func(t testing.TB) testEnv { return newTestEnv(t) }},
		{"postgres", scaleOutEnv},
	} {
		b.Run(tc.name, func(b *testing.B) {
			browserOptionsOrSkip(b)
			env := tc.env(b)
			env["PLAYWRIGHT_DRIVER_PATH"] = os.Getenv("PLAYWRIGHT_DRIVER_PATH")
			env["PROCTOR_CHROMIUM_PATH"] = os.Getenv("PROCTOR_CHROMIUM_PATH")
			env["PROCTOR_LOG_LEVEL"] = "warn"
			rig := newFaultRig(b, env)
			env["PROCTOR_EPISODES"] = "2"
			base := env.serve(b)

			// A finished, published run gives the board, the run page and
			// the timeline something to show; a second run executes while
			// the clients ask.
			shown := rig.queueRun(b, faultSubset, 2)
			rig.waitFinished(b, shown, 5*time.Minute)
			_, err := rig.app.moderationService().PublishRun(rig.member, shown)
			require.NoError(b, err)
			var attempt int64
			require.NoError(b, rig.app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ?", shown).Order("id").Limit(1).Pluck("id", &attempt).Error)
			running := rig.queueRun(b, "", 2)
			paths := []string{
				"/benchmarks/" + sandbox.Slug + "/leaderboard",
				fmt.Sprintf("/runs/%d", shown),
				fmt.Sprintf("/runs/%d/attempts/%d", shown, attempt),
			}
			for b.Loop() {
				res := loadTest(base, paths, clients, length)
				b.ReportMetric(res.perSecond, "req/s")
				b.ReportMetric(res.p50.Seconds()*1000, "p50-ms")
				b.ReportMetric(res.p99.Seconds()*1000, "p99-ms")
				b.ReportMetric(float64(res.failed), "errors")
				b.ReportMetric(float64(res.requests), "requests")
			}
			var status string
			require.NoError(b, rig.app.DB.Gorm().Model(&models.Run{}).Where("id = ?", running).Pluck("status", &status).Error)
			b.Logf("%s: the run under way was %s when the load ended", tc.name, status)
		})
	}
}

// loadResult is what a load test measured.
type loadResult struct {
	requests, failed int
	perSecond        float64
	p50, p99         time.Duration
}

// loadTest has clients ask for paths of base in turn, each as fast as it is
// answered, for length. A request fails on a transport error or a status
// other than 200.
func loadTest(base string, paths []string, clients int, length time.Duration) loadResult {
	transport := &http.Transport{MaxIdleConnsPerHost: clients}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	deadline := time.Now().Add(length)
	var mu sync.Mutex
	var latencies []time.Duration
	failed := 0
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			for i := c; time.Now().Before(deadline); i++ {
				began := time.Now()
				res, err := client.Get(base + paths[i%len(paths)])
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if err == nil && res.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", res.StatusCode)
					}
				}
				if err != nil {
					bad++
				}
				mine = append(mine, time.Since(began))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			failed += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(latencies)
	out := loadResult{requests: len(latencies), failed: failed, perSecond: float64(len(latencies)) / elapsed.Seconds()}
	if n := len(latencies); n > 0 {
		out.p50 = latencies[n/2]
		out.p99 = latencies[min(n-1, n*99/100)]
	}
	return out
}

// envInt reads a positive whole number from the environment, or def.
func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a whole number of at least 1", name, v)
	}
	return n
}

func TestLoadTest_CountsAndPercentiles(t *testing.T) {
	srv := http.NewServeMux()
	srv.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	srv.HandleFunc("GET /bad", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	res := loadTest(ts.URL, []string{"/ok", "/bad"}, 4, 300*time.Millisecond)
	require.Positive(t, res.requests)
	require.InDelta(t, res.requests/2, res.failed, 4, "every other request fails")
	require.LessOrEqual(t, res.p50, res.p99)
	require.Positive(t, res.perSecond)
}
