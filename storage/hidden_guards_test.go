package storage_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
)

// TestStore_HiddenTestsBenchmarkGuards: a hidden-tests benchmark's tasks are
// graded by testing submitted websites, so neither an agent run nor an
// uploaded bundle of trajectories is taken for it, and a re-scoring passes
// its attempts by (it would run no test).
func TestStore_HiddenTestsBenchmarkGuards(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newHiddenReadFixture(t, db)

		_, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: f.seed.BenchmarkSlug}, 0)
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "hidden-tests benchmark")
		require.Contains(t, models.ErrorMessage(err), "/benchmarks/"+f.seed.BenchmarkSlug+"/candidates/new")

		files, err := artifact.NewLocal(t.TempDir(), artifact.NewURLSigner([]byte(strings.Repeat("s", 32))), "")
		require.NoError(t, err)
		t.Cleanup(func() { files.Close() })
		_, _, err = servicetest.SubmissionsOver(db, files, service.SubmissionOptions{}).CreateSubmission(f.member, models.SubmissionRequest{Agent: "lab/uploader", Benchmark: f.seed.BenchmarkSlug,
			Filename: "results.zip", Size: 1 << 20, SHA256: strings.Repeat("a", 64)})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "submit the candidate websites")

		var queued []int64
		enqueue := func(_ context.Context, _ *sql.Tx, ids []int64, _ string) error {
			queued = append(queued, ids...)
			return nil
		}
		n, err := db.RescoreAttempts(f.admin, models.RescoreScope{RunID: f.seed.RunID}, enqueue)
		require.NoError(t, err)
		require.Zero(t, n)
		var bench models.Benchmark
		require.NoError(t, db.Gorm().Where("slug = ?", f.seed.BenchmarkSlug).Take(&bench).Error)
		n, err = db.RescoreAttempts(f.admin, models.RescoreScope{BenchmarkID: bench.ID}, enqueue)
		require.NoError(t, err)
		require.Zero(t, n)
		_, err = db.RescoreAttempts(f.admin, models.RescoreScope{}, enqueue)
		require.NoError(t, err)
		for _, id := range f.seed.Attempts {
			require.NotContains(t, queued, id)
		}
	})
}
