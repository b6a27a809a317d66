package storage_test

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

func TestDB_Migrate(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		applied, err := db.AppliedMigrations(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, applied)

		t.Run("Idempotent", func(t *testing.T) {
			status, err := db.Migrate(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
			require.NoError(t, err)
			require.Empty(t, status.Applied)
			require.Empty(t, status.RiverApplied)
			require.Equal(t, applied[len(applied)-1], status.Current)
		})
	})
}

// TestOpen_SQLiteFilesArePrivate shows the database's folder created 0700 and
// its file, WAL and shared-memory files 0600, whatever the umask lets
// through: they hold password hashes and encrypted secrets.
func TestOpen_SQLiteFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "proctor.db")
	db, err := storage.Open(context.Background(), storage.DatabaseLocation{Dialect: "sqlite", Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Migrate(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)

	mode := func(p string) fs.FileMode {
		info, err := os.Stat(p)
		require.NoError(t, err, p)
		return info.Mode().Perm()
	}
	require.Equal(t, fs.FileMode(0o700), mode(dir))
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		require.Equal(t, fs.FileMode(0o600), mode(p), p)
	}
}

// TestOpen_SQLiteReadsBesideTheWriter: on SQLite, reads outside a
// transaction go to a pool of read connections, so they proceed while a
// write transaction holds the one writer (and see only what it committed);
// reads inside the transaction stay on the writer and see its writes.
func TestOpen_SQLiteReadsBesideTheWriter(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	ctx := context.Background()
	count := func(q *gorm.DB) int64 {
		t.Helper()
		var n int64
		require.NoError(t, q.Model(&models.WorkerLease{}).Count(&n).Error)
		return n
	}
	lease := models.WorkerLease{ID: "w1", Host: "h", StartedAt: time.Now().UTC(), HeartbeatAt: time.Now().UTC()}
	err := db.Gorm().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		require.NoError(t, tx.Create(&lease).Error)
		require.EqualValues(t, 1, count(tx), "the transaction reads its own write")
		// The writer is held by this transaction: without the read pool,
		// this read would wait for it, here for ever.
		readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.EqualValues(t, 0, count(db.Gorm().WithContext(readCtx)), "a read beside it sees only what was committed")
		leases, err := db.Leases(readCtx)
		require.NoError(t, err)
		require.Empty(t, leases)
		var n int64
		require.NoError(t, db.Gorm().WithContext(readCtx).Raw("SELECT COUNT(*) FROM worker_leases").Scan(&n).Error)
		require.Zero(t, n)
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 1, count(db.Gorm()), "committed: every read sees it")
	// Writes outside a transaction still go to the writer.
	require.NoError(t, db.DropLease(ctx, "w1"))
	require.EqualValues(t, 0, count(db.Gorm()))
}
