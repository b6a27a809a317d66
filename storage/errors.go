package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"gorm.io/gorm"

	"proctor/models"
)

// wrap maps database errors to models error codes: a missing row is ENOTFOUND
// and a unique-key violation ECONFLICT, both with the client-safe message given;
// anything else keeps its cause for the log under a generic internal error.
func wrap(err error, what string) error {
	var me *models.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &me):
		return err
	case errors.Is(err, gorm.ErrRecordNotFound):
		return &models.Error{Code: models.ENOTFOUND, Message: what + " not found.", Err: err}
	case errors.Is(err, gorm.ErrDuplicatedKey), isUniqueViolation(err):
		return &models.Error{Code: models.ECONFLICT, Message: what + " already exists.", Err: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// isUniqueViolation recognises unique-key violations from both drivers: PostgreSQL's
// SQLSTATE 23505 and SQLite's constraint message (the pure-Go driver's errors are
// not translated by GORM).
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "PRIMARY KEY constraint failed")
}

// tx runs fn in a transaction bound to ctx.
func (db *DB) tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return db.gorm.WithContext(ctx).Transaction(fn)
}

// q returns a GORM session bound to ctx.
func (db *DB) q(ctx context.Context) *gorm.DB { return db.gorm.WithContext(ctx) }
