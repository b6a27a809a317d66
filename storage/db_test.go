package storage_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/storage"
	"proctor/storage/storagetest"
)

func TestParseDatabaseURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]storage.DatabaseLocation{
		"sqlite:///var/lib/proctor.db": {Dialect: "sqlite", Path: "/var/lib/proctor.db"},
		"sqlite:data/proctor.db":       {Dialect: "sqlite", Path: "data/proctor.db"},
		"postgres://u@h:5432/db":       {Dialect: "postgres", DSN: "postgres://u@h:5432/db"},
	} {
		got, err := storage.ParseDatabaseURL(raw)
		require.NoError(t, err, raw)
		require.Equal(t, want, got, raw)
	}
	for _, raw := range []string{"", "mysql://x", "sqlite://host/x.db", "sqlite:", "sqlite:///"} {
		_, err := storage.ParseDatabaseURL(raw)
		require.Error(t, err, raw)
	}
}

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
