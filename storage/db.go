// Package storage opens Proctor's database (SQLite or PostgreSQL), applies its
// migrations and holds every query. It maps database errors to models error codes.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" database/sql driver

	"proctor/migrations"
	"proctor/models"
)

// DB is an open Proctor database.
type DB struct {
	gorm *gorm.DB
	sql  *sql.DB // the writer (SQLite) or the pool; River shares it
	// read is SQLite's pool of read-only connections beside the writer:
	// GORM's reads outside a transaction go there (routeReads), so pages
	// and episodes' reads do not queue behind writes or River's polling.
	// Nil on PostgreSQL, whose pool serves both.
	read    *sql.DB
	pool    *pgxpool.Pool // PostgreSQL only; River's pgx driver shares it
	dialect string
	now     func() time.Time

	agentSecrets AgentSecrets // seals agent secrets; set by UseAgentSecrets
}

// DatabaseLocation is where the database is. The configuration parses it
// from PROCTOR_DATABASE_URL (config.DatabaseLocation has the same fields).
type DatabaseLocation struct {
	Dialect string // migrations.SQLite or migrations.Postgres
	Path    string // SQLite file path
	DSN     string // PostgreSQL connection string
}

// redactURL hides a password in a connection URL so it never reaches logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// Open connects to the database at loc. SQLite gets WAL, a busy timeout, foreign
// keys and a single writer connection; PostgreSQL gets a pgx pool.
func Open(ctx context.Context, loc DatabaseLocation) (*DB, error) {
	gcfg := &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
		TranslateError:         true,
	}
	db := &DB{dialect: loc.Dialect, now: func() time.Time { return time.Now().UTC() }}
	switch loc.Dialect {
	case migrations.SQLite:
		if err := createPrivate(loc.Path); err != nil {
			return nil, err
		}
		dsn := "file:" + loc.Path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)" +
			"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate&_time_format=sqlite"
		sqlDB, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", loc.Path, err)
		}
		// One writer: SQLite serialises writes anyway, and a single connection
		// avoids SQLITE_BUSY between our own goroutines.
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetConnMaxIdleTime(0)
		db.sql = sqlDB
		// Readers beside it: WAL lets them read the last commit while the
		// writer writes. They never write (query_only) and never take the
		// write lock (deferred transactions).
		read, err := sql.Open("sqlite", "file:"+loc.Path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"+
			"&_pragma=query_only(1)&_time_format=sqlite")
		if err != nil {
			sqlDB.Close()
			return nil, fmt.Errorf("open database %s: %w", loc.Path, err)
		}
		read.SetMaxOpenConns(sqliteReaders)
		read.SetMaxIdleConns(sqliteReaders)
		db.read = read
		gdb, err := gorm.Open(sqlite.New(sqlite.Config{Conn: sqlDB}), gcfg)
		if err == nil {
			err = routeReads(gdb, sqlDB, read)
		}
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open database %s: %w", loc.Path, err)
		}
		db.gorm = gdb
	case migrations.Postgres:
		cfg, err := pgxpool.ParseConfig(loc.DSN)
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", redactURL(loc.DSN), err)
		}
		// A process that stops answering inside a transaction (frozen, its
		// machine paused) must not hold its row locks for ever: the server
		// ends such a session, well before the process's worker lease lapses
		// and the others take its work over. Proctor's transactions never
		// wait on anything but the database.
		if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
			cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.Itoa(int(idleInTransactionTimeout / time.Millisecond))
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", redactURL(loc.DSN), err)
		}
		db.pool = pool
		db.sql = stdlib.OpenDBFromPool(pool)
		gdb, err := gorm.Open(postgres.New(postgres.Config{Conn: db.sql}), gcfg)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open database %s: %w", redactURL(loc.DSN), err)
		}
		db.gorm = gdb
	default:
		return nil, fmt.Errorf("open database: unknown dialect %q", loc.Dialect)
	}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Dialect returns migrations.SQLite or migrations.Postgres.
func (db *DB) Dialect() string { return db.dialect }

// SQL returns the underlying connection pool (River's SQLite driver shares it).
func (db *DB) SQL() *sql.DB { return db.sql }

// PgxPool returns the PostgreSQL pool, or nil on SQLite.
func (db *DB) PgxPool() *pgxpool.Pool { return db.pool }

// idleInTransactionTimeout is how long a PostgreSQL session may sit idle
// inside a transaction before the server ends it (and its locks).
const idleInTransactionTimeout = 30 * time.Second

// Gorm returns the GORM handle for packages that build on storage (the runner).
func (db *DB) Gorm() *gorm.DB { return db.gorm }

// Ping checks that the database answers; EUNAVAILABLE otherwise.
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.sql.PingContext(ctx); err != nil {
		return &models.Error{Code: models.EUNAVAILABLE, Message: "database is not reachable", Err: err}
	}
	return nil
}

// sqliteReaders is how many read connections SQLite has beside its writer.
const sqliteReaders = 4

// routeReads sends GORM's reads made outside a transaction to the read
// pool: queries (Find, First, Count, Pluck …) and row reads (Scan, Rows)
// whose statement is a SELECT. Writes, and every statement of a
// transaction, stay on the writer, so a transaction reads its own writes.
func routeReads(gdb *gorm.DB, writer, read *sql.DB) error {
	toReader := func(tx *gorm.DB) {
		if tx.Statement.ConnPool == writer {
			tx.Statement.ConnPool = read
		}
	}
	if err := gdb.Callback().Query().Before("gorm:query").Register("proctor:read_pool", toReader); err != nil {
		return err
	}
	return gdb.Callback().Row().Before("gorm:row").Register("proctor:read_pool", func(tx *gorm.DB) {
		// A raw statement may write (INSERT … RETURNING); one built from the
		// model is a SELECT.
		if raw := strings.TrimSpace(tx.Statement.SQL.String()); raw == "" || isSelect(raw) {
			toReader(tx)
		}
	})
}

// isSelect reports whether a SQL statement, trimmed of leading space, is a
// SELECT. It looks at the first word only: a statement is routed on every
// raw read, so it must not scan the whole text. A WITH statement is not
// taken for a read, since its body may write.
func isSelect(stmt string) bool {
	const word = "SELECT"
	if len(stmt) < len(word) || !strings.EqualFold(stmt[:len(word)], word) {
		return false
	}
	return len(stmt) == len(word) || !isWordByte(stmt[len(word)])
}

// isWordByte reports whether c can continue an SQL keyword.
func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Close releases the connections.
func (db *DB) Close() error {
	var errs []error
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	if db.sql != nil {
		errs = append(errs, db.sql.Close())
	}
	if db.pool != nil {
		db.pool.Close()
	}
	return errors.Join(errs...)
}

// createPrivate creates the SQLite database's folder (0700) and file (0600)
// when they do not exist yet: the file holds password hashes and encrypted
// secrets, and SQLite gives its WAL and shared-memory files the database
// file's permissions. Existing ones are left as the operator set them.
func createPrivate(path string) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("open database: create folder %s: %w", dir, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	return f.Close()
}
