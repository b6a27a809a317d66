package storage

import (
	"context"

	"gorm.io/gorm"

	"proctor/models"
)

// blindAssignments selects the items (study_items si, with their studies s)
// of the open blind studies in which the user annotates, whatever their
// assignment's status and whoever each item is assigned to, studies they own
// aside: the attempts whose outcomes, verdicts and metrics service.Access
// keeps from them until the study closes. An item of another annotator is
// the same study's answer key.
func blindAssignments(q *gorm.DB, userID int64) *gorm.DB {
	return q.Table("study_items si").
		Joins("JOIN studies s ON s.id = si.study_id").
		Where("s.status = ? AND s.blind = ? AND s.owner_id <> ?", models.StudyOpen, true, userID).
		Where("EXISTS (SELECT 1 FROM study_assignments sa JOIN study_items mine ON mine.id = sa.study_item_id"+
			" WHERE mine.study_id = s.id AND sa.user_id = ?)", userID)
}

// BlindRunsFor returns which of runIDs hold an attempt that the user
// annotates in an open blind study they do not own (blindAssignments).
func (db *DB) BlindRunsFor(ctx context.Context, userID int64, runIDs []int64) (map[int64]bool, error) {
	if len(runIDs) == 0 {
		return nil, nil
	}
	var ids []int64
	err := blindAssignments(db.q(ctx), userID).Joins("JOIN attempts a ON a.id = si.attempt_id").Where("a.run_id IN ?", runIDs).
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

// BlindAttemptFor reports whether the user annotates the attempt in an open
// blind study they do not own, whoever the item is assigned to and whether
// or not the assignment is finished (blindAssignments).
func (db *DB) BlindAttemptFor(ctx context.Context, userID, attemptID int64) (bool, error) {
	var n int64
	if err := blindAssignments(db.q(ctx), userID).Where("si.attempt_id = ?", attemptID).Count(&n).Error; err != nil {
		return false, wrap(err, "study assignments")
	}
	return n > 0, nil
}

// Withheld tells which of a page's runs have their results withheld from the
// caller. The run service passes its blind-study rule (service.Access); nil
// withholds nothing.
type Withheld func(ctx context.Context, runIDs []int64) (map[int64]bool, error)

// of applies w to runIDs.
func (w Withheld) of(ctx context.Context, runIDs []int64) (map[int64]bool, error) {
	if w == nil {
		return nil, nil
	}
	return w(ctx, runIDs)
}
