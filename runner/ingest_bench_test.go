package runner_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"proctor/bundle/bundletest"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/runner"
	"proctor/sandbox"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/artifact"
	"proctor/vault"
)

// ingestChildEnv makes the test binary run one measured ingest (or the
// baseline copy) in a process of its own, so that its peak memory is the
// ingest's alone: TestMain hands over to ingestBenchChild.
const ingestChildEnv = "PROCTOR_INGEST_BENCH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(ingestChildEnv); spec != "" {
		os.Exit(ingestBenchChild(spec))
	}
	os.Exit(m.Run())
}

// BenchmarkIngest measures the submission portal on a synthetic Proctor
// trajectory bundle of about 500 MB (PROCTOR_BENCH_BUNDLE_MB changes it) for
// the sandbox benchmark: 27 tasks, each with a multi-megabyte HAR and
// 1280×720 JPEG screenshots. Each child process starts with an empty SQLite
// database and local artifact store, uploads the bundle in parts, then
//
//   - validate: reads it once, hashing and inspecting every byte (each
//     screenshot checked by header and structure) and storing every
//     screenshot and HAR as it is read, then checks it;
//   - ingest:   creates the run, its attempts and steps from what the
//     validation left, pointing at the files stored;
//
// against the baseline of copying the same bytes into the same store, in
// the same run. Reported: MB/s of each, their ratio to the copy, and the
// peak resident memory of the ingesting process and of the copying one.
func BenchmarkIngest(b *testing.B) {
	mb := 500
	if v := os.Getenv("PROCTOR_BENCH_BUNDLE_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("PROCTOR_BENCH_BUNDLE_MB=%q: want a positive number of megabytes", v)
		}
		mb = n
	}
	dir := b.TempDir()
	path := writeBenchBundle(b, filepath.Join(dir, "bundle.zip"), int64(mb)<<20)
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	size := float64(info.Size())
	var copySec, validateSec, ingestSec, copyRSS, ingestRSS float64
	b.ResetTimer()
	for i := range b.N {
		copyRes := runIngestChild(b, "copy", path, filepath.Join(dir, fmt.Sprintf("copy-%d", i)))
		ingestRes := runIngestChild(b, "ingest", path, filepath.Join(dir, fmt.Sprintf("ingest-%d", i)))
		copySec += copyRes.Copy
		validateSec += ingestRes.Validate
		ingestSec += ingestRes.Ingest
		copyRSS = max(copyRSS, copyRes.PeakRSS)
		ingestRSS = max(ingestRSS, ingestRes.PeakRSS)
	}
	b.StopTimer()
	n := float64(b.N)
	mbps := func(sec float64) float64 { return size / (1 << 20) / (sec / n) }
	b.ReportMetric(size/(1<<20), "bundle-MB")
	b.ReportMetric(mbps(copySec), "copy-MB/s")
	b.ReportMetric(mbps(validateSec), "validate-MB/s")
	b.ReportMetric(mbps(ingestSec), "ingest-MB/s")
	b.ReportMetric(mbps(validateSec+ingestSec), "total-MB/s")
	b.ReportMetric(ingestSec/copySec, "ingest-x-copy")
	b.ReportMetric((validateSec+ingestSec)/copySec, "total-x-copy")
	b.ReportMetric(ingestRSS, "ingest-peak-MB")
	b.ReportMetric(copyRSS, "copy-peak-MB")
}

// ingestResult is what a child reports: seconds per phase, peak memory.
type ingestResult struct {
	Copy     float64 `json:"copy"`
	Validate float64 `json:"validate"`
	Ingest   float64 `json:"ingest"`
	PeakRSS  float64 `json:"-"` // MiB, from the child's resource usage
}

func runIngestChild(b *testing.B, mode, bundlePath, workDir string) ingestResult {
	b.Helper()
	if err := os.MkdirAll(workDir, 0o750); err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(workDir)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ingestChildEnv+"="+strings.Join([]string{mode, bundlePath, workDir}, "\n"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s child: %v\n%s", mode, err, stderr.String())
	}
	var res ingestResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		b.Fatalf("%s child answered %q: %v\n%s", mode, stdout.String(), err, stderr.String())
	}
	if usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.PeakRSS = float64(usage.Maxrss) / 1024 // Linux reports KiB
	}
	return res
}

// ingestBenchChild runs in the child process: spec is mode, bundle path and
// work folder. It prints an ingestResult as JSON and returns the exit code.
func ingestBenchChild(spec string) int {
	parts := strings.Split(spec, "\n")
	if len(parts) != 3 {
		fmt.Fprintf(os.Stderr, "%s: want mode, bundle and folder\n", ingestChildEnv)
		return 2
	}
	res, err := measureIngest(parts[0], parts[1], parts[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

func measureIngest(mode, bundlePath, dir string) (ingestResult, error) {
	ctx := context.Background()
	var res ingestResult
	signer := artifact.NewURLSigner([]byte(strings.Repeat("s", 32)))
	store, err := artifact.NewLocal(filepath.Join(dir, "artifacts"), signer, "")
	if err != nil {
		return res, err
	}
	defer store.Close()
	f, err := os.Open(bundlePath)
	if err != nil {
		return res, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return res, err
	}
	if mode == "copy" {
		start := time.Now()
		if err := store.Put(ctx, "copies/bundle.zip", f, info.Size(), ""); err != nil {
			return res, err
		}
		res.Copy = time.Since(start).Seconds()
		return res, nil
	}

	db, err := storage.Open(ctx, storage.DatabaseLocation{Dialect: "sqlite", Path: filepath.Join(dir, "proctor.db")})
	if err != nil {
		return res, err
	}
	defer db.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := db.Migrate(ctx, quiet); err != nil {
		return res, err
	}
	member, err := benchTeam(ctx, db)
	if err != nil {
		return res, err
	}
	r, err := runner.New(runner.Config{Evaluators: evaltest.Registry(),
		DB: db, Artifacts: store,
		AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
		Options:     runner.Options{Episodes: 1, Submissions: runner.SubmissionOptions{TempDir: dir}},
		Logger:      quiet,
	})
	if err != nil {
		return res, err
	}
	if err := r.Start(ctx); err != nil {
		return res, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.Stop(stopCtx)
	}()

	svc := service.NewSubmissions(db, store, r.Jobs(), service.SubmissionOptions{Limits: r.SubmissionLimits()})
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return res, err
	}
	sub, _, err := svc.CreateSubmission(member, models.SubmissionRequest{
		Agent: "bench/navigator", Benchmark: sandbox.Slug, Filename: "bundle.zip",
		Size: info.Size(), SHA256: hex.EncodeToString(h.Sum(nil)),
	})
	if err != nil {
		return res, err
	}
	for n := 1; n <= sub.PartsTotal(); n++ {
		length := sub.PartLength(n)
		part := io.NewSectionReader(f, int64(n-1)*sub.PartSize, length)
		if _, err := svc.PutSubmissionPart(member, sub.ID, n, part, length, nil); err != nil {
			return res, err
		}
	}
	start := time.Now()
	if _, err := svc.CompleteSubmission(member, sub.ID); err != nil {
		return res, err
	}
	if _, err := waitSubmission(member, svc, sub.ID, models.SubmissionValidated); err != nil {
		return res, err
	}
	res.Validate = time.Since(start).Seconds()
	start = time.Now()
	if _, err := svc.IngestSubmission(member, sub.ID); err != nil {
		return res, err
	}
	if _, err := waitSubmission(member, svc, sub.ID, models.SubmissionIngested); err != nil {
		return res, err
	}
	res.Ingest = time.Since(start).Seconds()
	return res, nil
}

// benchTeam imports the sandbox benchmark and makes a team with an
// upload-only agent; it returns the member's context.
func benchTeam(ctx context.Context, db *storage.DB) (context.Context, error) {
	v, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	if err != nil {
		return nil, err
	}
	db.UseAgentSecrets(v)
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(sandbox.Benchmark()), nil)
	if err != nil {
		return nil, err
	}
	if _, err := db.ImportBenchmark(models.WithActor(ctx, models.SystemActor()), sandbox.Slug, ds, "benchmark.jsonl", 0); err != nil {
		return nil, err
	}
	u, err := db.CreateUser(ctx, "bench@example.org", "bench", "correct horse battery", false)
	if err != nil {
		return nil, err
	}
	member := models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email, Name: u.Name})
	if _, err := servicetest.Teams(db).CreateTeam(member, "Bench", "bench", ""); err != nil {
		return nil, err
	}
	return member, servicetest.CreateAgent(db, member, "bench", &models.Agent{Name: "Navigator", Model: "bench-model", Kind: models.AgentUpload}, nil)
}

// waitSubmission polls until the submission reaches want, or fails when it
// ends elsewhere.
func waitSubmission(ctx context.Context, r *service.Submissions, id int64, want string) (*models.SubmissionView, error) {
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		v, err := r.Submission(ctx, id)
		if err != nil {
			return nil, err
		}
		switch {
		case v.Status == want:
			return v, nil
		case models.SubmissionFinished(v.Status):
			return nil, fmt.Errorf("submission %d ended %s: %s", id, v.Status, v.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("submission %d did not reach %s in 30 minutes", id, want)
}

// writeBenchBundle writes a Proctor trajectory bundle of about size bytes
// for the sandbox benchmark: every task gets 40 screenshots (a few distinct
// 1280×720 JPEGs of noise, which do not compress) and a HAR filling the rest.
func writeBenchBundle(b *testing.B, path string, size int64) string {
	b.Helper()
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(sandbox.Benchmark()), nil)
	if err != nil {
		b.Fatal(err)
	}
	shots := make([][]byte, 4)
	for i := range shots {
		shots[i] = noiseJPEG(1280, 720, uint64(i))
	}
	const steps = 40
	perTask := size / int64(len(ds.Tasks))
	// The HAR's text deflates to about a third of its size; the JPEGs not at all.
	harSize := max((perTask-int64(steps*len(shots[0])))*3, 1<<20)
	manifest := bundletest.ProctorManifest(sandbox.Slug, models.SubsetFull)
	var tasks []bundletest.ProctorTask
	var extra []bundletest.Entry
	for _, t := range ds.Tasks {
		var lines strings.Builder
		for i := range steps {
			shot := fmt.Sprintf("screenshots/%04d.jpg", i)
			extra = append(extra, bundletest.Entry{Name: "tasks/" + t.ExternalID + "/" + shot, Body: shots[i%len(shots)], Store: true})
			lines.WriteString(bundletest.ProctorStepLine(i, shot) + "\n")
		}
		extra = append(extra, bundletest.Entry{Name: "tasks/" + t.ExternalID + "/network.har", Open: bundletest.LargeHAR(harSize)})
		tasks = append(tasks, bundletest.ProctorTask{ID: t.ExternalID, StepsJSONL: lines.String()})
	}
	entries := append(bundletest.ProctorEntries(manifest, tasks...), extra...)
	return bundletest.Write(b, path, bundletest.Zip, entries)
}

// noiseJPEG is a width×height JPEG of random pixels: about as large as a
// busy page's screenshot, and incompressible.
func noiseJPEG(w, h int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint8(rng.UintN(256))
			img.Set(x, y, color.RGBA{v, uint8(x), uint8(y), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
