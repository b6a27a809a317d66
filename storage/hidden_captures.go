package storage

import (
	"context"

	"proctor/models"
)

// ReferenceCaptures returns a hidden-tests task's reference captures (the
// images its visual checkpoints compare with), sorted by name; a task without
// captures gives none. Captures are hidden like the suite, so only the system
// (the workers running the tests) and administrators may read them:
// EUNAUTHORIZED for anonymous actors, EFORBIDDEN for everyone else.
func (db *DB) ReferenceCaptures(ctx context.Context, taskID int64) ([]models.ReferenceCapture, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	var caps []models.ReferenceCapture
	if err := db.q(ctx).Where("task_id = ?", taskID).Order("name").Find(&caps).Error; err != nil {
		return nil, wrap(err, "reference captures")
	}
	return caps, nil
}
