// Package storagetest opens real, migrated, isolated databases for tests: a SQLite
// file in t.TempDir(), and a fresh PostgreSQL schema when
// PROCTOR_TEST_DATABASE_URL is set.
package storagetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"proctor/internal/testenv"
	"proctor/models"
	"proctor/storage"
)

// Driver names a database backend a suite runs against.
type Driver struct {
	Name string
	Open func(t testing.TB) *storage.DB
}

// Drivers returns SQLite, plus PostgreSQL when PROCTOR_TEST_DATABASE_URL is set.
// When PostgreSQL is required but unset, it is still returned so that opening it
// fails the test instead of silently dropping the suite.
func Drivers() []Driver {
	return []Driver{{Name: "sqlite", Open: OpenSQLite}, {Name: "postgres", Open: OpenPostgres}}
}

// ForEachDriver runs fn as a subtest once per database driver.
func ForEachDriver(t *testing.T, fn func(t *testing.T, db *storage.DB)) {
	for _, d := range Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, d.Open(t))
		})
	}
}

// OpenSQLite opens a migrated SQLite database in a temporary folder.
func OpenSQLite(t testing.TB) *storage.DB {
	t.Helper()
	loc := storage.DatabaseLocation{Dialect: "sqlite", Path: filepath.Join(t.TempDir(), "proctor.db")}
	return open(t, loc)
}

// OpenPostgres opens a migrated PostgreSQL database in a fresh schema that is
// dropped when the test ends.
func OpenPostgres(t testing.TB) *storage.DB {
	t.Helper()
	return open(t, postgresSchema(t))
}

// OpenPostgresPair opens one migrated PostgreSQL database twice, each with
// its own connections, as two server processes sharing it do.
func OpenPostgresPair(t testing.TB) (*storage.DB, *storage.DB) {
	t.Helper()
	loc := postgresSchema(t)
	first := open(t, loc)
	second, err := storage.Open(context.Background(), loc)
	require.NoError(t, err)
	t.Cleanup(func() { second.Close() })
	return first, second
}

// postgresSchema creates a fresh schema, dropped when the test ends, and
// returns where a connection to it is.
func postgresSchema(t testing.TB) storage.DatabaseLocation {
	t.Helper()
	base := os.Getenv("PROCTOR_TEST_DATABASE_URL")
	testenv.SkipUnlessAvailable(t, "postgres", base != "", "PROCTOR_TEST_DATABASE_URL not set: PostgreSQL suite needs a server (make test starts one)")
	ctx := context.Background()
	schema := "t_" + randomHex(t, 8)
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err, "connect to PROCTOR_TEST_DATABASE_URL")
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return storage.DatabaseLocation{Dialect: "postgres", DSN: u.String()}
}

func open(t testing.TB, loc storage.DatabaseLocation) *storage.DB {
	t.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, loc)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Migrate(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	return db
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// Claimant is a worker claiming attempts in a test, whose claims another
// claimant takes over once they are older than ttl (0: at once), with a
// team share no fixture reaches.
func Claimant(ttl time.Duration) models.Claimant {
	return models.Claimant{Lease: models.WorkerLease{ID: "test-worker", Host: "test"}, TTL: ttl, TeamEpisodes: 1000, TeamHiddenJobs: 1000}
}
