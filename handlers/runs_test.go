package handlers_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/runner/connect"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/stats"
	"proctor/storage"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// runsFixture is a running server with a run queue (unless noQueue) and a local
// artifact store, the "mini" benchmark, team "lab" with a member and a replay
// agent "walker" (and an upload-only one), and a member of team "other".
type runsFixture struct {
	*agentFixture
	store *artifact.Local
	sys   context.Context
	// hub holds the mailboxes of the connecting episodes the test plays.
	hub *connect.Hub
}

type runsOptions struct {
	quota   int
	noQueue bool
	// db is the database to use; nil opens a SQLite one.
	db *storage.DB
	// signed, when set, records every artifact key whose URL a page signs.
	signed *signedKeys
}

// signedKeys is an ArtifactURLSigner that records the keys it signs.
type signedKeys struct {
	handlers.ArtifactURLSigner
	mu   sync.Mutex
	keys []string
}

func (s *signedKeys) URL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	return s.ArtifactURLSigner.URL(ctx, key, ttl)
}

// take returns the keys signed since the last call.
func (s *signedKeys) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.keys
	s.keys = nil
	return keys
}

func newRunsFixture(t *testing.T, opts runsOptions) *runsFixture {
	t.Helper()
	db := opts.db
	if db == nil {
		db = storagetest.OpenSQLite(t)
	}
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer)
	signer := artifact.NewURLSigner([]byte(strings.Repeat("s", 32)))
	store, err := artifact.NewLocal(t.TempDir(), signer, "")
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	deps := handlers.Deps{Studies: servicetest.Studies(db, nil), Evaluators: evaltest.Registry(), Benchmarks: servicetest.Benchmarks(db), Submissions: servicetest.Submissions(db), Teams: servicetest.Teams(db), Candidates: servicetest.Candidates(db, nil), Accounts: servicetest.Accounts(db), Moderation: servicetest.Moderation(db),
		Store: db, Artifacts: store, ArtifactHandler: artifact.NewLocalHandler(store, signer), ArtifactURLs: store,
		Static: static.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if opts.signed != nil {
		opts.signed.ArtifactURLSigner = store
		deps.ArtifactURLs = opts.signed
	}
	if opts.noQueue {
		deps.Runs = servicetest.NoQueue(db)
	} else {
		deps.Runs = servicetest.Runs(db, opts.quota)
	}
	hub := connect.NewHub()
	deps.Episodes = service.NewEpisodes(db, servicetest.NoJobs{}, service.EpisodeOptions{ClaimPoll: 20 * time.Millisecond})
	deps.EpisodeGateway = connect.NewGateway(hub, db, service.DefaultEpisodeLeaseTTL, deps.Logger)
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, deps)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, db: db, app: h}
	b.admin = b.newUser(t, "admin@example.org", true)
	f := &runsFixture{agentFixture: newAgentFixture(t, b), store: store, sys: models.WithActor(context.Background(), models.SystemActor()), hub: hub}
	importBench(t, b, "mini")
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.member), "lab", &models.Agent{Name: "Walker", Kind: models.AgentReplay, Config: `{"actions":[{"type":"stop","reason":"fixture"}]}`}, nil))
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.member), "lab", &models.Agent{Name: "Uploader", Kind: models.AgentUpload}, nil))
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.member), "lab", &models.Agent{Name: "Connector", Kind: models.AgentMCP}, nil))
	return f
}

// queue queues a run of walker on mini as the member, dispatches it unless
// told not to, and publishes it when asked. It returns the run and its
// attempt ids in task order (t1 first).
func (f *runsFixture) queue(t *testing.T, dispatch, published bool) (*models.Run, []int64) {
	t.Helper()
	db := f.b.db
	run, err := servicetest.QueueRun(actorCtx(f.member), db, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Notes: "fixture run"})
	require.NoError(t, err)
	if published {
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
	}
	if !dispatch {
		return run, nil
	}
	var ids []int64
	require.NoError(t, db.DispatchRun(f.sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	// Every attempt, queued or not: the test plays them itself.
	require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
	return run, ids
}

// play runs an attempt's episode as the runner would record it: two steps
// (a click at a point, with a JPEG screenshot and thumbnail, then the answer)
// and an evaluation whose details quote a hidden reference answer.
func (f *runsFixture) play(t *testing.T, attemptID int64, verdict, errorClass string) {
	t.Helper()
	db := f.b.db
	status, spec, err := db.ClaimAttempt(f.sys, attemptID, storagetest.Claimant(time.Hour))
	require.NoError(t, err)
	require.Equal(t, models.ClaimOK, status)
	prefix := fmt.Sprintf("runs/%d/attempts/%d/try-%d/steps/", spec.Run.ID, attemptID, spec.Try)
	shot, thumb := prefix+"000.jpg", prefix+"000-thumb.jpg"
	for key, size := range map[string]int{shot: 64, thumb: 16} {
		data := testJPEG(t, size)
		require.NoError(t, f.store.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), "image/jpeg"))
	}
	require.NoError(t, db.RecordStep(f.sys, &models.Step{
		AttemptID: attemptID, Index: 0, Action: `{"type":"click","target":{"x":320,"y":600}}`, Thought: "The cheapest cable is first.",
		URL: "http://shop.test/a1t1/", Title: "Shop home", ScreenshotKey: shot, ThumbnailKey: thumb,
		BlockedRequests: `["http://tracker.test/pixel"]`, ObserveMS: 11, AgentMS: 22, ActMS: 33, PersistMS: 44, TokensIn: 100, TokensOut: 7, Cost: 0.01,
	}, 1))
	require.NoError(t, db.RecordStep(f.sys, &models.Step{AttemptID: attemptID, Index: 1, Action: `{"type":"answer","text":"USB-C cable, 4.99"}`, Title: "Cart"}, 1))
	final := `{"type":"answer","text":"USB-C cable, 4.99"}`
	require.NoError(t, db.FinishEpisode(f.sys, attemptID, spec.Try, models.EpisodeOutcome{
		Steps: 2, FinalAnswer: final, Duration: 3 * time.Second, ErrorClass: errorClass, ErrorMessage: errorMessageFor(errorClass),
	}, func(context.Context, *sql.Tx) error { return nil }, nil))
	score := 0.0
	if verdict == models.OutcomeSuccess {
		score = 1
	}
	_, err = db.RecordEvaluation(f.sys, attemptID, &models.Evaluation{
		Evaluator: "webarena-verified", EvaluatorVersion: "sandbox-check@1", Verdict: verdict, Score: &score,
		Details: `{"status":"` + verdict + `","evaluators_results":[{"evaluator_name":"AgentResponseEvaluator","actual":"USB-C cable","expected":{"retrieved_data":["SECRET-ANSWER-42"]},"assertions":[{"name":"retrieved_data","passed":false,"message":"Expected SECRET-ANSWER-42"}]}]}`,
	})
	require.NoError(t, err)
}

func errorMessageFor(class string) string {
	if class == "" {
		return ""
	}
	return "the agent answered HTTP 500"
}

// testJPEG encodes a small square JPEG.
func testJPEG(t *testing.T, size int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for x := 0; x < size; x++ {
		for y := 0; y < size; y++ {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 4), 128, 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, nil))
	return buf.Bytes()
}

// TestAuthz_Runs checks every run page and run API route for each kind of
// caller: anonymous, a member of the run's team, a member of another team only,
// and an administrator. Each check runs against a fresh, dispatched run of the
// lab team, unpublished unless the row says otherwise.
func TestAuthz_Runs(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	b := f.b
	clients := map[string]*client{"anonymous": b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": b.admin}
	apiClients := map[string]*client{"anonymous": clients["anonymous"]}
	for name, c := range clients {
		if name != "anonymous" {
			apiClients[name] = withToken(t, b, c)
		}
	}
	actors := []string{"anonymous", "member", "outsider", "admin"}
	var seq atomic.Int64

	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "member": status, "outsider": status, "admin": status}
	}
	team := func(anon, outsider, member int) map[string]int {
		return map[string]int{"anonymous": anon, "member": member, "outsider": outsider, "admin": member}
	}
	adminOnly := func(admin int) map[string]int {
		return map[string]int{"anonymous": http.StatusUnauthorized, "member": http.StatusForbidden, "outsider": http.StatusForbidden, "admin": admin}
	}
	const (
		ok, created, noContent, see = http.StatusOK, http.StatusCreated, http.StatusNoContent, http.StatusSeeOther
		unauth, forbidden, notFound = http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
	)
	queueForm := url.Values{"agent": {"walker"}, "benchmark": {"mini"}, "subset": {"smoke"}, "notes": {"row {n}"}}
	for _, tc := range []struct {
		authzCase
		published bool
	}{
		// Pages.
		{authzCase: authzCase{method: "GET", path: "/runs", want: all(ok)}},
		{authzCase: authzCase{method: "GET", path: "/runs?page=0", want: all(http.StatusBadRequest)}},
		{authzCase: authzCase{method: "GET", path: "/teams/lab/runs", want: all(ok)}},
		{authzCase: authzCase{method: "GET", path: "/teams/nope/runs", want: all(notFound)}},
		{authzCase: authzCase{method: "GET", path: "/teams/lab/runs/new", want: team(see, forbidden, ok)}},
		{authzCase: authzCase{method: "GET", path: "/teams/nope/runs/new", want: team(see, notFound, notFound)}},
		{authzCase: authzCase{method: "POST", path: "/teams/lab/runs", form: queueForm, want: team(unauth, forbidden, see)}},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}", want: team(notFound, notFound, ok)}},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}", want: all(ok)}, published: true},
		{authzCase: authzCase{method: "GET", path: "/runs/not-an-id", want: all(notFound)}},
		{authzCase: authzCase{method: "GET", path: "/runs/999999", want: all(notFound)}},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/progress", want: team(notFound, notFound, ok)}},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/progress", want: all(ok)}, published: true},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/attempts/{attempt}", want: team(notFound, notFound, ok)}},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/attempts/{attempt}", want: all(ok)}, published: true},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/attempts/999999", want: all(notFound)}, published: true},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/cancel", want: team(unauth, notFound, see)}},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/cancel", want: team(unauth, forbidden, see)}, published: true},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/retry", want: team(unauth, notFound, see)}},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/retry", want: team(unauth, forbidden, see)}, published: true},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/rerun", want: team(unauth, notFound, see)}},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/rerun", want: team(unauth, forbidden, see)}, published: true},
		// Re-scoring is for administrators.
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/rescore", want: adminOnly(see)}},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/rescore", want: adminOnly(see)}, published: true},
		{authzCase: authzCase{method: "POST", path: "/runs/999999/rescore", want: adminOnly(notFound)}},
		{authzCase: authzCase{method: "POST", path: "/admin/benchmarks/mini/rescore", want: adminOnly(see)}},
		{authzCase: authzCase{method: "POST", path: "/admin/benchmarks/nope/rescore", want: adminOnly(notFound)}},
		{authzCase: authzCase{method: "POST", path: "/admin/rescore", want: adminOnly(see)}},
		// JSON API.
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs", want: all(ok)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs?team=lab", want: all(ok)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs?team=nope", want: all(notFound)}},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs", json: `{"team":"lab","agent":"walker","benchmark":"mini","notes":"api {n}"}`, want: team(unauth, forbidden, created)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}", want: team(notFound, notFound, ok)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}", want: all(ok)}, published: true},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}/metrics", want: team(notFound, notFound, ok)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}/metrics", want: all(ok)}, published: true},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}/attempts", want: team(notFound, notFound, ok)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}/attempts", want: all(ok)}, published: true},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}/attempts/{attempt}", want: team(notFound, notFound, ok)}},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}/attempts/{attempt}", want: all(ok)}, published: true},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/cancel", want: team(notFound, notFound, noContent)}},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/cancel", want: team(unauth, forbidden, noContent)}, published: true},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/retry", want: team(notFound, notFound, ok)}},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/retry", want: team(unauth, forbidden, ok)}, published: true},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/rerun", want: team(notFound, notFound, created)}},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/rerun", want: team(unauth, forbidden, created)}, published: true},
	} {
		for _, actor := range actors {
			want, listed := tc.want[actor]
			require.True(t, listed, "%s %s: no expectation for %s", tc.method, tc.path, actor)
			name := tc.method + " " + tc.path + " as " + actor
			if tc.published {
				name += " (published)"
			}
			t.Run(name, func(t *testing.T) {
				n := strconv.FormatInt(seq.Add(1), 10)
				run, attempts := f.queue(t, true, tc.published)
				row := tc.authzCase
				row.path = strings.ReplaceAll(tc.path, "{run}", strconv.FormatInt(run.ID, 10))
				row.path = strings.ReplaceAll(row.path, "{attempt}", strconv.FormatInt(attempts[0], 10))
				c := clients[actor]
				if strings.HasPrefix(row.path, "/api/") {
					c = apiClients[actor]
				}
				c.t = t
				res := c.send(row, n)
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", tc.method, row.path, actor, body)
				require.NotContains(t, body, "did not come from this site", "the CSRF check must not be what refuses")
				for _, secret := range benchSecrets {
					require.NotContains(t, body, secret)
				}
				if want == see && tc.method == http.MethodGet {
					require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/login?next="), res.Header.Get("Location"))
				}
			})
		}
	}
}

var runLocation = regexp.MustCompile(`^/runs/(\d+)\?notice=queued$`)

func TestRuns_QueueForm(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{quota: 2})

	body := readBody(t, f.member.get("/teams/lab/runs/new"))
	require.Contains(t, body, `data-testid="run-form"`)
	require.Contains(t, body, `<option value="walker">Walker (replay)</option>`)
	require.NotContains(t, body, `value="uploader"`, "upload-only agents cannot be run")
	require.Contains(t, body, `<option value="mini">Mini bench (4 tasks)</option>`)
	require.Contains(t, body, `<option value="smoke" label="in Mini bench">`)
	require.Contains(t, body, `name="subset" type="text" list="subset-options" value="full"`)
	for field, value := range map[string]string{"max_steps": "30", "max_episode_seconds": "600", "max_agent_call_seconds": "60", "parallelism": "1"} {
		require.Regexp(t, `name="`+field+`" type="number"[^>]* value="`+value+`"`, body)
	}
	require.NotContains(t, body, `data-testid="no-queue"`)

	base := url.Values{"agent": {"walker"}, "benchmark": {"mini"}, "subset": {"full"}, "notes": {"kept notes"}}
	with := func(k, v string) url.Values {
		out := cloneValues(base)
		out.Set(k, v)
		return out
	}
	for name, tc := range map[string]struct {
		form  url.Values
		field string
		text  string
	}{
		"UnknownSubset":   {with("subset", "nope"), "subset", `there is no subset &#34;nope&#34;`},
		"NoAgent":         {with("agent", ""), "agent", "choose an agent"},
		"UploadAgent":     {with("agent", "uploader"), "agent", "upload-only"},
		"UnknownBench":    {with("benchmark", "nope"), "benchmark", "there is no benchmark"},
		"MalformedSteps":  {with("max_steps", "many"), "max_steps", "max steps must be a whole number"},
		"TooManySteps":    {with("max_steps", "100000"), "max_steps", "max steps must be between"},
		"BadCost":         {with("max_cost", "-1"), "max_cost", "max cost must be positive"},
		"BadParallelism":  {with("parallelism", "0.5"), "parallelism", "parallelism must be a whole number"},
		"CallOverEpisode": {with("max_agent_call_seconds", "9999"), "max_agent_call_seconds", "seconds per agent call"},
	} {
		t.Run(name, func(t *testing.T) {
			res := f.member.postForm("/teams/lab/runs", tc.form)
			body := readBody(t, res)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			require.Contains(t, body, `data-testid="error-`+tc.field+`"`)
			require.Contains(t, body, tc.text)
			require.Contains(t, body, `kept notes</textarea>`, "the form keeps what was typed")
			require.Contains(t, body, `aria-invalid="true"`)
		})
	}

	res := f.member.postForm("/teams/lab/runs", with("subset", "smoke"))
	require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
	m := runLocation.FindStringSubmatch(res.Header.Get("Location"))
	require.NotNil(t, m, res.Header.Get("Location"))
	body = readBody(t, f.member.get(m[0]))
	require.Contains(t, body, "Run queued.")
	require.Contains(t, body, `data-testid="run-subset">smoke<`)
	require.Contains(t, body, `data-testid="run-notes">kept notes<`)

	t.Run("Quota", func(t *testing.T) {
		res := f.member.postForm("/teams/lab/runs", base)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "the second run of the day is within the quota of 2")
		res = f.member.postForm("/teams/lab/runs", base)
		body := readBody(t, res)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode, body)
		require.Equal(t, "60", res.Header.Get("Retry-After"))
		require.Contains(t, body, `data-testid="form-error">Team lab has queued 2 runs in the last 24 hours, its daily quota`)
		require.Contains(t, body, `data-testid="run-form"`, "the form is shown again")
		require.Contains(t, body, `kept notes</textarea>`)

		api := withToken(t, f.b, f.member)
		res = api.api("POST", "/api/v1/runs", map[string]any{"team": "lab", "agent": "walker", "benchmark": "mini"})
		var got struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
		decodeJSON(t, res, &got)
		require.Equal(t, models.ERATELIMIT, got.Error.Code)
		require.Contains(t, got.Error.Message, "daily quota")
	})
}

func TestRuns_NoQueue(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{noQueue: true})
	run, _ := f.queue(t, true, false)

	body := readBody(t, f.member.get("/teams/lab/runs/new"))
	require.Contains(t, body, `data-testid="no-queue"`)

	res := f.member.postForm("/teams/lab/runs", url.Values{"agent": {"walker"}, "benchmark": {"mini"}})
	body = readBody(t, res)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Contains(t, body, "it has no run queue")

	for _, action := range []string{"retry", "rerun"} {
		res := f.member.postForm("/runs/"+strconv.FormatInt(run.ID, 10)+"/"+action, nil)
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, action)
	}
	api := withToken(t, f.b, f.member)
	res = api.api("POST", "/api/v1/runs", map[string]any{"team": "lab", "agent": "walker", "benchmark": "mini"})
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Contains(t, readBody(t, res), `"code":"unavailable"`)
	// Canceling needs no queue.
	res = f.member.postForm("/runs/"+strconv.FormatInt(run.ID, 10)+"/cancel", nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
}

func TestRuns_ProgressPolling(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, _ := f.queue(t, false, false)
	id := strconv.FormatInt(run.ID, 10)

	body := readBody(t, f.member.get("/runs/"+id))
	require.Contains(t, body, `hx-get="/runs/`+id+`/progress" hx-trigger="every 2s" hx-swap="outerHTML" hx-include="#attempt-state"`)
	require.Contains(t, body, `data-testid="no-attempts"`)
	require.Contains(t, readBody(t, f.member.get("/runs/"+id+"?notice=queued")), `data-testid="run-queued-notice"`, "the queued run says so")
	frag := readBody(t, getHTMX(f.member, "/runs/"+id+"/progress", nil))
	require.Contains(t, frag, `id="run-status-badge" class="badge status-queued" data-testid="run-status-badge" hx-swap-oob="true">queued<`)
	require.NotContains(t, frag, `id="run-notice"`, "while the run waits, its queued notice stays")
	require.Contains(t, body, `data-testid="run-pending">4<`, "every task waits before dispatch")
	require.Contains(t, body, `data-testid="cancel-run"`)

	// The dispatched run, two attempts done (one failed with an agent error).
	var ids []int64
	require.NoError(t, f.b.db.DispatchRun(f.sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	// Every attempt, queued or not: the test plays them itself.
	require.NoError(t, f.b.db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
	f.play(t, ids[0], models.OutcomeSuccess, "")
	f.play(t, ids[1], models.OutcomeFailure, models.ErrorClassAgent)

	res := getHTMX(f.member, "/runs/"+id+"/progress", nil)
	frag = readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	// The live update changes the page as one: the title's badge, the
	// queued notice (gone once the run started) and the attempts table.
	require.Contains(t, frag, `id="run-status-badge" class="badge status-running" data-testid="run-status-badge" hx-swap-oob="true">running<`)
	require.Contains(t, frag, `<div id="run-notice" hx-swap-oob="true"></div>`)
	require.Contains(t, frag, `<div id="attempt-results" hx-swap-oob="true">`)
	require.Contains(t, frag, `data-testid="attempt-t1"`)
	require.Contains(t, frag, `data-testid="attempt-t2"`)
	require.NotContains(t, readBody(t, f.member.get("/runs/"+id+"?notice=queued")), `data-testid="run-queued-notice"`, "a started run is no longer queued")
	// The update asks for the rows the page shows: its filter and page.
	filtered := readBody(t, getHTMX(f.member, "/runs/"+id+"/progress?outcome=success", nil))
	require.Contains(t, filtered, `data-testid="attempt-t1"`)
	require.NotContains(t, filtered, `data-testid="attempt-t2"`)
	require.Contains(t, readBody(t, f.member.get("/runs/"+id+"?outcome=success")), `<span id="attempt-state" hidden><input type="hidden" name="outcome" value="success"></span>`)
	require.NotContains(t, frag, "<html", "htmx gets the fragment only")
	require.Contains(t, frag, `hx-trigger="every 2s"`)
	require.Contains(t, frag, `data-testid="run-done">2 of 4 attempts done (50%)<`)
	require.Contains(t, frag, `<progress value="2" max="4"`)
	require.Contains(t, frag, `data-testid="run-successes">1<`)
	require.Contains(t, frag, `data-testid="run-errors">agent 1<`)
	require.Contains(t, frag, `data-testid="run-eta">under a minute<`)
	require.Contains(t, res.Header.Get("Vary"), "HX-Request")

	page := readBody(t, f.member.get("/runs/"+id+"/progress"))
	require.Contains(t, page, "<html", "a plain request gets a page")
	require.Contains(t, page, `data-testid="run-progress"`)

	body = readBody(t, f.member.get("/runs/"+id))
	require.Contains(t, body, `data-testid="attempt-t1"`)
	require.Contains(t, body, `data-testid="retry-run">Retry failed attempts (1)<`)
	require.Contains(t, body, `data-testid="rerun-run"`)
	require.Contains(t, body, `href="/runs/`+id+`/attempts/`+strconv.FormatInt(ids[0], 10)+`"`)

	// A run uploaded through the submission portal was executed elsewhere:
	// its page offers neither retrying nor re-running it.
	require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("origin", models.OriginUploaded).Error)
	uploaded := readBody(t, f.member.get("/runs/"+id))
	require.NotContains(t, uploaded, `data-testid="retry-run"`)
	require.NotContains(t, uploaded, `data-testid="rerun-run"`)
	require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("origin", models.OriginExecuted).Error)

	f.play(t, ids[2], models.OutcomeSuccess, "")
	f.play(t, ids[3], models.OutcomeSuccess, "")
	res = getHTMX(f.member, "/runs/"+id+"/progress", nil)
	frag = readBody(t, res)
	require.Equal(t, "true", res.Header.Get("HX-Refresh"), "the page reloads whole once, with the final outcomes and actions")
	require.Contains(t, frag, `data-testid="run-status">completed<`)
	require.Contains(t, frag, `(100%)`)
	require.NotContains(t, frag, "hx-trigger", "a finished run's progress stops polling")
	require.NotContains(t, frag, "hx-get")
	require.NotContains(t, frag, `data-testid="run-eta"`)
	body = readBody(t, f.member.get("/runs/"+id))
	require.NotContains(t, body, "hx-trigger")
	require.NotContains(t, body, `data-testid="cancel-run"`, "a finished run cannot be canceled")

	var prog struct {
		Status        string         `json:"status"`
		Finished      bool           `json:"finished"`
		Done          int            `json:"done"`
		Percent       int            `json:"percent"`
		Successes     int            `json:"successes"`
		ErrorsByClass map[string]int `json:"errors_by_class"`
		Agent         string         `json:"agent"`
		Team          string         `json:"team"`
		Benchmark     string         `json:"benchmark"`
	}
	decodeJSON(t, withToken(t, f.b, f.member).get("/api/v1/runs/"+id), &prog)
	require.Equal(t, models.RunCompleted, prog.Status)
	require.True(t, prog.Finished)
	require.Equal(t, 4, prog.Done)
	require.Equal(t, 100, prog.Percent)
	require.Equal(t, 3, prog.Successes)
	require.Equal(t, map[string]int{"agent": 1}, prog.ErrorsByClass)
	require.Equal(t, []string{"walker", "lab", "mini"}, []string{prog.Agent, prog.Team, prog.Benchmark})
}

var (
	imgPattern    = regexp.MustCompile(`<img src="([^"]+)" loading="lazy" alt="([^"]+)"`)
	screenPattern = regexp.MustCompile(`<a href="([^"]+)" data-testid="screenshot-link"`)
)

func TestRuns_Timeline(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.queue(t, true, false)
	f.play(t, ids[0], models.OutcomeFailure, "")
	path := "/runs/" + strconv.FormatInt(run.ID, 10) + "/attempts/" + strconv.FormatInt(ids[0], 10)

	res := f.member.get(path)
	body := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Contains(t, body, `data-testid="task-intent">Add the cheapest USB-C cable to the cart.<`)
	require.Contains(t, body, `<code>__SHOPPING__</code>`)
	require.Contains(t, body, `data-testid="attempt-outcome">failure<`)
	require.Contains(t, body, `data-testid="evaluation-verdict">failure<`)
	require.Contains(t, body, `data-testid="final-answer">{`)
	require.Contains(t, body, `&#34;text&#34;: &#34;USB-C cable, 4.99&#34;`, "the final answer as pretty JSON")
	require.Equal(t, 2, strings.Count(body, `data-testid="step"`))
	require.Less(t, strings.Index(body, `id="step-1"`), strings.Index(body, `id="step-2"`))
	require.Contains(t, body, `data-testid="step-action">click (320, 600)<`)
	require.Contains(t, body, `data-testid="step-action">answer &#34;USB-C cable, 4.99&#34;<`)
	require.Contains(t, body, `data-testid="step-thought">The cheapest cable is first.<`)
	require.Contains(t, body, `data-testid="step-url">http://shop.test/a1t1/<`)
	require.Contains(t, body, `<li><code>http://tracker.test/pixel</code></li>`)
	require.Contains(t, body, `data-testid="step-timings">observe 11 ms · agent 22 ms · act 33 ms · persist 44 ms<`)
	// The click point, drawn over the screenshot in viewport coordinates.
	require.Contains(t, body, `data-x="25.00%" data-y="75.00%"`)
	require.Contains(t, body, `<circle cx="320.0" cy="600.0"`)
	require.Equal(t, 1, strings.Count(body, `data-testid="click-marker"`), "the answer step has no point")

	imgs := imgPattern.FindAllStringSubmatch(body, -1)
	require.Len(t, imgs, 1, "only the first step has a screenshot")
	require.Equal(t, "Step 1 screenshot: Shop home", imgs[0][2])
	links := screenPattern.FindAllStringSubmatch(body, -1)
	require.Len(t, links, 1)
	anon := f.b.anonymous(t)
	for _, u := range []string{imgs[0][1], links[0][1]} {
		u = html.UnescapeString(u)
		require.True(t, strings.HasPrefix(u, "/artifacts/runs/"), u)
		res := anon.get(u) // signed links work without a session
		data := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, u)
		require.Equal(t, "image/jpeg", res.Header.Get("Content-Type"))
		_, err := jpeg.Decode(strings.NewReader(data))
		require.NoError(t, err)
	}
	require.NotEqual(t, imgs[0][1], links[0][1], "the thumbnail links to the full screenshot")

	t.Run("HiddenFieldsNeverShown", func(t *testing.T) {
		require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
		api := withToken(t, f.b, f.member)
		for name, c := range map[string]*client{"member": f.member, "outsider": f.outsider, "anonymous": anon, "member-api": api} {
			p := path
			if c.token != "" {
				p = "/api/v1" + path
			}
			res := c.get(p)
			body := readBody(t, res)
			require.Equal(t, http.StatusOK, res.StatusCode, name)
			for _, secret := range benchSecrets {
				require.NotContains(t, body, secret, "%s as %s", p, name)
			}
		}
		// Admins see what the evaluator expected, but never the task's hidden fields.
		body := readBody(t, f.b.admin.get(path))
		require.Contains(t, body, "SECRET-ANSWER-42")
		require.NotContains(t, body, "SECRET-SKU-7")
		require.NotContains(t, body, "SECRET-PATH")
	})
	t.Run("API", func(t *testing.T) {
		var tl struct {
			Run struct {
				ID    int64  `json:"id"`
				Agent string `json:"agent"`
			} `json:"run"`
			Attempt struct {
				Outcome     string         `json:"outcome"`
				FinalAnswer map[string]any `json:"final_answer"`
			} `json:"attempt"`
			Task struct {
				ID        string   `json:"id"`
				StartURLs []string `json:"start_urls"`
			} `json:"task"`
			Evaluation struct {
				Verdict string         `json:"verdict"`
				Details map[string]any `json:"details"`
			} `json:"evaluation"`
			Steps []struct {
				Index           int            `json:"index"`
				Summary         string         `json:"summary"`
				Action          map[string]any `json:"action"`
				ScreenshotURL   string         `json:"screenshot_url"`
				ThumbnailURL    string         `json:"thumbnail_url"`
				BlockedRequests []string       `json:"blocked_requests"`
			} `json:"steps"`
		}
		api := withToken(t, f.b, f.member)
		decodeJSON(t, api.get("/api/v1"+path), &tl)
		require.Equal(t, run.ID, tl.Run.ID)
		require.Equal(t, "walker", tl.Run.Agent)
		require.Equal(t, "t1", tl.Task.ID)
		require.Equal(t, models.OutcomeFailure, tl.Attempt.Outcome)
		require.Equal(t, "answer", tl.Attempt.FinalAnswer["type"])
		require.Equal(t, models.OutcomeFailure, tl.Evaluation.Verdict)
		require.Len(t, tl.Steps, 2)
		require.Equal(t, "click (320, 600)", tl.Steps[0].Summary)
		require.Equal(t, "click", tl.Steps[0].Action["type"])
		require.Equal(t, []string{"http://tracker.test/pixel"}, tl.Steps[0].BlockedRequests)
		require.Empty(t, tl.Steps[1].ScreenshotURL)
		for _, u := range []string{tl.Steps[0].ScreenshotURL, tl.Steps[0].ThumbnailURL} {
			res := anon.get(u)
			require.Equal(t, http.StatusOK, res.StatusCode, u)
			require.Equal(t, "image/jpeg", res.Header.Get("Content-Type"))
		}
	})
	t.Run("AttemptOfAnotherRun", func(t *testing.T) {
		other, _ := f.queue(t, true, false)
		p := "/runs/" + strconv.FormatInt(other.ID, 10) + "/attempts/" + strconv.FormatInt(ids[0], 10)
		require.Equal(t, http.StatusNotFound, f.member.get(p).StatusCode)
		require.Equal(t, http.StatusNotFound, withToken(t, f.b, f.member).get("/api/v1"+p).StatusCode)
	})
	t.Run("NoSteps", func(t *testing.T) {
		body := readBody(t, f.member.get("/runs/"+strconv.FormatInt(run.ID, 10)+"/attempts/"+strconv.FormatInt(ids[1], 10)))
		require.Contains(t, body, `data-testid="no-steps"`)
		require.Contains(t, body, `data-testid="no-final-answer"`)
		require.Contains(t, body, `data-testid="no-evaluation"`)
	})
}

func TestRuns_Actions(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.queue(t, true, false)
	id := strconv.FormatInt(run.ID, 10)
	f.play(t, ids[0], models.OutcomeSuccess, "")

	res := f.member.postForm("/runs/"+id+"/cancel", nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/runs/"+id+"?notice=canceled", res.Header.Get("Location"))
	body := readBody(t, f.member.get(res.Header.Get("Location")))
	require.Contains(t, body, "Run canceled.")
	require.Contains(t, body, `data-testid="run-status">canceled<`)
	require.Contains(t, body, `data-testid="run-errors">canceled 3<`)
	require.Contains(t, body, `data-testid="retry-run">Retry failed attempts (3)<`)
	require.NotContains(t, body, `data-testid="cancel-run"`)

	res = f.member.postForm("/runs/"+id+"/cancel", nil)
	body = readBody(t, res)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Contains(t, body, `data-testid="form-error">Run `+id+` has already finished (canceled).<`)
	require.Contains(t, body, `data-testid="run-summary"`, "the run page is shown with the reason")

	res = f.member.postForm("/runs/"+id+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/runs/"+id+"?notice=retried&n=3", res.Header.Get("Location"))
	body = readBody(t, f.member.get(res.Header.Get("Location")))
	require.Contains(t, body, "3 failed attempts are queued again.")
	require.Contains(t, body, `data-testid="run-status">running<`)
	require.Contains(t, body, `hx-trigger="every 2s"`, "the reopened run polls again")

	res = f.member.postForm("/runs/"+id+"/rerun", nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	m := runLocation.FindStringSubmatch(res.Header.Get("Location"))
	require.NotNil(t, m, res.Header.Get("Location"))
	require.NotEqual(t, id, m[1])
	body = readBody(t, f.member.get(m[0]))
	require.Contains(t, body, "Re-run of run "+id+". fixture run")

	api := withToken(t, f.b, f.member)
	res = api.api("POST", "/api/v1/runs/"+id+"/cancel", nil)
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	res = api.api("POST", "/api/v1/runs/"+id+"/cancel", nil)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	var retried struct {
		Requeued int `json:"requeued"`
	}
	res = api.api("POST", "/api/v1/runs/"+id+"/retry", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	decodeJSON(t, res, &retried)
	require.Equal(t, 3, retried.Requeued)
	res = api.api("POST", "/api/v1/runs/"+id+"/rerun", nil)
	require.Equal(t, http.StatusCreated, res.StatusCode)
	var again struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
		Subset string `json:"subset"`
		Agent  string `json:"agent"`
	}
	decodeJSON(t, res, &again)
	require.Equal(t, "/api/v1/runs/"+strconv.FormatInt(again.ID, 10), res.Header.Get("Location"))
	require.Equal(t, models.RunQueued, again.Status)
	require.Equal(t, "walker", again.Agent)
}

func TestRuns_API(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	api := withToken(t, f.b, f.member)

	res := api.api("POST", "/api/v1/runs", map[string]any{
		"team": "lab", "agent": "walker", "benchmark": "mini", "subset": "smoke", "max_steps": 12,
		"max_episode_seconds": 120, "max_agent_call_seconds": 20, "max_cost": 1.5, "parallelism": 2, "notes": "via API",
	})
	require.Equal(t, http.StatusCreated, res.StatusCode)
	var run struct {
		ID                  int64    `json:"id"`
		Team                string   `json:"team"`
		Agent               string   `json:"agent"`
		Benchmark           string   `json:"benchmark"`
		Subset              string   `json:"subset"`
		Status              string   `json:"status"`
		MaxSteps            int      `json:"max_steps"`
		MaxEpisodeSeconds   int      `json:"max_episode_seconds"`
		MaxAgentCallSeconds int      `json:"max_agent_call_seconds"`
		MaxCost             *float64 `json:"max_cost"`
		Parallelism         int      `json:"parallelism"`
		Notes               string   `json:"notes"`
		TasksTotal          int      `json:"tasks_total"`
		URL                 string   `json:"url"`
	}
	decodeJSON(t, res, &run)
	id := strconv.FormatInt(run.ID, 10)
	require.Equal(t, "/api/v1/runs/"+id, res.Header.Get("Location"))
	require.Equal(t, []string{"lab", "walker", "mini", "smoke", models.RunQueued}, []string{run.Team, run.Agent, run.Benchmark, run.Subset, run.Status})
	require.Equal(t, []int{12, 120, 20, 2, 2}, []int{run.MaxSteps, run.MaxEpisodeSeconds, run.MaxAgentCallSeconds, run.Parallelism, run.TasksTotal})
	require.InDelta(t, 1.5, *run.MaxCost, 1e-9)
	require.Equal(t, "via API", run.Notes)
	require.Equal(t, "/runs/"+id, run.URL)

	for name, tc := range map[string]struct {
		body  string
		field string
	}{
		"NoTeam":       {`{"agent":"walker","benchmark":"mini"}`, "team"},
		"UnknownField": {`{"team":"lab","agent":"walker","benchmark":"mini","budget":3}`, "budget"},
		"BadSubset":    {`{"team":"lab","agent":"walker","benchmark":"mini","subset":"nope"}`, "subset"},
		"WrongType":    {`{"team":"lab","agent":"walker","benchmark":"mini","max_steps":"many"}`, "max_steps"},
	} {
		t.Run(name, func(t *testing.T) {
			res := api.api("POST", "/api/v1/runs", json.RawMessage(tc.body))
			var got struct {
				Error struct{ Code, Field string } `json:"error"`
			}
			require.Equal(t, http.StatusBadRequest, res.StatusCode)
			decodeJSON(t, res, &got)
			require.Equal(t, models.EINVALID, got.Error.Code)
			require.Equal(t, tc.field, got.Error.Field)
		})
	}

	var list struct {
		Items []struct {
			ID        int64  `json:"id"`
			Team      string `json:"team"`
			AgentName string `json:"agent_name"`
			URL       string `json:"url"`
		} `json:"items"`
		Total int `json:"total"`
	}
	decodeJSON(t, api.get("/api/v1/runs?team=lab"), &list)
	require.Equal(t, 1, list.Total)
	require.Equal(t, run.ID, list.Items[0].ID)
	require.Equal(t, "Walker", list.Items[0].AgentName)
	decodeJSON(t, f.b.anonymous(t).get("/api/v1/runs"), &list)
	require.Zero(t, list.Total, "unpublished runs are not listed to anonymous callers")

	require.NoError(t, f.b.db.DispatchRun(f.sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	var attempts struct {
		Items []struct {
			Task   string `json:"task"`
			Status string `json:"status"`
			URL    string `json:"url"`
		} `json:"items"`
		Total   int  `json:"total"`
		HasMore bool `json:"has_more"`
	}
	decodeJSON(t, api.get("/api/v1/runs/"+id+"/attempts?per_page=1"), &attempts)
	require.Equal(t, 2, attempts.Total)
	require.True(t, attempts.HasMore)
	require.Equal(t, "t1", attempts.Items[0].Task)
	require.Equal(t, models.AttemptPending, attempts.Items[0].Status)
	require.True(t, strings.HasPrefix(attempts.Items[0].URL, "/runs/"+id+"/attempts/"))
}

// TestRuns_Evaluations: the run page shows the run's metrics on every subset
// and a rescored note; an attempt's page shows its check, LLM judge and rubric
// verdicts (or "not judged") and the history a re-scoring kept.
func TestRuns_Evaluations(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	db := f.b.db
	run, ids := f.queue(t, true, false)
	f.play(t, ids[0], models.OutcomeFailure, "")
	f.play(t, ids[1], models.OutcomeSuccess, "")

	body := readBody(t, f.member.get(fmt.Sprintf("/runs/%d", run.ID)))
	require.Contains(t, body, `data-testid="run-metrics"`)
	require.Contains(t, body, `data-testid="metrics-full"`)
	require.Contains(t, body, `data-testid="metrics-smoke"`, "a full run has numbers on each named subset")
	require.Contains(t, body, "this run restricted to its tasks")
	require.Contains(t, body, "50.0% (95% CI 9.5–90.5%, 1/2)", "Wilson interval of 1 in 2")
	require.Contains(t, body, `data-testid="breakdown-difficulty"`)
	require.NotContains(t, body, `data-testid="rescore-run"`, "re-scoring is for administrators")
	body = readBody(t, f.member.get(fmt.Sprintf("/runs/%d/attempts/%d", run.ID, ids[1])))
	require.Contains(t, body, `data-testid="not-judged"`)
	require.Contains(t, body, `data-testid="rubric-not-judged"`)

	res := f.b.admin.postForm(fmt.Sprintf("/runs/%d/rescore", run.ID), nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, fmt.Sprintf("/runs/%d?notice=rescored&n=2", run.ID), res.Header.Get("Location"))

	// The re-scoring's verdicts: a rubric judgment and an LLM judge's score.
	var items []models.RubricItem
	require.NoError(t, db.Gorm().Where("task_id = (SELECT task_id FROM attempts WHERE id = ?)", ids[0]).Order("position").Find(&items).Error)
	judge := 4
	_, err := db.RecordEvaluations(f.sys, ids[0], models.EvaluationBatch{
		Primary: &models.Evaluation{Evaluator: "llm-judge:test-model:rubric-v1", EvaluatorVersion: "rubric-v1", Kind: models.EvaluationRubric,
			Verdict: models.OutcomeFailure, Score: ptr(0.6), TokensIn: 900, TokensOut: 40, Cost: 0.0031,
			RubricJudgments: []models.RubricJudgment{
				{RubricItemID: items[0].ID, Passed: true, Rationale: "One cable is in the cart.", EvidenceSteps: models.JSONInts{1, 2}},
				{RubricItemID: items[1].ID, Passed: false, Rationale: "A dearer cable was chosen."},
			}},
		Others: []*models.Evaluation{{Evaluator: "llm-judge:test-model:trajectory-v1", EvaluatorVersion: "trajectory-v1", Kind: models.EvaluationJudge,
			Verdict: models.OutcomeFailure, Score: ptr(0.0), JudgeScore: &judge, Details: `{"rationale":"Added a cable, not the cheapest."}`}},
		RescoreID: "rescore-1",
	}, nil)
	require.NoError(t, err)
	require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.sys, run.ID))

	body = readBody(t, f.b.admin.get(fmt.Sprintf("/runs/%d", run.ID)))
	require.Contains(t, body, `data-testid="run-rescored"`)
	require.Contains(t, body, "llm-judge:test-model:rubric-v1, llm-judge:test-model:trajectory-v1")
	require.Contains(t, body, `data-testid="rescore-run"`)
	require.Contains(t, body, "4.00 (95% CI 4.00–4.00, n=1)", "the judge's mean score")

	body = readBody(t, f.member.get(fmt.Sprintf("/runs/%d/attempts/%d", run.ID, ids[0])))
	require.Contains(t, body, `data-testid="judge-judge-score">4 / 5<`)
	require.Contains(t, body, "Added a cable, not the cheapest.")
	require.Contains(t, body, `data-testid="rubric-judgments"`)
	require.Contains(t, body, "Cart holds one cable")
	require.Contains(t, body, `href="#step-2">step 2</a>`, "evidence links to the cited step")
	require.Contains(t, body, "900 in / 40 out tokens")
	require.NotContains(t, body, `data-testid="evaluation-history"`, "every verdict is still the current one of its kind")

	// A second re-scoring by the judge keeps the first judgment as history.
	judge = 5
	_, err = db.RecordEvaluations(f.sys, ids[0], models.EvaluationBatch{
		Others: []*models.Evaluation{{Evaluator: "llm-judge:test-model:trajectory-v2", EvaluatorVersion: "trajectory-v2", Kind: models.EvaluationJudge,
			Verdict: models.OutcomeSuccess, Score: ptr(1.0), JudgeScore: &judge}},
		RescoreID: "rescore-2",
	}, nil)
	require.NoError(t, err)
	body = readBody(t, f.member.get(fmt.Sprintf("/runs/%d/attempts/%d", run.ID, ids[0])))
	require.Contains(t, body, `data-testid="judge-judge-score">5 / 5<`)
	require.Contains(t, body, `data-testid="evaluation-history"`, "the first judgment is kept as history")
	require.Contains(t, body, "trajectory-v1")
	for _, secret := range benchSecrets {
		require.NotContains(t, body, secret)
	}

	// The JSON API has the same verdicts and metrics.
	api := withToken(t, f.b, f.member)
	var tl struct {
		Evaluation  struct{ Kind string }
		Evaluations []struct {
			Kind       string `json:"kind"`
			Current    bool   `json:"current"`
			JudgeScore *int   `json:"judge_score"`
			Rubric     []struct {
				Key    string `json:"key"`
				Passed bool   `json:"passed"`
				Steps  []int  `json:"steps"`
			} `json:"rubric"`
		}
	}
	res = api.api("GET", fmt.Sprintf("/api/v1/runs/%d/attempts/%d", run.ID, ids[0]), nil)
	body = readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.NoError(t, json.Unmarshal([]byte(body), &tl))
	require.Equal(t, models.EvaluationRubric, tl.Evaluation.Kind, "the rubric judgment is the primary verdict of a rubric benchmark")
	require.Len(t, tl.Evaluations, 4)
	require.Equal(t, 5, *tl.Evaluations[0].JudgeScore)
	for _, ev := range tl.Evaluations {
		if ev.Kind == models.EvaluationRubric {
			require.Equal(t, "R1", ev.Rubric[0].Key)
			require.Equal(t, []int{1, 2}, ev.Rubric[0].Steps)
		}
	}
	for _, secret := range benchSecrets {
		require.NotContains(t, body, secret)
	}
	var metrics struct {
		Subsets []stats.Report `json:"subsets"`
	}
	res = api.api("GET", fmt.Sprintf("/api/v1/runs/%d/metrics", run.ID), nil)
	body = readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.NoError(t, json.Unmarshal([]byte(body), &metrics))
	require.Len(t, metrics.Subsets, 2)
	require.Equal(t, "full", metrics.Subsets[0].Subset)
	require.Equal(t, 2, metrics.Subsets[0].Metrics.Graded)
	require.Contains(t, body, `"success_ci":{"low":`)
}

func ptr[T any](v T) *T { return &v }

// TestRuns_FirstRunPath is the way from the runs list, an agent's page and
// the home page to queuing a run and to the leaderboards: every visitor is
// shown the next step that fits them.
func TestRuns_FirstRunPath(t *testing.T) {
	t.Parallel()
	f := newHiddenFixture(t)
	b := f.b

	anon := readBody(t, b.anonymous(t).get("/runs"))
	require.Contains(t, anon, `data-testid="queue-run-login"><a href="/login?next=%2Fruns">Log in</a>`)
	require.Contains(t, readBody(t, f.outsider.get("/runs")), `<a href="/teams/other/runs/new" role="button" data-testid="queue-run-link">Queue a run</a>`, "a member of one team is led to its form")
	loner := b.newUser(t, "loner@example.org", false)
	require.Contains(t, readBody(t, loner.get("/runs")), `data-testid="queue-run-no-team">Runs belong to a team: <a href="/teams">`)
	require.NoError(t, b.db.Gorm().Create(&models.Membership{TeamID: teamID(t, b, "other"), UserID: f.member.user.ID, Role: models.RoleMember, CreatedAt: time.Now()}).Error)
	both := readBody(t, f.member.get("/runs"))
	require.Contains(t, both, `href="/teams/lab/runs/new" role="button" data-testid="queue-run-link-lab">Queue a run for LAB</a>`)
	require.Contains(t, both, `href="/teams/other/runs/new" role="button" data-testid="queue-run-link-other">Queue a run for OTHER</a>`)

	// An agent's page leads its team to a run of it, chosen in the form.
	agent := readBody(t, f.member.get("/teams/lab/agents/walker"))
	require.Contains(t, agent, `href="/teams/lab/runs/new?agent=walker" role="button" data-testid="queue-agent-run">Queue a run</a>`)
	require.Contains(t, readBody(t, f.member.get("/teams/lab/runs/new?agent=walker")), `<option value="walker" selected>`)
	require.Contains(t, readBody(t, f.member.get("/teams/lab/agents/uploader")), `href="/submissions/new?agent=lab%2Fuploader" role="button" data-testid="submit-agent-results"`)
	require.NotContains(t, readBody(t, f.outsider.get("/teams/lab/agents/walker")), `data-testid="agent-next"`, "another team cannot queue it")

	// The form offers only benchmarks that take agent runs; the refusal of a
	// hidden-tests benchmark leads to its candidate form.
	form := readBody(t, f.member.get("/teams/lab/runs/new"))
	require.Contains(t, form, `<option value="mini">`)
	require.Contains(t, form, `Mini bench (4 tasks)`)
	require.NotContains(t, form, `value="`+f.seed.BenchmarkSlug+`"`)
	res := f.member.postForm("/teams/lab/runs", url.Values{"agent": {"walker"}, "benchmark": {f.seed.BenchmarkSlug}, "subset": {"full"}})
	body := readBody(t, res)
	require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
	candidates := "/benchmarks/" + f.seed.BenchmarkSlug + "/candidates/new"
	require.Contains(t, body, `(<a href="`+candidates+`">`+candidates+`</a>)`)

	// The home page links to every published leaderboard, subsets included.
	require.NoError(t, b.db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "mini").Update("published", true).Error)
	home := readBody(t, b.anonymous(t).get("/"))
	require.Contains(t, home, `<a href="/benchmarks/mini/leaderboard">Leaderboard</a>`)
	require.Contains(t, home, `<a href="/benchmarks/mini/leaderboard/smoke">smoke subset</a>`)
}

func teamID(t *testing.T, b *testBundle, slug string) int64 {
	t.Helper()
	var team models.Team
	require.NoError(t, b.db.Gorm().Where("slug = ?", slug).Take(&team).Error)
	return team.ID
}

// TestRuns_HonestNumbers: an attempt that ran out of budget is a failure of
// its own class, not an error; an uploaded run shows only the budgets its
// bundle stated.
func TestRuns_HonestNumbers(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.queue(t, true, false)
	id := strconv.FormatInt(run.ID, 10)
	f.play(t, ids[0], models.OutcomeSuccess, "")
	f.play(t, ids[1], models.OutcomeFailure, models.ErrorClassBudget)
	f.play(t, ids[2], models.OutcomeFailure, models.ErrorClassTimeout)
	f.play(t, ids[3], models.OutcomeFailure, models.ErrorClassAgent)

	body := readBody(t, f.member.get("/runs/"+id))
	require.Contains(t, body, `data-testid="run-failures">2 <span class="muted">(2 out of budget)</span>`)
	require.Contains(t, body, `data-testid="run-errors">agent 1<`, "budget and time limits are no errors")
	require.NotContains(t, body, `data-testid="retry-run"`+">Retry failed attempts (3)", "nor retried as errors")
	require.Contains(t, body, `data-testid="run-budgets">30 steps, 600 s per episode, 60 s per agent call, cost no limit<`)

	require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).
		Updates(map[string]any{"origin": models.OriginUploaded, "max_steps": 0, "max_episode_seconds": 0, "max_agent_call_seconds": 0}).Error)
	require.Contains(t, readBody(t, f.member.get("/runs/"+id)), `data-testid="run-budgets">— (the upload did not state them)<`)
	require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("max_steps", 12).Error)
	require.Contains(t, readBody(t, f.member.get("/runs/"+id)), `data-testid="run-budgets">12 steps (as the upload stated them)<`)

	// The bundle stated no cost, tokens or steps: "—", not zeros.
	require.NoError(t, f.b.db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).
		Updates(map[string]any{"steps_unknown": true, "tokens_unknown": true, "cost_unknown": true}).Error)
	body = readBody(t, f.member.get("/runs/"+id))
	require.Contains(t, body, `data-testid="metric-cost">— <small class="muted">(not stated by the upload)</small>`)
	require.Contains(t, body, `data-testid="metric-tokens">— `)
	require.Contains(t, body, `data-testid="metric-steps">— `)
	require.NotContains(t, body, "$0.0000")
	require.Regexp(t, `data-testid="attempt-t1">(?s:.*?)<td class="num">—</td><td class="num">—</td>`, body, "the attempt's steps and cost")
}
