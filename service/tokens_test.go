package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// as returns a context acting as u.
func acctCtx(u *models.User) context.Context {
	return models.WithActor(context.Background(), models.Actor{UserID: u.ID, Email: u.Email, Name: u.Name, IsAdmin: u.IsAdmin})
}

func acctUser(t *testing.T, db *storage.DB, email string, admin bool) *models.User {
	t.Helper()
	u, err := db.CreateUser(context.Background(), email, strings.Split(email, "@")[0], "correct horse battery", admin)
	require.NoError(t, err)
	return u
}

// auditActions returns the actions recorded so far, oldest first.
func acctAuditActions(t *testing.T, db *storage.DB) []string {
	t.Helper()
	var out []string
	require.NoError(t, db.Gorm().Model(&models.AuditEvent{}).Order("id").Pluck("action", &out).Error)
	return out
}

func TestTeams_APITokens(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		teams := servicetest.Teams(db)
		alice := acctUser(t, db, "alice@example.org", false)
		bob := acctUser(t, db, "bob@example.org", false)
		admin := acctUser(t, db, "root@example.org", true)
		ctx := acctCtx(alice)

		tok, plain, err := teams.CreateAPIToken(ctx, "  CI  ")
		require.NoError(t, err)
		require.Equal(t, "CI", tok.Name)
		require.True(t, strings.HasPrefix(plain, storage.APITokenPrefix))
		require.True(t, strings.HasPrefix(plain, tok.Prefix))
		require.Len(t, tok.Prefix, len(storage.APITokenPrefix)+8)

		t.Run("StoredHashedNotPlain", func(t *testing.T) {
			var stored models.APIToken
			require.NoError(t, db.Gorm().First(&stored, tok.ID).Error)
			require.Equal(t, models.HashToken(plain), stored.TokenHash)
			require.NotContains(t, stored.TokenHash, plain)
			var n int64
			require.NoError(t, db.Gorm().Model(&models.APIToken{}).Where("token_hash = ? OR prefix = ? OR name = ?", plain, plain, plain).Count(&n).Error)
			require.Zero(t, n)
		})
		t.Run("Validation", func(t *testing.T) {
			_, _, err := teams.CreateAPIToken(ctx, " ")
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "name", models.ErrorField(err))
			_, _, err = teams.CreateAPIToken(ctx, strings.Repeat("x", 101))
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			_, _, err = teams.CreateAPIToken(context.Background(), "anon")
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
		t.Run("ErrConflict", func(t *testing.T) {
			_, _, err := teams.CreateAPIToken(ctx, "CI")
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Equal(t, "name", models.ErrorField(err))
			require.Equal(t, `a token named "CI" already exists`, models.ErrorMessage(err))
			// The same name is free for someone else.
			_, _, err = teams.CreateAPIToken(acctCtx(bob), "CI")
			require.NoError(t, err)
		})
		t.Run("LastUsed", func(t *testing.T) {
			u, err := teams.TokenUser(context.Background(), plain)
			require.NoError(t, err)
			require.Equal(t, alice.ID, u.ID)
			list, err := teams.ListAPITokens(ctx)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.NotNil(t, list[0].LastUsedAt)
			_, err = teams.TokenUser(context.Background(), plain+"x")
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
		t.Run("RevokeOnlyOwn", func(t *testing.T) {
			_, err := teams.RevokeAPIToken(acctCtx(bob), tok.ID)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			_, err = teams.RevokeAPIToken(acctCtx(admin), tok.ID)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			_, err = teams.RevokeAPIToken(context.Background(), tok.ID)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, err = teams.TokenUser(context.Background(), plain)
			require.NoError(t, err, "a refused revocation leaves the token working")
		})
		t.Run("Revoke", func(t *testing.T) {
			got, err := teams.RevokeAPIToken(ctx, tok.ID)
			require.NoError(t, err)
			require.NotNil(t, got.RevokedAt)
			_, err = teams.TokenUser(context.Background(), plain)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			again, err := teams.RevokeAPIToken(ctx, tok.ID)
			require.NoError(t, err, "revoking twice is harmless")
			require.Equal(t, got.RevokedAt.Unix(), again.RevokedAt.Unix())
			// A revoked token's name may be reused.
			_, _, err = teams.CreateAPIToken(ctx, "CI")
			require.NoError(t, err)
			list, err := teams.ListAPITokens(ctx)
			require.NoError(t, err)
			require.Len(t, list, 2)
			require.Nil(t, list[0].RevokedAt, "active tokens come first")
			require.NotNil(t, list[1].RevokedAt)
		})
		t.Run("Audited", func(t *testing.T) {
			actions := acctAuditActions(t, db)
			require.Contains(t, actions, "token.created")
			require.Contains(t, actions, "token.revoked")
		})
		t.Run("AccountOverview", func(t *testing.T) {
			acc, err := teams.AccountOverview(ctx)
			require.NoError(t, err)
			require.Equal(t, alice.ID, acc.User.ID)
			require.Len(t, acc.Tokens, 2)
			_, err = teams.AccountOverview(context.Background())
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
	})
}
