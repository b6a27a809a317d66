package storage_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStore_WorkerLeases: a running attempt belongs to its worker while the
// worker's lease is renewed; releasing a dead worker hands its attempts back
// in one transaction with its jobs, after which another worker's new try
// starts clean, the dead try can write no step, and its artifacts wait for
// housekeeping.
func TestStore_WorkerLeases(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRunFixture(t, db)
		run, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Parallelism: 4}, 0)
		require.NoError(t, err)
		require.NoError(t, db.DispatchRun(f.system, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
		ids := episodes0(t, db, run.ID)

		a := models.Claimant{Lease: models.WorkerLease{ID: "host-a-1-aa", Host: "host-a", PID: 1}, TTL: time.Minute}
		b := models.Claimant{Lease: models.WorkerLease{ID: "host-b-1-bb", Host: "host-b", PID: 1}, TTL: time.Minute}
		require.NoError(t, db.RegisterLease(f.system, a.Lease))
		require.NoError(t, db.RegisterLease(f.system, b.Lease))

		status, spec, err := db.ClaimAttempt(f.system, ids[0], a)
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.Equal(t, 1, spec.Try)
		require.NoError(t, db.RecordStep(f.system, &models.Step{AttemptID: ids[0], Index: 0, URL: "http://x"}, 1))

		status, _, err = db.ClaimAttempt(f.system, ids[0], b)
		require.NoError(t, err)
		require.Equal(t, models.ClaimHeld, status, "the attempt's holder renews its lease: it is not taken over")

		// A release judged on a lapse the holder has since renewed does nothing.
		long := time.Now().UTC().Add(-time.Hour)
		called := false
		_, ok, err := db.ReleaseWorker(f.system, models.DeadWorker{ID: a.Lease.ID, LapsedBefore: &long},
			func(context.Context, *sql.Tx) error { called = true; return nil })
		require.NoError(t, err)
		require.False(t, ok)
		require.False(t, called)

		_, _, err = db.ReleaseWorker(f.member, models.DeadWorker{ID: a.Lease.ID}, nil)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "only the queue releases workers")

		// A failing re-offer leaves everything as it was.
		_, _, err = db.ReleaseWorker(f.system, models.DeadWorker{ID: a.Lease.ID},
			func(context.Context, *sql.Tx) error { return fmt.Errorf("the queue is unreachable") })
		require.ErrorContains(t, err, "the queue is unreachable")
		require.Equal(t, models.AttemptRunning, attemptOf(t, db, ids[0]).Status)

		lapsed := time.Now().UTC().Add(time.Second)
		released, ok, err := db.ReleaseWorker(f.system, models.DeadWorker{ID: a.Lease.ID, LapsedBefore: &lapsed},
			func(_ context.Context, tx *sql.Tx) error {
				require.NotNil(t, tx, "jobs are offered again inside the release's transaction")
				called = true
				return nil
			})
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, called)
		require.Equal(t, []int64{ids[0]}, released)
		got := attemptOf(t, db, ids[0])
		require.Equal(t, models.AttemptPending, got.Status)
		require.Empty(t, got.WorkerID)
		leases, err := db.Leases(f.system)
		require.NoError(t, err)
		require.Len(t, leases, 1, "the dead worker's lease is gone")
		require.Equal(t, b.Lease.ID, leases[0].ID)

		status, spec, err = db.ClaimAttempt(f.system, ids[0], b)
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.Equal(t, 2, spec.Try)
		require.Equal(t, b.Lease.ID, attemptOf(t, db, ids[0]).WorkerID)
		require.ErrorIs(t, db.RecordStep(f.system, &models.Step{AttemptID: ids[0], Index: 1, URL: "http://late"}, 1), models.ErrTrySuperseded,
			"the dead worker's try, still running somewhere, writes no step")
		require.NoError(t, db.RecordStep(f.system, &models.Step{AttemptID: ids[0], Index: 0, URL: "http://y"}, 2))
		var urls []string
		require.NoError(t, db.Gorm().Model(&models.Step{}).Where("attempt_id = ?", ids[0]).Pluck("url", &urls).Error)
		require.Equal(t, []string{"http://y"}, urls, "the new try starts clean")

		tries, err := db.SupersededTries(f.system, time.Now().UTC().Add(time.Second), 10)
		require.NoError(t, err)
		require.Len(t, tries, 1)
		require.Equal(t, storage.TryPrefix(run.ID, ids[0], 1)+"/", tries[0].Prefix)
		require.NoError(t, db.ForgetSupersededTry(f.system, tries[0].ID))
		tries, err = db.SupersededTries(f.system, time.Now().UTC().Add(time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, tries)

		// A worker whose lease was released while it lived registers again
		// as it claims; one that holds attempts without any lease is an orphan.
		require.NoError(t, db.DropLease(f.system, b.Lease.ID))
		orphans, err := db.OrphanHolders(f.system)
		require.NoError(t, err)
		require.Equal(t, []string{b.Lease.ID}, orphans)
		status, _, err = db.ClaimAttempt(f.system, ids[1], b)
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		orphans, err = db.OrphanHolders(f.system)
		require.NoError(t, err)
		require.Empty(t, orphans, "claiming registered the lease again")
		_, ok, err = db.ReleaseWorker(f.system, models.DeadWorker{ID: b.Lease.ID, Orphan: true},
			func(context.Context, *sql.Tx) error {
				t.Fatal("a registered holder's jobs are not offered again")
				return nil
			})
		require.NoError(t, err)
		require.False(t, ok, "a holder found without a lease that has one now is alive")
		require.Equal(t, models.AttemptRunning, attemptOf(t, db, ids[1]).Status)
		renewed, err := db.RenewLease(f.system, b.Lease.ID)
		require.NoError(t, err)
		require.True(t, renewed)
		renewed, err = db.RenewLease(f.system, a.Lease.ID)
		require.NoError(t, err)
		require.False(t, renewed, "a released lease is not renewed")
	})
}

func attemptOf(t *testing.T, db *storage.DB, id int64) models.Attempt {
	t.Helper()
	var a models.Attempt
	require.NoError(t, db.Gorm().First(&a, id).Error)
	return a
}
