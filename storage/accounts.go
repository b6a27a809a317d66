package storage

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"proctor/models"
)

// CreateUser stores a user with a bcrypt hash of the password, the email in
// canonical form; the account service checks the fields first. ECONFLICT
// when the email is taken.
func (db *DB) CreateUser(ctx context.Context, email, name, password string, admin bool) (*models.User, error) {
	hash, err := hashPassword(password)
	if err != nil {
		return nil, err
	}
	u := &models.User{Email: models.CanonicalEmail(email), Name: strings.TrimSpace(name), PasswordHash: hash, IsAdmin: admin}
	if err := db.q(ctx).Create(u).Error; err != nil {
		return nil, wrap(err, "user")
	}
	return u, nil
}

// SetUserPassword replaces the password of the account with the email and,
// when admin is set, makes it an administrator (it never demotes); the
// password is no longer a one-time one. ENOTFOUND for an unknown email.
func (db *DB) SetUserPassword(ctx context.Context, email, password string, admin bool) (*models.User, error) {
	hash, err := hashPassword(password)
	if err != nil {
		return nil, err
	}
	var u models.User
	err = db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("email = ?", models.CanonicalEmail(email)).First(&u).Error; err != nil {
			return wrap(err, "user")
		}
		return wrap(tx.Model(&u).Updates(map[string]any{"password_hash": hash, "is_admin": admin || u.IsAdmin, "must_change_password": false}).Error, "user")
	})
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// ChangePassword replaces a user's password and ends its one-time status.
// ENOTFOUND for an unknown user.
func (db *DB) ChangePassword(ctx context.Context, userID int64, password string) error {
	hash, err := hashPassword(password)
	if err != nil {
		return err
	}
	res := db.q(ctx).Model(&models.User{}).Where("id = ?", userID).Updates(map[string]any{"password_hash": hash, "must_change_password": false})
	if res.Error == nil && res.RowsAffected == 0 {
		return wrap(gorm.ErrRecordNotFound, "user")
	}
	return wrap(res.Error, "user")
}

// ExpirePassword makes an account's password a one-time one: at its next
// sign-in the user must choose their own before anything else. ENOTFOUND
// for an unknown account.
func (db *DB) ExpirePassword(ctx context.Context, userID int64) error {
	res := db.q(ctx).Model(&models.User{}).Where("id = ?", userID).Update("must_change_password", true)
	if res.Error == nil && res.RowsAffected == 0 {
		return wrap(gorm.ErrRecordNotFound, "user")
	}
	return wrap(res.Error, "user")
}

// hashPassword returns the bcrypt hash stored for a password.
func hashPassword(password string) (string, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(hash), nil
}

// UserByEmail loads the user with the email (in any case); ENOTFOUND when
// missing.
func (db *DB) UserByEmail(ctx context.Context, email string) (*models.User, error) {
	var u models.User
	if err := db.q(ctx).Where("email = ?", models.CanonicalEmail(email)).First(&u).Error; err != nil {
		return nil, wrap(err, "user")
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

// Session loads the session whose cookie token has the hash; ENOTFOUND
// when there is none.
func (db *DB) Session(ctx context.Context, tokenHash string) (*models.Session, error) {
	var s models.Session
	if err := db.q(ctx).Where("id = ?", tokenHash).First(&s).Error; err != nil {
		return nil, wrap(err, "session")
	}
	return &s, nil
}

// TouchSession records that a session was seen at its LastSeenAt and moves
// its expiry to its ExpiresAt.
func (db *DB) TouchSession(ctx context.Context, s *models.Session) error {
	return wrap(db.q(ctx).Model(s).Updates(map[string]any{"last_seen_at": s.LastSeenAt, "expires_at": s.ExpiresAt}).Error, "session")
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
	userID, ip := actorOfRecord(ctx)
	ev := &models.AuditEvent{Action: action, Subject: subject, Details: details, IP: ip, TeamID: teamID, CreatedAt: db.now()}
	if userID != 0 {
		ev.UserID = &userID
	}
	return wrap(tx.Create(ev).Error, "audit event")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// ListUsers returns every user by id.
func (db *DB) ListUsers(ctx context.Context) ([]models.User, error) {
	var out []models.User
	return out, wrap(db.q(ctx).Order("id").Find(&out).Error, "users")
}
