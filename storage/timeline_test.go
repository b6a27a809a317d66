package storage_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

func itoa(n int) string { return strconv.Itoa(n) }

// TestStore_AttemptSteps: the steps of an attempt, in order, for whoever may
// see its run; the task without its hidden fields.
func TestStore_AttemptSteps(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.dispatch(t, f.run.ID)
		status, spec, err := db.ClaimAttempt(f.system, ids[0], storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		for i := 2; i >= 0; i-- { // saved out of order: read back in order
			require.NoError(t, db.RecordStep(f.system, &models.Step{AttemptID: ids[0], Index: i, AXTreeKey: "ax" + itoa(i), Action: `{"type":"stop"}`}, 1))
		}
		require.NoError(t, db.FinishEpisode(f.system, ids[0], spec.Try, models.EpisodeOutcome{Steps: 3, HARKey: "runs/x/network.har"},
			func(context.Context, *sql.Tx) error { return nil }, nil))

		for name, tc := range map[string]struct {
			ctx  context.Context
			code string
		}{
			"member": {f.member, ""}, "admin": {f.admin, ""}, "outsider": {f.outsider, models.ENOTFOUND}, "anonymous": {f.anon, models.ENOTFOUND},
		} {
			as, err := db.AttemptSteps(tc.ctx, runScope(tc.ctx), ids[0])
			require.Equal(t, tc.code, models.ErrorCode(err), "%s: %v", name, err)
			if tc.code != "" {
				require.Nil(t, as)
				continue
			}
			require.Equal(t, ids[0], as.Attempt.ID)
			require.Equal(t, "runs/x/network.har", as.Attempt.HARKey)
			require.Equal(t, "t1", as.Task.ExternalID)
			require.Empty(t, as.Task.EvalSpec+as.Task.ReferenceAnswers+as.Task.ReferenceActions)
			require.Len(t, as.Steps, 3)
			for i, s := range as.Steps {
				require.Equal(t, i, s.Index)
				require.Equal(t, "ax"+itoa(i), s.AXTreeKey)
			}
		}
		_, err = db.AttemptSteps(f.member, runScope(f.member), 999999)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

		f.publish(t, f.run.ID, true)
		as, err := db.AttemptSteps(f.anon, runScope(f.anon), ids[0])
		require.NoError(t, err, "a published run's attempts are public")
		require.Len(t, as.Steps, 3)
	})
}

// TestStore_AttemptExpectedAnswer: the task's expected answer, read from its
// hidden fields, for administrators only.
func TestStore_AttemptExpectedAnswer(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		f.publish(t, f.run.ID, true)
		ids := f.dispatch(t, f.run.ID)

		exp, err := db.AttemptExpectedAnswer(f.admin, ids[0])
		require.NoError(t, err)
		require.Equal(t, "reference answers", exp.Source)
		require.JSONEq(t, `{"must_include": ["SECRET-ANSWER-42"]}`, exp.JSON)
		require.NotContains(t, exp.JSON, "SECRET-SKU-7")

		exp, err = db.AttemptExpectedAnswer(f.admin, ids[1])
		require.NoError(t, err)
		require.Nil(t, exp, "t2 states no answer")

		// Who may ask (administrators only) is the service's rule:
		// service.TestRuns_ExpectedAnswerRule.
		_, err = db.AttemptExpectedAnswer(f.admin, 999999)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
	})
}
