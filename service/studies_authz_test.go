package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
	"proctor/models"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// studyJobs records the judging the study service queues.
type studyJobs struct{ queued [][]string }

func (j *studyJobs) JudgeStudy(_ context.Context, _ int64, judges []string) error {
	j.queued = append(j.queued, judges)
	return nil
}

func (j *studyJobs) JudgeAvailable() error { return nil }

// studiesAuthzFixture adds to authzFixture finished attempts in runs a and
// b, the study service, and a teammate of the member whom the member may
// invite. The member owns the studies made by study; the blind annotator
// (who also annotates run a in the administrator's blind study) is invited to
// them.
type studiesAuthzFixture struct {
	*authzFixture
	studies  *service.Studies
	jobs     *studyJobs
	teammate string // email
}

func newStudiesAuthzFixture(t *testing.T, db *storage.DB) *studiesAuthzFixture {
	t.Helper()
	f := &studiesAuthzFixture{authzFixture: newAuthzFixture(t, db), jobs: &studyJobs{}}
	f.studies = service.NewStudies(db, f.jobs)
	for _, r := range []*models.Run{f.a, f.b} {
		require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", r.ID).
			Updates(map[string]any{"status": models.AttemptDone, "outcome": models.OutcomeSuccess}).Error)
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", r.ID).Update("status", models.RunCompleted).Error)
	}
	mate, _ := f.user(t, "teammate@runs.test", false)
	var lab models.Team
	require.NoError(t, db.Gorm().Where("slug = ?", "lab").First(&lab).Error)
	require.NoError(t, db.Gorm().Create(&models.Membership{TeamID: lab.ID, UserID: mate.ID, Role: models.RoleMember, CreatedAt: time.Now().UTC()}).Error)
	f.teammate = mate.Email
	return f
}

// request is a blind study of the member's over runs a and b with one judge.
func (f *studiesAuthzFixture) request() models.StudyRequest {
	return models.StudyRequest{Name: "Authz", RunIDs: []int64{f.a.ID, f.b.ID}, Sampling: models.SampleRandom, Seed: 3,
		SampleSize: 4, Blind: true, Labels: []string{models.StudyLabelSuccess},
		Judges: []models.StudyJudge{{Name: "judge", Prompt: models.StudyPromptLabelsV1}}}
}

// study is a fresh study of the member's with the blind annotator invited,
// opened when open is set, with a verdict on every item.
func (f *studiesAuthzFixture) study(t *testing.T, open bool) (*models.Study, []models.StudyItem) {
	t.Helper()
	st, err := f.studies.CreateStudy(f.member, f.request())
	require.NoError(t, err)
	require.NoError(t, f.studies.InviteAnnotator(f.admin, st.ID, "annotator@runs.test"))
	var items []models.StudyItem
	require.NoError(t, f.db.Gorm().Where("study_id = ?", st.ID).Order("position").Find(&items).Error)
	for _, it := range items {
		require.NoError(t, f.db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: it.ID, Judge: "judge",
			Labels: models.StudyLabels{models.StudyLabelSuccess: "Successful"}}, service.CanonicalVerdictLabels))
	}
	if open {
		require.NoError(t, f.studies.OpenStudy(f.member, st.ID))
	}
	return st, items
}

// importRows are rows matching every item of a study, from one annotator
// or judge named who.
func (f *studiesAuthzFixture) importRows(t *testing.T, studyID int64, who string) []models.StudyImportRow {
	t.Helper()
	d, err := f.studies.StudyData(f.admin, studyID)
	require.NoError(t, err)
	keys := agreement.StudyKeys(d.Items)
	var rows []models.StudyImportRow
	for i, it := range d.Items {
		k := keys[it.ItemID]
		rows = append(rows, models.StudyImportRow{Benchmark: k.Benchmark, Model: k.Model, TaskID: k.TaskID, Who: who,
			Labels: models.StudyLabels{models.StudyLabelSuccess: "Unsuccessful"}, Line: i + 1})
	}
	return rows
}

// assigned is the item of a study assigned to the blind annotator.
func (f *studiesAuthzFixture) assigned(t *testing.T, studyID int64) int64 {
	t.Helper()
	q, err := f.studies.StudyQueue(f.annotator, studyID)
	require.NoError(t, err)
	require.NotEmpty(t, q.Entries)
	return q.Entries[0].ItemID
}

// TestStudies_Authorization drives every read and write of the study
// service as an anonymous visitor, the member who owns the study, a member
// of another team, an administrator and the blind annotator (invited to the
// study, which is blind, and annotating run a in another blind study). A
// code is the error the caller gets ("" for none); check, when set, looks at
// what an allowed caller was shown.
func TestStudies_Authorization(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudiesAuthzFixture(t, db)
		ok := outcome{}
		unauthorized := outcome{code: models.EUNAUTHORIZED}
		notFound := outcome{code: models.ENOTFOUND}
		forbidden := outcome{code: models.EFORBIDDEN}
		shown := func(check func(t *testing.T, got any)) outcome { return outcome{check: check} }
		// One study read by the read operations, and its annotator's item.
		read, _ := f.study(t, true)
		item := f.assigned(t, read.ID)
		listed := func(role string) outcome {
			return shown(func(t *testing.T, got any) {
				for _, s := range got.([]models.StudyListItem) {
					if s.ID == read.ID {
						require.Equal(t, role, s.Role)
						return
					}
				}
				require.Empty(t, role, "the study is not listed")
			})
		}
		overview := func(manage bool) outcome {
			return shown(func(t *testing.T, got any) {
				v := got.(*models.StudyView)
				require.Equal(t, manage, v.CanManage)
				if !manage {
					require.Empty(t, v.Annotators, "annotators see their own progress only")
					require.Empty(t, v.Judges, "nor the judges' work")
				}
			})
		}
		itemShown := func(revealed bool) outcome {
			return shown(func(t *testing.T, got any) {
				v := got.(*models.StudyItemView)
				if !revealed {
					require.Nil(t, v.Reveal, "a blind study's annotator sees no verdict or other label")
					require.Empty(t, v.Timeline.Attempt.Outcome, "nor the attempt's outcome")
					require.Nil(t, v.Timeline.Evaluation)
					require.Zero(t, v.Timeline.Run.Successes)
					return
				}
				require.NotNil(t, v.Reveal)
				require.NotEmpty(t, v.Reveal.Verdicts)
			})
		}
		ops := []authzOp{
			{"CreateStudy", func(ctx context.Context) (any, error) { return f.studies.CreateStudy(ctx, f.request()) },
				// A blind annotator must not sample (and so own) the runs kept from them.
				callerOutcomes{unauthorized, ok, ok, ok, forbidden}},
			{"Studies", func(ctx context.Context) (any, error) { return f.studies.Studies(ctx) },
				callerOutcomes{unauthorized, listed(models.StudyRoleOwner), listed(""), listed(models.StudyRoleAdmin), listed(models.StudyRoleAnnotator)}},
			{"StudyOverview", func(ctx context.Context) (any, error) { return f.studies.StudyOverview(ctx, read.ID) },
				callerOutcomes{unauthorized, overview(true), notFound, overview(true), overview(false)}},
			{"InviteAnnotator", func(ctx context.Context) (any, error) {
				st, _ := f.study(t, false)
				return nil, f.studies.InviteAnnotator(ctx, st.ID, f.teammate)
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"RemoveAnnotator", func(ctx context.Context) (any, error) {
				st, _ := f.study(t, false)
				return nil, f.studies.RemoveAnnotator(ctx, st.ID, models.ActorFrom(f.annotator).UserID)
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"SetStudyJudges", func(ctx context.Context) (any, error) {
				st, _ := f.study(t, false)
				return nil, f.studies.SetStudyJudges(ctx, st.ID, []models.StudyJudge{{Name: "other", Prompt: models.StudyPromptLabelsV1}})
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"OpenStudy", func(ctx context.Context) (any, error) {
				st, _ := f.study(t, false)
				return nil, f.studies.OpenStudy(ctx, st.ID)
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"CloseStudy", func(ctx context.Context) (any, error) {
				st, _ := f.study(t, true)
				return nil, f.studies.CloseStudy(ctx, st.ID)
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"StudyQueue", func(ctx context.Context) (any, error) { return f.studies.StudyQueue(ctx, read.ID) },
				callerOutcomes{unauthorized, ok, notFound, ok, ok}},
			{"StudyItem", func(ctx context.Context) (any, error) { return f.studies.StudyItem(ctx, read.ID, item) },
				callerOutcomes{unauthorized, itemShown(true), notFound, itemShown(true), itemShown(false)}},
			{"SaveStudyLabels", func(ctx context.Context) (any, error) {
				return f.studies.SaveStudyLabels(ctx, read.ID, item, models.StudyLabelInput{Action: models.LabelActionSave,
					Labels: map[string]string{models.StudyLabelSuccess: "Successful"}})
			}, callerOutcomes{unauthorized, forbidden, notFound, forbidden, ok}},
			{"StudyVerdicts", func(ctx context.Context) (any, error) { return f.studies.StudyVerdicts(ctx, read.ID) },
				callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"StudyData", func(ctx context.Context) (any, error) { return f.studies.StudyData(ctx, read.ID) },
				callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"StudyReport", func(ctx context.Context) (any, error) {
				_, r, err := f.studies.StudyReport(ctx, read.ID, []string{})
				return r, err
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"StudyDisagreements", func(ctx context.Context) (any, error) {
				_, r, err := f.studies.StudyDisagreements(ctx, read.ID)
				return r, err
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"ImportStudyLabels", func(ctx context.Context) (any, error) {
				return f.studies.ImportStudyLabels(ctx, read.ID, f.importRows(t, read.ID, "imported person"))
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"ImportStudyVerdicts", func(ctx context.Context) (any, error) {
				return f.studies.ImportStudyVerdicts(ctx, read.ID, f.importRows(t, read.ID, "imported judge"))
			}, callerOutcomes{unauthorized, ok, notFound, ok, forbidden}},
			{"QueueStudyJudges", func(ctx context.Context) (any, error) { return nil, f.studies.QueueStudyJudges(ctx, read.ID, nil) },
				// Judging spends the operator's money: administrators only.
				callerOutcomes{unauthorized, forbidden, notFound, ok, forbidden}},
		}
		checkAuthzTable(t, ops, tableCallers{anon: f.anon, member: f.member, other: f.other, admin: f.admin, blind: f.annotator}, nil)
		require.Len(t, f.jobs.queued, 1, "only the administrator's judging was queued")
	})
}
