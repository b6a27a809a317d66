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

	"github.com/stretchr/testify/require"

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
