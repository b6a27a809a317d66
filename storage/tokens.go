package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// APITokenPrefix starts every personal API token, so leaked tokens are easy to spot.
const APITokenPrefix = "prt_"

// APITokenUser returns the user of the active token with the hash,
// recording when it was last used (at most once a minute). ENOTFOUND for an
// unknown or revoked token.
func (db *DB) APITokenUser(ctx context.Context, tokenHash string) (*models.User, error) {
	var t models.APIToken
	if err := db.q(ctx).Where("token_hash = ? AND revoked_at IS NULL", tokenHash).First(&t).Error; err != nil {
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

// InsertAPIToken stores a user's new token with its audit event. ECONFLICT
// when an active token of the user already has its name (a concurrent
// request may have taken it).
func (db *DB) InsertAPIToken(ctx context.Context, t *models.APIToken) error {
	t.CreatedAt = db.now()
	return db.tx(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&models.APIToken{}).Where("user_id = ? AND name = ? AND revoked_at IS NULL", t.UserID, t.Name).Count(&n).Error; err != nil {
			return wrap(err, "token")
		}
		if n > 0 {
			return models.Errorf(models.ECONFLICT, "token already exists.")
		}
		if err := tx.Create(t).Error; err != nil {
			return wrap(err, "token")
		}
		return db.auditTx(ctx, tx, "token.created", fmt.Sprintf("token %d %q", t.ID, t.Name), "prefix "+t.Prefix, nil)
	})
}

// ListAPITokens returns a user's tokens, active ones first, newest first.
func (db *DB) ListAPITokens(ctx context.Context, userID int64) ([]models.APIToken, error) {
	var out []models.APIToken
	err := db.q(ctx).Where("user_id = ?", userID).
		Order("CASE WHEN revoked_at IS NULL THEN 0 ELSE 1 END, created_at DESC, id DESC").Find(&out).Error
	return out, wrap(err, "tokens")
}

// RevokeAPIToken revokes a user's token and returns it; revoking a revoked
// token changes nothing. ENOTFOUND when the user has no token id.
func (db *DB) RevokeAPIToken(ctx context.Context, userID, id int64) (*models.APIToken, error) {
	var t models.APIToken
	err := db.tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("id = ? AND user_id = ?", id, userID).First(&t).Error; err != nil {
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
