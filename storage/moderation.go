package storage

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/models"
)

// A run is on its benchmark's leaderboards when it is published and not hidden
// (runs.hidden_at IS NULL). Teams publish and withdraw their completed runs;
// administrators verify, hide with a public reason, show again and mark
// uploaded runs reproduced. Every change to a run that is public is logged in
// leaderboard_events in the transaction of the change.

// runHiding is a run's moderation columns that models.Run does not carry.
type runHiding struct {
	HiddenAt     *time.Time
	HiddenReason string
}

// runHidingOf reads whether administrators hid a run, and why.
func runHidingOf(q *gorm.DB, runID int64) (runHiding, error) {
	var rows []runHiding
	if err := q.Table("runs").Select("hidden_at, hidden_reason").Where("id = ?", runID).Scan(&rows).Error; err != nil {
		return runHiding{}, wrap(err, "run")
	}
	if len(rows) == 0 {
		return runHiding{}, runNotFound(runID)
	}
	return rows[0], nil
}

// shownOriginOf is a run's origin as pages show it (models.ShownOrigin).
func shownOriginOf(q *gorm.DB, run *models.Run) (string, error) {
	if run.Origin != models.OriginUploaded {
		return run.Origin, nil
	}
	b, err := benchmarkOfVersion(q, run.VersionID)
	if err != nil {
		return "", err
	}
	return models.ShownOrigin(run.Origin, b.gradesCandidates()), nil
}

// moderationOf is a run's publication state as the context's actor sees it;
// manage tells whether the actor acts for the run's team.
func moderationOf(ctx context.Context, q *gorm.DB, run *models.Run, manage bool) (*models.RunModeration, error) {
	h, err := runHidingOf(q, run.ID)
	if err != nil {
		return nil, err
	}
	origin, err := shownOriginOf(q, run)
	if err != nil {
		return nil, err
	}
	return &models.RunModeration{
		RunID: run.ID, Status: run.Status, Origin: origin, Published: run.Published, Verified: run.Verified,
		HiddenAt: h.HiddenAt, HiddenReason: h.HiddenReason,
		CanPublish: manage, CanModerate: models.ActorFrom(ctx).Privileged(),
	}, nil
}

// RunModeration returns a run's publication state and what the caller may
// change about it. ENOTFOUND when the caller may not see the run.
func (db *DB) RunModeration(ctx context.Context, runID int64) (*models.RunModeration, error) {
	q := db.q(ctx)
	run, manage, err := db.runSummaryAccess(ctx, q, runID, false)
	if err != nil {
		return nil, err
	}
	return moderationOf(ctx, q, run, manage)
}

// runChange is what a moderation action does to a run: the columns it sets,
// the leaderboard event it logs ("" for none) and the audit action.
type runChange struct {
	updates map[string]any
	event   string
	reason  string
	audit   string
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
func (db *DB) PublishRun(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return db.moderateRun(ctx, runID, false, func(run *models.Run, h runHiding) (runChange, error) {
		switch {
		case run.Status != models.RunCompleted:
			return runChange{}, notCompleted(run, "published")
		case run.Published:
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d is already published.", run.ID)
		}
		ch := runChange{updates: map[string]any{"published": true}, audit: "run.published"}
		if h.HiddenAt == nil {
			ch.event = models.EventAdded // a hidden run stays off the boards until shown again
		}
		return ch, nil
	})
}

// WithdrawRun takes a published run off the leaderboards and out of public
// view, and logs "withdrawn". Permissions as PublishRun; ECONFLICT when it is
// not published (or, unpublished, has not completed).
func (db *DB) WithdrawRun(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return db.moderateRun(ctx, runID, false, func(run *models.Run, _ runHiding) (runChange, error) {
		switch {
		case !run.Published && run.Status != models.RunCompleted:
			return runChange{}, notCompleted(run, "published or withdrawn")
		case !run.Published:
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d is not published: there is nothing to withdraw.", run.ID)
		}
		// A published run that was reopened (its failed attempts retried) may
		// still be withdrawn: its team must always be able to take it down.
		return runChange{updates: map[string]any{"published": false}, event: models.EventWithdrawn, audit: "run.withdrawn"}, nil
	})
}

// VerifyRun marks a completed run verified by the administrators and logs
// "verified" when it is published. Administrators only: ENOTFOUND when the run
// does not exist, EUNAUTHORIZED or EFORBIDDEN for others, ECONFLICT when it
// has not completed, is already verified, or was uploaded (an uploaded run
// is verified only once administrators reproduced it; a run of candidate
// websites was tested by Proctor and needs no reproducing).
func (db *DB) VerifyRun(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return db.moderateRun(ctx, runID, true, func(run *models.Run, _ runHiding) (runChange, error) {
		switch {
		case run.Origin == models.OriginUploaded:
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d was uploaded: reproduce it before verifying.", run.ID)
		case run.Status != models.RunCompleted:
			return runChange{}, notCompleted(run, "verified")
		case run.Verified:
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d is already verified.", run.ID)
		}
		return runChange{updates: map[string]any{"verified": true}, event: models.EventVerified, audit: "run.verified"}, nil
	})
}

// HideRun takes a run off the leaderboards with a reason shown publicly on its
// page, and logs "hidden" when it is published; its team and administrators
// still see everything, others only its summary and the reason.
// Administrators only, as VerifyRun; EINVALID on "reason" when the reason is
// empty or too long, ECONFLICT when the run is already hidden.
func (db *DB) HideRun(ctx context.Context, runID int64, reason string) (*models.RunModeration, error) {
	return db.moderateRun(ctx, runID, true, func(run *models.Run, h runHiding) (runChange, error) {
		// Checked once the caller may act: others learn nothing from a reason.
		reason, err := models.CheckHideReason(reason)
		if err != nil {
			return runChange{}, err
		}
		if h.HiddenAt != nil {
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d is already hidden: %s", run.ID, h.HiddenReason)
		}
		return runChange{
			updates: map[string]any{"hidden_at": db.now(), "hidden_reason": reason},
			event:   models.EventHidden, reason: reason, audit: "run.hidden",
		}, nil
	})
}

// UnhideRun shows a hidden run again (on the leaderboards when it is
// published) and logs "unhidden" when it is published. Administrators only,
// as VerifyRun; ECONFLICT when the run is not hidden.
func (db *DB) UnhideRun(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return db.moderateRun(ctx, runID, true, func(run *models.Run, h runHiding) (runChange, error) {
		if h.HiddenAt == nil {
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d is not hidden.", run.ID)
		}
		return runChange{updates: map[string]any{"hidden_at": nil, "hidden_reason": ""}, event: models.EventUnhidden, audit: "run.unhidden"}, nil
	})
}

// MarkRunReproduced marks a completed uploaded run as reproduced by the
// administrators (origin "reproduced", the leaderboard's badge) and logs
// "reproduced" when it is published. Administrators only, as VerifyRun;
// ECONFLICT when it has not completed, was executed by Proctor, is a run of
// candidate websites (Proctor tested those itself) or is already marked.
func (db *DB) MarkRunReproduced(ctx context.Context, runID int64) (*models.RunModeration, error) {
	return db.moderateRun(ctx, runID, true, func(run *models.Run, _ runHiding) (runChange, error) {
		switch {
		case run.Status != models.RunCompleted:
			return runChange{}, notCompleted(run, "marked reproduced")
		case run.Origin == models.OriginReproduced:
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d is already marked reproduced.", run.ID)
		case run.Origin == models.OriginCandidates:
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d's candidate websites were tested by Proctor: only uploaded results are marked reproduced.", run.ID)
		case run.Origin != models.OriginUploaded:
			return runChange{}, models.Errorf(models.ECONFLICT, "Run %d was executed by Proctor: only uploaded runs are marked reproduced.", run.ID)
		}
		return runChange{updates: map[string]any{"origin": models.OriginReproduced}, event: models.EventReproduced, audit: "run.reproduced"}, nil
	})
}

// moderateRun applies one moderation action in a transaction: it checks that
// the caller may see the run and act (for its team, or as an administrator
// when admin is set), lets decide check the run's state and choose the change,
// writes it, logs its leaderboard event when the run is or was public, and
// records an audit event. It returns the run's state afterwards.
func (db *DB) moderateRun(ctx context.Context, runID int64, admin bool, decide func(run *models.Run, h runHiding) (runChange, error)) (*models.RunModeration, error) {
	var out *models.RunModeration
	err := db.tx(ctx, func(tx *gorm.DB) error {
		run, manage, err := db.runSummaryAccess(ctx, tx, runID, true)
		if err != nil {
			return err
		}
		var role string
		if admin {
			if _, err := models.RequireAdmin(ctx); err != nil {
				return err
			}
			role = models.ActorRoleAdmin
		} else {
			a, err := requireTeamRole(ctx, tx, run.TeamID, false)
			if err != nil {
				return err
			}
			if role, err = teamActionRole(tx, a, run.TeamID); err != nil {
				return err
			}
		}
		if models.ActorFrom(ctx).System {
			role = models.ActorRoleSystem
		}
		h, err := runHidingOf(tx, run.ID)
		if err != nil {
			return err
		}
		// decide judges the origin pages show: a run of candidate websites
		// is not an upload to reproduce. Only ch.updates are written.
		if run.Origin, err = shownOriginOf(tx, run); err != nil {
			return err
		}
		ch, err := decide(run, h)
		if err != nil {
			return err
		}
		wasPublic := run.Published
		if err := tx.Model(&models.Run{}).Where("id = ?", run.ID).Updates(ch.updates).Error; err != nil {
			return wrap(err, "run")
		}
		var after models.Run
		if err := tx.Where("id = ?", run.ID).Take(&after).Error; err != nil {
			return wrap(err, "run")
		}
		// Only changes of public runs are logged: the log is public, and an
		// unpublished run must not show up in it.
		if ch.event != "" && (wasPublic || after.Published) {
			benchmarkID, err := benchmarkIDOfVersion(tx, after.VersionID)
			if err != nil {
				return err
			}
			ev := &models.LeaderboardEvent{
				BenchmarkID: benchmarkID, SubsetName: after.SubsetName, RunID: after.ID, Kind: ch.event,
				Reason: ch.reason, ActorRole: role, CreatedAt: db.now(),
			}
			if a := models.ActorFrom(ctx); a.UserID != 0 {
				ev.ActorID = &a.UserID
			}
			if err := RecordLeaderboardEvent(tx, ev); err != nil {
				return err
			}
		}
		if err := db.auditTx(ctx, tx, ch.audit, "run "+strconv.FormatInt(run.ID, 10), ch.reason, &run.TeamID); err != nil {
			return err
		}
		out, err = moderationOf(ctx, tx, &after, manage)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// teamActionRole names who acted for a team in the public log: the team, or
// the administrators when an admin who is not a member acted for it.
func teamActionRole(q *gorm.DB, a models.Actor, teamID int64) (string, error) {
	if !a.IsAdmin {
		return models.ActorRoleTeam, nil
	}
	_, err := membershipOf(q, teamID, a.UserID)
	switch models.ErrorCode(err) {
	case "":
		return models.ActorRoleTeam, nil
	case models.ENOTFOUND:
		return models.ActorRoleAdmin, nil
	}
	return "", err
}

// benchmarkIDOfVersion returns the benchmark a version belongs to.
func benchmarkIDOfVersion(q *gorm.DB, versionID int64) (int64, error) {
	var ids []int64
	if err := q.Model(&models.BenchmarkVersion{}).Where("id = ?", versionID).Pluck("benchmark_id", &ids).Error; err != nil {
		return 0, wrap(err, "benchmark version")
	}
	if len(ids) == 0 {
		return 0, models.Errorf(models.ENOTFOUND, "Benchmark version %d not found.", versionID)
	}
	return ids[0], nil
}

// leaderboardEventKinds are the kinds the change log knows.
func leaderboardEventKinds() []string {
	return []string{models.EventAdded, models.EventWithdrawn, models.EventHidden, models.EventUnhidden,
		models.EventVerified, models.EventReproduced, models.EventRescored}
}

// RecordLeaderboardEvent writes one entry of a leaderboard's public change log
// inside tx, the transaction of the change it describes. A "rescored" event
// with a RescoreID is written at most once per run and re-scoring request
// (later calls do nothing), so a re-scoring that grades many attempts logs one
// line. EINVALID for an unknown kind or actor role.
func RecordLeaderboardEvent(tx *gorm.DB, ev *models.LeaderboardEvent) error {
	if !slices.Contains(leaderboardEventKinds(), ev.Kind) {
		return models.Errorf(models.EINVALID, "unknown leaderboard event kind %q", ev.Kind)
	}
	switch ev.ActorRole {
	case models.ActorRoleTeam, models.ActorRoleAdmin, models.ActorRoleSystem:
	default:
		return models.Errorf(models.EINVALID, "unknown leaderboard event actor role %q", ev.ActorRole)
	}
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = time.Now().UTC()
	}
	q := tx
	if ev.RescoreID != "" {
		q = tx.Clauses(clause.OnConflict{
			Columns:     []clause.Column{{Name: "run_id"}, {Name: "rescore_id"}},
			TargetWhere: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "rescore_id <> ''"}}},
			DoNothing:   true,
		})
	}
	return wrap(q.Create(ev).Error, "leaderboard event")
}

// RecordRescoredEvent logs "rescored" on the change log of a published run
// whose attempts a re-scoring request graded again, once per run and request
// however many attempts it grades, with what the request has changed so far
// (each later attempt of the request updates the line's numbers); nothing for
// an unpublished run or an empty rescoreID. Call it inside the transaction
// that records the re-scoring's evaluations (RecordEvaluations).
func RecordRescoredEvent(tx *gorm.DB, runID int64, rescoreID string, at time.Time, change models.RescoreChange) error {
	if rescoreID == "" {
		return nil
	}
	var run models.Run
	if err := tx.Select("id, version_id, subset_name, published").Where("id = ?", runID).Take(&run).Error; err != nil {
		return wrap(err, "run")
	}
	if !run.Published {
		return nil
	}
	benchmarkID, err := benchmarkIDOfVersion(tx, run.VersionID)
	if err != nil {
		return err
	}
	if err := RecordLeaderboardEvent(tx, &models.LeaderboardEvent{
		BenchmarkID: benchmarkID, SubsetName: run.SubsetName, RunID: run.ID, Kind: models.EventRescored,
		ActorRole: models.ActorRoleSystem, RescoreID: rescoreID, CreatedAt: at, RescoreChange: change,
	}); err != nil {
		return err
	}
	return wrap(tx.Model(&models.LeaderboardEvent{}).Where("run_id = ? AND rescore_id = ?", run.ID, rescoreID).Updates(map[string]any{
		"successes_before": change.SuccessesBefore, "successes_after": change.SuccessesAfter, "tasks": change.Tasks,
		"changed_attempts": change.ChangedAttempts, "evaluators": change.Evaluators,
	}).Error, "leaderboard event")
}

// changeColumns are the columns of a models.LeaderboardChange.
const changeColumns = `e.id, e.run_id, e.subset_name, e.kind, e.reason, e.actor_role, e.created_at,
	a.name AS agent_name, t.name AS team_name, t.slug AS team_slug, r.published AS run_published,
	e.successes_before, e.successes_after, e.tasks, e.changed_attempts, e.evaluators`

// LeaderboardChanges returns one page (from 1) of a benchmark's public
// leaderboard change log, newest first: every board's changes, or with a
// subset the changes of that board (a named subset's board also shows full
// runs, restricted to its tasks). ENOTFOUND for an unknown benchmark or, for
// non-admins, an unpublished one; EINVALID on "subset" for a board the
// benchmark does not have, or for bad page bounds.
func (db *DB) LeaderboardChanges(ctx context.Context, slug string, f models.ChangeFilter) (*models.LeaderboardChanges, error) {
	if f.Page < 1 || f.PerPage < 1 {
		return nil, models.Errorf(models.EINVALID, "page and per_page must be positive")
	}
	q := db.q(ctx)
	b, err := visibleBenchmark(ctx, q, slug)
	if err != nil {
		return nil, err
	}
	var named []string
	if err := q.Table("subsets s").Joins("JOIN benchmark_versions v ON v.id = s.version_id").
		Where("v.benchmark_id = ?", b.ID).Distinct().Order("s.name").Pluck("s.name", &named).Error; err != nil {
		return nil, wrap(err, "subsets")
	}
	out := &models.LeaderboardChanges{
		BenchmarkSlug: b.Slug, BenchmarkName: b.Name, Subset: f.Subset,
		Subsets: append([]string{models.SubsetFull}, named...), Page: f.Page, PerPage: f.PerPage,
	}
	if f.Subset != "" && !slices.Contains(out.Subsets, f.Subset) {
		return nil, models.FieldError("subset", "subset must be one of %s's boards (%s), not %q", b.Slug, strings.Join(out.Subsets, ", "), f.Subset)
	}
	scoped := func() *gorm.DB {
		s := q.Table("leaderboard_events e").
			Joins("JOIN runs r ON r.id = e.run_id").
			Joins("JOIN agents a ON a.id = r.agent_id").
			Joins("JOIN teams t ON t.id = r.team_id").
			Where("e.benchmark_id = ?", b.ID)
		switch f.Subset {
		case "":
		case models.SubsetFull:
			s = s.Where("e.subset_name = ?", models.SubsetFull)
		default:
			s = s.Where("e.subset_name IN ?", []string{f.Subset, models.SubsetFull})
		}
		return s
	}
	var total int64
	if err := scoped().Count(&total).Error; err != nil {
		return nil, wrap(err, "leaderboard events")
	}
	out.Total = int(total)
	err = scoped().Select(changeColumns).Order("e.created_at DESC, e.id DESC").
		Offset((f.Page - 1) * f.PerPage).Limit(f.PerPage).Scan(&out.Changes).Error
	if err != nil {
		return nil, wrap(err, "leaderboard events")
	}
	return out, nil
}
