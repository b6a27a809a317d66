package service

import (
	"context"

	"proctor/models"
)

// ModerationStore is what the moderation service needs from storage: the
// moderation transaction, a run's publication state and the change log.
type ModerationStore interface {
	// ModerateRun locks the run the scope sees (ENOTFOUND otherwise),
	// applies the change decide returns, logs it and returns the run's
	// state afterwards and whether the scope acts for its team.
	ModerateRun(ctx context.Context, scope models.RunScope, runID int64, decide func(t *models.ModerationTarget) (models.RunChange, error)) (*models.RunModeration, bool, error)
	// RunModeration returns a run's state and whether the scope acts for
	// its team; ENOTFOUND when the scope does not see it.
	RunModeration(ctx context.Context, scope models.RunScope, runID int64) (*models.RunModeration, bool, error)
	LeaderboardChanges(ctx context.Context, scope models.BenchmarkScope, slug string, f models.ChangeFilter) (*models.LeaderboardChanges, error)
}

// Moderation is the publication and moderation of runs. A run is on its
// benchmark's leaderboards when it is published and not hidden. Teams publish
// and withdraw their completed runs; administrators verify, hide with a public
// reason, show again and mark uploaded runs reproduced. Every change to a run
// that is public is logged in its benchmark's public change log.
type Moderation struct {
	store ModerationStore
}

// NewModeration returns the moderation service over store.
func NewModeration(store ModerationStore) *Moderation {
	return &Moderation{store: store}
}

// RunModeration returns a run's publication state and what the caller may
// change about it. ENOTFOUND when the caller may not see the run.
func (s *Moderation) RunModeration(ctx context.Context, runID int64) (*models.RunModeration, error) {
	mod, manage, err := s.store.RunModeration(ctx, runScope(ctx), runID)
	if err != nil {
		return nil, err
	}
	moderationRights(ctx, mod, manage)
	return mod, nil
}

// moderate applies one moderation action (ModerationStore.ModerateRun) as
// the caller, and sets what they may change about the run afterwards.
func (s *Moderation) moderate(ctx context.Context, runID int64, decide func(t *models.ModerationTarget) (models.RunChange, error)) (*models.RunModeration, error) {
	mod, manage, err := s.store.ModerateRun(ctx, runScope(ctx), runID, decide)
	if err != nil {
		return nil, err
	}
	moderationRights(ctx, mod, manage)
	return mod, nil
}

// moderationRights sets what the caller may change about a run: its team's
// members (manage: they act for its team, as administrators and the system
// do) publish and withdraw it; administrators and the system moderate it.
func moderationRights(ctx context.Context, mod *models.RunModeration, manage bool) {
	mod.CanPublish = manage
	mod.CanModerate = models.ActorFrom(ctx).Privileged()
}

// LeaderboardChanges returns one page (from 1) of a benchmark's public
// leaderboard change log, newest first. ENOTFOUND for an unknown benchmark
// or, for non-admins, an unpublished one; EINVALID on "subset" for a board
// the benchmark does not have, or for bad page bounds.
func (s *Moderation) LeaderboardChanges(ctx context.Context, slug string, f models.ChangeFilter) (*models.LeaderboardChanges, error) {
	if f.Page < 1 || f.PerPage < 1 {
		return nil, models.Errorf(models.EINVALID, "page and per_page must be positive")
	}
	return s.store.LeaderboardChanges(ctx, scopeOf(ctx), slug, f)
}

// teamAction checks that the caller may act for the run's team (its members,
// administrators and the system): EUNAUTHORIZED for anonymous callers,
// EFORBIDDEN otherwise. It returns who acted in the public log: the team, or
// the administrators when an admin who is not a member acted for it.
func teamAction(ctx context.Context, t *models.ModerationTarget) (string, error) {
	a, err := models.RequireUser(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case a.System:
		return models.ActorRoleSystem, nil
	case t.Member:
		return models.ActorRoleTeam, nil
	case a.IsAdmin:
		return models.ActorRoleAdmin, nil
	}
	return "", models.Errorf(models.EFORBIDDEN, "Only members of this team may do this.")
}

// adminAction checks that the caller is an administrator (or the system):
// EUNAUTHORIZED for anonymous callers, EFORBIDDEN otherwise. It returns who
// acted in the public log.
func adminAction(ctx context.Context) (string, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return "", err
	}
	if models.ActorFrom(ctx).System {
		return models.ActorRoleSystem, nil
	}
	return models.ActorRoleAdmin, nil
}

// notCompleted refuses an action on a run that has not completed.
func notCompleted(run *models.Run, what string) error {
	return models.Errorf(models.ECONFLICT, "Run %d has not completed (it is %s): only completed runs can be %s.", run.ID, run.Status, what)
}

// PublishRun puts a completed run on its benchmark's leaderboards (unless
// administrators hid it) and logs "added". Team members and admins only:
// ENOTFOUND when the caller may not see the run, EUNAUTHORIZED or EFORBIDDEN
// when they may not act for its team, ECONFLICT when it has not completed or
// is already published.
func (s *Moderation) PublishRun(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return s.moderate(ctx, runID, func(t *models.ModerationTarget) (models.RunChange, error) {
		role, err := teamAction(ctx, t)
		if err != nil {
			return models.RunChange{}, err
		}
		run := t.Run
		switch {
		case run.Status != models.RunCompleted:
			return models.RunChange{}, notCompleted(run, "published")
		case run.Published:
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d is already published.", run.ID)
		}
		ch := models.RunChange{Published: ptr(true), ActorRole: role, Audit: "run.published"}
		if !t.Hidden() {
			ch.Event = models.EventAdded // a hidden run stays off the boards until shown again
		}
		return ch, nil
	})
}

// WithdrawRun takes a published run off the leaderboards and out of public
// view, and logs "withdrawn". Permissions as PublishRun; ECONFLICT when it is
// not published (or, unpublished, has not completed).
func (s *Moderation) WithdrawRun(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return s.moderate(ctx, runID, func(t *models.ModerationTarget) (models.RunChange, error) {
		role, err := teamAction(ctx, t)
		if err != nil {
			return models.RunChange{}, err
		}
		run := t.Run
		switch {
		case !run.Published && run.Status != models.RunCompleted:
			return models.RunChange{}, notCompleted(run, "published or withdrawn")
		case !run.Published:
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d is not published: there is nothing to withdraw.", run.ID)
		}
		// A published run that was reopened (its failed attempts retried) may
		// still be withdrawn: its team must always be able to take it down.
		return models.RunChange{Published: ptr(false), Event: models.EventWithdrawn, ActorRole: role, Audit: "run.withdrawn"}, nil
	})
}

// VerifyRun marks a completed run verified by the administrators and logs
// "verified" when it is published. Administrators only: ENOTFOUND when the
// caller may not see the run, EUNAUTHORIZED or EFORBIDDEN for others,
// ECONFLICT when it has not completed, is already verified, or was uploaded
// (an uploaded run is verified only once administrators reproduced it; a run
// of candidate websites was tested by Proctor and needs no reproducing).
func (s *Moderation) VerifyRun(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return s.moderate(ctx, runID, func(t *models.ModerationTarget) (models.RunChange, error) {
		role, err := adminAction(ctx)
		if err != nil {
			return models.RunChange{}, err
		}
		run := t.Run
		switch {
		case run.Origin == models.OriginUploaded:
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d was uploaded: reproduce it before verifying.", run.ID)
		case run.Status != models.RunCompleted:
			return models.RunChange{}, notCompleted(run, "verified")
		case run.Verified:
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d is already verified.", run.ID)
		}
		return models.RunChange{Verified: ptr(true), Event: models.EventVerified, ActorRole: role, Audit: "run.verified"}, nil
	})
}

// HideRun takes a run off the leaderboards with a reason shown publicly on its
// page, and logs "hidden" when it is published; its team and administrators
// still see everything, others only its summary and the reason.
// Administrators only, as VerifyRun; EINVALID on "reason" when the reason is
// empty or too long, ECONFLICT when the run is already hidden.
func (s *Moderation) HideRun(ctx context.Context, runID int64, reason string) (*models.RunModeration, error) {
	return s.moderate(ctx, runID, func(t *models.ModerationTarget) (models.RunChange, error) {
		role, err := adminAction(ctx)
		if err != nil {
			return models.RunChange{}, err
		}
		// Checked once the caller may act: others learn nothing from a reason.
		reason, err := models.CheckHideReason(reason)
		if err != nil {
			return models.RunChange{}, err
		}
		if t.Hidden() {
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d is already hidden: %s", t.Run.ID, t.HiddenReason)
		}
		return models.RunChange{Hide: true, HideReason: reason, Event: models.EventHidden, ActorRole: role, Audit: "run.hidden"}, nil
	})
}

// UnhideRun shows a hidden run again (on the leaderboards when it is
// published) and logs "unhidden" when it is published. Administrators only,
// as VerifyRun; ECONFLICT when the run is not hidden.
func (s *Moderation) UnhideRun(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return s.moderate(ctx, runID, func(t *models.ModerationTarget) (models.RunChange, error) {
		role, err := adminAction(ctx)
		if err != nil {
			return models.RunChange{}, err
		}
		if !t.Hidden() {
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d is not hidden.", t.Run.ID)
		}
		return models.RunChange{Unhide: true, Event: models.EventUnhidden, ActorRole: role, Audit: "run.unhidden"}, nil
	})
}

// MarkRunReproduced marks a completed uploaded run as reproduced by the
// administrators (origin "reproduced", the leaderboard's badge) and logs
// "reproduced" when it is published. Administrators only, as VerifyRun;
// ECONFLICT when it has not completed, was executed by Proctor, is a run of
// candidate websites (Proctor tested those itself) or is already marked.
func (s *Moderation) MarkRunReproduced(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return s.moderate(ctx, runID, func(t *models.ModerationTarget) (models.RunChange, error) {
		role, err := adminAction(ctx)
		if err != nil {
			return models.RunChange{}, err
		}
		run := t.Run
		switch {
		case run.Status != models.RunCompleted:
			return models.RunChange{}, notCompleted(run, "marked reproduced")
		case run.Origin == models.OriginReproduced:
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d is already marked reproduced.", run.ID)
		case run.Origin == models.OriginCandidates:
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d's candidate websites were tested by Proctor: only uploaded results are marked reproduced.", run.ID)
		case run.Origin != models.OriginUploaded:
			return models.RunChange{}, models.Errorf(models.ECONFLICT, "Run %d was executed by Proctor: only uploaded runs are marked reproduced.", run.ID)
		}
		return models.RunChange{Origin: models.OriginReproduced, Event: models.EventReproduced, ActorRole: role, Audit: "run.reproduced"}, nil
	})
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
