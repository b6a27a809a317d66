package storage

import (
	"context"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// Episodes of a run whose agent connects (models.Run.AgentConnects) are
// handed out by claims, not queued by offers: a claim picks a waiting
// attempt under the same room rules as an offer (the run's parallelism,
// site caps), marks it queued, records the lease and queues its episode job,
// all in one transaction. The episode job then runs the try as any other.

// ClaimEpisode hands one of a connecting run's waiting attempts to an
// agent under a lease that lasts ttl unrenewed, and queues its episode
// (offer). It returns nil when nothing can be claimed now (every attempt
// is running, queued or done, or the run's parallelism or a site's cap is
// full), and ECONFLICT when the run is over or its agent does not connect.
// The caller checks the actor may act for the run's team.
func (db *DB) ClaimEpisode(ctx context.Context, runID int64, tokenHash string, ttl time.Duration, share models.Claimant, offer OfferFunc) (*models.ClaimedEpisode, error) {
	var out *models.ClaimedEpisode
	err := db.tx(ctx, func(tx *gorm.DB) error {
		if err := db.lockScheduling(tx); err != nil {
			return err
		}
		var run models.Run
		if err := lockRow(tx, db.dialect).First(&run, runID).Error; err != nil {
			return wrap(err, "run")
		}
		if !run.AgentConnects {
			return models.Errorf(models.ECONFLICT, "Run %d's agent does not connect to Proctor: Proctor calls it, so its episodes cannot be claimed.", run.ID)
		}
		if run.Finished() {
			return models.Errorf(models.ECONFLICT, "Run %d is %s: no episode is left to claim.", run.ID, run.Status)
		}
		if run.Status != models.RunRunning {
			return nil // not dispatched yet
		}
		var busy int64
		if err := tx.Model(&models.Attempt{}).Where("run_id = ? AND (status = ? OR (status = ? AND queued = ?))",
			run.ID, models.AttemptRunning, models.AttemptPending, true).Count(&busy).Error; err != nil {
			return wrap(err, "attempts")
		}
		if busy >= int64(run.Parallelism) {
			return nil
		}
		sites, err := versionSites(tx, run.VersionID)
		if err != nil {
			return err
		}
		ids, err := db.pickWaiting(tx, &run, 1, sites, map[int64]map[string]*siteLoad{})
		if err != nil || len(ids) == 0 {
			return err
		}
		var a models.Attempt
		if err := tx.First(&a, ids[0]).Error; err != nil {
			return wrap(err, "attempt")
		}
		now := db.now()
		// The team's fair share holds for claims as for the episodes Proctor
		// starts itself: over it, nothing is handed out while another team waits.
		if over, err := db.overShare(tx, run.TeamID, a.ID, false, share, now); err != nil || over {
			return err
		}
		var task models.Task
		if err := tx.First(&task, a.TaskID).Error; err != nil {
			return wrap(err, "task")
		}
		if err := tx.Model(&a).Update("queued", true).Error; err != nil {
			return wrap(err, "attempt")
		}
		lease := &models.EpisodeLease{RunID: run.ID, AttemptID: a.ID, Try: a.Tries + 1, TokenHash: tokenHash,
			Status: models.LeaseClaimed, ExpiresAt: now.Add(ttl), CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(lease).Error; err != nil {
			return wrap(err, "episode lease")
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		if err := offer(ctx, t, &run, ids); err != nil {
			return err
		}
		stepTask := models.StepTask{ID: task.ExternalID, Goal: task.Intent, StartURLs: task.StartURLs, Sites: task.Sites}
		if m, err := models.ResolveSites(sites, models.Namespace(a.ID, lease.Try)); err == nil {
			stepTask.StartURLs = m.ResolveAll(task.StartURLs)
		}
		out = &models.ClaimedEpisode{Lease: lease, Run: run, Task: stepTask}
		return nil
	})
	return out, err
}

// EpisodeLeaseByToken returns the lease an episode token opens, ENOTFOUND
// for an unknown token. Whether it is live is the caller's to check.
func (db *DB) EpisodeLeaseByToken(ctx context.Context, tokenHash string) (*models.EpisodeLease, error) {
	var l models.EpisodeLease
	if err := db.q(ctx).Where("token_hash = ?", tokenHash).First(&l).Error; err != nil {
		return nil, wrap(err, "episode")
	}
	return &l, nil
}

// RenewEpisodeLease extends a live lease to until; it reports whether the
// lease was live (an ended or lapsed lease is never revived).
func (db *DB) RenewEpisodeLease(ctx context.Context, id int64, until time.Time) (bool, error) {
	now := db.now()
	res := db.q(ctx).Model(&models.EpisodeLease{}).
		Where("id = ? AND status <> ? AND expires_at > ?", id, models.LeaseEnded, now).
		Updates(map[string]any{"expires_at": until, "updated_at": now})
	return res.RowsAffected == 1, wrap(res.Error, "episode lease")
}

// StartEpisodeLease attaches the episode a worker starts to the live lease
// that claimed its try, recording where the worker serves it. It returns
// nil when no live lease claimed this try (it lapsed before the start).
// System actor only.
func (db *DB) StartEpisodeLease(ctx context.Context, attemptID int64, try int, workerURL string) (*models.EpisodeLease, error) {
	if err := requireQueue(ctx, "starts claimed episodes"); err != nil {
		return nil, err
	}
	var out *models.EpisodeLease
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var leases []models.EpisodeLease
		now := db.now()
		if err := tx.Where("attempt_id = ? AND try = ? AND status = ? AND expires_at > ?", attemptID, try, models.LeaseClaimed, now).
			Order("id DESC").Limit(1).Find(&leases).Error; err != nil {
			return wrap(err, "episode lease")
		}
		if len(leases) == 0 {
			return nil
		}
		l := leases[0]
		l.Status, l.WorkerURL, l.UpdatedAt = models.LeaseRunning, workerURL, now
		if err := tx.Model(&l).Updates(map[string]any{"status": l.Status, "worker_url": workerURL, "updated_at": now}).Error; err != nil {
			return wrap(err, "episode lease")
		}
		out = &l
		return nil
	})
	return out, err
}

// EndEpisodeLease ends a lease with the reason agents are shown.
func (db *DB) EndEpisodeLease(ctx context.Context, id int64, reason string) error {
	now := db.now()
	return wrap(db.q(ctx).Model(&models.EpisodeLease{}).Where("id = ? AND status <> ?", id, models.LeaseEnded).
		Updates(map[string]any{"status": models.LeaseEnded, "ended_reason": reason, "updated_at": now}).Error, "episode lease")
}

// EpisodeLease returns a lease by id.
func (db *DB) EpisodeLease(ctx context.Context, id int64) (*models.EpisodeLease, error) {
	var l models.EpisodeLease
	if err := db.q(ctx).First(&l, id).Error; err != nil {
		return nil, wrap(err, "episode lease")
	}
	return &l, nil
}

// ReturnClaimedAttempt hands a connecting run's attempt back to the claims
// after its try ended without a result the agent is charged with (its lease
// lapsed, or its episode could not start): the attempt is pending and not
// queued, so the next claim may take it. System actor only.
func (db *DB) ReturnClaimedAttempt(ctx context.Context, attemptID int64, try int) error {
	if err := requireQueue(ctx, "returns claimed episodes"); err != nil {
		return err
	}
	res := db.q(ctx).Model(&models.Attempt{}).
		Where("id = ? AND tries = ? AND status IN ?", attemptID, try, []string{models.AttemptRunning, models.AttemptPending}).
		Updates(map[string]any{"status": models.AttemptPending, "worker_id": "", "queued": false, "updated_at": db.now()})
	return wrap(res.Error, "attempt")
}

// WaitingForAgent counts a connecting run's attempts that wait for a claim.
func (db *DB) WaitingForAgent(ctx context.Context, runID int64) (int64, error) {
	var n int64
	err := db.q(ctx).Model(&models.Attempt{}).Where("run_id = ? AND status = ? AND queued = ?", runID, models.AttemptPending, false).Count(&n).Error
	return n, wrap(err, "attempts")
}

// EndAttemptLeases ends the leases of an attempt not ended yet, those of
// tries up to upTo (0: every one), with the reason agents are shown. A
// lease a claim made meanwhile may end too: its agent is told to claim
// again, and its episode job finds no lease and hands the attempt back.
func (db *DB) EndAttemptLeases(ctx context.Context, attemptID int64, upTo int, reason string) error {
	q := db.q(ctx).Model(&models.EpisodeLease{}).Where("attempt_id = ? AND status <> ?", attemptID, models.LeaseEnded)
	if upTo > 0 {
		q = q.Where("try <= ?", upTo)
	}
	return wrap(q.Updates(map[string]any{"status": models.LeaseEnded, "ended_reason": reason, "updated_at": db.now()}).Error, "episode lease")
}
