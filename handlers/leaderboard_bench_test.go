package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/stats"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// benchBoardRuns and benchBoardTasks size the board BenchmarkLeaderboardPage
// serves: 200 published runs, with all their attempts, of WebArena-Verified's
// size (812 tasks, 258 in its hard subset), each with its full entry and a
// restricted one on the benchmark's named subset, which the full board's query
// must skip.
const (
	benchBoardRuns  = 200
	benchBoardTasks = 812
	benchHardTasks  = 258
)

// benchBoardDataset is a benchmark of benchBoardTasks tasks in Proctor's
// format, the first benchHardTasks of them in the subset "smoke".
func benchBoardDataset() string {
	var b strings.Builder
	ids := make([]string, benchHardTasks)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprintf("t%d", i))
	}
	fmt.Fprintf(&b, `{"proctor_benchmark": 1, "name": "Board bench", "evaluator": "rubric", "subsets": {"smoke": {"description": "The first tasks", "task_ids": [%s]}}}`+"\n", strings.Join(ids, ","))
	sites := []string{"shopping", "gitlab", "reddit", "map"}
	levels := []string{"easy", "medium", "hard"}
	for i := range benchBoardTasks {
		fmt.Fprintf(&b, `{"id": "t%d", "intent": "Task number %d of the board benchmark.", "start_urls": ["__%s__"], "sites": [%q], "task_type": "qa", "difficulty": %q, "rubric": [{"requirement": "Answers"}]}`+"\n",
			i, i, strings.ToUpper(sites[i%4]), sites[i%4], levels[i%3])
	}
	return b.String()
}

// seedBenchBoard writes a benchmark of 812 tasks, 20 teams of 5 agents with 2
// published runs each, every run's 812 attempts, and their leaderboard
// entries, in batches, as the runner and the metrics job would leave them.
func seedBenchBoard(tb testing.TB, db *storage.DB) {
	tb.Helper()
	sys := models.WithActor(context.Background(), models.SystemActor())
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(benchBoardDataset()), nil)
	require.NoError(tb, err)
	res, err := db.ImportBenchmark(sys, "mini", ds, "board.jsonl", 0)
	require.NoError(tb, err)
	var taskIDs []int64
	require.NoError(tb, db.Gorm().Model(&models.Task{}).Where("version_id = ?", res.Version.ID).Order("position").Pluck("id", &taskIDs).Error)
	require.Len(tb, taskIDs, benchBoardTasks)
	g := db.Gorm()
	rnd := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var entries []models.LeaderboardEntry
	for team := range benchBoardRuns / 10 {
		tm := &models.Team{Slug: fmt.Sprintf("team-%02d", team), Name: fmt.Sprintf("Team %02d", team), CreatedAt: now, UpdatedAt: now}
		require.NoError(tb, g.Create(tm).Error)
		for agent := range 5 {
			a := &models.Agent{TeamID: tm.ID, Slug: fmt.Sprintf("agent-%d", agent), Name: fmt.Sprintf("Agent %02d-%d", team, agent),
				Kind: models.AgentUpload, Model: []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet", "qwen2.5-vl-72b", "llama-3.1-70b"}[agent],
				OpenSource: agent >= 3, CreatedAt: now, UpdatedAt: now}
			require.NoError(tb, g.Create(a).Error)
			for n := range 2 {
				finished := now.Add(-time.Duration(team*10+agent*2+n) * time.Hour)
				run := &models.Run{TeamID: tm.ID, AgentID: a.ID, VersionID: res.Version.ID, SubsetName: models.SubsetFull,
					Status: models.RunCompleted, Origin: []string{models.OriginExecuted, models.OriginUploaded, models.OriginReproduced}[(team+n)%3],
					AgentSnapshot: fmt.Sprintf(`{"name":%q,"slug":%q,"model":%q}`, a.Name, a.Slug, a.Model), Published: true,
					CreatedAt: finished.Add(-time.Hour), FinishedAt: &finished}
				require.NoError(tb, g.Create(run).Error)
				attempts := make([]models.Attempt, len(taskIDs))
				for i, task := range taskIDs {
					outcome := []string{models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError}[rnd.IntN(3)]
					attempts[i] = models.Attempt{RunID: run.ID, TaskID: task, Status: models.AttemptDone, Outcome: outcome,
						Steps: 1 + rnd.IntN(30), CreatedAt: finished, UpdatedAt: finished}
				}
				require.NoError(tb, g.CreateInBatches(attempts, 500).Error)
				judge := 1 + 4*rnd.Float64()
				for _, board := range []struct {
					subset     string
					restricted bool
					tasks      int
				}{{models.SubsetFull, false, benchBoardTasks}, {"smoke", true, benchHardTasks}} {
					k := rnd.IntN(board.tasks + 1)
					ci := stats.Wilson95(k, board.tasks)
					entries = append(entries, models.LeaderboardEntry{
						RunID: run.ID, BenchmarkID: res.Version.BenchmarkID, VersionID: run.VersionID, SubsetName: board.subset, Restricted: board.restricted,
						Tasks: board.tasks, Successes: k, SuccessRate: float64(k) / float64(board.tasks), CILow: ci.Low, CIHigh: ci.High,
						JudgeScore: &judge, Judged: board.tasks, MeanSteps: 5 + 20*rnd.Float64(), CostPerTask: rnd.Float64() / 10,
						Tokens: rnd.Int64N(5_000_000), Metrics: "{}", ComputedAt: now,
					})
				}
			}
		}
	}
	require.NoError(tb, g.CreateInBatches(entries, 100).Error)
	var n int64
	require.NoError(tb, g.Model(&models.Attempt{}).Count(&n).Error)
	require.EqualValues(tb, benchBoardRuns*benchBoardTasks, n, "every run has its attempts")
}

// BenchmarkLeaderboardPage serves the board of 200 runs of 812 tasks, a page
// request from the router to the last byte (every middleware, the board's
// version query, the visitor's layout around the kept board), against
// serving a static file of the page's size from disk in the same run:
// x-static is how many times longer the page takes. The server renders a
// board once per version of the board and keeps it, so these requests are
// what every visitor gets until the board changes; miss-ms and
// x-static-miss are the request right after a change, which renders the
// board from its precomputed entries (one query, ranked in memory), measured
// on benchMisses changes; 304-ms is a returning visitor's revalidation of
// a current copy.
func BenchmarkLeaderboardPage(b *testing.B) {
	db := storagetest.OpenSQLite(b)
	seedBenchBoard(b, db)
	h, err := handlers.New(handlers.Options{}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Store: db, Static: static.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil), Moderation: servicetest.Moderation(db)})
	require.NoError(b, err)
	page := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/benchmarks/mini/leaderboard", nil))
		return rec
	}
	first := page()
	require.Equal(b, http.StatusOK, first.Code)
	require.Equal(b, benchBoardRuns, strings.Count(first.Body.String(), `data-testid="leaderboard-row"`))
	dir := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "board.html"), first.Body.Bytes(), 0o644))
	files := http.FileServer(http.Dir(dir))
	file := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		files.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/board.html", nil))
		return rec
	}
	require.Equal(b, first.Body.Len(), file().Body.Len())
	// The board's version moves on, as every change the board shows moves
	// it: the next request renders the board anew.
	change := func() {
		require.NoError(b, db.Gorm().Exec("UPDATE board_versions SET version = version + 1 WHERE benchmark_id = 0").Error)
	}

	var pageTime, fileTime, missTime, missFileTime time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if rec := page(); rec.Code != http.StatusOK {
			b.Fatalf("leaderboard answered %d", rec.Code)
		}
		mid := time.Now()
		if rec := file(); rec.Code != http.StatusOK {
			b.Fatalf("static file answered %d", rec.Code)
		}
		pageTime += mid.Sub(start)
		fileTime += time.Since(mid)
	}
	b.StopTimer()
	// A returning visitor's revalidation: their cookie, the tag of their
	// copy, a 304.
	revalidate := func(tag string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/benchmarks/mini/leaderboard", nil)
		for _, c := range first.Result().Cookies() {
			req.AddCookie(c)
		}
		if tag != "" {
			req.Header.Set("If-None-Match", tag)
		}
		h.ServeHTTP(rec, req)
		return rec
	}
	tag := revalidate("").Header().Get("ETag")
	var notModifiedTime time.Duration
	for range b.N {
		start := time.Now()
		if rec := revalidate(tag); rec.Code != http.StatusNotModified {
			b.Fatalf("revalidation answered %d", rec.Code)
		}
		notModifiedTime += time.Since(start)
	}
	const benchMisses = 5
	for range benchMisses {
		change()
		start := time.Now()
		if rec := page(); rec.Code != http.StatusOK {
			b.Fatalf("leaderboard answered %d", rec.Code)
		}
		mid := time.Now()
		if rec := file(); rec.Code != http.StatusOK {
			b.Fatalf("static file answered %d", rec.Code)
		}
		missTime += mid.Sub(start)
		missFileTime += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(pageTime)/float64(time.Millisecond)/n, "page-ms")
	b.ReportMetric(float64(fileTime)/float64(time.Millisecond)/n, "static-ms")
	b.ReportMetric(float64(pageTime)/float64(fileTime), "x-static")
	b.ReportMetric(float64(notModifiedTime)/float64(time.Millisecond)/n, "304-ms")
	b.ReportMetric(float64(missTime)/float64(time.Millisecond)/benchMisses, "miss-ms")
	b.ReportMetric(float64(missTime)/float64(missFileTime), "x-static-miss")
	b.ReportMetric(float64(first.Body.Len())/1024, "page-KiB")
}
