package storage

import (
	"context"
	"database/sql"

	"gorm.io/gorm"

	"proctor/migrations"
	"proctor/models"
)

// Episodes are queued as room frees, not all at once: a run has at most its
// parallelism of attempts running or queued (an episode job waiting for
// them, attempts.queued), and a site with a cap at most its cap. Every
// transaction that may free room (a run dispatched, an episode finished, a
// claim that must wait, errored attempts retried) queues the next episodes
// in the same transaction, so a crash never strands a run nor queues an
// attempt twice.

// OfferFunc enqueues inside tx one episode job for each of the run's
// attempts given (the runner's Queue.RunEpisodes).
type OfferFunc = func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error

// schedulingLock is the PostgreSQL advisory lock that claims and offers
// take first: a claim that must wait and an offer made at the same time
// then see each other's writes, and site caps count across runs one claim
// at a time. SQLite's single writer serialises them already.
const schedulingLock int64 = 0x70726f63746f72 // "proctor"

// lockScheduling takes the scheduling lock for the rest of the transaction.
func (db *DB) lockScheduling(tx *gorm.DB) error {
	if db.dialect != migrations.Postgres {
		return nil
	}
	return wrap(tx.Exec("SELECT pg_advisory_xact_lock(?)", schedulingLock).Error, "episode scheduling")
}

// OfferEpisodes queues, in one transaction, the next episodes of every
// running run with room for them (an episode ended without finishing its
// attempt: its run was canceled). System actor only.
func (db *DB) OfferEpisodes(ctx context.Context, offer OfferFunc) error {
	if err := requireQueue(ctx, "queues episodes"); err != nil {
		return err
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		if err := db.lockScheduling(tx); err != nil {
			return err
		}
		return db.offerEpisodes(ctx, tx, offer)
	})
}

// siteLoad is a capped site's cap and how many attempts of its benchmark
// run or are queued on it.
type siteLoad struct {
	cap, load int
}

// offerEpisodes queues, inside tx (holding the scheduling lock), episodes
// for the waiting attempts (pending, not queued) of every running run
// Proctor executes and calls the agent of (a connecting agent's claims
// queue its own: see ClaimEpisode), oldest run and attempt first: while the run has fewer
// than its parallelism running or queued, and every capped site of the
// attempt's task has fewer than its cap running or queued across its
// benchmark's runs. The claim checks again, exactly (and the team's share);
// an attempt whose claim must wait is offered again when room frees. A nil
// offer queues nothing.
func (db *DB) offerEpisodes(ctx context.Context, tx *gorm.DB, offer OfferFunc) error {
	if offer == nil {
		return nil // the caller queues no episodes (tests of other things)
	}
	var runs []models.Run
	err := tx.Where("status = ? AND origin = ? AND agent_connects = ? AND id IN (SELECT run_id FROM attempts WHERE status = ? AND queued = ?)",
		models.RunRunning, models.OriginExecuted, false, models.AttemptPending, false).Order("id").Find(&runs).Error
	if err != nil {
		return wrap(err, "runs")
	}
	loads := map[int64]map[string]*siteLoad{} // by benchmark
	for i := range runs {
		run := &runs[i]
		var busy int64
		if err := tx.Model(&models.Attempt{}).Where("run_id = ? AND (status = ? OR (status = ? AND queued = ?))",
			run.ID, models.AttemptRunning, models.AttemptPending, true).Count(&busy).Error; err != nil {
			return wrap(err, "attempts")
		}
		room := run.Parallelism - int(busy)
		if room <= 0 {
			continue
		}
		sites, err := versionSites(tx, run.VersionID)
		if err != nil {
			return err
		}
		ids, err := db.pickWaiting(tx, run, room, sites, loads)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			continue
		}
		if err := tx.Model(&models.Attempt{}).Where("id IN ?", ids).Update("queued", true).Error; err != nil {
			return wrap(err, "attempts")
		}
		t, err := sqlTx(tx)
		if err != nil {
			return err
		}
		if err := offer(ctx, t, run, ids); err != nil {
			return err
		}
	}
	return nil
}

// pickWaiting returns up to room of the run's waiting attempts, in order,
// that no full capped site holds back, counting them into loads.
func (db *DB) pickWaiting(tx *gorm.DB, run *models.Run, room int, sites []models.Site, loads map[int64]map[string]*siteLoad) ([]int64, error) {
	waiting := tx.Model(&models.Attempt{}).Where("run_id = ? AND status = ? AND queued = ?", run.ID, models.AttemptPending, false)
	var capped []string
	for _, s := range sites {
		if s.MaxConcurrency > 0 {
			capped = append(capped, s.Name)
		}
	}
	if len(capped) == 0 {
		var ids []int64
		return ids, wrap(waiting.Order("id").Limit(room).Pluck("id", &ids).Error, "attempts")
	}
	benchmark := sites[0].BenchmarkID
	load, err := db.siteLoads(tx, benchmark, sites, loads)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ID     int64
		TaskID int64
	}
	if err := waiting.Select("id, task_id").Order("id").Scan(&rows).Error; err != nil {
		return nil, wrap(err, "attempts")
	}
	var uses []struct {
		TaskID int64
		Site   string
	}
	err = tx.Table("task_sites").Select("task_id, site").
		Where("site IN ? AND task_id IN (SELECT task_id FROM attempts WHERE run_id = ? AND status = ? AND queued = ?)",
			capped, run.ID, models.AttemptPending, false).Scan(&uses).Error
	if err != nil {
		return nil, wrap(err, "task sites")
	}
	taskSites := map[int64][]string{}
	for _, u := range uses {
		taskSites[u.TaskID] = append(taskSites[u.TaskID], u.Site)
	}
	var ids []int64
	for _, r := range rows {
		if len(ids) == room {
			break
		}
		full := false
		for _, s := range taskSites[r.TaskID] {
			if l := load[s]; l.load >= l.cap {
				full = true
			}
		}
		if full {
			continue
		}
		for _, s := range taskSites[r.TaskID] {
			load[s].load++
		}
		ids = append(ids, r.ID)
	}
	return ids, nil
}

// siteLoads returns the capped sites of a benchmark with their load
// (attempts running or queued on them), computed once per offer.
func (db *DB) siteLoads(tx *gorm.DB, benchmark int64, sites []models.Site, loads map[int64]map[string]*siteLoad) (map[string]*siteLoad, error) {
	if l, ok := loads[benchmark]; ok {
		return l, nil
	}
	l := map[string]*siteLoad{}
	var capped []string
	for _, s := range sites {
		if s.MaxConcurrency > 0 {
			l[s.Name] = &siteLoad{cap: s.MaxConcurrency}
			capped = append(capped, s.Name)
		}
	}
	var counts []struct {
		Site string
		N    int
	}
	err := tx.Table("attempts a").Joins("JOIN task_sites ts ON ts.task_id = a.task_id").Joins("JOIN runs r ON r.id = a.run_id").
		Where("(a.status = ? OR (a.status = ? AND a.queued = ?)) AND ts.site IN ? AND r.version_id IN (SELECT id FROM benchmark_versions WHERE benchmark_id = ?)",
			models.AttemptRunning, models.AttemptPending, true, capped, benchmark).
		Group("ts.site").Select("ts.site AS site, COUNT(*) AS n").Scan(&counts).Error
	if err != nil {
		return nil, wrap(err, "site load")
	}
	for _, c := range counts {
		l[c.Site].load = c.N
	}
	loads[benchmark] = l
	return l, nil
}
