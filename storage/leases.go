package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/models"
)

// RegisterLease records the lease of a process that works jobs, or renews it
// when it is already there.
func (db *DB) RegisterLease(ctx context.Context, l models.WorkerLease) error {
	now := db.now()
	l.StartedAt, l.HeartbeatAt = now, now
	err := db.q(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"heartbeat_at"}),
	}).Create(&l).Error
	return wrap(err, "worker lease")
}

// RenewLease renews a process's lease. False when the lease is gone: another
// process found it lapsed and released its work, so the caller registers it
// again before it claims more.
func (db *DB) RenewLease(ctx context.Context, id string) (bool, error) {
	res := db.q(ctx).Model(&models.WorkerLease{}).Where("id = ?", id).Update("heartbeat_at", db.now())
	if res.Error != nil {
		return false, wrap(res.Error, "worker lease")
	}
	return res.RowsAffected == 1, nil
}

// DropLease removes a process's lease as it stops, once its jobs have
// handed their attempts back.
func (db *DB) DropLease(ctx context.Context, id string) error {
	return wrap(db.q(ctx).Where("id = ?", id).Delete(&models.WorkerLease{}).Error, "worker lease")
}

// Leases lists every process lease.
func (db *DB) Leases(ctx context.Context) ([]models.WorkerLease, error) {
	var out []models.WorkerLease
	return out, wrap(db.q(ctx).Order("started_at").Find(&out).Error, "worker leases")
}

// OrphanHolders lists the workers named by running attempts that hold no
// lease (it was released while their process was cut off from the
// database): their attempts are released like a dead worker's.
func (db *DB) OrphanHolders(ctx context.Context) ([]string, error) {
	var ids []string
	err := db.q(ctx).Model(&models.Attempt{}).Distinct("worker_id").
		Where("status = ? AND worker_id <> '' AND worker_id NOT IN (SELECT id FROM worker_leases)", models.AttemptRunning).
		Pluck("worker_id", &ids).Error
	return ids, wrap(err, "attempts")
}

// ReleaseWorker releases a dead process's work in one transaction: its
// lease is removed, its running attempts go back to pending, and reoffer
// (given the transaction) offers its running jobs again. It returns the
// attempts released; nothing is done (and ok is false) when the lease was
// renewed meanwhile or another process released it first.
func (db *DB) ReleaseWorker(ctx context.Context, w models.DeadWorker, reoffer func(ctx context.Context, tx *sql.Tx) error) (attemptIDs []int64, ok bool, err error) {
	if err := requireQueue(ctx, "releases a worker's jobs"); err != nil {
		return nil, false, err
	}
	err = db.tx(ctx, func(tx *gorm.DB) error {
		if w.Orphan {
			var leases int64
			if err := tx.Model(&models.WorkerLease{}).Where("id = ?", w.ID).Count(&leases).Error; err != nil {
				return wrap(err, "worker lease")
			}
			if leases > 0 {
				return nil // it registered since it was looked for: alive
			}
		}
		del := tx.Where("id = ?", w.ID)
		if w.LapsedBefore != nil {
			del = del.Where("heartbeat_at < ?", *w.LapsedBefore)
		}
		res := del.Delete(&models.WorkerLease{})
		if res.Error != nil {
			return wrap(res.Error, "worker lease")
		}
		if res.RowsAffected == 0 && w.LapsedBefore != nil {
			return nil // renewed, or released by another process
		}
		attemptIDs, err = releaseHeld(tx, db, w.ID, nil)
		if err != nil {
			return err
		}
		if res.RowsAffected == 0 && len(attemptIDs) == 0 {
			return nil // nothing left of it
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		if err := reoffer(ctx, t); err != nil {
			return fmt.Errorf("offer the jobs of worker %s again: %w", w.ID, err)
		}
		ok = true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return attemptIDs, ok, nil
}

// ReleaseLost releases attempts a live worker holds but no longer runs (a
// job of its whose end could not be recorded while the database was down),
// with reoffer offering their jobs again, in one transaction. Attempts no
// longer held by the worker are left alone; it returns those released.
func (db *DB) ReleaseLost(ctx context.Context, worker string, attemptIDs []int64, reoffer func(ctx context.Context, tx *sql.Tx) error) ([]int64, error) {
	if err := requireQueue(ctx, "releases a worker's jobs"); err != nil {
		return nil, err
	}
	var released []int64
	err := db.tx(ctx, func(tx *gorm.DB) error {
		if len(attemptIDs) > 0 {
			var err error
			if released, err = releaseHeld(tx, db, worker, attemptIDs); err != nil {
				return err
			}
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		return reoffer(ctx, t)
	})
	return released, err
}

// HeldAttempts lists the running attempts a worker holds whose try started
// before the given time.
func (db *DB) HeldAttempts(ctx context.Context, worker string, startedBefore time.Time) ([]int64, error) {
	var ids []int64
	err := db.q(ctx).Model(&models.Attempt{}).Where("status = ? AND worker_id = ? AND started_at < ?", models.AttemptRunning, worker, startedBefore).
		Order("id").Pluck("id", &ids).Error
	return ids, wrap(err, "attempts")
}

// releaseHeld puts the running attempts a worker holds (only those of ids,
// when given) back to pending, and returns them. They stay queued: the
// release offers their jobs again, or the jobs run again on their own.
func releaseHeld(tx *gorm.DB, db *DB, worker string, ids []int64) ([]int64, error) {
	q := lockRow(tx, db.dialect).Model(&models.Attempt{}).Where("status = ? AND worker_id = ?", models.AttemptRunning, worker)
	if ids != nil {
		q = q.Where("id IN ?", ids)
	}
	var held []int64
	if err := q.Order("id").Pluck("id", &held).Error; err != nil {
		return nil, wrap(err, "attempts")
	}
	if len(held) == 0 {
		return nil, nil
	}
	err := tx.Model(&models.Attempt{}).Where("id IN ?", held).Updates(map[string]any{
		"status": models.AttemptPending, "worker_id": "", "queued": true, "updated_at": db.now(),
	}).Error
	return held, wrap(err, "attempts")
}

// overShare reports whether a team already runs its share of episodes (or
// of hidden-test jobs) while another team's wait: its claim then waits for
// one of its own to end. The team's row is locked, so that concurrent claims
// of one team are counted one after the other.
func (db *DB) overShare(tx *gorm.DB, teamID, attemptID int64, hidden bool, by models.Claimant, now time.Time) (bool, error) {
	if err := lockRow(tx, db.dialect).Select("id").First(&models.Team{}, teamID).Error; err != nil {
		return false, wrap(err, "team")
	}
	limit, slots := by.TeamEpisodes, "episode_slots"
	if hidden {
		limit, slots = by.TeamHiddenJobs, "hidden_slots"
	}
	if limit <= 0 {
		var total int64
		if err := tx.Model(&models.WorkerLease{}).Where("heartbeat_at >= ?", now.Add(-by.TTL)).
			Select("COALESCE(SUM(" + slots + "), 0)").Scan(&total).Error; err != nil {
			return false, wrap(err, "worker leases")
		}
		limit = max(1, int(total/2))
	}
	kind := "b.grades <> ?"
	if hidden {
		kind = "b.grades = ?"
	}
	active := func(status string) *gorm.DB {
		return tx.Table("attempts a").Joins("JOIN runs r ON r.id = a.run_id").
			Joins("JOIN benchmark_versions v ON v.id = r.version_id").Joins("JOIN benchmarks b ON b.id = v.benchmark_id").
			Where("a.status = ? AND "+kind, status, models.GradesCandidates)
	}
	var running int64
	if err := active(models.AttemptRunning).Where("r.team_id = ? AND a.id <> ?", teamID, attemptID).Count(&running).Error; err != nil {
		return false, wrap(err, "attempts")
	}
	if running < int64(limit) {
		return false, nil
	}
	var waiting []int64
	// Another team waits when one of its runs has an attempt pending and
	// room under its parallelism to run it.
	err := active(models.AttemptPending).Where("r.team_id <> ? AND r.status IN ?", teamID, []string{models.RunQueued, models.RunRunning}).
		Where("(SELECT COUNT(*) FROM attempts x WHERE x.run_id = r.id AND x.status = ?) < r.parallelism", models.AttemptRunning).
		Limit(1).Pluck("a.id", &waiting).Error
	return len(waiting) > 0, wrap(err, "attempts")
}

// holdLease renews the claimant's lease inside a claim's transaction, and
// registers it again when another process released it as dead (that
// release already handed back everything it held).
func holdLease(tx *gorm.DB, l models.WorkerLease, now time.Time) error {
	res := tx.Model(&models.WorkerLease{}).Where("id = ?", l.ID).Update("heartbeat_at", now)
	if res.Error != nil || res.RowsAffected == 1 {
		return wrap(res.Error, "worker lease")
	}
	l.StartedAt, l.HeartbeatAt = now, now
	return wrap(tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&l).Error, "worker lease")
}

// liveHolder reports whether the worker holding a running attempt still
// holds a lease renewed within ttl.
func liveHolder(tx *gorm.DB, workerID string, now time.Time, ttl time.Duration) (bool, error) {
	if workerID == "" {
		return false, nil
	}
	var n int64
	err := tx.Model(&models.WorkerLease{}).Where("id = ? AND heartbeat_at >= ?", workerID, now.Add(-ttl)).Count(&n).Error
	return n > 0, wrap(err, "worker lease")
}

// TryPrefix is where the artifacts of an attempt's try are stored.
func TryPrefix(runID, attemptID int64, try int) string {
	return fmt.Sprintf("runs/%d/attempts/%d/try-%d", runID, attemptID, try)
}

// supersede records that a try's artifacts were replaced by a newer try's,
// for housekeeping to remove.
func (db *DB) supersede(tx *gorm.DB, runID, attemptID int64, try int) error {
	if try <= 0 {
		return nil
	}
	row := models.SupersededTry{Prefix: TryPrefix(runID, attemptID, try) + "/", CreatedAt: db.now()}
	return wrap(tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error, "superseded try")
}

// SupersededTries lists up to limit tries replaced before the given time.
func (db *DB) SupersededTries(ctx context.Context, before time.Time, limit int) ([]models.SupersededTry, error) {
	var out []models.SupersededTry
	err := db.q(ctx).Where("created_at < ?", before).Order("id").Limit(limit).Find(&out).Error
	return out, wrap(err, "superseded tries")
}

// ForgetSupersededTry removes the record of a try whose artifacts are gone.
func (db *DB) ForgetSupersededTry(ctx context.Context, id int64) error {
	return wrap(db.q(ctx).Delete(&models.SupersededTry{}, id).Error, "superseded try")
}
