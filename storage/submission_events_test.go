package storage_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStore_SubmissionEvents: a submission's audit trail says who did what
// and when, folds a run of parts into one line, shows client addresses to
// administrators only, and is hidden from everyone who may not see the
// submission.
func TestStore_SubmissionEvents(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)
		member := models.WithActor(f.member, func() models.Actor { a := models.ActorFrom(f.member); a.IP = "192.0.2.7"; return a }())
		s := f.create(t, member, f.request(nil))
		require.NoError(t, db.SetSubmissionUpload(f.system, s.ID, "upload-1"))
		for n := 1; n <= 3; n++ {
			require.NoError(t, db.RecordSubmissionPart(member, s.ID, models.SubmissionPart{Number: n, Size: 5 << 20, MD5: "00"}))
		}
		_, err := db.DiscardSubmission(member, s.ID)
		require.NoError(t, err)

		events, err := db.SubmissionEvents(f.member, s.ID)
		require.NoError(t, err)
		require.Len(t, events, 3)
		require.Equal(t, "submission.create", events[0].Action)
		require.Contains(t, events[0].Details, "results.zip for lab/uploader on mini")
		require.Equal(t, "submission.part", events[1].Action)
		require.Contains(t, events[1].Details, "3 parts, the last part 3:")
		require.Equal(t, "submission.discard", events[2].Action)
		for _, ev := range events {
			require.NotEmpty(t, ev.UserName)
			require.NotEqual(t, "Proctor", ev.UserName, "the member did all of it")
			require.Empty(t, ev.IP, "members do not see client addresses")
			require.False(t, ev.CreatedAt.IsZero())
		}

		events, err = db.SubmissionEvents(f.admin, s.ID)
		require.NoError(t, err)
		require.Equal(t, "192.0.2.7", events[0].IP)

		_, err = db.SubmissionEvents(f.outsider, s.ID)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		_, err = db.SubmissionEvents(f.anon, s.ID)
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
	})
}
