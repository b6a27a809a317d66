package service_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// authzFixture adds to fixture two published runs of team lab on the mini
// benchmark, with their attempts, and a blind annotator: a user of no team
// who annotates the first attempt of run a in an open blind study.
type authzFixture struct {
	*fixture
	runs      *service.Runs
	a, b      *models.Run
	attempt   int64 // in the blind study
	annotator context.Context
}

func newAuthzFixture(t *testing.T, db *storage.DB) *authzFixture {
	t.Helper()
	f := &authzFixture{fixture: newFixture(t, db)}
	f.runs, _ = f.fixture.runs(t, 0)
	noEpisodes := func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }
	for _, r := range []**models.Run{&f.a, &f.b} {
		run, err := f.runs.QueueRun(f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
		require.NoError(t, err)
		require.NoError(t, db.DispatchRun(f.system, run.ID, noEpisodes))
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
		*r = run
	}
	require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", f.a.ID).Order("id").Limit(1).Pluck("id", &f.attempt).Error)
	var annotator *models.User
	annotator, f.annotator = f.user(t, "annotator@runs.test", false)
	now := time.Now().UTC()
	study := &models.Study{OwnerID: f.adminID.ID, Name: "Blind", Status: models.StudyOpen, Blind: true,
		Sampling: models.SampleRandom, SampleSize: 1, ItemCount: 1, OverlapAnnotators: 1,
		CreatedAt: now, UpdatedAt: now, OpenedAt: &now}
	require.NoError(t, db.Gorm().Create(study).Error)
	item := &models.StudyItem{StudyID: study.ID, AttemptID: f.attempt, Position: 1}
	require.NoError(t, db.Gorm().Create(item).Error)
	require.NoError(t, db.Gorm().Create(&models.StudyAssignment{StudyID: study.ID, StudyItemID: item.ID, UserID: annotator.ID,
		Position: 1, Status: models.AssignmentPending, CreatedAt: now, UpdatedAt: now}).Error)
	return f
}

// TestRuns_Authorization drives every read and write of the run service as
// an anonymous visitor, a member of the run's team, a member of another
// team, an administrator and a blind annotator. A code is the error the
// caller gets ("" for none); check, when set, looks at what an allowed caller
// was shown.
func TestRuns_Authorization(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAuthzFixture(t, db)
		ok := outcome{}
		forbidden := outcome{code: models.EFORBIDDEN}
		unauthorized := outcome{code: models.EUNAUTHORIZED}
		shown := func(check func(t *testing.T, got any)) outcome { return outcome{check: check} }
		listedBlind := func(want bool) outcome {
			return shown(func(t *testing.T, got any) {
				for _, r := range got.([]models.RunListItem) {
					if r.ID == f.a.ID {
						require.Equal(t, want, r.Blind, "run a's results withheld")
						return
					}
				}
				t.Fatal("run a is not listed")
			})
		}
		progressBlind := func(want bool) outcome {
			return shown(func(t *testing.T, got any) { require.Equal(t, want, got.(*models.RunProgress).Blind) })
		}
		overviewBlind := func(want bool) outcome {
			return shown(func(t *testing.T, got any) {
				o := got.(*models.RunOverview)
				require.Equal(t, want, o.AttemptsBlind)
				require.Equal(t, want, o.Page.Progress.Blind)
				if want {
					require.Empty(t, o.Page.Attempts)
				} else {
					require.NotEmpty(t, o.Page.Attempts)
				}
			})
		}
		ops := []authzOp{
			{"ListRuns", func(ctx context.Context) (any, error) {
				list, _, err := f.runs.ListRuns(ctx, models.RunFilter{Page: 1, PerPage: 50})
				return list, err
			}, callerOutcomes{listedBlind(false), listedBlind(false), listedBlind(false), listedBlind(false), listedBlind(true)}},
			{"TeamRuns", func(ctx context.Context) (any, error) {
				list, err := f.runs.TeamRuns(ctx, "lab", 1, 50)
				if err != nil {
					return nil, err
				}
				return list.Runs, nil
			}, callerOutcomes{listedBlind(false), listedBlind(false), listedBlind(false), listedBlind(false), listedBlind(true)}},
			{"RunProgress", func(ctx context.Context) (any, error) { return f.runs.RunProgress(ctx, f.a.ID) },
				callerOutcomes{progressBlind(false), progressBlind(false), progressBlind(false), progressBlind(false), progressBlind(true)}},
			{"RunOverview", func(ctx context.Context) (any, error) {
				return f.runs.RunOverview(ctx, f.a.ID, models.AttemptFilter{Page: 1, PerPage: 10})
			}, callerOutcomes{overviewBlind(false), overviewBlind(false), overviewBlind(false), overviewBlind(false), overviewBlind(true)}},
			{"RunAttempts", func(ctx context.Context) (any, error) {
				list, _, err := f.runs.RunAttempts(ctx, f.a.ID, 1, 10)
				return list, err
			}, callerOutcomes{ok, ok, ok, ok, forbidden}},
			{"RunResults", func(ctx context.Context) (any, error) {
				var n int
				err := f.runs.RunResults(ctx, f.a.ID, func(rows []models.RunResult) error { n += len(rows); return nil })
				return n, err
			}, callerOutcomes{ok, ok, ok, ok, forbidden}},
			{"RunMetrics", func(ctx context.Context) (any, error) { return f.runs.RunMetrics(ctx, f.a.ID) },
				callerOutcomes{ok, ok, ok, ok, forbidden}},
			{"AttemptTimeline", func(ctx context.Context) (any, error) { return f.runs.AttemptTimeline(ctx, f.attempt) },
				callerOutcomes{ok, ok, ok, ok, forbidden}},
			{"AttemptSteps", func(ctx context.Context) (any, error) { return f.runs.AttemptSteps(ctx, f.attempt) },
				callerOutcomes{ok, ok, ok, ok, forbidden}},
			{"AttemptExpectedAnswer", func(ctx context.Context) (any, error) { return f.runs.AttemptExpectedAnswer(ctx, f.attempt) },
				callerOutcomes{unauthorized, forbidden, forbidden, ok, forbidden}},
			{"CompareRuns", func(ctx context.Context) (any, error) { return f.runs.CompareRuns(ctx, []int64{f.b.ID, f.a.ID}) },
				callerOutcomes{ok, ok, ok, ok, forbidden}},
			{"RunFormOptions", func(ctx context.Context) (any, error) { return f.runs.RunFormOptions(ctx, "lab") },
				callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"QueueRun", func(ctx context.Context) (any, error) {
				return f.runs.QueueRun(ctx, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"RerunRun", func(ctx context.Context) (any, error) { return f.runs.RerunRun(ctx, f.b.ID) },
				callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"RetryAttempts", func(ctx context.Context) (any, error) { return f.runs.RetryAttempts(ctx, f.b.ID) },
				callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"Rescore", func(ctx context.Context) (any, error) {
				return f.runs.Rescore(ctx, models.RescoreScope{RunID: f.b.ID})
			}, callerOutcomes{unauthorized, forbidden, forbidden, ok, forbidden}},
			{"CancelRun", func(ctx context.Context) (any, error) {
				run, err := f.runs.QueueRun(f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
				require.NoError(t, err)
				require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
				return nil, f.runs.CancelRun(ctx, run.ID)
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
		}
		// A read the blind rule refuses says why; a write refuses as it does
		// any caller outside the team.
		notBlindReads := []string{"QueueRun", "RerunRun", "RetryAttempts", "Rescore", "CancelRun", "RunFormOptions", "AttemptExpectedAnswer"}
		blindReason := func(t *testing.T, op, caller string, err error) {
			if caller == "blind annotator" && models.ErrorCode(err) == models.EFORBIDDEN && !slices.Contains(notBlindReads, op) {
				require.Contains(t, []string{service.BlindRunMessage, service.BlindAttemptMessage}, models.ErrorMessage(err),
					"%s refuses with the blind-study reason", op)
			}
		}
		checkAuthzTable(t, ops, tableCallers{anon: f.anon, member: f.member, other: f.other, admin: f.admin, blind: f.annotator}, blindReason)
	})
}
