package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

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
			require.Equal(t, "email", models.ErrorField(err))
		})
		t.Run("EINVALID", func(t *testing.T) {
			_, err := db.CreateUser(ctx, "bad", "", "a long enough password", false)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			_, err = db.CreateUser(ctx, "ok@example.org", "", "short", false)
			require.Equal(t, "password", models.ErrorField(err))
			_, err = db.CreateUser(ctx, "ok@example.org", "", strings.Repeat("long passphrase ", 6), false)
			require.Equal(t, models.EINVALID, models.ErrorCode(err), "bcrypt reads only 72 bytes: longer is refused, not truncated")
			require.Equal(t, "password", models.ErrorField(err))
		})
		t.Run("Authenticate", func(t *testing.T) {
			got, err := db.Authenticate(ctx, "ADA@example.org", "a long enough password")
			require.NoError(t, err)
			require.Equal(t, u.ID, got.ID)
			_, err = db.Authenticate(ctx, "ada@example.org", "wrong password")
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, errUnknown := db.Authenticate(ctx, "nobody@example.org", "wrong password")
			require.Equal(t, models.ErrorMessage(err), models.ErrorMessage(errUnknown), "unknown accounts fail the same way")
		})
		t.Run("Sessions", func(t *testing.T) {
			token, sess, err := db.CreateSession(ctx, u.ID, "test", "127.0.0.1")
			require.NoError(t, err)
			require.NotEqual(t, token, sess.ID, "only the token's hash is stored")
			gotSess, gotUser, err := db.SessionUser(ctx, token)
			require.NoError(t, err)
			require.Equal(t, u.ID, gotUser.ID)
			require.Equal(t, sess.CSRFToken, gotSess.CSRFToken)
			require.NoError(t, db.DeleteSession(ctx, token))
			_, _, err = db.SessionUser(ctx, token)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
		t.Run("ListUsersAdminOnly", func(t *testing.T) {
			_, err := db.ListUsers(ctx)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, err = db.ListUsers(models.WithActor(ctx, models.Actor{UserID: u.ID}))
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			users, err := db.ListUsers(models.WithActor(ctx, models.SystemActor()))
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

		got, err := db.SetUserPassword(ctx, " OPS@example.org ", "a brand new password", true)
		require.NoError(t, err)
		require.Equal(t, u.ID, got.ID)
		require.True(t, got.IsAdmin)
		_, err = db.Authenticate(ctx, "ops@example.org", "correct horse battery")
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err), "the old password no longer works")
		auth, err := db.Authenticate(ctx, "ops@example.org", "a brand new password")
		require.NoError(t, err)
		require.True(t, auth.IsAdmin)

		_, err = db.SetUserPassword(ctx, "ops@example.org", "yet another password", false)
		require.NoError(t, err)
		auth, err = db.Authenticate(ctx, "ops@example.org", "yet another password")
		require.NoError(t, err)
		require.True(t, auth.IsAdmin, "without admin the flag is kept, never removed")

		t.Run("ErrNotFound", func(t *testing.T) {
			_, err := db.SetUserPassword(ctx, "nobody@example.org", "a brand new password", false)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "nobody@example.org")
		})
		t.Run("EINVALID", func(t *testing.T) {
			_, err := db.SetUserPassword(ctx, "ops@example.org", "short", false)
			require.Equal(t, "password", models.ErrorField(err))
			_, err = db.SetUserPassword(ctx, "not an email", "a brand new password", false)
			require.Equal(t, "email", models.ErrorField(err))
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
		_, _, err = db.SessionUser(ctx, live)
		require.NoError(t, err, "live sessions are kept")
		n, err = db.DeleteExpiredSessions(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// TestStore_ChangePassword: a signed-in user replaces their password given
// the current one, which also ends a one-time password's status.
func TestStore_ChangePassword(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		u, err := db.CreateUser(ctx, "dana@example.org", "Dana", "correct horse battery", false)
		require.NoError(t, err)
		require.NoError(t, db.ExpirePassword(ctx, u.ID))
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(db.ExpirePassword(ctx, u.ID+1000)))
		got, err := db.Authenticate(ctx, "dana@example.org", "correct horse battery")
		require.NoError(t, err, "a one-time password signs in once")
		require.True(t, got.MustChangePassword)

		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(db.ChangePassword(ctx, "correct horse battery", "a new password!")))
		as := models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email})
		err = db.ChangePassword(as, "wrong", "a new password!")
		require.Equal(t, "current_password", models.ErrorField(err))
		err = db.ChangePassword(as, "correct horse battery", "short")
		require.Equal(t, "new_password", models.ErrorField(err))
		require.NoError(t, db.ChangePassword(as, "correct horse battery", "a new password!"))
		got, err = db.Authenticate(ctx, "dana@example.org", "a new password!")
		require.NoError(t, err)
		require.False(t, got.MustChangePassword)
	})
}
