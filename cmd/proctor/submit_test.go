package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/api"
	"proctor/bundle/bundletest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/sandbox"
)

// hardTasks are the sandbox's hard subset.
func hardTasks() []string {
	return []string{"shop-admin-biggest-order", "shop-restock", "data-download-stations",
		"multi-recommended-to-cart", "multi-complaint-price", "multi-busiest-district-post"}
}

// hardBundle writes a WebArena-Verified submission of every hard task of the
// sandbox; padding adds an incompressible file of that many bytes to the
// first task (the reader keeps files it has no use for), so the upload takes
// several parts.
func hardBundle(t *testing.T, name string, padding int64) string {
	t.Helper()
	var tasks []bundletest.WAVTask
	for _, id := range hardTasks() {
		tasks = append(tasks, bundletest.WAVTask{ID: id})
	}
	if padding > 0 {
		tasks[0].Extra = []bundletest.Entry{{Name: "debug.bin", Open: bundletest.Random(padding, 11), Store: true}}
	}
	return bundletest.WebArenaVerified(t, filepath.Join(t.TempDir(), name), tasks...)
}

// partPath matches a part's upload through the API (PUT) and its presigned
// URL for a direct upload to S3 (GET …/url).
var partPath = regexp.MustCompile(`^/api/v1/submissions/\d+/parts/(\d+)(/url)?$`)

// flakyProxy stands between the CLI and the server. Armed with killAt, it
// drops the connection of the killAt-th part request and of every request
// after it, as a network that went down would, until restore. It records
// which parts were asked for and which the server answered.
type flakyProxy struct {
	url   string
	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	killAt   int
	onPart   func(n int) // called for each part request, before it is forwarded
	down     bool
	sent     []int // part numbers of every part request that reached the proxy
	answered []int // part numbers the server answered 200 for
	apiPuts  int   // parts sent through the API rather than to S3
}

func newFlakyProxy(t *testing.T, server string) *flakyProxy {
	t.Helper()
	target, err := url.Parse(server)
	require.NoError(t, err)
	p := &flakyProxy{proxy: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *flakyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	part := 0
	if m := partPath.FindStringSubmatch(r.URL.Path); m != nil && (r.Method == http.MethodPut) == (m[2] == "") {
		part, _ = strconv.Atoi(m[1])
	}
	p.mu.Lock()
	onPart := p.onPart
	if part > 0 {
		p.sent = append(p.sent, part)
		if r.Method == http.MethodPut {
			p.apiPuts++
		}
		if p.killAt > 0 && len(p.sent) == p.killAt {
			p.down = true
		}
	}
	down := p.down
	p.mu.Unlock()
	if part > 0 && onPart != nil {
		onPart(part)
	}
	if down {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	p.proxy.ServeHTTP(rec, r)
	if part > 0 && rec.status == http.StatusOK {
		p.mu.Lock()
		p.answered = append(p.answered, part)
		p.mu.Unlock()
	}
}

// arm makes the killAt-th part request from now on take the network down.
func (p *flakyProxy) arm(killAt int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killAt, p.down, p.sent, p.answered, p.apiPuts = killAt, false, nil, nil, 0
}

// proxyRecord is what one command asked of the proxy.
type proxyRecord struct {
	sent, answered []int // sorted part numbers
	apiPuts        int
}

// restore brings the network back and returns what the last command asked.
func (p *flakyProxy) restore() proxyRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec := proxyRecord{sent: slices.Sorted(slices.Values(p.sent)), answered: slices.Sorted(slices.Values(p.answered)), apiPuts: p.apiPuts}
	p.killAt, p.down, p.sent, p.answered, p.apiPuts, p.onPart = 0, false, nil, nil, 0, nil
	return rec
}

// withoutParts is 1…n without the parts held.
func withoutParts(n int, held []int) []int {
	var out []int
	for i := 1; i <= n; i++ {
		if !slices.Contains(held, i) {
			out = append(out, i)
		}
	}
	return out
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// corruptStagedPart replaces the recorded digest of a staged part of the
// server's local store, as a damaged disk would: the server then lists the
// part with an MD5 the local file's chunk does not have. A part sent once is
// recorded in "<n>.placed" (its size and digest: the part itself is written
// in place); one sent again in "<n>.md5".
func corruptStagedPart(t *testing.T, dataDir string, n int) {
	t.Helper()
	var found []string
	require.NoError(t, filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if !d.IsDir() && (name == fmt.Sprintf("%d.md5", n) || name == fmt.Sprintf("%d.placed", n)) &&
			strings.HasSuffix(filepath.Base(filepath.Dir(filepath.Dir(path))), "uploads") {
			found = append(found, path)
		}
		return nil
	}))
	require.Len(t, found, 1, "one staged upload holds part %d", n)
	record, err := os.ReadFile(found[0])
	require.NoError(t, err)
	zeros := strings.Repeat("0", 32)
	if size, _, ok := strings.Cut(string(record), " "); ok {
		zeros = size + " " + zeros
	}
	require.NoError(t, os.WriteFile(found[0], []byte(zeros), 0o644))
}

// TestSubmit_ResumesAfterInterruption uploads a bundle of five parts through
// a proxy whose network goes down at the third part: the command exits 9 and
// says how to resume; the same command then sends only the parts the server
// lacks (and one it holds corrupted), the bundle is validated and ingested,
// and `proctor runs wait` exits 0 once the run's evaluation completes.
func TestSubmit_ResumesAfterInterruption(t *testing.T) {
	t.Parallel()
	b := setupRemote(t, map[string]string{"PROCTOR_EPISODES": "1", "PROCTOR_SUBMISSION_PART_BYTES": "5MiB"})
	proxy := newFlakyProxy(t, b.server)
	path := hardBundle(t, "results.zip", 21<<20)
	info, err := os.Stat(path)
	require.NoError(t, err)
	parts := int((info.Size() + 5<<20 - 1) / (5 << 20))
	require.Equal(t, 5, parts)
	submit := func() (int, string, string) {
		return testEnv{"PROCTOR_SERVER": proxy.url, "PROCTOR_TOKEN": b.token}.run(t, "",
			"submit", "--benchmark", sandbox.Slug, "--subset", "hard", "--agent", "lab/uploader", "--parallel", "2", "--interval", "200ms", "--timeout", "2m", path)
	}

	proxy.arm(3)
	code, stdout, stderr := submit()
	require.Equal(t, exitInterrupted, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stderr, "run the same command again to resume")
	require.Contains(t, stderr, "submission 1 created: sending 22.0 MB in 5 parts")
	first := proxy.restore()
	stored := first.answered
	require.NotEmpty(t, stored, "the parts before the interruption arrived")
	require.Less(t, len(stored), parts, "the interruption left parts to send")
	require.Greater(t, len(first.sent), len(stored), "the dropped part was retried while the network was down")

	// A part the server holds turns out damaged: the resume sends it again.
	corruptStagedPart(t, b.env["PROCTOR_DATA_DIR"], stored[0])
	code, stdout, stderr = submit()
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	want := append([]int{stored[0]}, withoutParts(parts, stored)...)
	// Two parts are in flight at once, so they may arrive in either order. A
	// request of the interrupted command still in the proxy may arrive after
	// it exited, so the proxy's list is read as a set; that the resume sent
	// each part once, its own count says below.
	resent := slices.Compact(slices.Sorted(slices.Values(proxy.restore().sent)))
	require.ElementsMatch(t, want, resent, "the resume sends the missing parts and the damaged one")
	require.Contains(t, stderr, fmt.Sprintf("resuming submission 1: the server holds %d of %d parts\n"+
		"part %d on the server does not match your file: sending it again\n"+
		"sending %d parts", len(stored), parts, stored[0], len(want)))
	require.Contains(t, stdout, "submission 1 validated: WebArena-Verified submission")
	require.Contains(t, stdout, "tasks found:      6 of 6 in sandbox, subset hard")
	m := regexp.MustCompile(`run (\d+): (\S+)`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	require.Equal(t, proxy.url+"/runs/"+m[1], m[2])

	code, stdout, stderr = b.cli(t, "runs", "wait", m[1], "--timeout", "2m", "--interval", "200ms")
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "run "+m[1]+" completed")
	var run models.Run
	require.NoError(t, b.app.DB.Gorm().First(&run, m[1]).Error)
	require.Equal(t, models.OriginUploaded, run.Origin)
	require.Equal(t, 6, run.TasksDone)

	t.Run("SameBundleAgain", func(t *testing.T) {
		code, stdout, stderr := b.cli(t, "submit", "--benchmark", sandbox.Slug, "--subset", "hard", "--agent", "lab/uploader", path)
		requireOneLineError(t, exitConflict, "This bundle was already submitted as run "+m[1], code, stdout, stderr)
	})
}

// TestSubmit_DirectToS3 uploads the parts straight to S3 through presigned
// URLs, with the same interruption and resume: the API sees only the URL
// requests, never a part's bytes.
func TestSubmit_DirectToS3(t *testing.T) {
	t.Parallel()
	endpoint := os.Getenv("PROCTOR_TEST_S3_ENDPOINT")
	testenv.SkipUnlessAvailable(t, "s3", endpoint != "", "PROCTOR_TEST_S3_ENDPOINT not set: direct uploads need an S3 server")
	b := setupRemote(t, map[string]string{
		"PROCTOR_EPISODES": "1", "PROCTOR_SUBMISSION_PART_BYTES": "5MiB",
		"PROCTOR_ARTIFACTS_URL": "s3://proctor-" + randomName(t) + "/artifacts", "PROCTOR_S3_ENDPOINT": endpoint,
		"PROCTOR_S3_ACCESS_KEY": os.Getenv("PROCTOR_TEST_S3_ACCESS_KEY"), "PROCTOR_S3_SECRET_KEY": os.Getenv("PROCTOR_TEST_S3_SECRET_KEY"),
		"PROCTOR_S3_USE_SSL": "false",
	})
	proxy := newFlakyProxy(t, b.server)
	path := hardBundle(t, "results.tar.gz", 16<<20)
	info, err := os.Stat(path)
	require.NoError(t, err)
	parts := int((info.Size() + 5<<20 - 1) / (5 << 20))
	require.Equal(t, 4, parts)
	submit := func(extra ...string) (int, string, string) {
		return testEnv{"PROCTOR_SERVER": proxy.url, "PROCTOR_TOKEN": b.token}.run(t, "",
			append([]string{"submit", "--benchmark", sandbox.Slug, "--subset", "hard", "--agent", "lab/uploader", "--parallel", "2",
				"--interval", "200ms", "--timeout", "2m", path}, extra...)...)
	}

	proxy.arm(3)
	code, stdout, stderr := submit()
	require.Equal(t, exitInterrupted, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stderr, "run the same command again to resume")
	first := proxy.restore()
	require.Zero(t, first.apiPuts, "parts go to S3, not through the API")
	require.NotEmpty(t, first.answered)

	// This time the command also waits for the evaluation.
	code, stdout, stderr = submit("--wait")
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	second := proxy.restore()
	require.Zero(t, second.apiPuts)
	// The proxy sees the part URL requests, not the uploads to S3; net/http
	// sends a request again on a fresh connection when the kept-alive one it
	// picked was found closed before anything was written, so the parts asked
	// for are compared as a set.
	require.Equal(t, withoutParts(parts, first.answered), slices.Compact(second.sent), "only the parts S3 lacks are sent again")
	require.Contains(t, stdout, "tasks found:      6 of 6")
	require.Regexp(t, `run \d+: `+regexp.QuoteMeta(proxy.url)+`/runs/\d+\nrun \d+ completed: 6 of 6 done`, stdout)
}

// TestSubmit_Outcomes covers what a CI script meets besides a clean upload:
// a report without the ingest, a refused token, an unknown benchmark, a
// hostile bundle and command-line mistakes, each with its exit code.
func TestSubmit_Outcomes(t *testing.T) {
	t.Parallel()
	b := setupRemote(t, map[string]string{"PROCTOR_EPISODES": "1"})
	dir := t.TempDir()

	t.Run("NoIngestJSON", func(t *testing.T) {
		path := hardBundle(t, "results.tar.gz", 0)
		code, stdout, stderr := b.cli(t, "submit", "--benchmark", sandbox.Slug, "--subset", "hard", "--agent", "lab/uploader",
			"--no-ingest", "--json", "--interval", "200ms", "--timeout", "2m", path)
		require.Equal(t, exitOK, code, stderr)
		var got struct {
			Submission models.SubmissionView `json:"submission"` // the server's view, printed as it sent it
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
		require.Equal(t, models.SubmissionValidated, got.Submission.Status)
		require.Nil(t, got.Submission.RunID, "nothing is ingested")
		require.NotNil(t, got.Submission.ParsedReport)
		require.ElementsMatch(t, hardTasks(), got.Submission.ParsedReport.TasksFound)
		require.Contains(t, stderr, "tasks found:      6 of 6", "the summary goes to stderr with --json")
		require.Contains(t, stderr, fmt.Sprintf("validated; ingest it on %s/submissions/%d", b.server, got.Submission.ID))
	})
	t.Run("Refused", func(t *testing.T) {
		var hostile bundletest.Case
		for _, c := range bundletest.Hostile() {
			if c.Name == "zip symbolic link" {
				hostile = c
			}
		}
		require.NotNil(t, hostile.Build)
		code, stdout, stderr := b.cli(t, "submit", "--benchmark", sandbox.Slug, "--agent", "lab/uploader", "--interval", "200ms", "--timeout", "2m", hostile.Build(t, dir))
		require.Equal(t, exitRefused, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		require.Contains(t, stderr, "proctor submit: the server refused the bundle: ")
		require.Contains(t, stderr, hostile.Message)
		require.Contains(t, stdout, "refused")
	})
	t.Run("Interrupted", func(t *testing.T) {
		// Ctrl-C while a part is on its way: exit 9; the same command resumes.
		proxy := newFlakyProxy(t, b.server)
		path := hardBundle(t, "interrupted.zip", 0)
		args := []string{"submit", "--benchmark", sandbox.Slug, "--agent", "lab/uploader", "--subset", "hard",
			"--no-ingest", "--interval", "200ms", "--timeout", "2m", path}
		env := testEnv{"PROCTOR_SERVER": proxy.url, "PROCTOR_TOKEN": b.token}
		ctx, interrupt := context.WithCancel(context.Background())
		defer interrupt()
		proxy.mu.Lock()
		proxy.onPart = func(int) { interrupt() }
		proxy.mu.Unlock()
		var out, errb strings.Builder
		p := &Program{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
		code := p.Run(ctx, args)
		require.Equal(t, exitInterrupted, code, errb.String())
		require.Contains(t, errb.String(), "interrupted after 0 of 1 parts")
		require.Contains(t, errb.String(), "run the same command again to resume")
		proxy.restore()

		code, stdout, stderr := env.run(t, "", args...)
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stderr, "resuming submission ")
		require.Contains(t, stdout, "validated; ingest it on ")
	})
	small := hardBundle(t, "small.zip", 0)
	for _, tc := range []struct {
		name string
		env  testEnv
		args []string
		code int
		want string
	}{
		{"BadToken", testEnv{"PROCTOR_SERVER": b.server, "PROCTOR_TOKEN": "prt_not-a-token"},
			[]string{"--benchmark", sandbox.Slug, "--agent", "lab/uploader", small}, exitAuth, "proctor submit: "},
		{"UnknownBenchmark", nil, []string{"--benchmark", "nope", "--agent", "lab/uploader", small}, exitUsage, `benchmark: there is no benchmark "nope"`},
		{"UnknownSubset", nil, []string{"--benchmark", sandbox.Slug, "--subset", "nope", "--agent", "lab/uploader", small}, exitUsage, "subset"},
		{"NoSuchFile", nil, []string{"--benchmark", sandbox.Slug, "--agent", "lab/uploader", filepath.Join(dir, "nope.zip")}, exitUsage, "cannot open the bundle"},
		{"NoBenchmark", nil, []string{"--agent", "lab/uploader", small}, exitUsage, "--benchmark is required"},
		{"NoAgent", nil, []string{"--benchmark", sandbox.Slug, small}, exitUsage, "--agent is required"},
		{"TwoBundles", nil, []string{"--benchmark", sandbox.Slug, "--agent", "lab/uploader", small, small}, exitUsage, "expected exactly one BUNDLE argument, got 2"},
		{"NoToken", testEnv{"PROCTOR_SERVER": b.server}, []string{"--benchmark", sandbox.Slug, "--agent", "lab/uploader", small}, exitUsage, "no API token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = testEnv{"PROCTOR_SERVER": b.server, "PROCTOR_TOKEN": b.token}
			}
			code, stdout, stderr := env.run(t, "", append([]string{"submit"}, tc.args...)...)
			requireOneLineError(t, tc.code, tc.want, code, stdout, stderr)
			require.NotContains(t, stderr, b.token, "the token is never printed")
		})
	}
}

// withoutSpeed drops the MB/s of progress lines, which depend on timing.
func withoutSpeed(s string) string {
	return regexp.MustCompile(`  [0-9.]+ MB/s`).ReplaceAllString(s, "")
}

func TestProgressBar(t *testing.T) {
	t.Parallel()
	t.Run("Log", func(t *testing.T) {
		var w strings.Builder
		bar := newProgressBar(&w, false, "uploading", 1000, 200)
		bar.Add(50)
		require.Empty(t, w.String(), "a line only when another tenth is done")
		report := bar.partReporter()
		report(100)
		report(0) // a failed try takes its bytes back: 250 done
		report(150)
		require.Equal(t, "uploading   35%  350 B / 1.0 kB\nuploading   40%  400 B / 1.0 kB\n", withoutSpeed(w.String()))
		report(750)
		bar.Finish()
		bar.Finish()
		lines := strings.Split(strings.TrimSuffix(withoutSpeed(w.String()), "\n"), "\n")
		require.Len(t, lines, 3, "the 100%% line is the last: %q", w.String())
		require.Contains(t, lines[2], "uploading  100%  1.0 kB / 1.0 kB")
	})
	t.Run("LogEndsShort", func(t *testing.T) {
		var w strings.Builder
		bar := newProgressBar(&w, false, "validating", 1000, 0)
		bar.Set(20)
		bar.Finish()
		require.Equal(t, "validating   2%  20 B / 1.0 kB\n", withoutSpeed(w.String()), "the end says where it stopped")
	})
	t.Run("TerminalOnly", func(t *testing.T) {
		var w strings.Builder
		bar := newProgressBar(&w, false, "hashing", 1000, 0)
		bar.terminalOnly = true
		bar.Add(1000)
		bar.Finish()
		require.Empty(t, w.String())
	})
	t.Run("Terminal", func(t *testing.T) {
		var w strings.Builder
		bar := newProgressBar(&w, true, "uploading", 3_000_000, 0)
		bar.Add(1_500_000)
		bar.Finish()
		out := w.String()
		require.True(t, strings.HasPrefix(withoutSpeed(out), "\ruploading  [###############...............]  50%  1.5 MB / 3.0 MB"), "%q", out)
		require.True(t, strings.HasSuffix(out, "\n"))
		draws := strings.Split(strings.TrimSuffix(out, "\n"), "\r")[1:]
		require.Len(t, draws, 2, "one redraw (the next is within 100 ms) and the final one")
		require.GreaterOrEqual(t, len(draws[1]), len(draws[0]), "a redraw covers the line before")
	})
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 22_020_096: "22.0 MB", 8 << 30: "8.59 GB"} {
		require.Equal(t, want, formatBytes(n))
	}
}

func TestPrintReport(t *testing.T) {
	t.Parallel()
	var ids []string
	var invalid []models.FileProblem
	for i := range 25 {
		ids = append(ids, fmt.Sprint(i))
		invalid = append(invalid, models.FileProblem{Path: fmt.Sprintf("%d/network.har", i), Problem: "not a HAR log"})
	}
	sub := &api.Submission{}
	sub.ID, sub.Status = 4, models.SubmissionValidated
	sub.ParsedReport = &models.SubmissionReport{
		Format: models.BundleWebArenaVerified, TasksFound: ids[:3], TasksMissing: ids, TasksDuplicated: []string{"7"},
		InvalidFiles: invalid, Blocking: []string{"no task of the subset has an answer"}, Warnings: []string{"2 files were ignored"},
		Coverage: models.BundleCoverage{Benchmark: "webarena-verified", Subset: "hard", SubsetTasks: 258, Fraction: 0.5},
	}
	var w strings.Builder
	printReport(&w, sub)
	out := w.String()
	for _, want := range []string{
		"submission 4 validated: WebArena-Verified submission\n",
		"  tasks found:      3 of 258 in webarena-verified, subset hard (50% covered)\n",
		"  missing:          25 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, … 15 more)\n",
		"  duplicated:       1 (7)\n",
		"  unknown:          0\n",
		"  invalid files:    25\n    0/network.har: not a HAR log\n",
		"    … and 5 more (see the submission's page)\n",
		"  warning: 2 files were ignored\n",
		"  blocking: no task of the subset has an answer\n",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "20/network.har", "at most 20 invalid files are listed")
}
