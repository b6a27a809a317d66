package runner_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/bundle/bundletest"
	"proctor/eval/verified"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/runner"
	"proctor/storage/storagetest"
)

// TestSubmission_RescoreWithTheOfficialReading is the upgrade path: an
// uploaded WebArena-Verified run graded by the lenient reading (as Proctor's
// version 1 graded) passes three real outputs of the parity corpus; the
// administrator switches the benchmark to the official reading and re-scores
// it; the two outputs the official evaluator fails now fail, the run's totals
// follow, and its change-log line and board row say by how much.
func TestSubmission_RescoreWithTheOfficialReading(t *testing.T) {
	t.Parallel()
	outputs := parityOutputs(t, map[string]string{
		"0":  "b000", // 0:are:correct, official success
		"1":  "b003", // 1:are:prose_around_json, official failure
		"14": "b007", // 14:are:utf8_bom, official failure
	})
	// Both databases; the artifact store plays no part in a re-scoring.
	forEachDatabase(t, portalOptions{submissions: runner.SubmissionOptions{PartBytes: 256 << 10}}, func(t *testing.T, p *portal) {
		p.importWebArenaVerified(t)
		require.NoError(t, p.db.SetBenchmarkEvaluator(p.admin, "webarena-verified", models.EvaluatorWebArenaVerifiedLenient, evaltest.Registry().Readings))
		file := bundletest.Write(t, filepath.Join(t.TempDir(), "parity.tar.gz"), bundletest.TarGz, bundletest.Wrap("parity", outputs))
		f := fileOf(t, file)
		_, run := p.ingest(t, f, request("webarena-verified", "", f))
		require.Equal(t, 3, run.Successes, "the lenient reading passes all three")

		require.NoError(t, p.db.SetBenchmarkEvaluator(p.admin, "webarena-verified", models.EvaluatorWebArenaVerified, evaltest.Registry().Readings))
		n, err := runService(p.db, p.runner).Rescore(p.admin, models.RescoreScope{RunID: run.ID})
		require.NoError(t, err)
		require.Equal(t, 3, n, "the bundle's three answers are graded again; its 809 absent tasks stay failures by rule")
		require.Eventually(t, func() bool {
			var graded int64
			require.NoError(t, p.db.Gorm().Model(&models.Evaluation{}).Joins("JOIN attempts a ON a.id = evaluations.attempt_id").
				Where("a.run_id = ? AND evaluations.rescore = ?", run.ID, true).Count(&graded).Error)
			return graded == 3
		}, testenv.Scaled(t, 2*time.Minute), 100*time.Millisecond, "every answer graded again")
		require.Equal(t, models.OutcomeFailure, p.attemptsByTask(t, run.ID)["2"].Outcome, "an absent task keeps its outcome")

		attempts := p.attemptsByTask(t, run.ID)
		require.Equal(t, models.OutcomeSuccess, attempts["0"].Outcome)
		require.Equal(t, models.OutcomeFailure, attempts["1"].Outcome, "prose around the JSON is not read")
		require.Equal(t, models.OutcomeFailure, attempts["14"].Outcome, "a byte order mark is not read")
		var ev models.Evaluation
		require.NoError(t, p.db.Gorm().Where("attempt_id = ? AND is_primary", attempts["1"].ID).Take(&ev).Error)
		require.Equal(t, verified.Version, ev.EvaluatorVersion)

		var after models.Run
		require.NoError(t, p.db.Gorm().First(&after, run.ID).Error)
		require.Equal(t, 1, after.Successes)
		require.Equal(t, 2, after.RescoreChanged)
		require.Equal(t, 3, *after.RescoreSuccessesBefore)

		changes, err := p.db.LeaderboardChanges(context.Background(), models.BenchmarkScope{}, "webarena-verified", models.ChangeFilter{Page: 1, PerPage: 10})
		require.NoError(t, err)
		require.Equal(t, models.EventRescored, changes.Changes[0].Kind)
		c := changes.Changes[0].RescoreChange
		require.True(t, c.Known())
		require.Equal(t, -2, c.SuccessDelta())
		require.Equal(t, 2, c.ChangedAttempts)
		require.Equal(t, 812, *c.Tasks)
		require.Contains(t, c.Evaluators, verified.Version)

		require.Eventually(t, func() bool {
			lb, err := p.db.Leaderboard(context.Background(), "webarena-verified", models.SubsetFull, models.LeaderboardQuery{}, models.BenchmarkScope{})
			require.NoError(t, err)
			return len(lb.Rows) == 1 && lb.Rows[0].Successes == 1 && lb.Rows[0].Rescore.SuccessDelta() == -2 && lb.Evaluator == models.EvaluatorWebArenaVerified
		}, testenv.Scaled(t, time.Minute), 100*time.Millisecond, "the board follows the re-scoring and marks the row")
	})
}

// forEachDatabase runs fn on SQLite and PostgreSQL with the local store.
func forEachDatabase(t *testing.T, opts portalOptions, fn func(t *testing.T, p *portal)) {
	local := portalStores()[0]
	for _, d := range storagetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, newPortal(t, d.Open(t), local, opts))
		})
	}
}

// parityOutputs reads the agent outputs of the parity corpus's given batches
// (task id → batch) as bundle entries named {task_id}/{file}.
func parityOutputs(t *testing.T, batches map[string]string) []bundletest.Entry {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.SharedDataDir(t), "webarena-verified", "parity", "corpus.tgz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var out []bundletest.Entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		// devcorpus/batches/bNNN/{task_id}/{file}
		parts := strings.Split(path.Clean(h.Name), "/")
		if len(parts) != 5 || parts[1] != "batches" || h.Typeflag != tar.TypeReg {
			continue
		}
		if batch, ok := batches[parts[3]]; !ok || batch != parts[2] {
			continue
		}
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, bundletest.Entry{Name: parts[3] + "/" + parts[4], Body: b})
	}
	require.Len(t, out, 2*len(batches), "an answer and a network log per task")
	return out
}
