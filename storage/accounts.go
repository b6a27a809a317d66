package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"proctor/models"
)

// CreateUser registers a user with a bcrypt-hashed password. EINVALID for a bad
// email or password, ECONFLICT when the email is taken.
func (db *DB) CreateUser(ctx context.Context, email, name, password string, admin bool) (*models.User, error) {
	email, err := models.NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if err := models.ValidatePassword(password); err != nil {
		return nil, err
	}
	name = strings.TrimSpace(name)
	if len(name) > 100 {
		return nil, models.FieldError("name", "name must be at most 100 characters")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err)
	}
	u := &models.User{Email: email, Name: name, PasswordHash: string(hash), IsAdmin: admin}
	if err := db.q(ctx).Create(u).Error; err != nil {
		if models.ErrorCode(wrap(err, "user")) == models.ECONFLICT {
			return nil, &models.Error{Code: models.ECONFLICT, Field: "email", Message: "an account with this email already exists"}
		}
		return nil, wrap(err, "user")
	}
	return u, nil
}

// SetUserPassword replaces a user's password and, when admin is set, makes the
// user an administrator (it never demotes); `proctor user set-password` uses it.
// EINVALID for a weak password or a malformed email, ENOTFOUND for an unknown one.
func (db *DB) SetUserPassword(ctx context.Context, email, password string, admin bool) (*models.User, error) {
	if err := models.ValidatePassword(password); err != nil {
		return nil, err
	}
	email, err := models.NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err)
	}
	var u models.User
	err = db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("email = ?", email).First(&u).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return &models.Error{Code: models.ENOTFOUND, Field: "email", Message: fmt.Sprintf("no account has the email %q", email), Err: err}
			}
			return wrap(err, "user")
		}
		return wrap(tx.Model(&u).Updates(map[string]any{"password_hash": string(hash), "is_admin": admin || u.IsAdmin, "must_change_password": false}).Error, "user")
	})
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// ExpirePassword makes an account's password a one-time one: at its next
// sign-in the user must choose their own before anything else. ENOTFOUND
// for an unknown account.
func (db *DB) ExpirePassword(ctx context.Context, userID int64) error {
	res := db.q(ctx).Model(&models.User{}).Where("id = ?", userID).Update("must_change_password", true)
	if res.Error == nil && res.RowsAffected == 0 {
		return models.Errorf(models.ENOTFOUND, "No such account.")
	}
	return wrap(res.Error, "user")
}

// ChangePassword replaces the signed-in user's password, given the current
// one, and ends its one-time status. EUNAUTHORIZED when nobody is signed
// in; EINVALID on the field at fault: a wrong current password, a weak new
// one, or a new one equal to the current one.
func (db *DB) ChangePassword(ctx context.Context, current, replacement string) error {
	actor := models.ActorFrom(ctx)
	if actor.UserID == 0 {
		return models.Errorf(models.EUNAUTHORIZED, "You must be signed in.")
	}
	var u models.User
	if err := db.q(ctx).First(&u, actor.UserID).Error; err != nil {
		return wrap(err, "user")
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
	hash, err := bcrypt.GenerateFromPassword([]byte(replacement), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("hash password: %w", err)
	}
	return wrap(db.q(ctx).Model(&u).Updates(map[string]any{"password_hash": string(hash), "must_change_password": false}).Error, "user")
}

// Authenticate checks an email and password; EUNAUTHORIZED with one message for
// every failure, so the response does not reveal which accounts exist.
func (db *DB) Authenticate(ctx context.Context, email, password string) (*models.User, error) {
	fail := models.Errorf(models.EUNAUTHORIZED, "Email or password is incorrect.")
	email = models.CanonicalEmail(email)
	var u models.User
	err := db.q(ctx).Where("email = ?", email).First(&u).Error
	if err != nil {
		// Spend the same time as a real comparison to keep timing uniform.
		_ = bcrypt.CompareHashAndPassword(db.dummyPasswordHash(), []byte(password))
		if models.ErrorCode(wrap(err, "user")) == models.ENOTFOUND {
			return nil, fail
		}
		return nil, wrap(err, "user")
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, fail
	}
	return &u, nil
}

// UserByID loads a user; ENOTFOUND when missing.
func (db *DB) UserByID(ctx context.Context, id int64) (*models.User, error) {
	var u models.User
	if err := db.q(ctx).First(&u, id).Error; err != nil {
		return nil, wrap(err, "user")
	}
	return &u, nil
}

// CreateSession starts a session for a user and returns the cookie token.
func (db *DB) CreateSession(ctx context.Context, userID int64, userAgent, ip string) (string, *models.Session, error) {
	plain, hash := models.NewToken("")
	csrf, _ := models.NewToken("")
	now := db.now()
	s := &models.Session{
		ID: hash, UserID: userID, CSRFToken: csrf, UserAgent: truncate(userAgent, 300), IP: ip,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(models.SessionTTL),
	}
	if err := db.q(ctx).Create(s).Error; err != nil {
		return "", nil, wrap(err, "session")
	}
	return plain, s, nil
}

// SessionUser resolves a session cookie token to its session and user, sliding the
// expiry at most once a minute. EUNAUTHORIZED when unknown or expired.
func (db *DB) SessionUser(ctx context.Context, token string) (*models.Session, *models.User, error) {
	if token == "" {
		return nil, nil, models.Errorf(models.EUNAUTHORIZED, "Not signed in.")
	}
	var s models.Session
	err := db.q(ctx).Where("id = ?", models.HashToken(token)).First(&s).Error
	if err != nil {
		if models.ErrorCode(wrap(err, "session")) == models.ENOTFOUND {
			return nil, nil, models.Errorf(models.EUNAUTHORIZED, "Your session has ended; sign in again.")
		}
		return nil, nil, wrap(err, "session")
	}
	now := db.now()
	if now.After(s.ExpiresAt) {
		db.q(ctx).Delete(&s)
		return nil, nil, models.Errorf(models.EUNAUTHORIZED, "Your session has ended; sign in again.")
	}
	if now.Sub(s.LastSeenAt) > time.Minute {
		s.LastSeenAt, s.ExpiresAt = now, now.Add(models.SessionTTL)
		if err := db.q(ctx).Model(&s).Updates(map[string]any{"last_seen_at": s.LastSeenAt, "expires_at": s.ExpiresAt}).Error; err != nil {
			return nil, nil, wrap(err, "session")
		}
	}
	u, err := db.UserByID(ctx, s.UserID)
	if err != nil {
		return nil, nil, err
	}
	return &s, u, nil
}

// DeleteSession ends a session (log out).
func (db *DB) DeleteSession(ctx context.Context, token string) error {
	return wrap(db.q(ctx).Where("id = ?", models.HashToken(token)).Delete(&models.Session{}).Error, "session")
}

// DeleteExpiredSessions removes sessions past their expiry and returns how many.
func (db *DB) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	res := db.q(ctx).Where("expires_at < ?", db.now()).Delete(&models.Session{})
	return res.RowsAffected, wrap(res.Error, "sessions")
}

// auditTx records a security-relevant action by the context's actor (user and
// client address) inside tx, so the event and the change it describes are
// written together.
func (db *DB) auditTx(ctx context.Context, tx *gorm.DB, action, subject, details string, teamID *int64) error {
	a := models.ActorFrom(ctx)
	ev := &models.AuditEvent{Action: action, Subject: subject, Details: details, IP: a.IP, TeamID: teamID, CreatedAt: db.now()}
	if a.UserID != 0 {
		ev.UserID = &a.UserID
	}
	return wrap(tx.Create(ev).Error, "audit event")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// dummyPasswordHash returns a real bcrypt hash to compare against when the email
// is unknown, computed once per process.
func (db *DB) dummyPasswordHash() []byte {
	db.dummyOnce.Do(func() {
		db.dummyHash, _ = bcrypt.GenerateFromPassword([]byte("proctor-timing-equaliser"), bcrypt.DefaultCost)
	})
	return db.dummyHash
}

// ListUsers returns every user by id; admins only.
func (db *DB) ListUsers(ctx context.Context) ([]models.User, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	var out []models.User
	return out, wrap(db.q(ctx).Order("id").Find(&out).Error, "users")
}
