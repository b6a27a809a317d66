package service

import (
	"context"
	"fmt"

	"proctor/models"
)

// Messages of the blind-study rule, shown to an annotator where a page or an
// endpoint withholds what they would label.
const (
	// BlindRunMessage is why a run's attempts and results are kept from an
	// annotator of an open blind study that samples them.
	BlindRunMessage = "This run has attempts in a blind study you annotate: its attempts and results are hidden until the study closes."
	// BlindAttemptMessage is why an attempt's pages are kept from an
	// annotator of an open blind study over it.
	BlindAttemptMessage = "This attempt is in a blind study you annotate; its verdicts are hidden until the study closes."
)

// AccessStore answers the blind-study questions: which attempts a user
// annotates in open blind studies they do not own.
type AccessStore interface {
	BlindRunsFor(ctx context.Context, userID int64, runIDs []int64) (map[int64]bool, error)
	BlindAttemptFor(ctx context.Context, userID, attemptID int64) (bool, error)
}

// Access is the one place that decides what the blind-study rule keeps from
// the caller. An annotator of an open blind study must not learn the outcome
// of what they label: the study's attempts, and every number of the runs
// they come from (success counts, metrics, per-task verdicts, exports,
// comparisons), are withheld from them until it closes. Labels stay
// editable while it is open, so finishing an item does not unblind it.
// Anonymous callers, administrators and the system are never blind.
type Access struct {
	store AccessStore
}

// NewAccess returns the access rules over store.
func NewAccess(store AccessStore) Access {
	return Access{store: store}
}

// blindUser returns the user the rule applies to, or 0 when it keeps
// nothing from the caller.
func blindUser(ctx context.Context) int64 {
	a := models.ActorFrom(ctx)
	if a.Privileged() {
		return 0
	}
	return a.UserID
}

// BlindRuns returns which of runIDs have results withheld from the caller.
func (a Access) BlindRuns(ctx context.Context, runIDs []int64) (map[int64]bool, error) {
	user := blindUser(ctx)
	if user == 0 || len(runIDs) == 0 {
		return nil, nil
	}
	blind, err := a.store.BlindRunsFor(ctx, user, runIDs)
	if err != nil {
		return nil, fmt.Errorf("check blind studies of runs: %w", err)
	}
	return blind, nil
}

// BlindRun reports whether the run's results are withheld from the caller.
func (a Access) BlindRun(ctx context.Context, runID int64) (bool, error) {
	blind, err := a.BlindRuns(ctx, []int64{runID})
	return blind[runID], err
}

// ReadRuns is EFORBIDDEN (BlindRunMessage) when any of runIDs has results
// withheld from the caller.
func (a Access) ReadRuns(ctx context.Context, runIDs ...int64) error {
	blind, err := a.BlindRuns(ctx, runIDs)
	if err != nil {
		return err
	}
	if len(blind) > 0 {
		return models.Errorf(models.EFORBIDDEN, BlindRunMessage)
	}
	return nil
}

// ReadAttempt is EFORBIDDEN (BlindAttemptMessage) when the caller annotates
// the attempt in an open blind study: its run-side pages (timeline, steps,
// download, expected answer, tests) are closed to them; they read the
// trajectory on the study's pages.
func (a Access) ReadAttempt(ctx context.Context, attemptID int64) error {
	user := blindUser(ctx)
	if user == 0 {
		return nil
	}
	blind, err := a.store.BlindAttemptFor(ctx, user, attemptID)
	if err != nil {
		return fmt.Errorf("check blind studies of attempt %d: %w", attemptID, err)
	}
	if blind {
		return models.Errorf(models.EFORBIDDEN, BlindAttemptMessage)
	}
	return nil
}

// runScope is which runs the caller sees and acts for (models.RunScopeFor),
// what every storage read of runs is given.
func runScope(ctx context.Context) models.RunScope {
	return models.RunScopeFor(models.ActorFrom(ctx))
}

// teamManager is the team-member rule over a run the caller sees, for
// storage to apply under the run's lock once it knows whether the caller
// acts for the run's team (manage: its members, administrators and the
// system): EUNAUTHORIZED for anonymous callers, EFORBIDDEN for others, as
// requireRole.
func teamManager(ctx context.Context) func(manage bool) error {
	return func(manage bool) error {
		if manage {
			return nil
		}
		if _, err := models.RequireUser(ctx); err != nil {
			return err
		}
		return roleRefusal(nil, nil, false)
	}
}
