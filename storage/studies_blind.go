package storage

import (
	"context"

	"gorm.io/gorm"

	"proctor/models"
)

// BlindRunMessage is why a run's attempts and results are kept from an
// annotator of a blind study that samples them.
const BlindRunMessage = "This run has attempts in a blind study you annotate: its attempts and results are hidden until the study closes."

// blindRunIDs returns which of runIDs hold an attempt the actor is assigned,
// whatever the assignment's status, in an open blind study they do not own
// (BlindAttempt's rule, for whole runs): their per-attempt outcomes, verdicts
// and metrics are kept from the actor until the study closes. The study's
// owner, administrators and the system see them.
func blindRunIDs(ctx context.Context, q *gorm.DB, runIDs []int64) (map[int64]bool, error) {
	a := models.ActorFrom(ctx)
	if a.UserID == 0 || a.Privileged() || len(runIDs) == 0 {
		return nil, nil
	}
	var ids []int64
	err := q.Table("study_assignments sa").
		Joins("JOIN study_items si ON si.id = sa.study_item_id").
		Joins("JOIN studies s ON s.id = si.study_id").
		Joins("JOIN attempts a ON a.id = si.attempt_id").
		Where("a.run_id IN ? AND sa.user_id = ? AND s.status = ? AND s.blind = ? AND s.owner_id <> ?",
			runIDs, a.UserID, models.StudyOpen, true, a.UserID).
		Distinct("a.run_id").Pluck("a.run_id", &ids).Error
	if err != nil {
		return nil, wrap(err, "blind study assignments")
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// refuseBlindRuns answers EFORBIDDEN (BlindRunMessage) when any of runIDs is
// blind to the actor.
func refuseBlindRuns(ctx context.Context, q *gorm.DB, runIDs ...int64) error {
	blind, err := blindRunIDs(ctx, q, runIDs)
	if err != nil {
		return err
	}
	if len(blind) > 0 {
		return models.Errorf(models.EFORBIDDEN, BlindRunMessage)
	}
	return nil
}
