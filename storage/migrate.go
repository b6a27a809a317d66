package storage

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"proctor/migrations"
)

// MigrationStatus reports what Migrate did.
type MigrationStatus struct {
	Applied      []string // app migrations applied by this call
	Current      int      // newest app migration version now in place
	RiverApplied []int    // River queue migrations applied by this call
}

// Migrate applies pending app migrations, each in its own transaction and recorded
// in schema_migrations, then River's queue migrations. It is safe to run from
// several processes at once: PostgreSQL takes an advisory lock, SQLite's
// immediate transactions serialise writers.
func (db *DB) Migrate(ctx context.Context, log *slog.Logger) (MigrationStatus, error) {
	var status MigrationStatus
	list, err := migrations.For(db.dialect)
	if err != nil {
		return status, err
	}
	create := `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name TEXT NOT NULL,
		applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)`
	if _, err := db.sql.ExecContext(ctx, create); err != nil {
		return status, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	for _, m := range list {
		applied, err := db.applyMigration(ctx, m)
		if err != nil {
			return status, err
		}
		if applied {
			status.Applied = append(status.Applied, fmt.Sprintf("%04d_%s", m.Version, m.Name))
			log.Info("migration applied", "dialect", db.dialect, "version", m.Version, "name", m.Name)
		}
		status.Current = m.Version
	}
	river, err := db.migrateRiver(ctx, log)
	if err != nil {
		return status, err
	}
	status.RiverApplied = river
	return status, nil
}

// foreignKeysOff marks an SQLite migration that rebuilds a table other
// tables refer to (SQLite changes a CHECK constraint no other way): it runs
// with foreign keys off, so that dropping the old table neither cascades
// nor fails, and the foreign keys are checked before it commits.
const foreignKeysOff = "-- proctor:foreign-keys-off"

func (db *DB) applyMigration(ctx context.Context, m migrations.Migration) (bool, error) {
	var tx *sql.Tx
	var err error
	rebuild := db.dialect == migrations.SQLite && strings.HasPrefix(m.SQL, foreignKeysOff)
	if rebuild {
		conn, cerr := db.sql.Conn(ctx)
		if cerr != nil {
			return false, fmt.Errorf("migrate %04d: connection: %w", m.Version, cerr)
		}
		defer conn.Close()
		// Not inside a transaction: SQLite ignores the pragma there.
		if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
			return false, fmt.Errorf("migrate %04d: foreign keys off: %w", m.Version, err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys = ON") //nolint:errcheck // the connection is closed next
		tx, err = conn.BeginTx(ctx, nil)
	} else {
		tx, err = db.sql.BeginTx(ctx, nil)
	}
	if err != nil {
		return false, fmt.Errorf("migrate %04d: begin: %w", m.Version, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if db.dialect == migrations.Postgres {
		// Serialise concurrent migrators (serve and workers starting together).
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7243001)`); err != nil {
			return false, fmt.Errorf("migrate %04d: lock: %w", m.Version, err)
		}
	}
	var seen int
	q := `SELECT COUNT(*) FROM schema_migrations WHERE version = ` + db.placeholder(1)
	if err := tx.QueryRowContext(ctx, q, m.Version).Scan(&seen); err != nil {
		return false, fmt.Errorf("migrate %04d: read schema_migrations: %w", m.Version, err)
	}
	if seen > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("migrate %04d_%s: %w", m.Version, m.Name, err)
	}
	if rebuild {
		rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
		if err != nil {
			return false, fmt.Errorf("migrate %04d_%s: check foreign keys: %w", m.Version, m.Name, err)
		}
		broken := rows.Next()
		rows.Close()
		if broken {
			return false, fmt.Errorf("migrate %04d_%s: the rebuilt tables break a foreign key", m.Version, m.Name)
		}
	}
	ins := `INSERT INTO schema_migrations (version, name) VALUES (` + db.placeholder(1) + `, ` + db.placeholder(2) + `)`
	if _, err := tx.ExecContext(ctx, ins, m.Version, m.Name); err != nil {
		return false, fmt.Errorf("migrate %04d: record: %w", m.Version, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate %04d: commit: %w", m.Version, err)
	}
	return true, nil
}

func (db *DB) placeholder(n int) string {
	if db.dialect == migrations.Postgres {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

func (db *DB) migrateRiver(ctx context.Context, log *slog.Logger) ([]int, error) {
	var (
		res *rivermigrate.MigrateResult
		err error
	)
	cfg := &rivermigrate.Config{Logger: log}
	switch db.dialect {
	case migrations.SQLite:
		var m *rivermigrate.Migrator[*sql.Tx]
		if m, err = rivermigrate.New(riversqlite.New(db.sql), cfg); err == nil {
			res, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		}
	case migrations.Postgres:
		m, merr := rivermigrate.New(riverpgxv5.New(db.pool), cfg)
		if err = merr; err == nil {
			res, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("migrate river queue: %w", err)
	}
	var versions []int
	for _, v := range res.Versions {
		versions = append(versions, v.Version)
	}
	return versions, nil
}

// AppliedMigrations lists the recorded app migration versions in order.
func (db *DB) AppliedMigrations(ctx context.Context) ([]int, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
