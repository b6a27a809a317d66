package service_test

import (
	"context"
	"database/sql"
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
		type outcome struct {
			code  string
			check func(t *testing.T, got any)
		}
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
		type actors struct{ anon, member, other, admin, blind outcome }
		ops := []struct {
			name string
			call func(ctx context.Context) (any, error)
			want actors
		}{
			{"ListRuns", func(ctx context.Context) (any, error) {
				list, _, err := f.runs.ListRuns(ctx, models.RunFilter{Page: 1, PerPage: 50})
				return list, err
			}, actors{listedBlind(false), listedBlind(false), listedBlind(false), listedBlind(false), listedBlind(true)}},
			{"TeamRuns", func(ctx context.Context) (any, error) {
				list, err := f.runs.TeamRuns(ctx, "lab", 1, 50)
				if err != nil {
					return nil, err
				}
				return list.Runs, nil
			}, actors{listedBlind(false), listedBlind(false), listedBlind(false), listedBlind(false), listedBlind(true)}},
			{"RunProgress", func(ctx context.Context) (any, error) { return f.runs.RunProgress(ctx, f.a.ID) },
				actors{progressBlind(false), progressBlind(false), progressBlind(false), progressBlind(false), progressBlind(true)}},
			{"RunOverview", func(ctx context.Context) (any, error) {
				return f.runs.RunOverview(ctx, f.a.ID, models.AttemptFilter{Page: 1, PerPage: 10})
			}, actors{overviewBlind(false), overviewBlind(false), overviewBlind(false), overviewBlind(false), overviewBlind(true)}},
			{"RunAttempts", func(ctx context.Context) (any, error) {
				list, _, err := f.runs.RunAttempts(ctx, f.a.ID, 1, 10)
				return list, err
			}, actors{ok, ok, ok, ok, forbidden}},
			{"RunResults", func(ctx context.Context) (any, error) {
				var n int
				err := f.runs.RunResults(ctx, f.a.ID, func(rows []models.RunResult) error { n += len(rows); return nil })
				return n, err
			}, actors{ok, ok, ok, ok, forbidden}},
			{"RunMetrics", func(ctx context.Context) (any, error) { return f.runs.RunMetrics(ctx, f.a.ID) },
				actors{ok, ok, ok, ok, forbidden}},
			{"AttemptTimeline", func(ctx context.Context) (any, error) { return f.runs.AttemptTimeline(ctx, f.attempt) },
				actors{ok, ok, ok, ok, forbidden}},
			{"AttemptSteps", func(ctx context.Context) (any, error) { return f.runs.AttemptSteps(ctx, f.attempt) },
				actors{ok, ok, ok, ok, forbidden}},
			{"AttemptExpectedAnswer", func(ctx context.Context) (any, error) { return f.runs.AttemptExpectedAnswer(ctx, f.attempt) },
				actors{unauthorized, forbidden, forbidden, ok, forbidden}},
			{"CompareRuns", func(ctx context.Context) (any, error) { return f.runs.CompareRuns(ctx, []int64{f.b.ID, f.a.ID}) },
				actors{ok, ok, ok, ok, forbidden}},
			{"RunFormOptions", func(ctx context.Context) (any, error) { return f.runs.RunFormOptions(ctx, "lab") },
				actors{unauthorized, ok, forbidden, ok, forbidden}},
			{"QueueRun", func(ctx context.Context) (any, error) {
				return f.runs.QueueRun(ctx, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
			}, actors{unauthorized, ok, forbidden, ok, forbidden}},
			{"RerunRun", func(ctx context.Context) (any, error) { return f.runs.RerunRun(ctx, f.b.ID) },
				actors{unauthorized, ok, forbidden, ok, forbidden}},
			{"RetryAttempts", func(ctx context.Context) (any, error) { return f.runs.RetryAttempts(ctx, f.b.ID) },
				actors{unauthorized, ok, forbidden, ok, forbidden}},
			{"Rescore", func(ctx context.Context) (any, error) {
				return f.runs.Rescore(ctx, models.RescoreScope{RunID: f.b.ID})
			}, actors{unauthorized, forbidden, forbidden, ok, forbidden}},
			{"CancelRun", func(ctx context.Context) (any, error) {
				run, err := f.runs.QueueRun(f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
				require.NoError(t, err)
				require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
				return nil, f.runs.CancelRun(ctx, run.ID)
			}, actors{unauthorized, ok, forbidden, ok, forbidden}},
		}
		for _, op := range ops {
			for _, who := range []struct {
				name string
				ctx  context.Context
				want outcome
			}{
				{"anonymous", f.anon, op.want.anon},
				{"blind annotator", f.annotator, op.want.blind},
				{"other team", f.other, op.want.other},
				{"member", f.member, op.want.member},
				{"admin", f.admin, op.want.admin},
			} {
				got, err := op.call(who.ctx)
				require.Equal(t, who.want.code, models.ErrorCode(err), "%s as %s: %v", op.name, who.name, err)
				if who.want.code == models.EFORBIDDEN && who.name == "blind annotator" && op.name != "QueueRun" &&
					op.name != "RerunRun" && op.name != "RetryAttempts" && op.name != "Rescore" && op.name != "CancelRun" &&
					op.name != "RunFormOptions" && op.name != "AttemptExpectedAnswer" {
					require.Contains(t, []string{service.BlindRunMessage, service.BlindAttemptMessage}, models.ErrorMessage(err),
						"%s refuses with the blind-study reason", op.name)
				}
				if err == nil && who.want.check != nil {
					who.want.check(t, got)
				}
			}
		}
	})
}
