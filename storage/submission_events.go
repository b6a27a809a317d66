package storage

import (
	"context"
	"time"

	"proctor/models"
)

// SubmissionEvents is a submission's audit trail, oldest first (at most
// 500 events): every upload, validation, refusal, ingest and discard with who
// did it, from where and when. The caller has already checked the actor may
// see the submission, and redacts what they may not.
func (db *DB) SubmissionEvents(ctx context.Context, id int64) ([]models.SubmissionEvent, error) {
	var rows []struct {
		Action, Details, IP string
		UserName, UserEmail *string
		CreatedAt           time.Time
	}
	err := db.q(ctx).Table("audit_events e").
		Select("e.action, e.details, e.ip, u.name AS user_name, u.email AS user_email, e.created_at").
		Joins("LEFT JOIN users u ON u.id = e.user_id").
		Where("e.subject = ?", submissionSubject(id)).Order("e.id").Limit(500).Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "submission events")
	}
	events := make([]models.SubmissionEvent, 0, len(rows))
	for _, r := range rows {
		ev := models.SubmissionEvent{Action: r.Action, Details: r.Details, IP: r.IP, CreatedAt: r.CreatedAt, UserName: "Proctor"}
		switch {
		case r.UserName != nil && *r.UserName != "":
			ev.UserName = *r.UserName
		case r.UserEmail != nil:
			ev.UserName = *r.UserEmail
		}
		events = append(events, ev)
	}
	return events, nil
}
