package service_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestAccounts_Authorization drives every read and write of the account
// service as an anonymous visitor, a member of team lab, a member of
// another team, an administrator and the system actor (the CLI). A blind
// study decides nothing about accounts, so its annotator is a plain user
// here. A code is the error the caller gets ("" for none); check, when set,
// looks at what an allowed caller was shown. Each call acts on fresh
// accounts, sessions or emails, so that one caller's change does not decide
// the next caller's answer.
func TestAccounts_Authorization(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newFixture(t, db)
		accounts := servicetest.Accounts(db)
		n := 0
		next := func(prefix string) string { n++; return fmt.Sprintf("%s-%d@accounts.test", prefix, n) }
		const password = "correct horse battery"
		fresh := func() *models.User {
			u, err := db.CreateUser(context.Background(), next("user"), "Fresh", password, false)
			require.NoError(t, err)
			return u
		}
		session := func() string {
			token, _, err := accounts.StartSession(context.Background(), fresh(), "test", "127.0.0.1")
			require.NoError(t, err)
			return token
		}

		type outcome struct {
			code  string
			check func(t *testing.T, got any)
		}
		ok := outcome{}
		unauthorized := outcome{code: models.EUNAUTHORIZED}
		forbidden := outcome{code: models.EFORBIDDEN}
		shown := func(check func(t *testing.T, got any)) outcome { return outcome{check: check} }
		admin := func(want bool) outcome {
			return shown(func(t *testing.T, got any) { require.Equal(t, want, got.(*models.User).IsAdmin) })
		}
		everyUser := shown(func(t *testing.T, got any) {
			require.GreaterOrEqual(t, len(got.([]models.User)), 3, "the fixture's users are listed")
		})
		type actors struct{ anon, member, other, admin, system outcome }
		ops := []struct {
			name string
			call func(ctx context.Context) (any, error)
			want actors
		}{
			{"SignUp", func(ctx context.Context) (any, error) { return accounts.SignUp(ctx, next("signup"), "New", password) },
				actors{admin(false), admin(false), admin(false), admin(false), admin(false)}},
			{"CreateUser", func(ctx context.Context) (any, error) {
				return accounts.CreateUser(ctx, next("create"), "New", password, false)
			}, actors{unauthorized, forbidden, forbidden, admin(false), admin(false)}},
			{"CreateAdmin", func(ctx context.Context) (any, error) {
				return accounts.CreateUser(ctx, next("admin"), "New", password, true)
			}, actors{unauthorized, forbidden, forbidden, admin(true), admin(true)}},
			{"SetUserPassword", func(ctx context.Context) (any, error) {
				return accounts.SetUserPassword(ctx, fresh().Email, "a brand new password", false)
			}, actors{unauthorized, forbidden, forbidden, ok, ok}},
			{"SetUserPasswordPromotes", func(ctx context.Context) (any, error) {
				return accounts.SetUserPassword(ctx, fresh().Email, "a brand new password", true)
			}, actors{unauthorized, forbidden, forbidden, admin(true), admin(true)}},
			{"ExpirePassword", func(ctx context.Context) (any, error) { return nil, accounts.ExpirePassword(ctx, fresh().ID) },
				actors{unauthorized, forbidden, forbidden, ok, ok}},
			{"ChangePassword", func(ctx context.Context) (any, error) {
				// Each signed-in caller changes their own password once.
				return nil, accounts.ChangePassword(ctx, password, "a brand new password")
			}, actors{unauthorized, ok, ok, ok, unauthorized}},
			{"Authenticate", func(ctx context.Context) (any, error) {
				u := fresh()
				got, err := accounts.Authenticate(ctx, u.Email, password)
				if err == nil {
					require.Equal(t, u.ID, got.ID)
				}
				return got, err
			}, actors{ok, ok, ok, ok, ok}},
			{"StartSession", func(ctx context.Context) (any, error) {
				token, _, err := accounts.StartSession(ctx, fresh(), "test", "127.0.0.1")
				return token, err
			}, actors{ok, ok, ok, ok, ok}},
			{"SessionUser", func(ctx context.Context) (any, error) {
				_, u, err := accounts.SessionUser(ctx, session())
				return u, err
			}, actors{admin(false), admin(false), admin(false), admin(false), admin(false)}},
			{"EndSession", func(ctx context.Context) (any, error) {
				token := session()
				if err := accounts.EndSession(ctx, token); err != nil {
					return nil, err
				}
				_, _, err := accounts.SessionUser(ctx, token)
				require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err), "the session has ended")
				return nil, nil
			}, actors{ok, ok, ok, ok, ok}},
			{"ListUsers", func(ctx context.Context) (any, error) { return accounts.ListUsers(ctx) },
				actors{unauthorized, forbidden, forbidden, everyUser, everyUser}},
		}
		for _, op := range ops {
			for _, who := range []struct {
				name string
				ctx  context.Context
				want outcome
			}{
				{"anonymous", f.anon, op.want.anon},
				{"other team", f.other, op.want.other},
				{"member", f.member, op.want.member},
				{"admin", f.admin, op.want.admin},
				{"system", f.system, op.want.system},
			} {
				got, err := op.call(who.ctx)
				require.Equal(t, who.want.code, models.ErrorCode(err), "%s as %s: %v", op.name, who.name, err)
				if err == nil && who.want.check != nil {
					who.want.check(t, got)
				}
			}
		}

		t.Run("ChangePasswordIsOwn", func(t *testing.T) {
			_, err := accounts.Authenticate(context.Background(), f.memberUser.Email, "a brand new password")
			require.NoError(t, err, "the member changed their own password")
			_, err = accounts.Authenticate(context.Background(), f.memberUser.Email, password)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
		t.Run("SessionNeedsAnAccount", func(t *testing.T) {
			_, _, err := accounts.StartSession(f.admin, nil, "test", "127.0.0.1")
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
		})
	})
}
