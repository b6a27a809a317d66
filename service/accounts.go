package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"proctor/models"
)

// maxUserNameLength bounds an account's display name.
const maxUserNameLength = 100

// AccountStore is what the account service needs from storage.
type AccountStore interface {
	CreateUser(ctx context.Context, email, name, password string, admin bool) (*models.User, error)
	SetUserPassword(ctx context.Context, email, password string, admin bool) (*models.User, error)
	ChangePassword(ctx context.Context, userID int64, password string) error
	ExpirePassword(ctx context.Context, userID int64) error
	UserByEmail(ctx context.Context, email string) (*models.User, error)
	UserByID(ctx context.Context, id int64) (*models.User, error)
	ListUsers(ctx context.Context) ([]models.User, error)
	CreateSession(ctx context.Context, userID int64, userAgent, ip string) (string, *models.Session, error)
	Session(ctx context.Context, tokenHash string) (*models.Session, error)
	TouchSession(ctx context.Context, s *models.Session) error
	DeleteSession(ctx context.Context, token string) error
}

// Accounts is the account service: sign-up and the creation of accounts,
// the password rules, signing in and the sessions that keep a user signed
// in, and the list of users. Anyone may sign up (never as an
// administrator); only administrators and the system (the CLI) create
// administrators, set or expire another account's password and list users.
type Accounts struct {
	store AccountStore
	now   func() time.Time

	dummyOnce sync.Once
	dummyHash []byte
}

// NewAccounts returns the account service over store.
func NewAccounts(store AccountStore) *Accounts {
	return &Accounts{store: store, now: func() time.Time { return time.Now().UTC() }}
}

// SignUp creates a (non-administrator) account for anyone. EINVALID on the
// field at fault (email, name, password), ECONFLICT on email when the email
// is taken.
func (s *Accounts) SignUp(ctx context.Context, email, name, password string) (*models.User, error) {
	return s.createUser(ctx, email, name, password, false)
}

// CreateUser creates an account, an administrator when admin is set; `proctor
// user create` calls it as the system actor. EUNAUTHORIZED when nobody is
// signed in, EFORBIDDEN for a non-administrator, then as SignUp.
func (s *Accounts) CreateUser(ctx context.Context, email, name, password string, admin bool) (*models.User, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	return s.createUser(ctx, email, name, password, admin)
}

func (s *Accounts) createUser(ctx context.Context, email, name, password string, admin bool) (*models.User, error) {
	email, err := models.NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if err := models.ValidatePassword(password); err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(name)) > maxUserNameLength {
		return nil, models.FieldError("name", "name must be at most %d characters", maxUserNameLength)
	}
	u, err := s.store.CreateUser(ctx, email, name, password, admin)
	if models.ErrorCode(err) == models.ECONFLICT {
		return nil, &models.Error{Code: models.ECONFLICT, Field: "email", Message: "an account with this email already exists", Err: err}
	}
	return u, err
}

// SetUserPassword replaces the password of the account with the email and,
// when admin is set, makes it an administrator (it never demotes); `proctor
// user set-password` calls it as the system actor for an operator locked
// out. EUNAUTHORIZED when nobody is signed in, EFORBIDDEN for a
// non-administrator, EINVALID for a weak password or a malformed email,
// ENOTFOUND for an unknown one.
func (s *Accounts) SetUserPassword(ctx context.Context, email, password string, admin bool) (*models.User, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	if err := models.ValidatePassword(password); err != nil {
		return nil, err
	}
	email, err := models.NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	u, err := s.store.SetUserPassword(ctx, email, password, admin)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, &models.Error{Code: models.ENOTFOUND, Field: "email", Message: fmt.Sprintf("no account has the email %q", email), Err: err}
	}
	return u, err
}

// ExpirePassword makes an account's password a one-time one: at its next
// sign-in the user must choose their own before anything else.
// EUNAUTHORIZED when nobody is signed in, EFORBIDDEN for a
// non-administrator, ENOTFOUND for an unknown account.
func (s *Accounts) ExpirePassword(ctx context.Context, userID int64) error {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return err
	}
	err := s.store.ExpirePassword(ctx, userID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return &models.Error{Code: models.ENOTFOUND, Message: "No such account.", Err: err}
	}
	return err
}

// ChangePassword replaces the signed-in user's password, given the current
// one, and ends its one-time status. EUNAUTHORIZED when nobody (or only the
// system) is signed in; EINVALID on the field at fault: a wrong current
// password, a weak new one, or a new one equal to the current one.
func (s *Accounts) ChangePassword(ctx context.Context, current, replacement string) error {
	actor := models.ActorFrom(ctx)
	if actor.UserID == 0 {
		return models.Errorf(models.EUNAUTHORIZED, "You must be signed in.")
	}
	u, err := s.store.UserByID(ctx, actor.UserID)
	if err != nil {
		return err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(current)) != nil {
		return models.FieldError("current_password", "This is not your current password.")
	}
	if err := models.ValidatePassword(replacement); err != nil {
		var e *models.Error
		if errors.As(err, &e) {
			e.Field = "new_password"
		}
		return err
	}
	if replacement == current {
		return models.FieldError("new_password", "Choose a password different from the current one.")
	}
	return s.store.ChangePassword(ctx, u.ID, replacement)
}

// Authenticate checks an email and password for anyone; EUNAUTHORIZED with
// one message for every failure, so the response does not reveal which
// accounts exist.
func (s *Accounts) Authenticate(ctx context.Context, email, password string) (*models.User, error) {
	fail := models.Errorf(models.EUNAUTHORIZED, "Email or password is incorrect.")
	u, err := s.store.UserByEmail(ctx, email)
	if err != nil {
		// Spend the same time as a real comparison to keep timing uniform.
		_ = bcrypt.CompareHashAndPassword(s.dummyPasswordHash(), []byte(password))
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, fail
		}
		return nil, err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, fail
	}
	return u, nil
}

// dummyPasswordHash returns a real bcrypt hash to compare against when the
// email is unknown, computed once per service.
func (s *Accounts) dummyPasswordHash() []byte {
	s.dummyOnce.Do(func() {
		s.dummyHash, _ = bcrypt.GenerateFromPassword([]byte("proctor-timing-equaliser"), bcrypt.DefaultCost)
	})
	return s.dummyHash
}

// StartSession starts a session for u, a user just signed up or
// authenticated by this service, and returns its cookie token. EINVALID
// without a user.
func (s *Accounts) StartSession(ctx context.Context, u *models.User, userAgent, ip string) (string, *models.Session, error) {
	if u == nil || u.ID == 0 {
		return "", nil, models.Errorf(models.EINVALID, "A session needs an account.")
	}
	return s.store.CreateSession(ctx, u.ID, userAgent, ip)
}

// SessionUser resolves a session cookie token to its session and user for
// anyone holding it, sliding the expiry at most once a minute.
// EUNAUTHORIZED when the token is empty, unknown or expired (an expired
// session is deleted).
func (s *Accounts) SessionUser(ctx context.Context, token string) (*models.Session, *models.User, error) {
	if token == "" {
		return nil, nil, models.Errorf(models.EUNAUTHORIZED, "Not signed in.")
	}
	ended := models.Errorf(models.EUNAUTHORIZED, "Your session has ended; sign in again.")
	sess, err := s.store.Session(ctx, models.HashToken(token))
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, nil, ended
	}
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	if now.After(sess.ExpiresAt) {
		_ = s.store.DeleteSession(ctx, token)
		return nil, nil, ended
	}
	if now.Sub(sess.LastSeenAt) > time.Minute {
		sess.LastSeenAt, sess.ExpiresAt = now, now.Add(models.SessionTTL)
		if err := s.store.TouchSession(ctx, sess); err != nil {
			return nil, nil, err
		}
	}
	u, err := s.store.UserByID(ctx, sess.UserID)
	if err != nil {
		return nil, nil, err
	}
	return sess, u, nil
}

// EndSession ends the session of the cookie token (log out) for anyone
// holding it; an unknown token changes nothing.
func (s *Accounts) EndSession(ctx context.Context, token string) error {
	return s.store.DeleteSession(ctx, token)
}

// ListUsers returns every user by id. EUNAUTHORIZED when nobody is signed
// in, EFORBIDDEN for a non-administrator.
func (s *Accounts) ListUsers(ctx context.Context) ([]models.User, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	return s.store.ListUsers(ctx)
}
