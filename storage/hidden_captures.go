package storage

import (
	"context"

	"proctor/models"
)

// ReferenceCaptures returns a hidden-tests task's reference captures (the
// images its visual checkpoints compare with), sorted by name; a task without
// captures gives none. Captures are hidden like the suite: no service hands
// them out, and storage reads them for HiddenTask, which only the system
// (the workers running the tests) may call.
func (db *DB) ReferenceCaptures(ctx context.Context, taskID int64) ([]models.ReferenceCapture, error) {
	var caps []models.ReferenceCapture
	if err := db.q(ctx).Where("task_id = ?", taskID).Order("name").Find(&caps).Error; err != nil {
		return nil, wrap(err, "reference captures")
	}
	return caps, nil
}
