package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// studyFixture is a read fixture whose lab team has three completed runs of
// the mini benchmark (two by walker, one by runner: 12 finished attempts,
// outcomes success, failure, error, success per run), three annotators who
// share the panel team (no runs) with the lab member, so the member may invite
// them, and a queued run with nothing finished.
type studyFixture struct {
	*readFixture
	runs     []*models.Run
	attempts [][]int64 // per run, in task order
	queued   *models.Run
	ann      []context.Context
	annUsers []*models.User
}

func newStudyFixture(t *testing.T, db *storage.DB) *studyFixture {
	t.Helper()
	f := &studyFixture{readFixture: newReadFixture(t, db)}
	require.NoError(t, servicetest.CreateAgent(db, f.member, "lab", &models.Agent{Name: "Runner", Kind: models.AgentReplay, Model: "model-r"}, nil))
	second, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"}, 0)
	require.NoError(t, err)
	third, err := f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "runner", BenchmarkSlug: "mini"}, 0)
	require.NoError(t, err)
	f.runs = []*models.Run{f.run, second, third}
	for _, r := range f.runs {
		f.attempts = append(f.attempts, f.complete(t, r.ID))
	}
	f.queued, err = f.queue(t, f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"}, 0)
	require.NoError(t, err)
	for _, email := range []string{"ann1@study.test", "ann2@study.test", "ann3@study.test"} {
		// Inserted directly: annotators never sign in here, and hashing
		// their passwords would slow every study test down.
		now := time.Now().UTC()
		u := &models.User{Email: email, Name: strings.Split(email, "@")[0], PasswordHash: "-", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Gorm().Create(u).Error)
		f.annUsers = append(f.annUsers, u)
		f.ann = append(f.ann, actorCtx(u))
	}
	f.team(t, "panel", models.ActorFrom(f.member).UserID, f.annUsers...)
	return f
}

// team inserts a team of an owner and members directly.
func (f *studyFixture) team(t *testing.T, slug string, ownerID int64, members ...*models.User) *models.Team {
	t.Helper()
	now := time.Now().UTC()
	team := &models.Team{Slug: slug, Name: slug, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.db.Gorm().Create(team).Error)
	require.NoError(t, f.db.Gorm().Create(&models.Membership{TeamID: team.ID, UserID: ownerID, Role: models.RoleOwner, CreatedAt: now}).Error)
	for _, u := range members {
		require.NoError(t, f.db.Gorm().Create(&models.Membership{TeamID: team.ID, UserID: u.ID, Role: models.RoleMember, CreatedAt: now}).Error)
	}
	return team
}

// request is a random study over the three runs asking for success and
// rubric labels, blind, inviting the first two annotators.
func (f *studyFixture) request(mod func(*models.StudyRequest)) models.StudyRequest {
	req := models.StudyRequest{
		Name: "Judge check", RunIDs: []int64{f.runs[0].ID, f.runs[1].ID, f.runs[2].ID}, Sampling: models.SampleRandom,
		Seed: 7, SampleSize: 8, Blind: true, Labels: []string{models.StudyLabelSuccess, models.StudyLabelRubric},
		Judges:     []models.StudyJudge{{Name: "gpt judge", Prompt: models.StudyPromptLabelsV1}},
		Annotators: []string{"ann1@study.test", "ANN2@study.test"},
	}
	if mod != nil {
		mod(&req)
	}
	return req
}

func (f *studyFixture) create(t *testing.T, mod func(*models.StudyRequest)) *models.Study {
	t.Helper()
	st, err := servicetest.Studies(f.db, nil).CreateStudy(f.member, f.request(mod))
	require.NoError(t, err)
	return st
}

// items lists a study's items in sample order.
func (f *studyFixture) items(t *testing.T, studyID int64) []models.StudyItem {
	t.Helper()
	var items []models.StudyItem
	require.NoError(t, f.db.Gorm().Where("study_id = ?", studyID).Order("position").Find(&items).Error)
	return items
}

func attemptIDs(items []models.StudyItem) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.AttemptID
	}
	return out
}

func requireCode(t *testing.T, code string, err error) {
	t.Helper()
	require.Equal(t, code, models.ErrorCode(err), "%v", err)
}

func requireField(t *testing.T, field, contains string, err error) {
	t.Helper()
	require.Equal(t, models.EINVALID, models.ErrorCode(err), "%v", err)
	require.Equal(t, field, models.ErrorField(err), "%v", err)
	require.Contains(t, models.ErrorMessage(err), contains)
}

func TestStore_StudyLifecycle(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st := f.create(t, nil)
		require.Equal(t, models.StudyDraft, st.Status)
		require.Equal(t, 8, st.ItemCount)
		require.Equal(t, 2, st.OverlapAnnotators, "0 means 2")
		require.Len(t, f.items(t, st.ID), 8)

		list, err := servicetest.Studies(db, nil).Studies(f.ann[0])
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, models.StudyRoleAnnotator, list[0].Role)
		require.Equal(t, "member", list[0].OwnerName)
		require.Equal(t, st.ID, list[0].ID)
		require.Equal(t, models.JSONStrings{models.StudyLabelSuccess, models.StudyLabelRubric}, list[0].Labels)

		view, err := servicetest.Studies(db, nil).StudyOverview(f.member, st.ID)
		require.NoError(t, err)
		require.True(t, view.CanManage)
		require.Len(t, view.Annotators, 2)
		require.Equal(t, "ann1", view.Annotators[0].Name)
		require.Len(t, view.Judges, 1)

		require.NoError(t, servicetest.Studies(db, nil).OpenStudy(f.member, st.ID))
		q, err := servicetest.Studies(db, nil).StudyQueue(f.ann[0], st.ID)
		require.NoError(t, err)
		require.Len(t, q.Entries, 4, "8 items, no overlap, two annotators")
		require.Equal(t, q.Entries[0].ItemID, q.Next)
		require.NotEmpty(t, q.Entries[0].TaskIntent)

		item, err := servicetest.Studies(db, nil).StudyItem(f.ann[0], st.ID, q.Next)
		require.NoError(t, err)
		require.Equal(t, 1, item.Position)
		require.Equal(t, 4, item.Total)
		require.NotNil(t, item.Assignment)
		require.Nil(t, item.Reveal)

		labels := map[string]string{models.StudyLabelSuccess: "Successful"}
		for _, ri := range item.RubricItems {
			labels[models.RubricLabelKey(ri.ID)] = "PASS"
		}
		as, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[0], st.ID, q.Next, models.StudyLabelInput{Labels: labels, Action: models.LabelActionSubmit, TimeSpentMS: 1500})
		require.NoError(t, err)
		require.Equal(t, models.AssignmentDone, as.Status)
		require.Equal(t, "successful", as.Labels[models.StudyLabelSuccess])

		q, err = servicetest.Studies(db, nil).StudyQueue(f.ann[0], st.ID)
		require.NoError(t, err)
		require.Equal(t, 1, q.Progress.Done)
		require.Equal(t, q.Entries[1].ItemID, q.Next)

		view, err = servicetest.Studies(db, nil).StudyOverview(f.member, st.ID)
		require.NoError(t, err)
		require.Equal(t, models.StudyProgress{Assigned: 8, Done: 1}, view.Progress)
		require.Equal(t, int64(1500), view.Annotators[0].TimeSpentMS)

		require.NoError(t, servicetest.Studies(db, nil).CloseStudy(f.member, st.ID))
		_, err = servicetest.Studies(db, nil).SaveStudyLabels(f.ann[0], st.ID, q.Next, models.StudyLabelInput{Labels: labels, Action: models.LabelActionSave})
		requireCode(t, models.ECONFLICT, err)
		require.Equal(t, "The study is closed; labels can no longer be changed.", models.ErrorMessage(err))
	})
}

// allLabels answers every question a study asks of an item, rubric items
// included, so that it may be submitted.
func (f *studyFixture) allLabels(t *testing.T, studyID, itemID int64) map[string]string {
	t.Helper()
	v, err := servicetest.Studies(f.db, nil).StudyItem(f.member, studyID, itemID)
	require.NoError(t, err)
	answers := map[string]string{models.StudyLabelSuccess: "successful", models.StudyLabelScore: "3",
		models.StudyLabelSideEffect: "no", models.StudyLabelLooping: "no", models.StudyLabelOptimality: "3"}
	out := map[string]string{}
	for _, l := range v.Study.Labels {
		if l != models.StudyLabelRubric {
			out[l] = answers[l]
			continue
		}
		for _, it := range v.RubricItems {
			out[models.RubricLabelKey(it.ID)] = models.RubricPass
		}
	}
	return out
}
