package storage

import (
	"context"
	"strings"
	"time"

	"proctor/models"
)

// APITokenPrefix starts every personal API token, so leaked tokens are easy to spot.
const APITokenPrefix = "prt_"

// TokenUser resolves a bearer token to its user, recording when it was last used
// (at most once a minute). EUNAUTHORIZED for unknown or revoked tokens.
func (db *DB) TokenUser(ctx context.Context, token string) (*models.User, error) {
	fail := models.Errorf(models.EUNAUTHORIZED, "The API token is invalid or revoked.")
	if !strings.HasPrefix(token, APITokenPrefix) {
		return nil, fail
	}
	var t models.APIToken
	err := db.q(ctx).Where("token_hash = ? AND revoked_at IS NULL", HashToken(token)).First(&t).Error
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
