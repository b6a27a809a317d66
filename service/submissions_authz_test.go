package service_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// submissionAuthzFixture adds to the submission fixture an uploaded run of
// team lab (ingested from a submission) and a blind annotator: a user of no
// team who annotates one of its attempts in an open blind study.
type submissionAuthzFixture struct {
	*submissionFixture
	annotator context.Context
	n         int // bundles made so far, each with its own SHA-256
}

func newSubmissionAuthzFixture(t *testing.T, db *storage.DB) *submissionAuthzFixture {
	t.Helper()
	f := &submissionAuthzFixture{submissionFixture: newSubmissionFixture(t, db)}
	id := f.submission(t, models.SubmissionValidated)
	_, err := f.subs.IngestSubmission(f.member, id)
	require.NoError(t, err)
	run, err := db.CreateUploadedRun(f.system, id, models.SubmissionIngest{Tasks: []models.UploadedTask{{ExternalID: "t1"}}}, service.UploadedRunRules(), noEvaluations)
	require.NoError(t, err)
	var attempt int64
	require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Limit(1).Pluck("id", &attempt).Error)
	var annotator *models.User
	annotator, f.annotator = f.user(t, "annotator@submissions.test", false)
	now := time.Now().UTC()
	study := &models.Study{OwnerID: f.adminID.ID, Name: "Blind", Status: models.StudyOpen, Blind: true,
		Sampling: models.SampleRandom, SampleSize: 1, ItemCount: 1, OverlapAnnotators: 1,
		CreatedAt: now, UpdatedAt: now, OpenedAt: &now}
	require.NoError(t, db.Gorm().Create(study).Error)
	item := &models.StudyItem{StudyID: study.ID, AttemptID: attempt, Position: 1}
	require.NoError(t, db.Gorm().Create(item).Error)
	require.NoError(t, db.Gorm().Create(&models.StudyAssignment{StudyID: study.ID, StudyItemID: item.ID, UserID: annotator.ID,
		Position: 1, Status: models.AssignmentPending, CreatedAt: now, UpdatedAt: now}).Error)
	return f
}

// noEvaluations enqueues no evaluation of an uploaded run.
func noEvaluations(context.Context, *sql.Tx, int64, []int64) error { return nil }

// bundle is the next request of team lab's member: a 10-byte bundle (one
// part) with a SHA-256 of its own, so that no upload resumes another.
func (f *submissionAuthzFixture) bundle() models.SubmissionRequest {
	f.n++
	return models.SubmissionRequest{Agent: "lab/uploader", Benchmark: "mini", Filename: "results.zip", Size: 10,
		SHA256: fmt.Sprintf("%064x", f.n)}
}

// submission is a new submission of team lab in status (uploading with its
// upload begun, uploaded with its one part joined, or validated).
func (f *submissionAuthzFixture) submission(t *testing.T, status string) int64 {
	t.Helper()
	req := f.bundle()
	v, _, err := f.subs.CreateSubmission(f.member, req)
	require.NoError(t, err)
	if status == models.SubmissionUploading {
		return v.ID
	}
	_, err = f.subs.PutSubmissionPart(f.member, v.ID, 1, strings.NewReader("0123456789"), 10, nil)
	require.NoError(t, err)
	_, err = f.subs.CompleteSubmission(f.member, v.ID)
	require.NoError(t, err)
	if status == models.SubmissionUploaded {
		return v.ID
	}
	_, ok, err := f.db.StartSubmissionValidation(f.system, v.ID)
	require.NoError(t, err)
	require.True(t, ok)
	f.validateAs(t, v.ID, req.SHA256)
	return v.ID
}

func (f *submissionAuthzFixture) validateAs(t *testing.T, id int64, sum string) {
	t.Helper()
	_, err := f.db.FinishSubmissionValidation(f.system, id, models.SubmissionReport{Format: models.BundleProctor, SHA256: sum,
		TasksFound: []string{"t1"}}, service.DuplicateBundleError)
	require.NoError(t, err)
}

// TestSubmissions_Authorization drives every read and write of the
// submission service as an anonymous visitor, a member of the submission's
// team, a member of another team, an administrator and a blind annotator of
// the run a submission of the team became. Another team's submission does
// not exist for the caller (ENOTFOUND); a submission shows no run results,
// so the annotator is only a user of no team here. A code is the error the
// caller gets ("" for none); check, when set, looks at what was shown.
func TestSubmissions_Authorization(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionAuthzFixture(t, db)
		ok := outcome{}
		code := func(c string) outcome { return outcome{code: c} }
		unauthorized, notFound, forbidden := code(models.EUNAUTHORIZED), code(models.ENOTFOUND), code(models.EFORBIDDEN)
		listed := func(want bool) outcome {
			return outcome{check: func(t *testing.T, got any) {
				items := got.([]models.SubmissionView)
				require.Equal(t, want, len(items) > 0, "lab's submissions listed")
				for _, it := range items {
					require.Equal(t, "lab", it.TeamSlug)
				}
			}}
		}
		agents := func(want int) outcome {
			return outcome{check: func(t *testing.T, got any) {
				n := 0
				for _, a := range got.(*models.SubmissionFormOptions).Agents {
					if a.TeamSlug == "lab" {
						n++
					}
				}
				require.Equal(t, want, n, "lab's agents offered")
			}}
		}
		eventsIP := func(shown bool) outcome {
			return outcome{check: func(t *testing.T, got any) {
				events := got.([]models.SubmissionEvent)
				require.NotEmpty(t, events)
				require.Equal(t, shown, events[0].IP != "", "the client address is shown to administrators only")
			}}
		}
		ops := []authzOp{
			{"ListSubmissions", func(ctx context.Context) (any, error) {
				list, _, err := f.subs.ListSubmissions(ctx, models.SubmissionFilter{})
				return list, err
			}, callerOutcomes{unauthorized, listed(true), listed(false), listed(true), listed(false)}},
			{"ListSubmissions/team", func(ctx context.Context) (any, error) {
				list, _, err := f.subs.ListSubmissions(ctx, models.SubmissionFilter{TeamSlug: "lab"})
				return list, err
			}, callerOutcomes{unauthorized, listed(true), forbidden, listed(true), forbidden}},
			{"SubmissionFormOptions", func(ctx context.Context) (any, error) { return f.subs.SubmissionFormOptions(ctx) },
				callerOutcomes{unauthorized, agents(2), agents(0), agents(2), agents(0)}},
			{"Submission", func(ctx context.Context) (any, error) {
				return f.subs.Submission(ctx, f.submission(t, models.SubmissionUploading))
			}, callerOutcomes{unauthorized, ok, notFound, ok, notFound}},
			{"SubmissionEvents", func(ctx context.Context) (any, error) {
				id := f.submission(t, models.SubmissionUploading)
				require.NoError(t, db.Gorm().Table("audit_events").Where("subject = ?", fmt.Sprintf("submission %d", id)).Update("ip", "192.0.2.7").Error)
				return f.subs.SubmissionEvents(ctx, id)
			}, callerOutcomes{unauthorized, eventsIP(false), notFound, eventsIP(true), notFound}},
			{"CreateSubmission", func(ctx context.Context) (any, error) {
				v, _, err := f.subs.CreateSubmission(ctx, f.bundle())
				return v, err
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"UploadSubmission", func(ctx context.Context) (any, error) {
				return f.subs.UploadSubmission(ctx, f.bundle(), strings.NewReader("0123456789"))
			}, callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"PutSubmissionPart", func(ctx context.Context) (any, error) {
				return f.subs.PutSubmissionPart(ctx, f.submission(t, models.SubmissionUploading), 1, strings.NewReader("0123456789"), 10, nil)
			}, callerOutcomes{unauthorized, ok, notFound, ok, notFound}},
			{"SubmissionPartURL", func(ctx context.Context) (any, error) {
				// The local store takes parts through the API only: ECONFLICT
				// is the answer of a caller who may upload.
				u, _, err := f.subs.SubmissionPartURL(ctx, f.submission(t, models.SubmissionUploading), 1)
				return u, err
			}, callerOutcomes{unauthorized, code(models.ECONFLICT), notFound, code(models.ECONFLICT), notFound}},
			{"CompleteSubmission", func(ctx context.Context) (any, error) {
				id := f.submission(t, models.SubmissionUploading)
				_, err := f.subs.PutSubmissionPart(f.member, id, 1, strings.NewReader("0123456789"), 10, nil)
				require.NoError(t, err)
				return f.subs.CompleteSubmission(ctx, id)
			}, callerOutcomes{unauthorized, ok, notFound, ok, notFound}},
			{"IngestSubmission", func(ctx context.Context) (any, error) {
				return f.subs.IngestSubmission(ctx, f.submission(t, models.SubmissionValidated))
			}, callerOutcomes{unauthorized, ok, notFound, ok, notFound}},
			{"DiscardSubmission", func(ctx context.Context) (any, error) {
				return nil, f.subs.DiscardSubmission(ctx, f.submission(t, models.SubmissionUploading))
			}, callerOutcomes{unauthorized, ok, notFound, ok, notFound}},
		}
		checkAuthzTable(t, ops, tableCallers{anon: f.anon, member: f.member, other: f.other, admin: f.admin, blind: f.annotator}, nil)
	})
}
