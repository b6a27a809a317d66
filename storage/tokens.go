package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"proctor/models"
)

// APITokenPrefix starts every personal API token, so leaked tokens are easy to spot.
const APITokenPrefix = "prt_"

// tokenDisplayLength is how many leading characters of a token are kept in clear
// (the prefix plus eight random characters) so that users can tell tokens apart.
const tokenDisplayLength = len(APITokenPrefix) + 8

// maxTokenNameLength bounds a token's name.
const maxTokenNameLength = 100

// TokenUser resolves a bearer token to its user, recording when it was last used
// (at most once a minute). EUNAUTHORIZED for unknown or revoked tokens.
func (db *DB) TokenUser(ctx context.Context, token string) (*models.User, error) {
	fail := models.Errorf(models.EUNAUTHORIZED, "The API token is invalid or revoked.")
	if !strings.HasPrefix(token, APITokenPrefix) {
		return nil, fail
	}
	var t models.APIToken
	err := db.q(ctx).Where("token_hash = ? AND revoked_at IS NULL", models.HashToken(token)).First(&t).Error
	if err != nil {
		if models.ErrorCode(wrap(err, "token")) == models.ENOTFOUND {
			return nil, fail
		}
		return nil, wrap(err, "token")
	}
	now := db.now()
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
		if err := db.q(ctx).Model(&t).Update("last_used_at", now).Error; err != nil {
			return nil, wrap(err, "token")
		}
	}
	return db.UserByID(ctx, t.UserID)
}

// CreateAPIToken creates a named personal API token for the signed-in user and
// returns it with its plaintext, which is never stored and cannot be shown again.
// EUNAUTHORIZED when nobody is signed in, EFORBIDDEN for the system actor (it has
// no account), EINVALID (field name) for a missing or too long name, ECONFLICT
// (field name) when an active token of the user already has that name.
func (db *DB) CreateAPIToken(ctx context.Context, name string) (*models.APIToken, string, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, "", err
	}
	if a.UserID == 0 {
		return nil, "", models.Errorf(models.EFORBIDDEN, "API tokens belong to a user account; the system actor has none.")
	}
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return nil, "", models.FieldError("name", "name is required: say where the token will be used, e.g. \"CI\"")
	case utf8.RuneCountInString(name) > maxTokenNameLength:
		return nil, "", models.FieldError("name", "name must be at most %d characters", maxTokenNameLength)
	}
	plain, hash := models.NewToken(APITokenPrefix)
	t := &models.APIToken{UserID: a.UserID, Name: name, Prefix: plain[:tokenDisplayLength], TokenHash: hash, CreatedAt: db.now()}
	conflict := &models.Error{Code: models.ECONFLICT, Field: "name", Message: fmt.Sprintf("a token named %q already exists", name)}
	err = db.tx(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&models.APIToken{}).Where("user_id = ? AND name = ? AND revoked_at IS NULL", a.UserID, name).Count(&n).Error; err != nil {
			return wrap(err, "token")
		}
		if n > 0 {
			return conflict
		}
		if err := tx.Create(t).Error; err != nil {
			if isUniqueViolation(err) {
				return conflict // a concurrent request took the name
			}
			return wrap(err, "token")
		}
		return db.auditTx(ctx, tx, "token.created", fmt.Sprintf("token %d %q", t.ID, t.Name), "prefix "+t.Prefix, nil)
	})
	if err != nil {
		return nil, "", err
	}
	return t, plain, nil
}

// ListAPITokens returns the signed-in user's tokens, active ones first, newest
// first. EUNAUTHORIZED when nobody is signed in.
func (db *DB) ListAPITokens(ctx context.Context) ([]models.APIToken, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	var out []models.APIToken
	err = db.q(ctx).Where("user_id = ?", a.UserID).
		Order("CASE WHEN revoked_at IS NULL THEN 0 ELSE 1 END, created_at DESC, id DESC").Find(&out).Error
	return out, wrap(err, "tokens")
}

// RevokeAPIToken revokes one of the signed-in user's tokens and returns it;
// revoking a revoked token changes nothing. EUNAUTHORIZED when nobody is signed
// in, ENOTFOUND when the token does not exist or belongs to someone else (admins
// included: a token is its owner's alone).
func (db *DB) RevokeAPIToken(ctx context.Context, id int64) (*models.APIToken, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	var t models.APIToken
	err = db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("id = ? AND user_id = ?", id, a.UserID).First(&t).Error; err != nil {
			return wrap(err, "token")
		}
		if t.RevokedAt != nil {
			return nil
		}
		now := db.now()
		if err := tx.Model(&t).Update("revoked_at", now).Error; err != nil {
			return wrap(err, "token")
		}
		t.RevokedAt = &now
		return db.auditTx(ctx, tx, "token.revoked", fmt.Sprintf("token %d %q", t.ID, t.Name), "prefix "+t.Prefix, nil)
	})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// AccountOverview returns the signed-in user's account, teams and API tokens.
// EUNAUTHORIZED when nobody is signed in, EFORBIDDEN for the system actor.
func (db *DB) AccountOverview(ctx context.Context) (*models.Account, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	if a.UserID == 0 {
		return nil, models.Errorf(models.EFORBIDDEN, "The system actor has no account.")
	}
	u, err := db.UserByID(ctx, a.UserID)
	if err != nil {
		return nil, err
	}
	acc := &models.Account{User: u}
	err = db.q(ctx).Preload("Team").Joins("JOIN teams ON teams.id = memberships.team_id").
		Where("memberships.user_id = ?", a.UserID).Order("LOWER(teams.name), teams.id").Find(&acc.Memberships).Error
	if err != nil {
		return nil, wrap(err, "memberships")
	}
	if acc.Tokens, err = db.ListAPITokens(ctx); err != nil {
		return nil, err
	}
	return acc, nil
}
