package storage_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// offers records the episodes queued through it, by attempt.
type offers struct{ ids []int64 }

func (o *offers) offer(_ context.Context, _ *sql.Tx, _ *models.Run, ids []int64) error {
	o.ids = append(o.ids, ids...)
	return nil
}

// take returns the episodes queued since the last call.
func (o *offers) take() []int64 {
	ids := o.ids
	o.ids = nil
	return ids
}

// attemptsByTask maps a run's tasks' external ids to its attempts.
func attemptsByTask(t *testing.T, db *storage.DB, runID int64) map[string]int64 {
	t.Helper()
	var rows []struct {
		ID         int64
		ExternalID string
	}
	require.NoError(t, db.Gorm().Table("attempts a").Select("a.id, t.external_id").Joins("JOIN tasks t ON t.id = a.task_id").
		Where("a.run_id = ?", runID).Scan(&rows).Error)
	out := map[string]int64{}
	for _, r := range rows {
		out[r.ExternalID] = r.ID
	}
	return out
}

// TestStore_EpisodeOffers: a run's episodes are queued as its parallelism
// allows, the next one as an episode ends, each attempt once; a claim that
// must wait gives its attempt up, and it is queued again when room frees.
func TestStore_EpisodeOffers(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRunFixture(t, db)
		run, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Parallelism: 2}, 0)
		require.NoError(t, err)
		ids := func() []int64 { return episodes0(t, db, run.ID) }
		o := &offers{}
		require.NoError(t, db.DispatchRun(f.system, run.ID, o.offer))
		a := ids()
		require.Equal(t, a[:2], o.take(), "the first two, as parallelism 2 allows")
		require.NoError(t, db.OfferEpisodes(f.system, o.offer))
		require.Empty(t, o.take(), "no room: both are queued")
		require.Error(t, db.OfferEpisodes(f.member, o.offer), "only the queue offers episodes")

		claim := func(id int64) (string, int) {
			status, spec, err := db.ClaimAttempt(f.system, id, storagetest.Claimant(time.Hour))
			require.NoError(t, err)
			if spec == nil {
				return status, 0
			}
			return status, spec.Try
		}
		status, try0 := claim(a[0])
		require.Equal(t, models.ClaimOK, status)
		status, _ = claim(a[1])
		require.Equal(t, models.ClaimOK, status)
		require.NoError(t, db.OfferEpisodes(f.system, o.offer))
		require.Empty(t, o.take(), "no room: both run")

		// A claim of a waiting attempt (an extra job) must wait: it is no
		// longer queued, and is offered when room frees.
		status, _ = claim(a[3])
		require.Equal(t, models.ClaimWait, status)

		noEval := func(context.Context, *sql.Tx) error { return nil }
		require.NoError(t, db.FinishEpisode(f.system, a[0], try0, models.EpisodeOutcome{Steps: 1}, noEval, o.offer))
		require.Equal(t, []int64{a[2]}, o.take(), "the episode that ended queues the next")
		require.NoError(t, db.FinishEpisode(f.system, a[0], try0, models.EpisodeOutcome{Steps: 1}, noEval, o.offer))
		require.Empty(t, o.take(), "a duplicate finish queues nothing more")

		// An episode handed back (environment retry, shutdown) stays queued.
		status, try1 := claim(a[2])
		require.Equal(t, models.ClaimOK, status)
		require.NoError(t, db.ReleaseAttempt(f.system, a[2], try1))
		require.NoError(t, db.OfferEpisodes(f.system, o.offer))
		require.Empty(t, o.take(), "the released attempt's job runs it again")
		status, try1 = claim(a[2])
		require.Equal(t, models.ClaimOK, status)

		// Another ends: the attempt whose claim waited is queued once.
		require.NoError(t, db.FinishEpisode(f.system, a[2], try1, models.EpisodeOutcome{Steps: 1}, noEval, o.offer))
		require.Equal(t, []int64{a[3]}, o.take(), "the attempt whose claim waited is queued again")
		status, _ = claim(a[3])
		require.Equal(t, models.ClaimOK, status)
	})
}

// TestStore_EpisodeOffersHonourSiteCaps: episodes are queued only while
// their capped sites have room, across runs; the episode that frees a site
// queues the waiting attempt of the oldest run first.
func TestStore_EpisodeOffersHonourSiteCaps(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newRunFixture(t, db)
		_, err := db.UpdateSite(f.system, "mini", "gitlab", "http://gitlab.test", "", 1)
		require.NoError(t, err)
		req := models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Parallelism: 4}
		run1, err := f.queue(t, f.member, req, 0)
		require.NoError(t, err)
		run2, err := f.queue(t, f.member, req, 0)
		require.NoError(t, err)
		o := &offers{}
		require.NoError(t, db.DispatchRun(f.system, run1.ID, o.offer))
		a1 := attemptsByTask(t, db, run1.ID)
		require.ElementsMatch(t, []int64{a1["t1"], a1["t2"], a1["t4"]}, o.take(), "t3 also uses gitlab, whose one place t2 takes")
		require.NoError(t, db.DispatchRun(f.system, run2.ID, o.offer))
		a2 := attemptsByTask(t, db, run2.ID)
		require.ElementsMatch(t, []int64{a2["t1"], a2["t4"]}, o.take(), "the cap holds across runs")

		status, spec, err := db.ClaimAttempt(f.system, a1["t2"], storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.NoError(t, db.FinishEpisode(f.system, a1["t2"], spec.Try, models.EpisodeOutcome{Steps: 1},
			func(context.Context, *sql.Tx) error { return nil }, o.offer))
		require.Equal(t, []int64{a1["t3"]}, o.take(), "gitlab's place goes to the oldest run's waiting attempt, once")
	})
}
