package storage

import (
	"context"

	"gorm.io/gorm"

	"proctor/models"
)

// BlindRunMessage is why a run's attempts and results are kept from an
// annotator of a blind study that samples them.
const BlindRunMessage = "This run has attempts in a blind study you annotate: its attempts and results are hidden until the study closes."

// blindAssignments selects the items (study_items si, with their studies s)
// of the open blind studies in which the actor annotates, whatever their
// assignment's status and whoever each item is assigned to, studies they own
// aside: the attempts whose outcomes, verdicts and metrics are kept from them
// until the study closes. Labels stay editable while it is open, so finishing
// an item does not unblind it, and an item of another annotator is the same
// study's answer key. nil for anonymous callers, administrators and the
// system, from whom nothing is kept.
func blindAssignments(ctx context.Context, q *gorm.DB) *gorm.DB {
	a := models.ActorFrom(ctx)
	if a.UserID == 0 || a.Privileged() {
		return nil
	}
	return q.Table("study_items si").
		Joins("JOIN studies s ON s.id = si.study_id").
		Where("s.status = ? AND s.blind = ? AND s.owner_id <> ?", models.StudyOpen, true, a.UserID).
		Where("EXISTS (SELECT 1 FROM study_assignments sa JOIN study_items mine ON mine.id = sa.study_item_id"+
			" WHERE mine.study_id = s.id AND sa.user_id = ?)", a.UserID)
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
