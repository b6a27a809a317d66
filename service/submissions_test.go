package service_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/models"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
)

// submissionFixture is the service fixture (the mini benchmark, team lab
// with agents walker and uploader, team other with theirs, an
// administrator) with the submission service over a local artifact store,
// counting the jobs it enqueues.
type submissionFixture struct {
	*fixture
	files *artifact.Local
	jobs  *submissionJobs
	subs  *service.Submissions
	opts  service.SubmissionOptions
}

// submissionJobs counts the jobs enqueued, each inside a transaction.
type submissionJobs struct {
	t                   *testing.T
	validations, ingest int
}

func (j *submissionJobs) ValidateSubmission(_ context.Context, tx *sql.Tx, _ int64) error {
	require.NotNil(j.t, tx, "the job is inserted inside the change's transaction")
	j.validations++
	return nil
}

func (j *submissionJobs) IngestSubmission(_ context.Context, tx *sql.Tx, _ int64) error {
	require.NotNil(j.t, tx, "the job is inserted inside the change's transaction")
	j.ingest++
	return nil
}

func newSubmissionFixture(t *testing.T, db *storage.DB) *submissionFixture {
	t.Helper()
	files, err := artifact.NewLocal(t.TempDir(), artifact.NewURLSigner([]byte(strings.Repeat("s", 32))), "")
	require.NoError(t, err)
	t.Cleanup(func() { files.Close() })
	f := &submissionFixture{fixture: newFixture(t, db), files: files, jobs: &submissionJobs{t: t},
		opts: service.SubmissionOptions{PartBytes: 5 << 20, Limits: bundle.Limits{MaxBundleBytes: 1 << 30}}}
	f.subs = f.service(f.opts)
	return f
}

// service is the submission service with other options.
func (f *submissionFixture) service(opts service.SubmissionOptions) *service.Submissions {
	return service.NewSubmissions(f.db, f.files, f.jobs, opts)
}

// sha is a well-formed SHA-256 made of one repeated digit.
func sha(digit string) string { return strings.Repeat(digit, 64) }

func (f *submissionFixture) request(mod func(*models.SubmissionRequest)) models.SubmissionRequest {
	req := models.SubmissionRequest{Agent: "lab/uploader", Benchmark: "mini", Filename: "results.zip", Size: 12 << 20, SHA256: sha("a")}
	if mod != nil {
		mod(&req)
	}
	return req
}

func (f *submissionFixture) create(t *testing.T, ctx context.Context, req models.SubmissionRequest) *models.Submission {
	t.Helper()
	v, resumed, err := f.subs.CreateSubmission(ctx, req)
	require.NoError(t, err)
	require.False(t, resumed)
	return &v.Submission
}

// createWith starts an upload through the service s.
func createWith(s *service.Submissions, ctx context.Context, req models.SubmissionRequest) (*models.Submission, bool, error) {
	v, resumed, err := s.CreateSubmission(ctx, req)
	if err != nil {
		return nil, false, err
	}
	return &v.Submission, resumed, nil
}

// noEnqueue checks that the job is inserted inside the change's transaction.
func noEnqueue(t *testing.T) func(context.Context, *sql.Tx, int64) error {
	return func(_ context.Context, tx *sql.Tx, _ int64) error {
		require.NotNil(t, tx)
		return nil
	}
}

// validate takes a submission from uploading to validated with the report.
func (f *submissionFixture) validate(t *testing.T, id int64, rep models.SubmissionReport) *models.SubmissionReport {
	t.Helper()
	require.NoError(t, f.db.CompleteSubmissionUpload(f.member, id, 0, noEnqueue(t)))
	_, ok, err := f.db.StartSubmissionValidation(f.system, id)
	require.NoError(t, err)
	require.True(t, ok)
	out, err := f.db.FinishSubmissionValidation(f.system, id, rep, service.DuplicateBundleError)
	require.NoError(t, err)
	return out
}

// countRows counts the rows of table matching where (every row when "").
func countRows(t *testing.T, db *storage.DB, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	q := db.Gorm().Table(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	require.NoError(t, q.Count(&n).Error)
	return n
}

func TestSubmissions_CreateSubmission(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)

		t.Run("BadInput", func(t *testing.T) {
			for name, tc := range map[string]struct {
				mod         func(*models.SubmissionRequest)
				code, field string
				message     string
			}{
				"NoAgent":        {func(r *models.SubmissionRequest) { r.Agent = " " }, models.EINVALID, "agent", "choose the agent"},
				"UnknownAgent":   {func(r *models.SubmissionRequest) { r.Agent = "lab/nobody" }, models.EINVALID, "agent", `team lab has no agent "nobody"`},
				"UnknownTeam":    {func(r *models.SubmissionRequest) { r.Agent = "ghosts/uploader" }, models.EINVALID, "agent", `there is no team "ghosts"`},
				"NotMine":        {func(r *models.SubmissionRequest) { r.Agent = "theirs" }, models.EINVALID, "agent", `none of your teams has an agent "theirs"`},
				"OtherTeam":      {func(r *models.SubmissionRequest) { r.Agent = "other/theirs" }, models.EFORBIDDEN, "", "Only members of this team"},
				"NoBenchmark":    {func(r *models.SubmissionRequest) { r.Benchmark = "" }, models.EINVALID, "benchmark", "choose the benchmark"},
				"Benchmark":      {func(r *models.SubmissionRequest) { r.Benchmark = "maxi" }, models.EINVALID, "benchmark", `there is no benchmark "maxi"`},
				"Subset":         {func(r *models.SubmissionRequest) { r.Subset = "huge" }, models.EINVALID, "subset", `there is no subset "huge"`},
				"Extension":      {func(r *models.SubmissionRequest) { r.Filename = "results.rar" }, models.EINVALID, "filename", "must end in .zip, .tar.gz or .tgz"},
				"OnlyExtension":  {func(r *models.SubmissionRequest) { r.Filename = ".zip" }, models.EINVALID, "filename", "must end in"},
				"ControlChars":   {func(r *models.SubmissionRequest) { r.Filename = "a\x01b.zip" }, models.EINVALID, "filename", "control characters"},
				"SHA256":         {func(r *models.SubmissionRequest) { r.SHA256 = "abc" }, models.EINVALID, "sha256", "64 hexadecimal digits"},
				"SHA256NotHex":   {func(r *models.SubmissionRequest) { r.SHA256 = strings.Repeat("g", 64) }, models.EINVALID, "sha256", "64 hexadecimal digits"},
				"ZeroSize":       {func(r *models.SubmissionRequest) { r.Size = 0 }, models.EINVALID, "size", "positive number of bytes"},
				"TooLarge":       {func(r *models.SubmissionRequest) { r.Size = 2 << 30 }, models.ETOOLARGE, "size", "The bundle is 2 GiB; the largest this server accepts is 1 GiB."},
				"JustTooLarge":   {func(r *models.SubmissionRequest) { r.Size = 1<<30 + 1 }, models.ETOOLARGE, "size", "The bundle is 1073741825 bytes; the largest this server accepts is 1073741824 bytes (1 GiB)."},
				"NegativeStream": {func(r *models.SubmissionRequest) { r.Size = -1 }, models.EINVALID, "size", "positive"},
			} {
				_, _, err := createWith(f.subs, f.member, f.request(tc.mod))
				require.Equal(t, tc.code, models.ErrorCode(err), "%s: %v", name, err)
				require.Equal(t, tc.field, models.ErrorField(err), name)
				require.Contains(t, models.ErrorMessage(err), tc.message, name)
			}
			_, _, err := createWith(f.subs, f.anon, f.request(nil))
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			require.Zero(t, countRows(t, db, "submissions", ""), "refused requests store nothing")
		})

		s, resumed, err := createWith(f.subs, f.member, f.request(func(r *models.SubmissionRequest) {
			r.Agent, r.Subset, r.Filename, r.SHA256 = "uploader", "smoke", "  path/to/Results.TAR.GZ ", strings.ToUpper(sha("b"))
		}))
		require.NoError(t, err)
		require.False(t, resumed)
		require.Equal(t, models.SubmissionUploading, s.Status)
		require.Equal(t, "Results.TAR.GZ", s.Filename, "the base name is kept")
		require.Equal(t, sha("b"), s.SHA256, "hex is lower-cased")
		require.Equal(t, "smoke", s.SubsetName)
		require.Equal(t, fmt.Sprintf("submissions/%d/bundle", s.ID), s.StorageKey)
		require.Equal(t, int64(5<<20), s.PartSize)
		require.Equal(t, 3, s.PartsTotal())
		require.Equal(t, int64(2<<20), s.PartLength(3))
		require.NotNil(t, s.CreatedBy)
		require.Equal(t, int64(1), countRows(t, db, "audit_events", "action = ? AND subject = ?", "submission.create", fmt.Sprintf("submission %d", s.ID)))

		t.Run("Resume", func(t *testing.T) {
			again, resumed, err := createWith(f.subs, f.member, f.request(func(r *models.SubmissionRequest) {
				r.Agent, r.Subset, r.Filename, r.SHA256 = "lab/uploader", "smoke", "renamed.tgz", sha("b")
			}))
			require.NoError(t, err)
			require.True(t, resumed, "the same bundle of the same agent resumes its unfinished upload")
			require.Equal(t, s.ID, again.ID)

			other, resumed, err := createWith(f.subs, f.member, f.request(func(r *models.SubmissionRequest) {
				r.Subset, r.SHA256 = "smoke", sha("c")
			}))
			require.NoError(t, err)
			require.False(t, resumed, "another bundle is another upload")
			require.NotEqual(t, s.ID, other.ID)

			// Without a declared SHA-256, the file name tells bundles apart.
			first := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256, r.Filename = "", "a.zip" }))
			same, resumed, err := createWith(f.subs, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256, r.Filename = "", "a.zip" }))
			require.NoError(t, err)
			require.True(t, resumed)
			require.Equal(t, first.ID, same.ID)
			f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256, r.Filename = "", "b.zip" }))

			// A streamed upload never resumes.
			validations := f.jobs.validations
			streamed, err := f.subs.UploadSubmission(f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256, r.Filename, r.Size = "", "a.zip", 0 }),
				strings.NewReader("bundle"))
			require.NoError(t, err)
			require.NotEqual(t, first.ID, streamed.ID, "a streamed bundle is a new upload")
			require.Equal(t, models.SubmissionUploaded, streamed.Status)
			require.Equal(t, int64(6), streamed.Size, "a size unknown (0) is the size that arrived")
			require.Equal(t, validations+1, f.jobs.validations, "its validation is queued")
		})

		t.Run("PartSize", func(t *testing.T) {
			big := f.create(t, f.admin, f.request(func(r *models.SubmissionRequest) { r.Size, r.SHA256 = 1<<30, sha("d") }))
			require.Equal(t, int64(5<<20), big.PartSize)
			opts := f.opts
			opts.Limits.MaxBundleBytes = 1 << 40
			huge, _, err := createWith(f.service(opts), f.admin, f.request(func(r *models.SubmissionRequest) { r.Size, r.SHA256 = 100<<30, sha("e") }))
			require.NoError(t, err)
			require.LessOrEqual(t, huge.PartsTotal(), 10_000, "a bundle never needs more parts than S3 allows")
			require.Greater(t, huge.PartSize, int64(5<<20))
		})

		t.Run("Quota", func(t *testing.T) {
			n := countRows(t, db, "submissions", "team_id = ?", s.TeamID)
			opts := f.opts
			opts.DailyQuota = int(n)
			limited := f.service(opts)
			_, _, err := createWith(limited, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("f") }))
			require.Equal(t, models.ERATELIMIT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), fmt.Sprintf("Team lab has started %d submissions in the last 24 hours", n))
			_, resumed, err := createWith(limited, f.member, f.request(func(r *models.SubmissionRequest) {
				r.Subset, r.SHA256 = "smoke", sha("b")
			}))
			require.NoError(t, err, "resuming an upload is not a new submission")
			require.True(t, resumed)
			_, _, err = createWith(limited, f.admin, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("f") }))
			require.NoError(t, err, "administrators are exempt")
			_, _, err = createWith(f.subs, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("9") }))
			require.NoError(t, err, "0 is unlimited")
		})

		t.Run("AgentAmongTeams", func(t *testing.T) {
			// An admin who belongs to no team finds the agent among every team's.
			got := f.create(t, f.admin, f.request(func(r *models.SubmissionRequest) { r.Agent, r.SHA256 = "theirs", sha("8") }))
			var team models.Team
			require.NoError(t, db.Gorm().First(&team, got.TeamID).Error)
			require.Equal(t, "other", team.Slug)
		})
	})
}

// TestSubmissions_CreateSubmissionConcurrently starts many uploads for one team at
// once: the daily quota holds, and one bundle sent twice at once is one
// upload.
func TestSubmissions_CreateSubmissionConcurrently(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)
		// concurrently calls create from n goroutines released together.
		concurrently := func(n int, create func(i int) error) []error {
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					errs[i] = create(i)
				})
			}
			close(start)
			wg.Wait()
			return errs
		}

		t.Run("Quota", func(t *testing.T) {
			opts := f.opts
			opts.DailyQuota = 3
			quota := f.service(opts)
			errs := concurrently(20, func(i int) error {
				_, _, err := createWith(quota, f.member, f.request(func(r *models.SubmissionRequest) {
					r.SHA256 = fmt.Sprintf("%064x", i+1)
				}))
				return err
			})
			limited := 0
			for _, err := range errs {
				switch models.ErrorCode(err) {
				case "":
				case models.ERATELIMIT:
					limited++
				default:
					require.NoError(t, err)
				}
			}
			require.Equal(t, 17, limited, "20 at once with a quota of 3")
			require.Equal(t, int64(3), countRows(t, db, "submissions", ""))
		})

		t.Run("SameBundle", func(t *testing.T) {
			var ids sync.Map
			errs := concurrently(10, func(int) error {
				s, _, err := createWith(f.subs, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("e") }))
				if err == nil {
					ids.Store(s.ID, true)
				}
				return err
			})
			for _, err := range errs {
				require.NoError(t, err)
			}
			n := 0
			ids.Range(func(any, any) bool { n++; return true })
			require.Equal(t, 1, n, "the same bundle sent ten times at once is one upload, resumed by the others")
		})
	})
}

// TestSubmissions_ListSubmissionsWithoutReport: a list leaves every report out —
// it can be megabytes per row — and one submission's read has it.
func TestSubmissions_ListSubmissionsWithoutReport(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)
		s := f.create(t, f.member, f.request(nil))
		unknown := make([]string, 2000)
		for i := range unknown {
			unknown[i] = fmt.Sprintf("unknown-task-%04d-%s", i, strings.Repeat("x", 200))
		}
		f.validate(t, s.ID, models.SubmissionReport{Format: models.BundleProctor, SHA256: sha("a"), TasksFound: []string{"t1"}, TasksUnknown: unknown})

		items, total, err := f.subs.ListSubmissions(f.member, models.SubmissionFilter{})
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Len(t, items, 1)
		item := items[0]
		require.Equal(t, s.ID, item.ID)
		require.Equal(t, models.SubmissionValidated, item.Status)
		require.Equal(t, models.BundleProctor, item.Format)
		require.Equal(t, "lab", item.TeamSlug)
		require.Equal(t, []models.SubmissionPart{}, item.Parts)
		require.Zero(t, len(item.Report), "the report is not read for a list")
		require.Nil(t, item.ParsedReport)
		raw, err := json.Marshal(item)
		require.NoError(t, err)
		require.False(t, strings.Contains(string(raw), `"report"`), "the list's JSON has no report")
		require.Contains(t, string(raw), `"status":"validated"`)

		v, err := f.subs.Submission(f.member, s.ID)
		require.NoError(t, err)
		require.NotNil(t, v.ParsedReport, "one submission's read has its report")
		require.Equal(t, unknown, v.ParsedReport.TasksUnknown)
	})
}

func TestSubmissions_SubmissionVisibility(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)
		ours := f.create(t, f.member, f.request(nil))
		theirs := f.create(t, f.other, f.request(func(r *models.SubmissionRequest) { r.Agent = "theirs"; r.Subset = "smoke" }))

		v, err := f.subs.Submission(f.member, ours.ID)
		require.NoError(t, err)
		require.Equal(t, "lab", v.TeamSlug)
		require.Equal(t, "uploader", v.AgentSlug)
		require.Equal(t, "Uploader", v.AgentName)
		require.Equal(t, "mini", v.BenchmarkSlug)
		require.Equal(t, "member", v.CreatedByName)
		require.Equal(t, []models.SubmissionPart{}, v.Parts)
		_, err = f.subs.Submission(f.admin, ours.ID)
		require.NoError(t, err)
		_, err = f.subs.Submission(f.other, ours.ID)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "another team's submission does not exist for outsiders")
		require.Equal(t, fmt.Sprintf("Submission %d not found.", ours.ID), models.ErrorMessage(err))
		_, err = f.subs.Submission(f.anon, ours.ID)
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		_, err = f.subs.Submission(f.member, 999999)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

		list := func(ctx context.Context, filter models.SubmissionFilter) []int64 {
			t.Helper()
			items, total, err := f.subs.ListSubmissions(ctx, filter)
			require.NoError(t, err)
			require.Len(t, items, total)
			out := []int64{}
			for _, it := range items {
				out = append(out, it.ID)
			}
			return out
		}
		require.Equal(t, []int64{ours.ID}, list(f.member, models.SubmissionFilter{}))
		require.Equal(t, []int64{theirs.ID}, list(f.other, models.SubmissionFilter{}))
		require.Equal(t, []int64{theirs.ID, ours.ID}, list(f.admin, models.SubmissionFilter{}), "newest first")
		require.Equal(t, []int64{ours.ID}, list(f.admin, models.SubmissionFilter{TeamSlug: "lab"}))
		require.Equal(t, []int64{ours.ID}, list(f.member, models.SubmissionFilter{TeamSlug: "lab", Status: models.SubmissionUploading}))
		require.Equal(t, []int64{}, list(f.member, models.SubmissionFilter{Status: models.SubmissionIngested}))

		items, total, err := f.subs.ListSubmissions(f.admin, models.SubmissionFilter{Page: 2, PerPage: 1})
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.Len(t, items, 1)
		require.Equal(t, ours.ID, items[0].ID)

		_, _, err = f.subs.ListSubmissions(f.member, models.SubmissionFilter{TeamSlug: "other"})
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
		_, _, err = f.subs.ListSubmissions(f.member, models.SubmissionFilter{TeamSlug: "ghosts"})
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		_, _, err = f.subs.ListSubmissions(f.member, models.SubmissionFilter{Status: "lost"})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Equal(t, "status", models.ErrorField(err))
		_, _, err = f.subs.ListSubmissions(f.anon, models.SubmissionFilter{})
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))

		// Jobs only.
		_, err = db.SubmissionForJob(f.member, ours.ID)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
		_, _, err = db.StartSubmissionValidation(f.admin, ours.ID)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(db.RefuseSubmission(f.member, ours.ID, "no")))
		_, err = db.CreateUploadedRun(f.admin, ours.ID, models.SubmissionIngest{}, service.UploadedRunRules(), nil)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))

		// Discarding and ingesting are the team's and the administrators'.
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(f.subs.DiscardSubmission(f.other, ours.ID)))
		_, err = f.subs.IngestSubmission(f.other, ours.ID)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
	})
}

func TestSubmissions_SubmissionFormOptions(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)
		opts, err := f.subs.SubmissionFormOptions(f.member)
		require.NoError(t, err)
		require.Equal(t, []models.AgentChoice{
			{TeamSlug: "lab", AgentSlug: "uploader", Name: "Uploader"},
			{TeamSlug: "lab", AgentSlug: "walker", Name: "Walker"},
		}, opts.Agents, "agents of every kind, of the caller's teams only")
		require.Equal(t, []models.BenchmarkChoice{{Slug: "mini", Name: "Mini bench", Subsets: []string{models.SubsetFull, "smoke"}}}, opts.Benchmarks)

		opts, err = f.subs.SubmissionFormOptions(f.admin)
		require.NoError(t, err)
		require.Len(t, opts.Agents, 3, "administrators may submit for every team")
		_, err = f.subs.SubmissionFormOptions(f.anon)
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
	})
}

func TestSubmissions_SubmissionLifecycle(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)
		s := f.create(t, f.member, f.request(nil))
		audits := func(action string) int64 {
			return countRows(t, db, "audit_events", "action = ? AND subject = ?", action, fmt.Sprintf("submission %d", s.ID))
		}

		require.NoError(t, db.SetSubmissionUpload(f.system, s.ID, "upload-1"))
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(db.SetSubmissionUpload(f.member, s.ID, "upload-2")))
		require.NoError(t, db.RecordSubmissionPart(f.member, s.ID, models.SubmissionPart{Number: 2, Size: 5 << 20, MD5: "00"}))
		require.Equal(t, int64(1), audits("submission.part"))

		t.Run("NotYetUploaded", func(t *testing.T) {
			_, ok, err := db.StartSubmissionValidation(f.system, s.ID)
			require.NoError(t, err)
			require.False(t, ok, "validation waits for the upload to complete")
			_, err = f.subs.IngestSubmission(f.member, s.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "its upload is not complete")
		})

		enqueued := 0
		require.NoError(t, db.CompleteSubmissionUpload(f.member, s.ID, 0, func(_ context.Context, tx *sql.Tx, id int64) error {
			require.NotNil(t, tx)
			require.Equal(t, s.ID, id)
			enqueued++
			return nil
		}))
		require.Equal(t, 1, enqueued)
		require.Equal(t, int64(1), audits("submission.complete"))
		err := db.RecordSubmissionPart(f.member, s.ID, models.SubmissionPart{Number: 1})
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "a complete upload takes no more parts")
		require.Equal(t, models.ECONFLICT, models.ErrorCode(db.CompleteSubmissionUpload(f.member, s.ID, 0, noEnqueue(t))))

		got, ok, err := db.StartSubmissionValidation(f.system, s.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, models.SubmissionValidating, got.Status)
		_, ok, err = db.StartSubmissionValidation(f.system, s.ID)
		require.NoError(t, err)
		require.True(t, ok, "a redelivered validation starts over")
		require.NoError(t, db.SubmissionProgress(f.system, s.ID, 10, 100))

		_, err = db.FinishSubmissionValidation(f.system, s.ID, models.SubmissionReport{Format: models.BundleProctor}, service.DuplicateBundleError)
		require.Error(t, err, "a report without the bundle's SHA-256 is a bug")
		rep, err := db.FinishSubmissionValidation(f.system, s.ID, models.SubmissionReport{Format: models.BundleProctor, SHA256: sha("a"),
			TasksFound: []string{"t1", "t2"}, TasksNotAttempted: []string{"t2"}, TasksMissing: []string{"t3", "t4"}}, service.DuplicateBundleError)
		require.NoError(t, err)
		require.Empty(t, rep.Blocking)
		require.Equal(t, int64(1), audits("submission.validated"))
		v, err := f.subs.Submission(f.member, s.ID)
		require.NoError(t, err)
		require.Equal(t, models.SubmissionValidated, v.Status)
		require.Equal(t, models.BundleProctor, v.Format)
		require.NotNil(t, v.ValidatedAt)
		require.NotNil(t, v.ParsedReport)
		require.Equal(t, []string{"t1", "t2"}, v.ParsedReport.TasksFound)
		require.Equal(t, int64(100), v.ProgressDone, "a finished validation shows a full bar")

		ingestJobs := f.jobs.ingest
		_, err = f.subs.IngestSubmission(f.member, s.ID)
		require.NoError(t, err)
		require.Equal(t, ingestJobs+1, f.jobs.ingest)
		_, err = f.subs.IngestSubmission(f.member, s.ID)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "it is being ingested")
		err = f.subs.DiscardSubmission(f.member, s.ID)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "a submission being ingested cannot be discarded")

		started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		maxCost := 2.5
		in := models.SubmissionIngest{
			Manifest: &models.BundleManifest{Model: "gpt-test", AgentFramework: "browsergym", Date: "2026-03-01",
				Budgets: models.BundleBudgets{MaxSteps: 12, MaxEpisodeSeconds: 600, MaxCost: &maxCost}},
			Tasks: []models.UploadedTask{
				{ExternalID: "t1", FinalAnswer: `{"type":"answer","text":"cable"}`, HARKey: "submissions/1/tasks/t1/network.har",
					TokensIn: 100, TokensOut: 10, Cost: 0.5, TokensStated: true, DurationMS: 3000, StartedAt: &started,
					Steps: []models.Step{
						{Index: 0, Action: `{"type":"recorded","text":"click"}`, URL: "http://shop/", ScreenshotKey: "submissions/1/tasks/t1/0.png"},
						{Index: 1, Action: `{"type":"answer","text":"cable"}`},
					}},
				{ExternalID: "t2", NotAttempted: true},
			},
		}
		var evaluate []int64
		run, err := db.CreateUploadedRun(f.system, s.ID, in, service.UploadedRunRules(), func(_ context.Context, tx *sql.Tx, runID int64, ids []int64) error {
			require.NotNil(t, tx)
			evaluate = ids
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, models.OriginUploaded, run.Origin)
		require.Equal(t, models.RunEvaluating, run.Status)
		require.Equal(t, 4, run.TasksTotal)
		require.Equal(t, 3, run.TasksDone, "the tasks not attempted or absent are done already")
		require.Equal(t, 3, run.Failures)
		require.Equal(t, 12, run.MaxSteps)
		require.Equal(t, 600, run.MaxEpisodeSeconds)
		require.Equal(t, &maxCost, run.MaxCost)
		require.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), run.StartedAt.UTC(), "the run started on the manifest's date")
		var snap models.AgentSnapshot
		require.NoError(t, json.Unmarshal([]byte(run.AgentSnapshot), &snap))
		require.Equal(t, "gpt-test", snap.Model)
		require.Equal(t, "browsergym", snap.Framework)
		require.Equal(t, "uploader", snap.Slug)

		var attempts []models.Attempt
		require.NoError(t, db.Gorm().Preload("Task").Where("run_id = ?", run.ID).Order("id").Find(&attempts).Error)
		require.Len(t, attempts, 4)
		byTask := map[string]models.Attempt{}
		for _, a := range attempts {
			byTask[a.Task.ExternalID] = a
		}
		t1 := byTask["t1"]
		require.Equal(t, []int64{t1.ID}, evaluate)
		require.Equal(t, models.AttemptEvaluating, t1.Status)
		require.Equal(t, 2, t1.Steps)
		require.Equal(t, int64(100), t1.TokensIn)
		require.Equal(t, 0.5, t1.Cost)
		require.Equal(t, models.Unknown{Cost: true}, t1.Unknown, "the bundle stated the tokens and steps, not the cost")
		require.Equal(t, "submissions/1/tasks/t1/network.har", t1.HARKey)
		require.JSONEq(t, `{"type":"answer","text":"cable"}`, t1.FinalAnswer)
		require.Equal(t, started.Add(3*time.Second), t1.FinishedAt.UTC())
		for task, msg := range map[string]string{"t2": "not attempted (marked .missing)", "t3": "absent from the bundle", "t4": "absent from the bundle"} {
			a := byTask[task]
			require.Equal(t, models.AttemptDone, a.Status, task)
			require.Equal(t, models.OutcomeFailure, a.Outcome, task)
			require.Equal(t, models.ErrorClassAgent, a.ErrorClass, task)
			require.Equal(t, msg, a.ErrorMessage, task)
		}
		var steps []models.Step
		require.NoError(t, db.Gorm().Where("attempt_id = ?", t1.ID).Order("step_index").Find(&steps).Error)
		require.Len(t, steps, 2)
		require.Equal(t, "submissions/1/tasks/t1/0.png", steps[0].ScreenshotKey)

		v, err = f.subs.Submission(f.member, s.ID)
		require.NoError(t, err)
		require.Equal(t, models.SubmissionIngested, v.Status)
		require.Equal(t, &run.ID, v.RunID)
		require.NotNil(t, v.IngestedAt)
		require.Equal(t, int64(1), audits("submission.ingest"))

		again, err := db.CreateUploadedRun(f.system, s.ID, in, service.UploadedRunRules(), func(context.Context, *sql.Tx, int64, []int64) error {
			t.Fatal("a redelivered ingest enqueues nothing")
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, run.ID, again.ID, "a redelivered ingest finds its run")
		require.Equal(t, int64(1), countRows(t, db, "runs", "origin = ?", models.OriginUploaded))

		t.Run("Duplicate", func(t *testing.T) {
			_, _, err := createWith(f.subs, f.member, f.request(func(r *models.SubmissionRequest) { r.Agent = "walker" }))
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Equal(t, fmt.Sprintf("This bundle was already submitted as run %d on %s.", run.ID, v.IngestedAt.UTC().Format("2 January 2006")),
				models.ErrorMessage(err))

			// Sent without its SHA-256, the same bytes are caught by validation.
			dup := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = "" }))
			rep := f.validate(t, dup.ID, models.SubmissionReport{Format: models.BundleProctor, SHA256: sha("a"), TasksFound: []string{"t1"}})
			require.Len(t, rep.Blocking, 1)
			require.Contains(t, rep.Blocking[0], fmt.Sprintf("already submitted as run %d", run.ID))
			_, err = f.subs.IngestSubmission(f.member, dup.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "cannot be ingested")

			// The same bytes on another team's board are another submission.
			theirs := f.create(t, f.other, f.request(func(r *models.SubmissionRequest) { r.Agent = "other/theirs" }))
			require.NotZero(t, theirs.ID)
		})

		t.Run("EveryTaskDone", func(t *testing.T) {
			s := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.Subset, r.SHA256 = "smoke", sha("7") }))
			f.validate(t, s.ID, models.SubmissionReport{Format: models.BundleWebArenaVerified, SHA256: sha("7"), TasksFound: []string{"t1"}})
			_, err := f.subs.IngestSubmission(f.member, s.ID)
			require.NoError(t, err)
			run, err := db.CreateUploadedRun(f.system, s.ID, models.SubmissionIngest{Tasks: []models.UploadedTask{{ExternalID: "t1", NotAttempted: true}}}, service.UploadedRunRules(),
				func(_ context.Context, _ *sql.Tx, _ int64, ids []int64) error {
					require.Empty(t, ids)
					return nil
				})
			require.NoError(t, err)
			require.Equal(t, models.RunCompleted, run.Status, "a run with nothing to evaluate completes at once")
			require.Equal(t, 2, run.TasksTotal)
			require.Equal(t, 2, run.Failures)
			require.NotNil(t, run.FinishedAt)
			require.Equal(t, 30, run.MaxSteps, "the benchmark's default budget without a manifest")
		})

		t.Run("Blocking", func(t *testing.T) {
			s := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("6") }))
			f.validate(t, s.ID, models.SubmissionReport{Format: models.BundleProctor, SHA256: sha("6"),
				Blocking: []string{"The manifest is for benchmark other, not mini."}})
			_, err := f.subs.IngestSubmission(f.member, s.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "The manifest is for benchmark other, not mini.")
			require.NoError(t, f.files.Put(f.member, fmt.Sprintf("submissions/%d/bundle", s.ID), strings.NewReader("bundle"), 6, ""))
			require.NoError(t, f.subs.DiscardSubmission(f.member, s.ID), "a validated submission may be discarded")
			left, err := f.files.List(f.member, fmt.Sprintf("submissions/%d/", s.ID))
			require.NoError(t, err)
			require.Empty(t, left, "its bytes are deleted")
			require.NoError(t, f.subs.DiscardSubmission(f.member, s.ID), "discarding again retries the deletion")
			require.Equal(t, int64(1), countRows(t, db, "audit_events", "action = ? AND subject = ?", "submission.discard", fmt.Sprintf("submission %d", s.ID)))
		})

		t.Run("Refused", func(t *testing.T) {
			s := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("5") }))
			require.NoError(t, db.CompleteSubmissionUpload(f.member, s.ID, 0, noEnqueue(t)))
			_, _, err := db.StartSubmissionValidation(f.system, s.ID)
			require.NoError(t, err)
			require.NoError(t, db.RefuseSubmission(f.system, s.ID, "../etc/passwd: the path leaves the bundle"))
			v, err := f.subs.Submission(f.member, s.ID)
			require.NoError(t, err)
			require.Equal(t, models.SubmissionRefused, v.Status)
			require.Equal(t, "../etc/passwd: the path leaves the bundle", v.Error)
			require.Equal(t, int64(1), countRows(t, db, "audit_events", "action = ? AND details = ?", "submission.refused", v.Error))
			require.Equal(t, models.ECONFLICT, models.ErrorCode(db.RefuseSubmission(f.system, s.ID, "again")), "refused is final")
			require.Equal(t, models.ECONFLICT, models.ErrorCode(f.subs.DiscardSubmission(f.member, s.ID)))
		})

		t.Run("Failed", func(t *testing.T) {
			s := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("4") }))
			f.validate(t, s.ID, models.SubmissionReport{Format: models.BundleProctor, SHA256: sha("4"), TasksFound: []string{"t1"}})
			require.Equal(t, models.ECONFLICT, models.ErrorCode(db.FailSubmission(f.system, s.ID, "not ingesting")))
			_, err := f.subs.IngestSubmission(f.admin, s.ID)
			require.NoError(t, err, "administrators may ingest")
			require.NoError(t, db.FailSubmission(f.system, s.ID, "Storing the bundle's files failed."))
			_, err = db.CreateUploadedRun(f.system, s.ID, models.SubmissionIngest{}, service.UploadedRunRules(), nil)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "a failed ingest makes no run")
			v, err := f.subs.Submission(f.member, s.ID)
			require.NoError(t, err)
			require.Equal(t, models.SubmissionFailed, v.Status)
			require.Nil(t, v.RunID)
			// The bytes of a failed ingest may be sent again.
			again := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("4") }))
			require.NotEqual(t, s.ID, again.ID)
		})

		t.Run("RunFailsAtomically", func(t *testing.T) {
			s := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("3") }))
			f.validate(t, s.ID, models.SubmissionReport{Format: models.BundleProctor, SHA256: sha("3"), TasksFound: []string{"t1"}})
			_, err := f.subs.IngestSubmission(f.member, s.ID)
			require.NoError(t, err)
			runs := countRows(t, db, "runs", "")
			_, err = db.CreateUploadedRun(f.system, s.ID, models.SubmissionIngest{Tasks: []models.UploadedTask{{ExternalID: "t1"}}}, service.UploadedRunRules(),
				func(context.Context, *sql.Tx, int64, []int64) error { return fmt.Errorf("queue unavailable") })
			require.Error(t, err)
			require.Equal(t, runs, countRows(t, db, "runs", ""), "no half-made run")
			v, err := f.subs.Submission(f.member, s.ID)
			require.NoError(t, err)
			require.Equal(t, models.SubmissionIngesting, v.Status)
		})
	})
}

func TestSubmissions_AbandonedUploads(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)
		old := f.create(t, f.member, f.request(nil))
		fresh := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("b") }))
		done := f.create(t, f.member, f.request(func(r *models.SubmissionRequest) { r.SHA256 = sha("c") }))
		require.NoError(t, db.CompleteSubmissionUpload(f.member, done.ID, 0, noEnqueue(t)))
		weekAgo := time.Now().UTC().Add(-8 * 24 * time.Hour)
		require.NoError(t, db.Gorm().Model(&models.Submission{}).Where("id IN ?", []int64{old.ID, done.ID}).Update("updated_at", weekAgo).Error)

		cutoff := time.Now().UTC().Add(-7 * 24 * time.Hour)
		_, err := db.AbandonedUploads(f.member, cutoff, 10)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
		stale, err := db.AbandonedUploads(f.system, cutoff, 10)
		require.NoError(t, err)
		require.Len(t, stale, 1, "only uploads still uploading, idle since before the cutoff")
		require.Equal(t, old.ID, stale[0].ID)

		_, err = db.ExpireUpload(f.system, fresh.ID, cutoff, "abandoned")
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "a part arrived since")
		s, err := db.ExpireUpload(f.system, old.ID, cutoff, "The upload was abandoned: no part arrived for 7 days.")
		require.NoError(t, err)
		require.Equal(t, old.StorageKey, s.StorageKey)
		v, err := f.subs.Submission(f.member, old.ID)
		require.NoError(t, err)
		require.Equal(t, models.SubmissionDiscarded, v.Status)
		require.Equal(t, "The upload was abandoned: no part arrived for 7 days.", v.Error)
		_, err = db.ExpireUpload(f.system, old.ID, cutoff, "The upload was abandoned: no part arrived for 7 days.")
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
	})
}

// TestSubmissions_SubmissionEvents: a submission's audit trail says who did what
// and when, folds a run of parts into one line, shows client addresses to
// administrators only, and is hidden from everyone who may not see the
// submission.
func TestSubmissions_SubmissionEvents(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newSubmissionFixture(t, db)
		member := models.WithActor(f.member, func() models.Actor { a := models.ActorFrom(f.member); a.IP = "192.0.2.7"; return a }())
		s := f.create(t, member, f.request(nil))
		require.NoError(t, db.SetSubmissionUpload(f.system, s.ID, "upload-1"))
		for n := 1; n <= 3; n++ {
			require.NoError(t, db.RecordSubmissionPart(member, s.ID, models.SubmissionPart{Number: n, Size: 5 << 20, MD5: "00"}))
		}
		require.NoError(t, f.subs.DiscardSubmission(member, s.ID))

		events, err := f.subs.SubmissionEvents(f.member, s.ID)
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

		events, err = f.subs.SubmissionEvents(f.admin, s.ID)
		require.NoError(t, err)
		require.Equal(t, "192.0.2.7", events[0].IP)

		_, err = f.subs.SubmissionEvents(f.other, s.ID)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		_, err = f.subs.SubmissionEvents(f.anon, s.ID)
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
	})
}
