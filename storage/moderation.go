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

// moderationOf is a run's publication state; what the caller may change
// about it (CanPublish, CanModerate) is the service's to set.
func moderationOf(q *gorm.DB, run *models.Run) (*models.RunModeration, error) {
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
	}, nil
}

// RunModeration returns a run's publication state and whether the scope
// acts for its team. ENOTFOUND when the scope does not see the run.
func (db *DB) RunModeration(ctx context.Context, scope models.RunScope, runID int64) (*models.RunModeration, bool, error) {
	q := db.q(ctx)
	run, manage, err := db.runSummaryAccess(q, scope, runID, false)
	if err != nil {
		return nil, false, err
	}
	mod, err := moderationOf(q, run)
	if err != nil {
		return nil, false, err
	}
	return mod, manage, nil
}

// ModerateRun applies one moderation action in a transaction: it locks the
// run the scope sees (ENOTFOUND otherwise), lets decide check who acts and
// the run's state and choose the change, writes it, logs its leaderboard
// event when the run is or was public, and records an audit event. It returns
// the run's state afterwards and whether the scope acts for its team. decide
// (service.Moderation) owns the rules.
func (db *DB) ModerateRun(ctx context.Context, scope models.RunScope, runID int64, decide func(t *models.ModerationTarget) (models.RunChange, error)) (*models.RunModeration, bool, error) {
	var out *models.RunModeration
	var manage bool
	err := db.tx(ctx, func(tx *gorm.DB) error {
		run, m, err := db.runSummaryAccess(tx, scope, runID, true)
		if err != nil {
			return err
		}
		manage = m
		target := &models.ModerationTarget{Run: run}
		if scope.UserID != 0 {
			_, err := membershipOf(tx, run.TeamID, scope.UserID)
			switch models.ErrorCode(err) {
			case "":
				target.Member = true
			case models.ENOTFOUND:
			default:
				return err
			}
		}
		h, err := runHidingOf(tx, run.ID)
		if err != nil {
			return err
		}
		target.HiddenAt, target.HiddenReason = h.HiddenAt, h.HiddenReason
		// decide judges the origin pages show: a run of candidate websites
		// is not an upload to reproduce. Only the change is written.
		if run.Origin, err = shownOriginOf(tx, run); err != nil {
			return err
		}
		ch, err := decide(target)
		if err != nil {
			return err
		}
		updates := map[string]any{}
		if ch.Published != nil {
			updates["published"] = *ch.Published
		}
		if ch.Verified != nil {
			updates["verified"] = *ch.Verified
		}
		if ch.Hide {
			updates["hidden_at"], updates["hidden_reason"] = db.now(), ch.HideReason
		}
		if ch.Unhide {
			updates["hidden_at"], updates["hidden_reason"] = nil, ""
		}
		if ch.Origin != "" {
			updates["origin"] = ch.Origin
		}
		wasPublic := run.Published
		if len(updates) > 0 {
			if err := tx.Model(&models.Run{}).Where("id = ?", run.ID).Updates(updates).Error; err != nil {
				return wrap(err, "run")
			}
		}
		var after models.Run
		if err := tx.Where("id = ?", run.ID).Take(&after).Error; err != nil {
			return wrap(err, "run")
		}
		// Only changes of public runs are logged: the log is public, and an
		// unpublished run must not show up in it.
		if ch.Event != "" && (wasPublic || after.Published) {
			benchmarkID, err := benchmarkIDOfVersion(tx, after.VersionID)
			if err != nil {
				return err
			}
			ev := &models.LeaderboardEvent{
				BenchmarkID: benchmarkID, SubsetName: after.SubsetName, RunID: after.ID, Kind: ch.Event,
				Reason: ch.HideReason, ActorRole: ch.ActorRole, CreatedAt: db.now(),
			}
			if userID, _ := actorOfRecord(ctx); userID != 0 {
				ev.ActorID = &userID
			}
			if err := RecordLeaderboardEvent(tx, ev); err != nil {
				return err
			}
		}
		if err := db.auditTx(ctx, tx, ch.Audit, "run "+strconv.FormatInt(run.ID, 10), ch.HideReason, &run.TeamID); err != nil {
			return err
		}
		out, err = moderationOf(tx, &after)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, manage, nil
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
// benchmark does not have; the service checks the page bounds and passes the
// caller's scope.
func (db *DB) LeaderboardChanges(ctx context.Context, scope models.BenchmarkScope, slug string, f models.ChangeFilter) (*models.LeaderboardChanges, error) {
	q := db.q(ctx)
	b, err := benchmarkIn(q, slug, scope)
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
