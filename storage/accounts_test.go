package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStore_Accounts: users are stored with a hash of their password and
// their email in canonical form, and found by it; sessions are stored by
// their token's hash. The rules on the fields are the account service's
// (service/accounts_test.go).
func TestStore_Accounts(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		u, err := db.CreateUser(ctx, " Ada@Example.org ", "Ada", "a long enough password", false)
		require.NoError(t, err)
		require.Equal(t, "ada@example.org", u.Email)
		require.NotContains(t, u.PasswordHash, "a long enough password")

		t.Run("ECONFLICT", func(t *testing.T) {
			_, err := db.CreateUser(ctx, "ada@example.org", "", "another long password", false)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		})
		t.Run("UserByEmail", func(t *testing.T) {
			got, err := db.UserByEmail(ctx, "ADA@example.org")
			require.NoError(t, err)
			require.Equal(t, u.ID, got.ID)
			_, err = db.UserByEmail(ctx, "nobody@example.org")
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})
		t.Run("Sessions", func(t *testing.T) {
			token, sess, err := db.CreateSession(ctx, u.ID, "test", "127.0.0.1")
			require.NoError(t, err)
			require.NotEqual(t, token, sess.ID, "only the token's hash is stored")
			got, err := db.Session(ctx, models.HashToken(token))
			require.NoError(t, err)
			require.Equal(t, u.ID, got.UserID)
			require.Equal(t, sess.CSRFToken, got.CSRFToken)
			later := got.LastSeenAt.Add(time.Hour)
			got.LastSeenAt, got.ExpiresAt = later, later.Add(models.SessionTTL)
			require.NoError(t, db.TouchSession(ctx, got))
			got, err = db.Session(ctx, models.HashToken(token))
			require.NoError(t, err)
			require.WithinDuration(t, later, got.LastSeenAt, time.Second)
			require.NoError(t, db.DeleteSession(ctx, token))
			_, err = db.Session(ctx, models.HashToken(token))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})
		t.Run("ListUsers", func(t *testing.T) {
			users, err := db.ListUsers(ctx)
			require.NoError(t, err)
			require.Len(t, users, 1)
		})
	})
}

func TestStore_SetUserPassword(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		u := acctUser(t, db, "ops@example.org", false)
		require.NoError(t, db.ExpirePassword(ctx, u.ID))

		got, err := db.SetUserPassword(ctx, " OPS@example.org ", "a brand new password", true)
		require.NoError(t, err)
		require.Equal(t, u.ID, got.ID)
		require.True(t, got.IsAdmin)
		stored, err := db.UserByID(ctx, u.ID)
		require.NoError(t, err)
		require.True(t, stored.IsAdmin)
		require.False(t, stored.MustChangePassword, "a set password is no one-time password")
		require.NotEqual(t, u.PasswordHash, stored.PasswordHash)

		_, err = db.SetUserPassword(ctx, "ops@example.org", "yet another password", false)
		require.NoError(t, err)
		stored, err = db.UserByID(ctx, u.ID)
		require.NoError(t, err)
		require.True(t, stored.IsAdmin, "without admin the flag is kept, never removed")

		t.Run("ErrNotFound", func(t *testing.T) {
			_, err := db.SetUserPassword(ctx, "nobody@example.org", "a brand new password", false)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})
	})
}

func TestStore_DeleteExpiredSessions(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		u := acctUser(t, db, "sessions@example.org", false)
		live, _, err := db.CreateSession(ctx, u.ID, "test", "127.0.0.1")
		require.NoError(t, err)
		_, old, err := db.CreateSession(ctx, u.ID, "test", "127.0.0.1")
		require.NoError(t, err)
		require.NoError(t, db.Gorm().Model(old).Update("expires_at", time.Now().UTC().Add(-time.Hour)).Error)

		n, err := db.DeleteExpiredSessions(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		_, err = db.Session(ctx, models.HashToken(live))
		require.NoError(t, err, "live sessions are kept")
		n, err = db.DeleteExpiredSessions(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// TestStore_ChangePassword: a changed password ends a one-time password's
// status.
func TestStore_ChangePassword(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		u := acctUser(t, db, "dana@example.org", false)
		require.NoError(t, db.ExpirePassword(ctx, u.ID))
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(db.ExpirePassword(ctx, u.ID+1000)))
		got, err := db.UserByID(ctx, u.ID)
		require.NoError(t, err)
		require.True(t, got.MustChangePassword)

		require.NoError(t, db.ChangePassword(ctx, u.ID, "a new password!"))
		got, err = db.UserByID(ctx, u.ID)
		require.NoError(t, err)
		require.False(t, got.MustChangePassword)
		require.NotEqual(t, u.PasswordHash, got.PasswordHash)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(db.ChangePassword(ctx, u.ID+1000, "a new password!")))
	})
}
