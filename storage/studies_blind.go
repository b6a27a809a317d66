package storage

import (
	"context"

	"gorm.io/gorm"

	"proctor/models"
)

// BlindRunMessage is why a run's attempts and results are kept from an
// annotator of a blind study that samples them.
const BlindRunMessage = "This run has attempts in a blind study you annotate: its attempts and results are hidden until the study closes."

// blindAssignments selects the actor's assignments, whatever their status,
// in open blind studies they do not own: the attempts whose outcomes,
// verdicts and metrics are kept from them until the study closes (labels
// stay editable while it is open, so finishing an item does not unblind it).
// nil for anonymous callers, administrators and the system, from whom
// nothing is kept.
func blindAssignments(ctx context.Context, q *gorm.DB) *gorm.DB {
	a := models.ActorFrom(ctx)
	if a.UserID == 0 || a.Privileged() {
		return nil
	}
	return q.Table("study_assignments sa").
		Joins("JOIN study_items si ON si.id = sa.study_item_id").
		Joins("JOIN studies s ON s.id = si.study_id").
		Where("sa.user_id = ? AND s.status = ? AND s.blind = ? AND s.owner_id <> ?", a.UserID, models.StudyOpen, true, a.UserID)
}

// blindRunIDs returns which of runIDs hold an attempt blind to the actor
// (blindAssignments).
func blindRunIDs(ctx context.Context, q *gorm.DB, runIDs []int64) (map[int64]bool, error) {
	sel := blindAssignments(ctx, q)
	if sel == nil || len(runIDs) == 0 {
		return nil, nil
	}
	var ids []int64
	err := sel.Joins("JOIN attempts a ON a.id = si.attempt_id").Where("a.run_id IN ?", runIDs).
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
