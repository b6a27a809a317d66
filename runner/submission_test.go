package runner_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"proctor/bundle/bundletest"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/runner"
	"proctor/sandbox"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// portal is the submission portal end to end: a database with the sandbox
// benchmark, team lab (a member, an upload-only agent "navigator"), team
// other (an outsider), an administrator, an artifact store and a runner
// working the queue. No browser is needed: uploaded runs are only evaluated.
type portal struct {
	db        *storage.DB
	store     artifact.Store
	dir       string // the local store's folder; "" on S3
	runner    *runner.Runner
	svc       *service.Submissions
	member    context.Context
	outsider  context.Context
	admin     context.Context
	system    context.Context
	partBytes int64
}

// portalStore opens an empty artifact store and tells its local folder.
type portalStore struct {
	name string
	open func(t *testing.T) (artifact.Store, string)
}

func portalStores() []portalStore {
	return []portalStore{{"local", openLocalStore}, {"s3", openS3Store}}
}

func openLocalStore(t *testing.T) (artifact.Store, string) {
	dir := filepath.Join(t.TempDir(), "artifacts")
	s, err := artifact.NewLocal(dir, artifact.NewURLSigner([]byte(strings.Repeat("s", 32))), "http://proctor.test")
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// openS3Store makes a bucket of its own on the test S3 server, emptied and
// removed (unfinished uploads included) when the test ends.
func openS3Store(t *testing.T) (artifact.Store, string) {
	endpoint, access, secret := os.Getenv("PROCTOR_TEST_S3_ENDPOINT"), os.Getenv("PROCTOR_TEST_S3_ACCESS_KEY"), os.Getenv("PROCTOR_TEST_S3_SECRET_KEY")
	testenv.SkipUnlessAvailable(t, "s3", endpoint != "" && access != "" && secret != "",
		"PROCTOR_TEST_S3_ENDPOINT, _ACCESS_KEY or _SECRET_KEY not set: S3 submissions need a real S3 server (make test starts versitygw)")
	var b [6]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	bucket := "proctor-sub-" + hex.EncodeToString(b[:])
	s, err := artifact.NewS3(t.Context(), artifact.S3Config{Endpoint: endpoint, AccessKey: access, SecretKey: secret, Bucket: bucket})
	require.NoError(t, err)
	require.NoError(t, s.EnsureBucket(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), BucketLookup: minio.BucketLookupPath})
		if err != nil {
			t.Logf("remove bucket %s: %v", bucket, err)
			return
		}
		for up := range c.ListIncompleteUploads(ctx, bucket, "", true) {
			if up.Err == nil {
				_ = c.RemoveIncompleteUpload(ctx, bucket, up.Key)
			}
		}
		for obj := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			if obj.Err == nil {
				_ = c.RemoveObject(ctx, bucket, obj.Key, minio.RemoveObjectOptions{})
			}
		}
		if err := c.RemoveBucket(ctx, bucket); err != nil {
			t.Logf("remove bucket %s: %v", bucket, err)
		}
	})
	return s, ""
}

// portalOptions adjust a portal before its runner starts.
type portalOptions struct {
	submissions runner.SubmissionOptions
	wrap        func(artifact.Store) artifact.Store
	rescueAfter time.Duration       // the queue's rescue delay (and so the jobs' time limit); 0 = the default
	judges      runner.JudgeFactory // an LLM judge for every benchmark; nil for none
}

// testLimits are bundletest's limits (every hostile archive breaks them).
func testLimits() runner.SubmissionOptions {
	return runner.SubmissionOptions{PartBytes: 64 << 10, Limits: bundletest.Limits()}
}

// forEachPortal runs fn on SQLite and PostgreSQL, each with the local store
// and with S3.
func forEachPortal(t *testing.T, opts portalOptions, fn func(t *testing.T, p *portal)) {
	for _, d := range storagetest.Drivers() {
		for _, s := range portalStores() {
			t.Run(d.Name+"/"+s.name, func(t *testing.T) {
				t.Parallel()
				fn(t, newPortal(t, d.Open(t), s, opts))
			})
		}
	}
}

func newPortal(t *testing.T, db *storage.DB, ps portalStore, opts portalOptions) *portal {
	t.Helper()
	ctx := context.Background()
	system := models.WithActor(ctx, models.SystemActor())
	v, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(v)
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(sandbox.Benchmark()), nil)
	require.NoError(t, err)
	_, err = db.ImportBenchmark(system, sandbox.Slug, ds, "benchmark.jsonl", 0)
	require.NoError(t, err)

	user := func(email string, admin bool) context.Context {
		u, err := db.CreateUser(ctx, email, strings.Split(email, "@")[0], "correct horse battery", admin)
		require.NoError(t, err)
		return models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email, Name: u.Name, IsAdmin: admin})
	}
	p := &portal{db: db, member: user("member@portal.test", false), outsider: user("outsider@portal.test", false),
		admin: user("admin@portal.test", true), system: system}
	_, err = servicetest.Teams(db).CreateTeam(p.member, "Lab", "lab", "")
	require.NoError(t, err)
	require.NoError(t, servicetest.CreateAgent(db, p.member, "lab", &models.Agent{Name: "Navigator", Model: "local-model", Kind: models.AgentUpload}, nil))
	_, err = servicetest.Teams(db).CreateTeam(p.outsider, "Other", "other", "")
	require.NoError(t, err)

	store, dir := ps.open(t)
	p.dir = dir
	if opts.wrap != nil {
		store = opts.wrap(store)
	}
	p.store = store
	sub := opts.submissions
	if sub == (runner.SubmissionOptions{}) {
		sub = testLimits()
	}
	if ps.name == "s3" && sub.PartBytes < 5<<20 {
		sub.PartBytes = 5 << 20 // S3 takes no smaller part but the last
	}
	p.partBytes = sub.PartBytes
	r, err := runner.New(runner.Config{Evaluators: evaltest.Registry(),
		DB: db, Artifacts: store,
		AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
		Options:     runner.Options{Episodes: 1, Submissions: sub, RescueAfter: opts.rescueAfter},
		Judges:      opts.judges,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, r.Stop(stopCtx))
	})
	p.runner = r
	p.svc = service.NewSubmissions(db, store, r.Jobs(), service.SubmissionOptions{
		DailyQuota: sub.DailyQuota, PartBytes: sub.PartBytes, Limits: r.SubmissionLimits()})
	return p
}

// importWebArenaVerified imports the real WebArena-Verified dataset (812
// tasks) from the shared data folder.
func (p *portal) importWebArenaVerified(t *testing.T) {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.SharedDataDir(t), "webarena-verified", "webarena-verified.json"))
	require.NoError(t, err)
	defer f.Close()
	ds, err := importer.Parse(evaltest.Registry(), models.FormatWebArenaVerified, f, nil)
	require.NoError(t, err)
	_, err = p.db.ImportBenchmark(p.system, "webarena-verified", ds, "webarena-verified.json", 0)
	require.NoError(t, err)
}

// bundleFile is a bundle on disk with its bytes, size and SHA-256.
type bundleFile struct {
	path string
	data []byte
	size int64
	sum  string
}

func fileOf(t *testing.T, path string) bundleFile {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return bundleFile{path: path, data: b, size: int64(len(b)), sum: hex.EncodeToString(sum[:])}
}

// chunk is part n (from 1) of the file cut in parts of size partBytes.
func (f bundleFile) chunk(t *testing.T, partBytes int64, n int) []byte {
	t.Helper()
	start := int64(n-1) * partBytes
	require.Less(t, start, f.size)
	end := min(start+partBytes, f.size)
	return f.data[start:end:end] // appending to a part never writes over the next
}

func md5Of(b []byte) []byte {
	sum := md5.Sum(b)
	return sum[:]
}

// request is a submission request for the navigator agent and a bundle file.
func request(benchmark, subset string, f bundleFile) models.SubmissionRequest {
	return models.SubmissionRequest{Agent: "lab/navigator", Benchmark: benchmark, Subset: subset,
		Filename: filepath.Base(f.path), Size: f.size, SHA256: f.sum}
}

// upload creates a submission and sends its parts the way an interrupted
// client does: last to first, part 1 first with wrong bytes (the client
// then sees its MD5 differ on the server and sends it again), then completes.
func (p *portal) upload(t *testing.T, ctx context.Context, f bundleFile, req models.SubmissionRequest) *models.SubmissionView {
	t.Helper()
	v, resumed, err := p.svc.CreateSubmission(ctx, req)
	require.NoError(t, err)
	require.False(t, resumed)
	require.Equal(t, models.SubmissionUploading, v.Status)
	require.Equal(t, p.partBytes, v.PartSize)
	total := v.PartsTotal()
	for n := total; n >= 1; n-- {
		body := f.chunk(t, v.PartSize, n)
		if n == 1 {
			wrong := bytes.Clone(body)
			wrong[len(wrong)/2] ^= 0xff
			_, err := p.svc.PutSubmissionPart(ctx, v.ID, n, bytes.NewReader(wrong), int64(len(wrong)), nil)
			require.NoError(t, err, "without Content-MD5 the server cannot tell")
			again, resumed, err := p.svc.CreateSubmission(ctx, req)
			require.NoError(t, err)
			require.True(t, resumed, "the same bundle resumes its upload")
			require.Equal(t, v.ID, again.ID)
			require.Len(t, again.Parts, total)
			require.Equal(t, 1, again.Parts[0].Number)
			require.NotEqual(t, hex.EncodeToString(md5Of(body)), again.Parts[0].MD5, "part 1 on the server does not match the file")
		}
		part, err := p.svc.PutSubmissionPart(ctx, v.ID, n, bytes.NewReader(body), int64(len(body)), md5Of(body))
		require.NoError(t, err)
		require.Equal(t, models.SubmissionPart{Number: n, Size: int64(len(body)), MD5: hex.EncodeToString(md5Of(body))}, *part)
	}
	v, err = p.svc.CompleteSubmission(ctx, v.ID)
	require.NoError(t, err)
	require.Contains(t, []string{models.SubmissionUploaded, models.SubmissionValidating, models.SubmissionValidated, models.SubmissionRefused}, v.Status)
	return v
}

// wait polls a submission until its status is one of want, failing at once
// when it reaches another final status.
func (p *portal) wait(t *testing.T, id int64, want ...string) *models.SubmissionView {
	t.Helper()
	var v *models.SubmissionView
	require.Eventually(t, func() bool {
		var err error
		v, err = p.svc.Submission(p.member, id)
		require.NoError(t, err)
		if slices.Contains(want, v.Status) {
			return true
		}
		require.False(t, models.SubmissionFinished(v.Status), "submission %d is %s (%s), not %v", id, v.Status, v.Error, want)
		return false
	}, time.Minute, 50*time.Millisecond, "submission %d never became %v", id, want)
	return v
}

// waitRun waits until a run reaches a final status and returns it.
func (p *portal) waitRun(t *testing.T, runID int64) models.Run {
	t.Helper()
	var run models.Run
	require.Eventually(t, func() bool {
		require.NoError(t, p.db.Gorm().First(&run, runID).Error)
		return run.Status == models.RunCompleted || run.Status == models.RunFailed || run.Status == models.RunCanceled
	}, testenv.Scaled(t, 2*time.Minute), 50*time.Millisecond, "run %d did not finish", runID)
	return run
}

// ingest uploads a bundle, waits for its report, ingests it and waits for
// the run to complete, then publishes it and waits for its leaderboard row.
func (p *portal) ingest(t *testing.T, f bundleFile, req models.SubmissionRequest) (*models.SubmissionView, models.Run) {
	t.Helper()
	v := p.upload(t, p.member, f, req)
	v = p.wait(t, v.ID, models.SubmissionValidated)
	require.NotNil(t, v.ParsedReport)
	require.Empty(t, v.ParsedReport.Blocking)
	require.Equal(t, f.sum, v.ParsedReport.SHA256)
	require.Equal(t, v.ProgressTotal, v.ProgressDone, "a finished validation shows a full bar")
	v, err := p.svc.IngestSubmission(p.member, v.ID)
	require.NoError(t, err)
	// The worker may have ingested the bundle before the answer was read.
	require.Contains(t, []string{models.SubmissionIngesting, models.SubmissionIngested}, v.Status)
	v = p.wait(t, v.ID, models.SubmissionIngested)
	require.NotNil(t, v.RunID)
	require.Positive(t, v.ProgressTotal)
	require.Equal(t, v.ProgressTotal, v.ProgressDone)
	run := p.waitRun(t, *v.RunID)
	require.Equal(t, models.RunCompleted, run.Status)
	require.Equal(t, models.OriginUploaded, run.Origin)

	_, err = servicetest.Moderation(p.db).VerifyRun(p.admin, run.ID)
	require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "an uploaded run is never verified before it is reproduced")
	_, err = servicetest.Moderation(p.db).PublishRun(p.member, run.ID)
	require.NoError(t, err)
	var slug string
	require.NoError(t, p.db.Gorm().Table("benchmarks").Where("id = ?", v.BenchmarkID).Pluck("slug", &slug).Error)
	require.Eventually(t, func() bool {
		lb, err := p.db.Leaderboard(context.Background(), slug, run.SubsetName, models.LeaderboardQuery{}, models.BenchmarkScope{})
		require.NoError(t, err)
		for _, row := range lb.Rows {
			if row.RunID == run.ID {
				require.Equal(t, models.OriginUploaded, row.Origin)
				return true
			}
		}
		return false
	}, time.Minute, 50*time.Millisecond, "run %d never reached its leaderboard", run.ID)
	return v, run
}

// attemptsByTask returns a run's attempts by external task id.
func (p *portal) attemptsByTask(t *testing.T, runID int64) map[string]models.Attempt {
	t.Helper()
	var attempts []models.Attempt
	require.NoError(t, p.db.Gorm().Preload("Task").Where("run_id = ?", runID).Find(&attempts).Error)
	out := map[string]models.Attempt{}
	for _, a := range attempts {
		out[a.Task.ExternalID] = a
	}
	return out
}

// requireEvaluated checks that an attempt from the bundle was graded, and
// that each of its steps' screenshots can be read from the store.
func (p *portal) requireEvaluated(t *testing.T, a models.Attempt, outcome string, steps int) {
	t.Helper()
	require.Equal(t, models.AttemptDone, a.Status, a.Task.ExternalID)
	require.Equal(t, outcome, a.Outcome, "task %s: %s %s", a.Task.ExternalID, a.ErrorClass, a.ErrorMessage)
	var evaluations int64
	require.NoError(t, p.db.Gorm().Model(&models.Evaluation{}).Where("attempt_id = ?", a.ID).Count(&evaluations).Error)
	require.Positive(t, evaluations, "task %s has a verdict", a.Task.ExternalID)
	tl, err := servicetest.Runs(p.db, 0).AttemptTimeline(p.member, a.ID)
	require.NoError(t, err)
	require.Len(t, tl.Steps, steps, a.Task.ExternalID)
	var st []models.Step
	require.NoError(t, p.db.Gorm().Where("attempt_id = ?", a.ID).Order("step_index").Find(&st).Error)
	for _, s := range st {
		if s.ScreenshotKey == "" {
			continue
		}
		require.True(t, strings.HasPrefix(s.ScreenshotKey, "submissions/"), s.ScreenshotKey)
		rc, info, err := p.store.Get(context.Background(), s.ScreenshotKey)
		require.NoError(t, err, "task %s step %d screenshot", a.Task.ExternalID, s.Index)
		head := make([]byte, 8)
		_, err = io.ReadFull(rc, head)
		rc.Close()
		require.NoError(t, err)
		require.Positive(t, info.Size)
		require.Contains(t, []string{"\x89PNG\r\n\x1a\n"}, string(head), "the screenshot's bytes are the bundle's")
	}
}

// requireAbsent checks an attempt the bundle did not attempt.
func requireAbsent(t *testing.T, a models.Attempt, message string) {
	t.Helper()
	require.Equal(t, models.AttemptDone, a.Status)
	require.Equal(t, models.OutcomeFailure, a.Outcome)
	require.Equal(t, models.ErrorClassAgent, a.ErrorClass)
	require.Equal(t, message, a.ErrorMessage)
}

// answer is a WebArena-Verified answer retrieving values.
func answer(values string) string {
	return `{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": ` + values + `, "error_details": null}`
}

// TestSubmission_Formats builds a bundle of each format on the fly (zip and
// tar.gz) and takes it from upload to the leaderboard, on both databases
// and both artifact stores.
func TestSubmission_Formats(t *testing.T) {
	t.Parallel()
	// Default limits, and parts small enough that a bundle takes several
	// (S3's are 5 MiB: the Proctor bundle's log makes it take three).
	forEachPortal(t, portalOptions{submissions: runner.SubmissionOptions{PartBytes: 256 << 10}}, func(t *testing.T, p *portal) {
		dir := t.TempDir()
		for _, kind := range []bundletest.Kind{bundletest.Zip, bundletest.TarGz} {
			ext := "." + string(kind)
			t.Run("WebArenaVerified"+ext, func(t *testing.T) {
				f := fileOf(t, bundletest.WebArenaVerified(t, filepath.Join(dir, "wav"+ext),
					bundletest.WAVTask{ID: "shop-keyboard-price", Response: answer("[79]")},
					bundletest.WAVTask{ID: "shop-last-order-total", Response: answer("[12]"), NoHAR: true},
					bundletest.WAVTask{ID: "forum-top-post", Missing: true},
				))
				v, run := p.ingest(t, f, request(sandbox.Slug, "", f))
				require.Equal(t, models.BundleWebArenaVerified, v.Format)
				rep := v.ParsedReport
				require.ElementsMatch(t, []string{"shop-keyboard-price", "shop-last-order-total"}, rep.TasksFound)
				require.Equal(t, []string{"forum-top-post"}, rep.TasksNotAttempted)
				attempts := p.attemptsByTask(t, run.ID)
				require.Len(t, attempts, run.TasksTotal)
				p.requireEvaluated(t, attempts["shop-keyboard-price"], models.OutcomeSuccess, 0)
				p.requireEvaluated(t, attempts["shop-last-order-total"], models.OutcomeFailure, 0)
				require.NotEmpty(t, attempts["shop-keyboard-price"].HARKey)
				_, err := p.store.Stat(context.Background(), attempts["shop-keyboard-price"].HARKey)
				require.NoError(t, err, "the network log is stored")
				require.Empty(t, attempts["shop-last-order-total"].HARKey)
				requireAbsent(t, attempts["forum-top-post"], "not attempted (marked .missing)")
				requireAbsent(t, attempts["data-max-pm25"], "absent from the bundle")
				require.Equal(t, 1, run.Successes)
			})
			t.Run("Proctor"+ext, func(t *testing.T) {
				m := bundletest.ProctorManifest(sandbox.Slug, "hard")
				f := fileOf(t, bundletest.Proctor(t, filepath.Join(dir, "proctor"+ext), m,
					bundletest.ProctorTask{ID: "shop-admin-biggest-order", Steps: 3, HAR: true,
						Answer: `{"type": "answer", "response": ` + answer(`[{"customer": "Mira Kovac", "total": 408}]`) + `}`},
					bundletest.ProctorTask{ID: "data-download-stations", Steps: 2, Answer: `{"type": "answer", "response": ` + answer("[5]") + `}`,
						Extra: []bundletest.Entry{{Name: "agent.log", Open: bundletest.Random(11<<20, 11)}}},
					bundletest.ProctorTask{ID: "shop-restock", Missing: true},
				))
				v, run := p.ingest(t, f, request(sandbox.Slug, "hard", f))
				require.Equal(t, models.BundleProctor, v.Format)
				require.Equal(t, "hard", run.SubsetName)
				require.Equal(t, 6, run.TasksTotal)
				require.Equal(t, 30, run.MaxSteps, "the manifest's budgets")
				require.Equal(t, 600, run.MaxEpisodeSeconds)
				var snap models.AgentSnapshot
				require.NoError(t, json.Unmarshal([]byte(run.AgentSnapshot), &snap))
				require.Equal(t, "gpt-4o", snap.Model, "the manifest's model")
				require.Equal(t, "browser-use 0.8", snap.Framework)
				attempts := p.attemptsByTask(t, run.ID)
				p.requireEvaluated(t, attempts["shop-admin-biggest-order"], models.OutcomeSuccess, 3)
				p.requireEvaluated(t, attempts["data-download-stations"], models.OutcomeFailure, 2)
				a := attempts["shop-admin-biggest-order"]
				require.Equal(t, 3, a.Steps)
				require.Equal(t, int64(300), a.TokensIn)
				require.NotEmpty(t, a.HARKey)
				requireAbsent(t, attempts["shop-restock"], "not attempted (marked .missing)")
				requireAbsent(t, attempts["multi-complaint-price"], "absent from the bundle")
			})
			t.Run("OnlineMind2Web"+ext, func(t *testing.T) {
				f := fileOf(t, bundletest.OnlineMind2Web(t, filepath.Join(dir, "om2w"+ext),
					bundletest.OM2WTask{ID: "shop-keyboard-price", Steps: 3, Final: "The keyboard costs $79.00."},
					bundletest.OM2WTask{ID: "forum-top-post", Steps: 1},
				))
				v, run := p.ingest(t, f, request(sandbox.Slug, "", f))
				require.Equal(t, models.BundleOnlineMind2Web, v.Format)
				attempts := p.attemptsByTask(t, run.ID)
				for _, task := range []string{"shop-keyboard-price", "forum-top-post"} {
					a := attempts[task]
					require.Equal(t, models.AttemptDone, a.Status)
					require.NotEmpty(t, a.Outcome, "task %s has a verdict", task)
				}
				require.Equal(t, models.OutcomeFailure, attempts["forum-top-post"].Outcome, "\"done\" is not the top post")
				p.requireEvaluated(t, attempts["forum-top-post"], models.OutcomeFailure, 1)
			})
			t.Run("AgentLab"+ext, func(t *testing.T) {
				f := fileOf(t, bundletest.AgentLab(t, filepath.Join(dir, "agentlab"+ext),
					bundletest.AgentLabTask{TaskName: "sandbox.shop-keyboard-price", Steps: 2, StepsInfo: true, Pickles: true},
					bundletest.AgentLabTask{TaskName: "sandbox.forum-top-post", Steps: 1},
				))
				v, run := p.ingest(t, f, request(sandbox.Slug, "", f))
				require.Equal(t, models.BundleAgentLab, v.Format)
				attempts := p.attemptsByTask(t, run.ID)
				for _, task := range []string{"shop-keyboard-price", "forum-top-post"} {
					a := attempts[task]
					require.Equal(t, models.AttemptDone, a.Status, task)
					require.Equal(t, models.OutcomeFailure, a.Outcome, "task %s: %s", task, a.ErrorMessage)
					require.Positive(t, a.Steps, task)
				}
				p.requireEvaluated(t, attempts["shop-keyboard-price"], models.OutcomeFailure, attempts["shop-keyboard-price"].Steps)
			})
		}
		require.Equal(t, int64(8), countSubmissionRuns(t, p.db), "one run per bundle")
	})
}

func countSubmissionRuns(t *testing.T, db *storage.DB) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.Gorm().Model(&models.Run{}).Where("origin = ?", models.OriginUploaded).Count(&n).Error)
	return n
}

// TestSubmission_WebArenaVerifiedDemo submits WebArena-Verified's own demo
// agent outputs against the real dataset: task 107 fails (the agent
// navigated instead of retrieving), task 108 succeeds (months normalised).
func TestSubmission_WebArenaVerifiedDemo(t *testing.T) {
	t.Parallel()
	demo := filepath.Join(testenv.SharedDataDir(t), "webarena-verified", "demo-outputs")
	// Default limits: 108's network log is larger than bundletest's.
	forEachPortal(t, portalOptions{submissions: runner.SubmissionOptions{PartBytes: 256 << 10}}, func(t *testing.T, p *portal) {
		p.importWebArenaVerified(t)
		var entries []bundletest.Entry
		for _, task := range []string{"107", "108"} {
			for _, name := range []string{"agent_response.json", "network.har"} {
				b, err := os.ReadFile(filepath.Join(demo, task, name))
				if errors.Is(err, fs.ErrNotExist) {
					continue // 107 recorded no network log
				}
				require.NoError(t, err)
				entries = append(entries, bundletest.Entry{Name: task + "/" + name, Body: b})
			}
		}
		path := bundletest.Write(t, filepath.Join(t.TempDir(), "demo.tar.gz"), bundletest.TarGz, bundletest.Wrap("demo", entries))
		f := fileOf(t, path)
		v, run := p.ingest(t, f, request("webarena-verified", "", f))
		require.Equal(t, models.BundleWebArenaVerified, v.Format)
		require.Equal(t, []string{"107", "108"}, v.ParsedReport.TasksFound)
		require.Equal(t, 812, run.TasksTotal)
		require.Equal(t, 812, run.TasksDone)
		require.Equal(t, 1, run.Successes)
		attempts := p.attemptsByTask(t, run.ID)
		p.requireEvaluated(t, attempts["107"], models.OutcomeFailure, 0)
		p.requireEvaluated(t, attempts["108"], models.OutcomeSuccess, 0)
		require.NotEmpty(t, attempts["108"].HARKey)
		requireAbsent(t, attempts["0"], "absent from the bundle")
	})
}

// requireNothingStored checks that nothing of a submission is left in the
// store or, for the local store, anywhere on disk (staged parts included).
func (p *portal) requireNothingStored(t *testing.T, id int64) {
	t.Helper()
	infos, err := p.store.List(context.Background(), models.SubmissionPrefix(id))
	require.NoError(t, err)
	require.Empty(t, infos, "nothing under submissions/%d/", id)
	if p.dir == "" {
		return
	}
	var left []string
	require.NoError(t, filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(p.dir, path)
		if !d.IsDir() && (strings.Contains(rel, fmt.Sprintf("submissions/%d/", id)) || strings.HasPrefix(rel, ".proctor-uploads/") || strings.HasPrefix(rel, ".proctor-tmp")) {
			left = append(left, rel)
		}
		return nil
	}))
	require.Empty(t, left, "files of submission %d left on disk", id)
}

// TestSubmission_Hostile uploads each hostile archive: every one is refused
// with its message, and nothing of it is left in the store, on disk or in
// the runs.
func TestSubmission_Hostile(t *testing.T) {
	t.Parallel()
	cases := bundletest.Hostile()
	forEachPortal(t, portalOptions{submissions: runner.SubmissionOptions{PartBytes: 16 << 20, Limits: bundletest.Limits()}}, func(t *testing.T, p *portal) {
		dir := t.TempDir()
		for i, c := range cases {
			caseDir := filepath.Join(dir, fmt.Sprint(i))
			require.NoError(t, os.MkdirAll(caseDir, 0o755))
			f := fileOf(t, c.Build(t, caseDir))
			req := request(sandbox.Slug, "", f)
			if !strings.HasSuffix(req.Filename, ".zip") && !strings.HasSuffix(req.Filename, ".tar.gz") {
				req.Filename += ".zip"
			}
			v, _, err := p.svc.CreateSubmission(p.member, req)
			switch {
			case f.size > bundletest.Limits().MaxBundleBytes:
				require.Equal(t, models.ETOOLARGE, models.ErrorCode(err), c.Name)
				continue // refused before a byte arrived
			case f.size == 0:
				require.Equal(t, models.EINVALID, models.ErrorCode(err), c.Name)
				require.Equal(t, "size", models.ErrorField(err), c.Name)
				continue
			}
			require.NoError(t, err, c.Name)
			body := f.chunk(t, v.PartSize, 1)
			_, err = p.svc.PutSubmissionPart(p.member, v.ID, 1, bytes.NewReader(body), int64(len(body)), md5Of(body))
			require.NoError(t, err, c.Name)
			_, err = p.svc.CompleteSubmission(p.member, v.ID)
			require.NoError(t, err, c.Name)
			v = p.wait(t, v.ID, models.SubmissionRefused)
			require.Contains(t, v.Error, c.Message, c.Name)
			p.requireNothingStored(t, v.ID)
			_, err = p.svc.IngestSubmission(p.member, v.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err), c.Name)
		}
		var runs, attempts int64
		require.NoError(t, p.db.Gorm().Model(&models.Run{}).Count(&runs).Error)
		require.NoError(t, p.db.Gorm().Model(&models.Attempt{}).Count(&attempts).Error)
		require.Zero(t, runs)
		require.Zero(t, attempts)
	})
}

// TestSubmission_BadUploads: each way an upload goes wrong gives a clear
// message and keeps nothing it should not.
func TestSubmission_BadUploads(t *testing.T) {
	t.Parallel()
	opts := portalOptions{
		submissions: runner.SubmissionOptions{DailyQuota: 9, PartBytes: 64 << 10, Limits: bundletest.Limits()},
	}
	forEachPortal(t, opts, func(t *testing.T, p *portal) {
		dir := t.TempDir()
		// Three parts on the local store, one on S3.
		proctorBundle := func(name string, m models.BundleManifest) bundleFile {
			return fileOf(t, bundletest.Proctor(t, filepath.Join(dir, name), m,
				bundletest.ProctorTask{ID: "shop-keyboard-price", Steps: 3, Extra: []bundletest.Entry{{Name: "notes.txt", Open: bundletest.Random(140<<10, 5)}}},
				bundletest.ProctorTask{ID: "forum-top-post", Steps: 2},
			))
		}
		good := proctorBundle("good.zip", bundletest.ProctorManifest(sandbox.Slug, "full"))

		t.Run("DeclaredSHA256Mismatch", func(t *testing.T) {
			req := request(sandbox.Slug, "", good)
			req.SHA256 = strings.Repeat("0", 64)
			v := p.upload(t, p.member, good, req)
			v = p.wait(t, v.ID, models.SubmissionRefused)
			require.Equal(t, fmt.Sprintf("the assembled bundle's SHA-256 is %s, but the upload declared %s: a part was corrupted or mixed up", good.sum, req.SHA256), v.Error)
			p.requireNothingStored(t, v.ID)
		})

		t.Run("PartChecks", func(t *testing.T) {
			req := request(sandbox.Slug, "", good)
			req.Filename = "parts.zip"
			req.SHA256 = ""
			v, _, err := p.svc.CreateSubmission(p.member, req)
			require.NoError(t, err)
			body := good.chunk(t, v.PartSize, 1)

			_, err = p.svc.PutSubmissionPart(p.member, v.ID, 1, bytes.NewReader(body), int64(len(body)), md5Of([]byte("other bytes")))
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "content_md5", models.ErrorField(err))
			require.Contains(t, models.ErrorMessage(err), "corrupted on the way")
			_, err = p.svc.PutSubmissionPart(p.member, v.ID, 1, bytes.NewReader(body[:10]), 10, nil)
			require.Equal(t, models.EINVALID, models.ErrorCode(err), "a part has exactly its length")
			_, err = p.svc.PutSubmissionPart(p.member, v.ID, 1, bytes.NewReader(append(body, 'x')), int64(len(body))+1, nil)
			require.Equal(t, models.ETOOLARGE, models.ErrorCode(err))
			_, err = p.svc.PutSubmissionPart(p.member, v.ID, 1, bytes.NewReader(body[:10]), int64(len(body)), nil)
			require.Equal(t, models.EINVALID, models.ErrorCode(err), "a body shorter than its Content-Length")
			_, err = p.svc.PutSubmissionPart(p.member, v.ID, v.PartsTotal()+1, bytes.NewReader(body), int64(len(body)), nil)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "part", models.ErrorField(err))
			_, err = p.svc.PutSubmissionPart(p.outsider, v.ID, 1, bytes.NewReader(body), int64(len(body)), nil)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "another team's upload does not exist")
			v, err = p.svc.Submission(p.member, v.ID)
			require.NoError(t, err)
			require.Empty(t, v.Parts, "a refused part is not stored")

			_, err = p.svc.CompleteSubmission(p.member, v.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			if v.PartsTotal() == 1 {
				require.Contains(t, models.ErrorMessage(err), "part 1 is missing")
			} else {
				require.Contains(t, models.ErrorMessage(err), fmt.Sprintf("%d parts are missing", v.PartsTotal()))
			}

			_, _, err = p.svc.SubmissionPartURL(p.member, v.ID, 1)
			if p.dir != "" {
				require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
				require.Contains(t, models.ErrorMessage(err), fmt.Sprintf("PUT part 1 to /api/v1/submissions/%d/parts/1 instead", v.ID))
				require.False(t, v.DirectUpload)
			} else {
				// On S3 the part goes straight to the store.
				require.NoError(t, err)
				require.True(t, v.DirectUpload)
				// A URL takes its part's length only: one byte more is refused.
				u, _, err := p.svc.SubmissionPartURL(p.member, v.ID, 1)
				require.NoError(t, err)
				longer := append(bytes.Clone(good.chunk(t, v.PartSize, 1)), 'x')
				httpReq, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(longer))
				require.NoError(t, err)
				if resp, err := http.DefaultClient.Do(httpReq); err == nil {
					resp.Body.Close()
					require.Equal(t, http.StatusForbidden, resp.StatusCode, "a part one byte longer than its URL allows")
				}
				v, err = p.svc.Submission(p.member, v.ID)
				require.NoError(t, err)
				require.Empty(t, v.Parts, "a part of the wrong size is not stored")
				for n := 1; n <= v.PartsTotal(); n++ {
					u, expires, err := p.svc.SubmissionPartURL(p.member, v.ID, n)
					require.NoError(t, err)
					require.True(t, expires.After(time.Now()))
					chunk := good.chunk(t, v.PartSize, n)
					httpReq, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(chunk))
					require.NoError(t, err)
					resp, err := http.DefaultClient.Do(httpReq)
					require.NoError(t, err)
					resp.Body.Close()
					require.Equal(t, http.StatusOK, resp.StatusCode)
				}
				v, err = p.svc.CompleteSubmission(p.member, v.ID)
				require.NoError(t, err)
				p.wait(t, v.ID, models.SubmissionValidated)
			}
			require.NoError(t, p.svc.DiscardSubmission(p.member, v.ID))
			p.requireNothingStored(t, v.ID)
			require.NoError(t, p.svc.DiscardSubmission(p.member, v.ID), "discarding again is harmless")
		})

		t.Run("WrongBenchmark", func(t *testing.T) {
			other := proctorBundle("other.tgz", bundletest.ProctorManifest("webarena-verified", "hard"))
			v := p.upload(t, p.member, other, request(sandbox.Slug, "", other))
			v = p.wait(t, v.ID, models.SubmissionValidated)
			require.NotEmpty(t, v.ParsedReport.Blocking, "a bundle for another benchmark blocks its ingest")
			_, err := p.svc.IngestSubmission(p.member, v.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "cannot be ingested")
			require.NoError(t, p.svc.DiscardSubmission(p.member, v.ID))
			p.requireNothingStored(t, v.ID)
		})

		t.Run("FailedIngestLeavesNoRun", func(t *testing.T) {
			v := p.upload(t, p.member, good, request(sandbox.Slug, "", good))
			p.wait(t, v.ID, models.SubmissionValidated)
			// The validation stored the run's files; one is lost before the ingest.
			ctx := context.Background()
			stored, err := p.store.List(ctx, models.SubmissionPrefix(v.ID)+"files/")
			require.NoError(t, err)
			require.NotEmpty(t, stored, "the validation stores the screenshots and network logs")
			require.NoError(t, p.store.Delete(ctx, stored[0].Key))
			_, err = p.svc.IngestSubmission(p.member, v.ID)
			require.NoError(t, err)
			v = p.wait(t, v.ID, models.SubmissionFailed)
			require.Equal(t, fmt.Sprintf("1 of the %d screenshots and network logs stored when the bundle was validated are missing or changed; submit the bundle again.", len(stored)), v.Error)
			require.Nil(t, v.RunID)
			require.Zero(t, countSubmissionRuns(t, p.db), "no half-made run")
			infos, err := p.store.List(ctx, models.SubmissionPrefix(v.ID)+"files/")
			require.NoError(t, err)
			require.Empty(t, infos, "the files stored by the validation are deleted")
			var audits int64
			require.NoError(t, p.db.Gorm().Model(&models.AuditEvent{}).Where("action = ? AND subject = ?", "submission.failed", fmt.Sprintf("submission %d", v.ID)).Count(&audits).Error)
			require.Equal(t, int64(1), audits)
		})

		t.Run("Duplicate", func(t *testing.T) {
			_, run := p.ingest(t, good, request(sandbox.Slug, "", good))
			_, _, err := p.svc.CreateSubmission(p.member, request(sandbox.Slug, "", good))
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), fmt.Sprintf("This bundle was already submitted as run %d on ", run.ID))
		})

		t.Run("OneShotForm", func(t *testing.T) {
			form := proctorBundle("form.zip", bundletest.ProctorManifest(sandbox.Slug, "full"))
			fh, err := os.Open(form.path)
			require.NoError(t, err)
			defer fh.Close()
			req := request(sandbox.Slug, "", form)
			req.Size, req.SHA256 = 0, ""
			v, err := p.svc.UploadSubmission(p.member, req, fh)
			require.NoError(t, err)
			v = p.wait(t, v.ID, models.SubmissionValidated)
			require.Equal(t, form.size, v.Size, "the size of what arrived")
			require.Equal(t, form.sum, v.SHA256, "the SHA-256 of what arrived")
			require.NoError(t, p.svc.DiscardSubmission(p.member, v.ID))

			req.Filename = "huge.zip"
			_, err = p.svc.UploadSubmission(p.member, req, bundletest.Random(bundletest.Limits().MaxBundleBytes+1, 9)())
			require.Equal(t, models.ETOOLARGE, models.ErrorCode(err))
			items, _, err := p.svc.ListSubmissions(p.member, models.SubmissionFilter{Status: models.SubmissionRefused})
			require.NoError(t, err)
			require.NotEmpty(t, items)
			p.requireNothingStored(t, items[0].ID)
		})

		t.Run("Quota", func(t *testing.T) {
			var used int64
			require.NoError(t, p.db.Gorm().Model(&models.Submission{}).Count(&used).Error)
			for i := used; i < 9; i++ {
				req := request(sandbox.Slug, "", good)
				req.SHA256, req.Filename = "", fmt.Sprintf("q%d.zip", i)
				_, _, err := p.svc.CreateSubmission(p.member, req)
				require.NoError(t, err)
			}
			req := request(sandbox.Slug, "", good)
			req.SHA256, req.Filename = "", "over.zip"
			_, _, err := p.svc.CreateSubmission(p.member, req)
			require.Equal(t, models.ERATELIMIT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "daily quota")
		})
	})
}

// TestSubmission_AbandonedUploads: an upload no part reached for a week is
// discarded by the queue with its parts.
func TestSubmission_AbandonedUploads(t *testing.T) {
	t.Parallel()
	forEachPortal(t, portalOptions{}, func(t *testing.T, p *portal) {
		f := fileOf(t, bundletest.WebArenaVerified(t, filepath.Join(t.TempDir(), "wav.zip"), bundletest.WAVTask{ID: "shop-keyboard-price"}))
		v, _, err := p.svc.CreateSubmission(p.member, request(sandbox.Slug, "", f))
		require.NoError(t, err)
		body := f.chunk(t, v.PartSize, 1)
		_, err = p.svc.PutSubmissionPart(p.member, v.ID, 1, bytes.NewReader(body), int64(len(body)), nil)
		require.NoError(t, err)
		n, err := runner.ExpireUploadsBefore(p.runner, p.system, time.Now().Add(-time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "a part arrived within the hour")
		n, err = runner.ExpireUploadsBefore(p.runner, p.system, time.Now().Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		v, err = p.svc.Submission(p.member, v.ID)
		require.NoError(t, err)
		require.Equal(t, models.SubmissionDiscarded, v.Status)
		require.Contains(t, v.Error, "The upload was abandoned")
		p.requireNothingStored(t, v.ID)
	})
}

// TestSubmission_DiscardDuringStreamedUpload discards a submission while the
// upload form still streams its bundle: the discard finds nothing to delete
// yet, so the upload deletes the bundle once it has arrived.
func TestSubmission_DiscardDuringStreamedUpload(t *testing.T) {
	t.Parallel()
	forEachPortal(t, portalOptions{}, func(t *testing.T, p *portal) {
		body, send := io.Pipe()
		type result struct {
			v   *models.SubmissionView
			err error
		}
		done := make(chan result, 1)
		go func() {
			v, err := p.svc.UploadSubmission(p.member, models.SubmissionRequest{Agent: "lab/navigator", Benchmark: sandbox.Slug, Filename: "streamed.zip"}, body)
			done <- result{v, err}
		}()
		_, err := send.Write(bytes.Repeat([]byte("a"), 1<<10))
		require.NoError(t, err)
		var id int64
		require.Eventually(t, func() bool {
			items, _, err := p.svc.ListSubmissions(p.member, models.SubmissionFilter{Status: models.SubmissionUploading})
			require.NoError(t, err)
			if len(items) == 0 {
				return false
			}
			id = items[0].ID
			return true
		}, 10*time.Second, 10*time.Millisecond, "the streamed upload never started")
		require.NoError(t, p.svc.DiscardSubmission(p.member, id))

		_, err = send.Write(bytes.Repeat([]byte("b"), 1<<10))
		require.NoError(t, err)
		require.NoError(t, send.Close())
		res := <-done
		require.Nil(t, res.v)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(res.err), "%v", res.err)
		require.Contains(t, models.ErrorMessage(res.err), "it was discarded")
		v, err := p.svc.Submission(p.member, id)
		require.NoError(t, err)
		require.Equal(t, models.SubmissionDiscarded, v.Status)
		p.requireNothingStored(t, id)
	})
}

// stallingStore makes reads and writes of the keys under chosen prefixes
// last until their context ends, as a store too slow for a job's time limit.
type stallingStore struct {
	artifact.Store
	mu       sync.Mutex
	prefixes []string
}

func (s *stallingStore) stall(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prefixes = append(s.prefixes, prefix)
}

func (s *stallingStore) stalled(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.prefixes, func(p string) bool { return strings.HasPrefix(key, p) })
}

func (s *stallingStore) Get(ctx context.Context, key string) (io.ReadCloser, artifact.Info, error) {
	if s.stalled(key) {
		<-ctx.Done()
		return nil, artifact.Info{}, ctx.Err()
	}
	return s.Store.Get(ctx, key)
}

func (s *stallingStore) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if s.stalled(key) {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.Put(ctx, key, r, size, contentType)
}

// TestSubmission_LastTryOutOfTime: a validation or an ingest whose every try
// runs out of time ends refused or failed on its last try, with its files
// deleted, instead of staying validating or ingesting for ever.
func TestSubmission_LastTryOutOfTime(t *testing.T) {
	t.Parallel()
	opts := portalOptions{
		rescueAfter: 2 * time.Second, // tries of 1.5 s
		wrap:        func(s artifact.Store) artifact.Store { return &stallingStore{Store: s} },
	}
	forEachPortal(t, opts, func(t *testing.T, p *portal) {
		store := p.store.(*stallingStore)
		dir := t.TempDir()
		// waitFinal waits through the three tries and River's backoff between
		// them (1 s, then 16 s).
		waitFinal := func(t *testing.T, id int64, want string) *models.SubmissionView {
			t.Helper()
			var v *models.SubmissionView
			require.Eventually(t, func() bool {
				var err error
				v, err = p.svc.Submission(p.member, id)
				require.NoError(t, err)
				return models.SubmissionFinished(v.Status)
			}, testenv.Scaled(t, 2*time.Minute), 100*time.Millisecond, "submission %d never finished", id)
			require.Equal(t, want, v.Status, v.Error)
			return v
		}

		// One bundle waits to be validated and another, validated, to be
		// ingested; then the store stalls on each, and both jobs run.
		refuse := fileOf(t, bundletest.WebArenaVerified(t, filepath.Join(dir, "validate.zip"), bundletest.WAVTask{ID: "forum-top-post", Response: answer("[1]")}))
		validating, _, err := p.svc.CreateSubmission(p.member, request(sandbox.Slug, "", refuse))
		require.NoError(t, err)
		for n := 1; n <= validating.PartsTotal(); n++ {
			body := refuse.chunk(t, validating.PartSize, n)
			_, err := p.svc.PutSubmissionPart(p.member, validating.ID, n, bytes.NewReader(body), int64(len(body)), nil)
			require.NoError(t, err)
		}
		fail := fileOf(t, bundletest.WebArenaVerified(t, filepath.Join(dir, "ingest.zip"), bundletest.WAVTask{ID: "shop-keyboard-price", Response: answer("[79]")}))
		ingesting := p.upload(t, p.member, fail, request(sandbox.Slug, "", fail))
		p.wait(t, ingesting.ID, models.SubmissionValidated)

		store.stall(validating.StorageKey)
		store.stall(models.SubmissionPrefix(ingesting.ID) + "ingest-plan.json") // what the ingest reads
		_, err = p.svc.CompleteSubmission(p.member, validating.ID)
		require.NoError(t, err)
		_, err = p.svc.IngestSubmission(p.member, ingesting.ID)
		require.NoError(t, err)

		v := waitFinal(t, validating.ID, models.SubmissionRefused)
		require.Contains(t, v.Error, "Validating the bundle took too long: its last try did not finish within the 1.5 seconds a try may take.")
		p.requireNothingStored(t, v.ID)

		v = waitFinal(t, ingesting.ID, models.SubmissionFailed)
		require.Contains(t, v.Error, "Ingesting the bundle took too long: its last try did not finish within the 1.5 seconds a try may take.")
		require.Nil(t, v.RunID)
		require.Zero(t, countSubmissionRuns(t, p.db))
		for _, dir := range []string{"tasks/", "files/"} {
			infos, err := p.store.List(context.Background(), models.SubmissionPrefix(v.ID)+dir)
			require.NoError(t, err)
			require.Empty(t, infos, "no task file is left")
		}
		again, resumed, err := p.svc.CreateSubmission(p.member, request(sandbox.Slug, "", fail))
		require.NoError(t, err, "the same bundle may be submitted again")
		require.False(t, resumed)
		require.NotEqual(t, v.ID, again.ID)
	})
}

// failingStore refuses to write keys containing failOn, whether written
// at once (Put) or left to be made durable later (PutUnsynced).
type failingStore struct {
	artifact.Store
	failOn string
	failed atomic.Int64
}

func (s *failingStore) fails(key string) error {
	if strings.Contains(key, s.failOn) {
		s.failed.Add(1)
		return fmt.Errorf("write %q: %w", key, syscall.ENOSPC)
	}
	return nil
}

func (s *failingStore) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := s.fails(key); err != nil {
		return err
	}
	return s.Store.Put(ctx, key, r, size, contentType)
}

// failingDeferredStore is a failingStore over a store that defers
// durability (the local one), so the validation takes its buffered path.
type failingDeferredStore struct{ *failingStore }

func (s failingDeferredStore) PutUnsynced(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := s.fails(key); err != nil {
		return err
	}
	return s.Store.(artifact.Deferred).PutUnsynced(ctx, key, r, size, contentType)
}

func (s failingDeferredStore) SyncKeys(ctx context.Context, keys []string) error {
	return s.Store.(artifact.Deferred).SyncKeys(ctx, keys)
}

// TestSubmission_StoreFailsWhileValidating: when the store refuses a
// screenshot while the bundle is read, every try fails, the last one refuses
// the submission saying so, and nothing of it is left.
func TestSubmission_StoreFailsWhileValidating(t *testing.T) {
	t.Parallel()
	opts := portalOptions{wrap: func(s artifact.Store) artifact.Store {
		f := &failingStore{Store: s, failOn: "/screenshots/0003"}
		if _, ok := s.(artifact.Deferred); ok {
			return failingDeferredStore{f}
		}
		return f
	}}
	forEachPortal(t, opts, func(t *testing.T, p *portal) {
		f := fileOf(t, bundletest.Proctor(t, filepath.Join(t.TempDir(), "shots.zip"), bundletest.ProctorManifest(sandbox.Slug, "full"),
			bundletest.ProctorTask{ID: "shop-keyboard-price", Steps: 6, HAR: true},
			bundletest.ProctorTask{ID: "forum-top-post", Steps: 2},
		))
		v := p.upload(t, p.member, f, request(sandbox.Slug, "", f))
		require.Eventually(t, func() bool {
			var err error
			v, err = p.svc.Submission(p.member, v.ID)
			require.NoError(t, err)
			return models.SubmissionFinished(v.Status)
		}, testenv.Scaled(t, 2*time.Minute), 100*time.Millisecond, "submission %d never finished", v.ID) // three tries, River's backoff between them
		require.Equal(t, models.SubmissionRefused, v.Status)
		require.Equal(t, "Storing the bundle's screenshots and network logs failed; submit it again later or ask an administrator.", v.Error)
		p.requireNothingStored(t, v.ID)
		var failing *failingStore
		switch s := p.store.(type) {
		case failingDeferredStore:
			failing = s.failingStore
		case *failingStore:
			failing = s
		}
		require.EqualValues(t, 3, failing.failed.Load(), "each of the three tries failed on the screenshot")
	})
}

// TestSubmission_LongArchivePath ingests a bundle whose files sit under a
// folder with a 300-byte name, longer than a file name may be: the files are
// stored under names of their own.
func TestSubmission_LongArchivePath(t *testing.T) {
	t.Parallel()
	forEachPortal(t, portalOptions{}, func(t *testing.T, p *portal) {
		entries := bundletest.Wrap(strings.Repeat("a", 300), bundletest.WebArenaVerifiedEntries(
			bundletest.WAVTask{ID: "shop-keyboard-price", Response: answer("[79]")},
		))
		f := fileOf(t, bundletest.Write(t, filepath.Join(t.TempDir(), "long.zip"), bundletest.Zip, entries))
		_, run := p.ingest(t, f, request(sandbox.Slug, "", f))
		a := p.attemptsByTask(t, run.ID)["shop-keyboard-price"]
		p.requireEvaluated(t, a, models.OutcomeSuccess, 0)
		require.NotEmpty(t, a.HARKey)
		for seg := range strings.SplitSeq(a.HARKey, "/") {
			require.LessOrEqual(t, len(seg), 200, "segment of %s", a.HARKey)
		}
		require.True(t, strings.HasSuffix(a.HARKey, ".har"), a.HARKey)
		info, err := p.store.Stat(context.Background(), a.HARKey)
		require.NoError(t, err, "the network log is stored")
		require.Positive(t, info.Size)
	})
}
