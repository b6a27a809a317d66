package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

func TestAccounts_SignUp(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		accounts := servicetest.Accounts(db)
		u, err := accounts.SignUp(ctx, " Ada@Example.org ", "Ada", "a long enough password")
		require.NoError(t, err)
		require.Equal(t, "ada@example.org", u.Email)
		require.False(t, u.IsAdmin)
		require.NotContains(t, u.PasswordHash, "a long enough password")

		t.Run("ECONFLICT", func(t *testing.T) {
			_, err := accounts.SignUp(ctx, "ada@example.org", "", "another long password")
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Equal(t, "email", models.ErrorField(err))
			require.Equal(t, "an account with this email already exists", models.ErrorMessage(err))
		})
		t.Run("EINVALID", func(t *testing.T) {
			_, err := accounts.SignUp(ctx, "bad", "", "a long enough password")
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "email", models.ErrorField(err))
			_, err = accounts.SignUp(ctx, "ok@example.org", "", "short")
			require.Equal(t, "password", models.ErrorField(err))
			_, err = accounts.SignUp(ctx, "ok@example.org", "", strings.Repeat("long passphrase ", 6))
			require.Equal(t, models.EINVALID, models.ErrorCode(err), "bcrypt reads only 72 bytes: longer is refused, not truncated")
			require.Equal(t, "password", models.ErrorField(err))
			_, err = accounts.SignUp(ctx, "ok@example.org", strings.Repeat("n", 101), "a long enough password")
			require.Equal(t, "name", models.ErrorField(err))
		})
		t.Run("Authenticate", func(t *testing.T) {
			got, err := accounts.Authenticate(ctx, "ADA@example.org", "a long enough password")
			require.NoError(t, err)
			require.Equal(t, u.ID, got.ID)
			_, err = accounts.Authenticate(ctx, "ada@example.org", "wrong password")
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, errUnknown := accounts.Authenticate(ctx, "nobody@example.org", "wrong password")
			require.Equal(t, models.ErrorMessage(err), models.ErrorMessage(errUnknown), "unknown accounts fail the same way")
		})
		t.Run("Sessions", func(t *testing.T) {
			token, sess, err := accounts.StartSession(ctx, u, "test", "127.0.0.1")
			require.NoError(t, err)
			require.NotEqual(t, token, sess.ID, "only the token's hash is stored")
			gotSess, gotUser, err := accounts.SessionUser(ctx, token)
			require.NoError(t, err)
			require.Equal(t, u.ID, gotUser.ID)
			require.Equal(t, sess.CSRFToken, gotSess.CSRFToken)
			require.NoError(t, accounts.EndSession(ctx, token))
			_, _, err = accounts.SessionUser(ctx, token)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, _, err = accounts.SessionUser(ctx, "")
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
		t.Run("ExpiredSession", func(t *testing.T) {
			token, sess, err := accounts.StartSession(ctx, u, "test", "127.0.0.1")
			require.NoError(t, err)
			require.NoError(t, db.Gorm().Model(sess).Update("expires_at", time.Now().UTC().Add(-time.Minute)).Error)
			_, _, err = accounts.SessionUser(ctx, token)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			require.Equal(t, "Your session has ended; sign in again.", models.ErrorMessage(err))
			_, err = db.Session(ctx, models.HashToken(token))
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "an expired session is deleted")
		})
		t.Run("SlidingExpiry", func(t *testing.T) {
			token, sess, err := accounts.StartSession(ctx, u, "test", "127.0.0.1")
			require.NoError(t, err)
			old := time.Now().UTC().Add(-time.Hour)
			require.NoError(t, db.Gorm().Model(sess).Updates(map[string]any{"last_seen_at": old, "expires_at": old.Add(models.SessionTTL)}).Error)
			got, _, err := accounts.SessionUser(ctx, token)
			require.NoError(t, err)
			require.WithinDuration(t, time.Now(), got.LastSeenAt, time.Minute)
			require.True(t, got.ExpiresAt.After(old.Add(models.SessionTTL)), "the expiry slides")
		})
	})
}

func TestAccounts_SetUserPassword(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := models.WithActor(context.Background(), models.SystemActor())
		accounts := servicetest.Accounts(db)
		u := acctUser(t, db, "ops@example.org", false)

		got, err := accounts.SetUserPassword(ctx, " OPS@example.org ", "a brand new password", true)
		require.NoError(t, err)
		require.Equal(t, u.ID, got.ID)
		require.True(t, got.IsAdmin)
		_, err = accounts.Authenticate(ctx, "ops@example.org", "correct horse battery")
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err), "the old password no longer works")
		auth, err := accounts.Authenticate(ctx, "ops@example.org", "a brand new password")
		require.NoError(t, err)
		require.True(t, auth.IsAdmin)

		_, err = accounts.SetUserPassword(ctx, "ops@example.org", "yet another password", false)
		require.NoError(t, err)
		auth, err = accounts.Authenticate(ctx, "ops@example.org", "yet another password")
		require.NoError(t, err)
		require.True(t, auth.IsAdmin, "without admin the flag is kept, never removed")

		t.Run("ErrNotFound", func(t *testing.T) {
			_, err := accounts.SetUserPassword(ctx, "nobody@example.org", "a brand new password", false)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "nobody@example.org")
		})
		t.Run("EINVALID", func(t *testing.T) {
			_, err := accounts.SetUserPassword(ctx, "ops@example.org", "short", false)
			require.Equal(t, "password", models.ErrorField(err))
			_, err = accounts.SetUserPassword(ctx, "not an email", "a brand new password", false)
			require.Equal(t, "email", models.ErrorField(err))
		})
	})
}

// TestAccounts_ChangePassword: a signed-in user replaces their password
// given the current one, which also ends a one-time password's status.
func TestAccounts_ChangePassword(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		accounts := servicetest.Accounts(db)
		u := acctUser(t, db, "dana@example.org", false)
		system := models.WithActor(ctx, models.SystemActor())
		require.NoError(t, accounts.ExpirePassword(system, u.ID))
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(accounts.ExpirePassword(system, u.ID+1000)))
		got, err := accounts.Authenticate(ctx, "dana@example.org", "correct horse battery")
		require.NoError(t, err, "a one-time password signs in once")
		require.True(t, got.MustChangePassword)

		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(accounts.ChangePassword(ctx, "correct horse battery", "a new password!")))
		as := acctCtx(u)
		err = accounts.ChangePassword(as, "wrong", "a new password!")
		require.Equal(t, "current_password", models.ErrorField(err))
		err = accounts.ChangePassword(as, "correct horse battery", "short")
		require.Equal(t, "new_password", models.ErrorField(err))
		err = accounts.ChangePassword(as, "correct horse battery", "correct horse battery")
		require.Equal(t, "new_password", models.ErrorField(err))
		require.NoError(t, accounts.ChangePassword(as, "correct horse battery", "a new password!"))
		got, err = accounts.Authenticate(ctx, "dana@example.org", "a new password!")
		require.NoError(t, err)
		require.False(t, got.MustChangePassword)
	})
}
