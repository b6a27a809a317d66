package storage

import (
	"context"
	"fmt"
	"time"

	"proctor/models"
)

// partEvent is the audit action of one received part.
const partEvent = "submission.part"

// SubmissionEvents is a submission's audit trail, oldest first: every upload,
// validation, refusal, ingest and discard with who did it and when. Visible to
// whoever may see the submission; the client address only to administrators.
func (db *DB) SubmissionEvents(ctx context.Context, id int64) ([]models.SubmissionEvent, error) {
	if _, err := db.SubmissionByID(ctx, id); err != nil {
		return nil, err
	}
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
	admin := models.ActorFrom(ctx).IsAdmin
	events := make([]models.SubmissionEvent, 0, len(rows))
	parts := 0 // parts in the run of part events ending the list
	for _, r := range rows {
		ev := models.SubmissionEvent{Action: r.Action, Details: r.Details, CreatedAt: r.CreatedAt, UserName: "Proctor"}
		switch {
		case r.UserName != nil && *r.UserName != "":
			ev.UserName = *r.UserName
		case r.UserEmail != nil:
			ev.UserName = *r.UserEmail
		}
		if admin {
			ev.IP = r.IP
		}
		// A multi-gigabyte upload sends hundreds of parts: consecutive part
		// events by the same person read as one line.
		if last := len(events) - 1; r.Action == partEvent && parts > 0 && events[last].UserName == ev.UserName && events[last].IP == ev.IP {
			parts++
			ev.Details = fmt.Sprintf("%d parts, the last %s", parts, r.Details)
			events[last] = ev
			continue
		}
		parts = 0
		if r.Action == partEvent {
			parts = 1
		}
		events = append(events, ev)
	}
	return events, nil
}
