package storage

import (
	"context"

	"proctor/models"
)

// Storage does not decide what a caller may do: the services read the actor
// and pass storage the scope, flags or ids a query needs. The context's actor
// is read here only, for two things that are not a caller's rule:
//
//   - requireQueue: the job queue's own writes (dispatching runs and
//     episodes, recording outcomes, evaluations and hidden-test results,
//     processing submissions, releasing leases, judging studies) are reached
//     by no service; the check keeps any other caller off them;
//   - actorOfRecord: who did a change, for the rows that record it.
//
// internal/archtest's TestStorage_ReadsTheActorInOnePlace keeps it so.

// requireQueue is EFORBIDDEN unless the context's actor is the system (the
// job queue); work completes the message, as in "Only the queue runs
// episodes.".
func requireQueue(ctx context.Context, work string) error {
	if !models.ActorFrom(ctx).System {
		return models.Errorf(models.EFORBIDDEN, "Only the queue %s.", work)
	}
	return nil
}

// actorOfRecord is who a change is recorded against: the context's user (0
// for the system and anonymous callers) and their client address.
func actorOfRecord(ctx context.Context) (userID int64, ip string) {
	a := models.ActorFrom(ctx)
	return a.UserID, a.IP
}
