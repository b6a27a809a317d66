package handlers_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/runner"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// rebuildDataset is a three-task benchmark with a two-task subset. The
// importer does not take the hidden-tests evaluator yet, so the fixture
// imports it as "none" and marks it hidden-tests afterwards.
const rebuildDataset = `{"proctor_benchmark": 1, "name": "Rebuilds", "evaluator": "none", "subsets": {"pair": {"task_ids": ["s1", "s2"]}}}
{"id": "s1", "intent": "Rebuild the shop.", "start_urls": ["__SHOP__/"], "sites": ["shop"]}
{"id": "s2", "intent": "Rebuild the forum.", "start_urls": ["__FORUM__/"], "sites": ["forum"]}
{"id": "s3", "intent": "Rebuild the wiki.", "start_urls": ["__WIKI__/"], "sites": ["wiki"]}
`

// candidatesFixture is a server whose candidate service is the real runner
// (insert-only: jobs are queued, none runs), the hidden-tests benchmark
// "rebuilds", the rubric benchmark "mini", team lab (member, upload agent
// "builder") and team other (outsider).
type candidatesFixture struct {
	*agentFixture
	noQueue bool
}

func newCandidatesFixture(t *testing.T, withQueue bool) *candidatesFixture {
	t.Helper()
	db := storagetest.OpenSQLite(t)
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	deps := handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Store: db, Static: static.Files(), Logger: logger, Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil), Submissions: servicetest.Submissions(db), Moderation: servicetest.Moderation(db)}
	if withQueue {
		r, err := runner.New(runner.Config{Evaluators: evaltest.Registry(), DB: db, Logger: logger,
			AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} }})
		require.NoError(t, err)
		deps.Candidates = servicetest.Candidates(db, r.Jobs()) // IP literals only: no DNS
	}
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, deps)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, db: db, app: h}
	b.admin = b.newUser(t, "admin@example.org", true)
	f := &candidatesFixture{agentFixture: newAgentFixture(t, b), noQueue: !withQueue}
	importBench(t, b, "mini")
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(rebuildDataset), nil)
	require.NoError(t, err)
	_, err = db.ImportBenchmark(models.WithActor(context.Background(), models.SystemActor()), "rebuilds", ds, "rebuilds.jsonl", 0)
	require.NoError(t, err)
	require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "rebuilds").Updates(map[string]any{"evaluator": models.EvaluatorHiddenTests, "grades": models.GradesCandidates}).Error)
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.member), "lab", &models.Agent{Name: "Builder", Kind: models.AgentUpload}, nil))
	return f
}

// candidateForm is a good form for the pair subset, as the page posts it.
func candidateForm(notes string) url.Values {
	return url.Values{
		"agent": {"lab/builder"}, "subset": {"pair"}, "notes": {notes},
		"candidates[0].task_id": {"s1"}, "candidates[0].base_url": {"http://93.184.216.34/shop"},
		"candidates[0].restart_url": {"http://93.184.216.34/restart"}, "candidates[0].health_url": {""},
		"candidates[0].cost_usd": {"1.25"}, "candidates[0].tokens_in": {"1000"}, "candidates[0].tokens_out": {"200"}, "candidates[0].turns": {"12"},
		"candidates[1].task_id": {"s2"}, "candidates[1].base_url": {"https://93.184.216.34/forum"},
		"candidates[1].cost_usd": {""}, "candidates[1].tokens_in": {""}, "candidates[1].tokens_out": {""}, "candidates[1].turns": {""},
	}
}

const candidateJSON = `{"team":"lab","agent":"builder","benchmark":"rebuilds","subset":"pair","candidates":[` +
	`{"task_id":"s1","base_url":"http://93.184.216.34/shop","restart_url":"http://93.184.216.34/restart","cost_usd":0.5,"tokens_in":10,"tokens_out":5,"turns":3},` +
	`{"task_id":"s2","base_url":"http://93.184.216.34/forum"}]}`

// hiddenJobs counts the hidden-tests jobs queued for a run.
func (f *candidatesFixture) hiddenJobs(t *testing.T, runID int64) int64 {
	t.Helper()
	var args []string // River keeps SQLite's binary JSON: json() reads it
	require.NoError(t, f.b.db.Gorm().Table("river_job").Where("kind = ? AND queue = ?",
		runner.HiddenTestsArgs{}.Kind(), runner.QueueHiddenTests).Pluck("json(args)", &args).Error)
	var n int64
	for _, raw := range args {
		var a runner.HiddenTestsArgs
		require.NoError(t, json.Unmarshal([]byte(raw), &a), raw)
		if a.RunID == runID {
			require.Positive(t, a.AttemptID)
			n++
		}
	}
	return n
}

func runIDOf(t *testing.T, location string) int64 {
	t.Helper()
	path, _, _ := strings.Cut(location, "?")
	require.True(t, strings.HasPrefix(path, "/runs/"), location)
	id, err := strconv.ParseInt(strings.TrimPrefix(path, "/runs/"), 10, 64)
	require.NoError(t, err, location)
	return id
}

func TestCandidates_FormRoundTrip(t *testing.T) {
	t.Parallel()
	f := newCandidatesFixture(t, true)
	db := f.b.db

	t.Run("LinkOnHiddenTestsBenchmarksOnly", func(t *testing.T) {
		body := readBody(t, f.member.get("/benchmarks/rebuilds"))
		require.Contains(t, body, `data-testid="submit-candidates-link"`)
		require.Contains(t, body, `href="/benchmarks/rebuilds/candidates/new"`)
		require.Contains(t, body, `<dd data-testid="benchmark-pass-threshold">A task succeeds when every test that ran passed;`, "the grading rule is stated")
		mini := readBody(t, f.member.get("/benchmarks/mini"))
		require.NotContains(t, mini, `submit-candidates-link`)
		require.NotContains(t, mini, `benchmark-pass-threshold`)
	})

	t.Run("RowsOfTheChosenSubset", func(t *testing.T) {
		res := f.member.get("/benchmarks/rebuilds/candidates/new?subset=pair&agent=lab/builder")
		body := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		require.Contains(t, body, `data-testid="candidate-s1"`)
		require.Contains(t, body, `data-testid="candidate-s2"`)
		require.NotContains(t, body, `data-testid="candidate-s3"`, "only the subset's tasks")
		require.Contains(t, body, `<label for="f-candidates[0].base_url">Base URL<span class="visually-hidden"> of s1</span>`)
		require.Contains(t, body, `name="candidates[1].turns"`)
		require.Contains(t, body, `value="lab/builder" selected`)
		require.Contains(t, body, `name="_csrf"`)
		full := readBody(t, f.member.get("/benchmarks/rebuilds/candidates/new"))
		require.Contains(t, full, `data-testid="candidate-s3"`, "the full set by default")
	})

	t.Run("ErrorsOnTheirFields", func(t *testing.T) {
		form := candidateForm("bad")
		form.Set("candidates[0].turns", "twelve")
		res := f.member.postForm("/benchmarks/rebuilds/candidates", form)
		body := readBody(t, res)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		require.Contains(t, body, `data-testid="error-candidates[0].turns"`)
		require.Contains(t, body, "turns must be a number")
		require.Contains(t, body, `value="twelve"`, "the typed values come back")

		form = candidateForm("bad")
		form.Set("candidates[1].base_url", "http://10.0.0.7/forum")
		form.Set("candidates[0].health_url", "ftp://93.184.216.34/")
		form.Set("candidates[0].cost_usd", "-1")
		res = f.member.postForm("/benchmarks/rebuilds/candidates", form)
		body = html.UnescapeString(readBody(t, res))
		require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		for _, field := range []string{"candidates[1].base_url", "candidates[0].health_url", "candidates[0].cost_usd"} {
			require.Contains(t, body, `data-testid="error-`+field+`"`, field)
			require.Contains(t, body, `aria-describedby="e-`+field+`"`, field)
		}
		require.Contains(t, body, `value="http://10.0.0.7/forum"`)

		form = candidateForm("bad")
		form.Set("agent", "")
		res = f.member.postForm("/benchmarks/rebuilds/candidates", form)
		body = readBody(t, res)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, body, `data-testid="error-agent"`)
		require.Zero(t, countRuns(t, f), "no refused form made a run")
	})

	t.Run("Submitted", func(t *testing.T) {
		res := f.member.postForm("/benchmarks/rebuilds/candidates", candidateForm("from the form"))
		require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
		id := runIDOf(t, res.Header.Get("Location"))
		var run models.Run
		require.NoError(t, db.Gorm().First(&run, id).Error)
		require.Equal(t, models.OriginUploaded, run.Origin, "stored as uploaded; shown as candidates")
		require.Equal(t, "from the form", run.Notes)
		require.InDelta(t, 1.25, run.Cost, 1e-9)
		require.Equal(t, 12, run.StepsSum)
		require.EqualValues(t, 2, f.hiddenJobs(t, id), "one hidden-tests job per task")
		list, err := servicetest.Candidates(db, nil).HiddenCandidates(actorCtx(f.member), id)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "http://93.184.216.34/shop", list[0].BaseURL)
		require.Equal(t, "http://93.184.216.34/restart", list[0].RestartURL)
		page := f.member.get(res.Header.Get("Location"))
		body := readBody(t, page)
		require.Equal(t, http.StatusOK, page.StatusCode)
		require.Contains(t, body, `<span class="badge" data-testid="badge-origin">candidates submitted, tested by Proctor</span>`,
			"the run's origin names what happened, not an upload")
	})

	// The form posts to its own address, where a refusal is re-rendered: a
	// reload (a browser resending it, or htmx's address after a swap) comes
	// back to the form, never to "Not found".
	t.Run("RefusedAtTheFormsOwnAddress", func(t *testing.T) {
		body := readBody(t, f.member.get("/benchmarks/rebuilds/candidates/new?subset=pair"))
		require.Contains(t, body, `<form method="post" action="/benchmarks/rebuilds/candidates/new?subset=pair" data-testid="candidate-form"`)
		form := candidateForm("bad")
		form.Set("candidates[0].base_url", "http://10.0.0.1/shop")
		res := f.member.postForm("/benchmarks/rebuilds/candidates/new?subset=pair", form)
		body = html.UnescapeString(readBody(t, res))
		require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		require.Contains(t, body, `data-testid="error-candidates[0].base_url"`)
		require.Contains(t, body, `action="/benchmarks/rebuilds/candidates/new?subset=pair"`, "the re-rendered form posts to the same address")

		// The address the form used to post to sends a visit to the form.
		res = f.member.get("/benchmarks/rebuilds/candidates?subset=pair")
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/benchmarks/rebuilds/candidates/new?subset=pair", res.Header.Get("Location"))
		require.Equal(t, http.StatusOK, f.member.get(res.Header.Get("Location")).StatusCode)
	})

	// Who is not in the agent's team is told so on the form, not on an
	// error page.
	t.Run("ForbiddenOnTheForm", func(t *testing.T) {
		res := f.outsider.postForm("/benchmarks/rebuilds/candidates/new", candidateForm("not mine"))
		body := readBody(t, res)
		require.Equal(t, http.StatusForbidden, res.StatusCode, body)
		require.Contains(t, body, `data-testid="candidate-form"`)
		require.Contains(t, body, `<p class="form-error" role="alert" data-testid="form-error">Only members of this team may do this.</p>`)
	})

	t.Run("JSONTextArea", func(t *testing.T) {
		form := url.Values{"agent": {"lab/builder"}, "subset": {"pair"}, "candidates_json": {candidateJSON},
			"candidates[0].task_id": {"s1"}, "candidates[1].task_id": {"s2"}}
		res := f.member.postForm("/benchmarks/rebuilds/candidates", form)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
		id := runIDOf(t, res.Header.Get("Location"))
		require.EqualValues(t, 2, f.hiddenJobs(t, id))

		form.Set("candidates_json", `[{"task_id":"s1","base_url":"http://93.184.216.34/"},{"task_id":"s2","base_url":"http://127.0.0.1/"}]`)
		res = f.member.postForm("/benchmarks/rebuilds/candidates", form)
		body := html.UnescapeString(readBody(t, res))
		require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		require.Contains(t, body, `data-testid="error-candidates_json"`)
		require.Contains(t, body, "candidates[1].base_url: ")

		form.Set("candidates_json", `[{"task_id":"s1","base_uri":"http://93.184.216.34/"}]`)
		body = readBody(t, f.member.postForm("/benchmarks/rebuilds/candidates", form))
		require.Contains(t, body, `data-testid="error-candidates_json"`)
		require.Contains(t, body, "base_uri", "a misspelt field is named")
	})

	t.Run("NotAHiddenTestsBenchmark", func(t *testing.T) {
		require.Equal(t, http.StatusNotFound, f.member.get("/benchmarks/mini/candidates/new").StatusCode)
	})
}

func countRuns(t *testing.T, f *candidatesFixture) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Count(&n).Error)
	return n
}

func TestCandidates_API(t *testing.T) {
	t.Parallel()
	f := newCandidatesFixture(t, true)
	member := withToken(t, f.b, f.member)

	res := member.api(http.MethodPost, "/api/v1/candidate-runs", json.RawMessage(candidateJSON))
	body := readBody(t, res)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	var out struct {
		ID        int64  `json:"id"`
		Status    string `json:"status"`
		Origin    string `json:"origin"`
		Team      string `json:"team"`
		Agent     string `json:"agent"`
		Benchmark string `json:"benchmark"`
		Subset    string `json:"subset"`
		Tasks     int    `json:"tasks_total"`
		URL       string `json:"url"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.Equal(t, "/api/v1/runs/"+strconv.FormatInt(out.ID, 10), res.Header.Get("Location"))
	require.Equal(t, models.RunRunning, out.Status)
	require.Equal(t, models.OriginCandidates, out.Origin)
	require.Equal(t, []string{"lab", "builder", "rebuilds", "pair"}, []string{out.Team, out.Agent, out.Benchmark, out.Subset})
	require.Equal(t, 2, out.Tasks)
	require.EqualValues(t, 2, f.hiddenJobs(t, out.ID))

	bad := strings.Replace(candidateJSON, `"task_id":"s2"`, `"task_id":"s3"`, 1)
	res = member.api(http.MethodPost, "/api/v1/candidate-runs", json.RawMessage(bad))
	var refusal struct {
		Error struct{ Code, Field, Message string } `json:"error"`
	}
	decodeJSON(t, res, &refusal)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Equal(t, "candidates[1].task_id", refusal.Error.Field)
	require.Contains(t, refusal.Error.Message, `not in subset "pair"`)

	// Every problem of the candidates is listed with its field.
	twice := strings.Replace(bad, `"cost_usd":0.5`, `"cost_usd":-1`, 1)
	res = member.api(http.MethodPost, "/api/v1/candidate-runs", json.RawMessage(twice))
	var problems struct {
		Error struct {
			Field    string                            `json:"field"`
			Problems []struct{ Field, Message string } `json:"problems"`
		} `json:"error"`
	}
	decodeJSON(t, res, &problems)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Len(t, problems.Error.Problems, 2)
	require.Equal(t, problems.Error.Field, problems.Error.Problems[0].Field, "the first problem is also the error's own")
	got := []string{problems.Error.Problems[0].Field, problems.Error.Problems[1].Field}
	require.Equal(t, []string{"candidates[1].task_id", "candidates[0].cost_usd"}, got, "task ids are checked first (docs/api.md)")

	res = member.api(http.MethodPost, "/api/v1/candidate-runs", json.RawMessage(`{"team":"lab","agent":"builder","benchmark":"mini","candidates":[]}`))
	decodeJSON(t, res, &refusal)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Equal(t, "benchmark", refusal.Error.Field)

	res = member.api(http.MethodPost, "/api/v1/candidate-runs", json.RawMessage(`{"team":"lab","agent":"builder","benchmark":"rebuilds","candidates":[],"extra":1}`))
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "unknown fields are refused")
}

func TestCandidates_NoQueue(t *testing.T) {
	t.Parallel()
	f := newCandidatesFixture(t, false)
	body := readBody(t, f.member.get("/benchmarks/rebuilds/candidates/new"))
	require.Contains(t, body, `data-testid="no-candidate-service"`)
	res := f.member.postForm("/benchmarks/rebuilds/candidates/new", candidateForm("x"))
	body = readBody(t, res)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Contains(t, body, `data-testid="form-error"`, "the refusal is shown on the form, where it was posted")
	require.Contains(t, body, "Candidates cannot be graded on this server right now")
	require.Contains(t, body, `value="http://93.184.216.34/shop"`, "with what was typed")
	require.Equal(t, http.StatusServiceUnavailable, f.member.postForm("/benchmarks/rebuilds/candidates", candidateForm("x")).StatusCode)
	require.Equal(t, http.StatusServiceUnavailable, withToken(t, f.b, f.member).api(http.MethodPost, "/api/v1/candidate-runs", json.RawMessage(candidateJSON)).StatusCode)
}

// TestAuthz_Candidates checks the candidate routes for anonymous callers, a
// member of the team, a member of another team only, and an administrator.
func TestAuthz_Candidates(t *testing.T) {
	t.Parallel()
	f := newCandidatesFixture(t, true)
	b := f.b
	clients := map[string]*client{"anonymous": b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": b.admin}
	apiClients := map[string]*client{"anonymous": clients["anonymous"]}
	for name, c := range clients {
		if name != "anonymous" {
			apiClients[name] = withToken(t, b, c)
		}
	}
	const (
		ok, created, see            = http.StatusOK, http.StatusCreated, http.StatusSeeOther
		unauth, forbidden, notFound = http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
	)
	team := func(anon, outsider, member int) map[string]int {
		return map[string]int{"anonymous": anon, "member": member, "outsider": outsider, "admin": member}
	}
	var seq atomic.Int64
	for _, tc := range []authzCase{
		{method: "GET", path: "/benchmarks/rebuilds/candidates/new", want: team(see, ok, ok)},
		{method: "GET", path: "/benchmarks/mini/candidates/new", want: team(see, notFound, notFound)},
		{method: "GET", path: "/benchmarks/nope/candidates/new", want: team(see, notFound, notFound)},
		{method: "POST", path: "/benchmarks/rebuilds/candidates", form: candidateForm("row {n}"), want: team(unauth, forbidden, see)},
		{method: "POST", path: "/benchmarks/rebuilds/candidates/new", form: candidateForm("form {n}"), want: team(unauth, forbidden, see)},
		{method: "GET", path: "/benchmarks/rebuilds/candidates", want: team(see, see, see)},
		{method: "POST", path: "/api/v1/candidate-runs", json: strings.Replace(candidateJSON, `"subset"`, `"notes":"api {n}","subset"`, 1), want: team(unauth, forbidden, created)},
	} {
		for _, actor := range []string{"anonymous", "member", "outsider", "admin"} {
			t.Run(tc.method+" "+tc.path+" as "+actor, func(t *testing.T) {
				c := clients[actor]
				if strings.HasPrefix(tc.path, "/api/") {
					c = apiClients[actor]
				}
				c.t = t
				res := c.send(tc, strconv.FormatInt(seq.Add(1), 10))
				body := readBody(t, res)
				require.Equal(t, tc.want[actor], res.StatusCode, "%s %s as %s: %s", tc.method, tc.path, actor, body)
				require.NotContains(t, body, "did not come from this site", "the CSRF check must not be what refuses")
			})
		}
	}
	t.Run("HooksOnlyForTheTeamAndAdmins", func(t *testing.T) {
		res := withToken(t, b, f.member).api(http.MethodPost, "/api/v1/candidate-runs", json.RawMessage(candidateJSON))
		require.Equal(t, created, res.StatusCode)
		var out struct{ ID int64 }
		decodeJSON(t, res, &out)
		require.NoError(t, b.db.Gorm().Model(&models.Run{}).Where("id = ?", out.ID).Update("published", true).Error)
		for name, c := range map[string]*client{"member": f.member, "admin": b.admin} {
			list, err := servicetest.Candidates(b.db, nil).HiddenCandidates(actorCtx(c), out.ID)
			require.NoError(t, err, name)
			require.Equal(t, "http://93.184.216.34/restart", list[0].RestartURL, name)
		}
		list, err := servicetest.Candidates(b.db, nil).HiddenCandidates(actorCtx(f.outsider), out.ID)
		require.NoError(t, err)
		require.Equal(t, "http://93.184.216.34/shop", list[0].BaseURL)
		require.Empty(t, list[0].RestartURL)
	})
}

// TestOpenAPI_CandidateAnswersMatchDocument validates a created candidate run
// and a refusal against the API document.
func TestOpenAPI_CandidateAnswersMatchDocument(t *testing.T) {
	t.Parallel()
	f := newCandidatesFixture(t, true)
	member := withToken(t, f.b, f.member)
	d := newDocChecker(t, f.b.anonymous(t))
	d.send(member, apiRequest{method: http.MethodPost, path: "/api/v1/candidate-runs", json: candidateJSON}, http.StatusCreated)
	d.send(member, apiRequest{method: http.MethodPost, path: "/api/v1/candidate-runs", json: `{"team":"lab","agent":"builder","benchmark":"rebuilds","candidates":[]}`}, http.StatusBadRequest)
	twice := strings.Replace(strings.Replace(candidateJSON, `"task_id":"s2"`, `"task_id":"s3"`, 1), `"cost_usd":0.5`, `"cost_usd":-1`, 1)
	d.send(member, apiRequest{method: http.MethodPost, path: "/api/v1/candidate-runs", json: twice}, http.StatusBadRequest)
	require.True(t, d.checked["submitCandidates"])
}
