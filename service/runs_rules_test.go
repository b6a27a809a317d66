package service_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestRuns_TeamMemberRule shows who acts for a run's team (its members,
// administrators and the system) with each kind of caller, on every run
// action the rule guards, with the refusals' codes and messages. Storage
// only tells whether the caller's scope acts for the team.
func TestRuns_TeamMemberRule(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAuthzFixture(t, db)
		published := func() int64 {
			run, err := f.runs.QueueRun(f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
			require.NoError(t, err)
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
			return run.ID
		}
		actions := map[string]func(ctx context.Context) error{
			"CancelRun": func(ctx context.Context) error { return f.runs.CancelRun(ctx, published()) },
			"RetryAttempts": func(ctx context.Context) error {
				_, err := f.runs.RetryAttempts(ctx, f.b.ID)
				return err
			},
			"RunFormOptions": func(ctx context.Context) error {
				_, err := f.runs.RunFormOptions(ctx, "lab")
				return err
			},
		}
		for name, act := range actions {
			err := act(f.anon)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err), "%s as anonymous", name)
			require.Equal(t, "You must be signed in.", models.ErrorMessage(err))
			err = act(f.other)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "%s as another team", name)
			require.Equal(t, "Only members of this team may do this.", models.ErrorMessage(err))
			for who, ctx := range map[string]context.Context{"member": f.member, "admin": f.admin, "system": f.system} {
				require.NoError(t, act(ctx), "%s as %s", name, who)
			}
		}
		t.Run("PrivateRun", func(t *testing.T) {
			id := published()
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", id).Update("published", false).Error)
			for _, ctx := range []context.Context{f.anon, f.other} {
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(f.runs.CancelRun(ctx, id)), "a run not seen is not found first")
			}
		})
	})
}

// TestRuns_ExpectedAnswerRule shows that an attempt's expected answer,
// which reads its task's hidden fields, is for administrators and the
// system only, with each kind of caller (it was storage's check).
func TestRuns_ExpectedAnswerRule(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAuthzFixture(t, db)
		var attempt int64
		require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", f.b.ID).Order("id").Limit(1).Pluck("id", &attempt).Error)
		for name, tc := range map[string]struct {
			ctx       context.Context
			code, msg string
		}{
			"anonymous": {f.anon, models.EUNAUTHORIZED, "You must be signed in."},
			"member":    {f.member, models.EFORBIDDEN, "Only administrators may do this."},
			"outsider":  {f.other, models.EFORBIDDEN, "Only administrators may do this."},
			"admin":     {f.admin, "", ""},
			"system":    {f.system, "", ""},
		} {
			_, err := f.runs.AttemptExpectedAnswer(tc.ctx, attempt)
			require.Equal(t, tc.code, models.ErrorCode(err), name)
			if tc.code != "" {
				require.Equal(t, tc.msg, models.ErrorMessage(err), name)
			}
		}
		_, err := f.runs.AttemptExpectedAnswer(f.member, 999999)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), "the rule comes before the lookup")
		_, err = f.runs.AttemptExpectedAnswer(f.admin, 999999)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
	})
}
