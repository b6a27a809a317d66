package handlers_test

import (
	"bufio"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
)

// Run states a moderation test starts from.
const (
	stateQueued    = "queued"    // not dispatched, not completed
	statePrivate   = "private"   // completed, not published
	statePublished = "published" // completed and published
	stateHidden    = "hidden"    // published, then hidden by administrators
	stateUploaded  = "uploaded"  // an uploaded run, completed and published
)

// hiddenReason is the public reason of the runs hidden in these tests.
const hiddenReason = "Answers were read from a leaked file."

// runIn queues a run of walker on mini and brings it to a state: played to
// completion (t1 succeeds, t2 fails, t3 ends in an agent error, t4 succeeds),
// then published, hidden or made an upload as asked.
func (f *runsFixture) runIn(t *testing.T, state string) (*models.Run, []int64) {
	t.Helper()
	if state == stateQueued {
		return f.queue(t, false, false)
	}
	run, ids := f.queue(t, true, false)
	f.play(t, ids[0], models.OutcomeSuccess, "")
	f.play(t, ids[1], models.OutcomeFailure, "")
	f.play(t, ids[2], models.OutcomeFailure, models.ErrorClassAgent)
	f.play(t, ids[3], models.OutcomeSuccess, "")
	updates := map[string]any{}
	switch state {
	case statePublished:
		updates["published"] = true
	case stateHidden:
		updates["published"], updates["hidden_at"], updates["hidden_reason"] = true, time.Now().UTC(), hiddenReason
	case stateUploaded:
		updates["published"], updates["origin"] = true, models.OriginUploaded
	}
	if len(updates) > 0 {
		require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Updates(updates).Error)
	}
	return run, ids
}

// TestAuthz_Moderation checks every publishing, moderation, change log and
// results export route for each kind of caller: anonymous, a member of the
// run's team, a member of another team only, and an administrator. Each check
// runs against a fresh run in the row's state.
func TestAuthz_Moderation(t *testing.T) {
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
	var seq atomic.Int64
	const (
		ok, see                          = http.StatusOK, http.StatusSeeOther
		bad, unauth, forbidden, notFound = http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
		conflict                         = http.StatusConflict
	)
	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "member": status, "outsider": status, "admin": status}
	}
	team := func(anon, outsider, member int) map[string]int {
		return map[string]int{"anonymous": anon, "member": member, "outsider": outsider, "admin": member}
	}
	who := func(anon, outsider, member, admin int) map[string]int {
		return map[string]int{"anonymous": anon, "member": member, "outsider": outsider, "admin": admin}
	}
	hide := url.Values{"reason": {hiddenReason}}
	for _, tc := range []struct {
		authzCase
		state       string
		unpublished bool // the benchmark is unpublished for the row
	}{
		// Publishing: the run's team (and admins), once the run has completed.
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/publish", want: team(unauth, notFound, see)}, state: statePrivate},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/publish", want: team(unauth, notFound, conflict)}, state: stateQueued},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/publish", want: team(unauth, forbidden, conflict)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/runs/999999/publish", want: team(unauth, notFound, notFound)}, state: stateQueued},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/withdraw", want: team(unauth, forbidden, see)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/withdraw", want: team(unauth, notFound, conflict)}, state: statePrivate},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/withdraw", want: team(unauth, notFound, conflict)}, state: stateQueued},
		// Moderation: administrators only.
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/verify", want: who(unauth, forbidden, forbidden, see)}, state: statePrivate},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/verify", want: who(unauth, forbidden, forbidden, see)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/verify", want: who(unauth, forbidden, forbidden, conflict)}, state: stateQueued},
		{authzCase: authzCase{method: "POST", path: "/runs/999999/verify", want: who(unauth, forbidden, forbidden, notFound)}, state: stateQueued},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/hide", form: hide, want: who(unauth, forbidden, forbidden, see)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/hide", want: who(unauth, forbidden, forbidden, bad)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/hide", form: hide, want: who(unauth, forbidden, forbidden, conflict)}, state: stateHidden},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/unhide", want: who(unauth, forbidden, forbidden, see)}, state: stateHidden},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/unhide", want: who(unauth, forbidden, forbidden, conflict)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/reproduce", want: who(unauth, forbidden, forbidden, see)}, state: stateUploaded},
		{authzCase: authzCase{method: "POST", path: "/runs/{run}/reproduce", want: who(unauth, forbidden, forbidden, conflict)}, state: statePublished},
		// The run page: filters, and a hidden run's public summary.
		{authzCase: authzCase{method: "GET", path: "/runs/{run}?outcome=failure&site=shopping&difficulty=easy&error_class=agent", want: team(notFound, notFound, ok)}, state: statePrivate},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}?outcome=won", want: all(bad)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}?site=wikipedia", want: team(notFound, notFound, bad)}, state: statePrivate},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}?difficulty=impossible", want: all(bad)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}?error_class=cosmic", want: all(bad)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}", want: all(ok)}, state: stateHidden},
		// The results export: as the run page, and a hidden run's results stay with its team.
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/results.jsonl", want: team(notFound, notFound, ok)}, state: statePrivate},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/results.jsonl", want: all(ok)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/results.jsonl", want: team(notFound, notFound, ok)}, state: stateHidden},
		{authzCase: authzCase{method: "GET", path: "/runs/{run}/results.jsonl", want: team(notFound, notFound, ok)}, state: stateQueued},
		{authzCase: authzCase{method: "GET", path: "/runs/999999/results.jsonl", want: all(notFound)}, state: stateQueued},
		// The public change log.
		{authzCase: authzCase{method: "GET", path: "/benchmarks/mini/leaderboard/changes", want: all(ok)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/benchmarks/mini/leaderboard/changes?subset=smoke&page=1", want: all(ok)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/benchmarks/mini/leaderboard/changes?subset=nope", want: all(bad)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/benchmarks/mini/leaderboard/changes?page=0", want: all(bad)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/benchmarks/nope/leaderboard/changes", want: all(notFound)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/benchmarks/mini/leaderboard/changes", want: who(notFound, notFound, notFound, ok)}, state: statePublished, unpublished: true},
		// JSON API: the store answers, so a private run is 404 to outsiders.
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/publish", want: team(notFound, notFound, ok)}, state: statePrivate},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/publish", want: team(notFound, notFound, conflict)}, state: stateQueued},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/publish", want: team(unauth, forbidden, conflict)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/withdraw", want: team(unauth, forbidden, ok)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/withdraw", want: team(notFound, notFound, conflict)}, state: statePrivate},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/verify", want: who(notFound, notFound, forbidden, ok)}, state: statePrivate},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/verify", want: who(unauth, forbidden, forbidden, ok)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/hide", json: `{"reason":"` + hiddenReason + `"}`, want: who(unauth, forbidden, forbidden, ok)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/hide", json: `{"reason":""}`, want: who(unauth, forbidden, forbidden, bad)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/hide", json: `{"reason":"x","extra":1}`, want: all(bad)}, state: statePublished},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/hide", json: `{"reason":"x"}`, want: who(notFound, notFound, forbidden, ok)}, state: statePrivate},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/unhide", want: who(unauth, forbidden, forbidden, ok)}, state: stateHidden},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/reproduce", want: who(unauth, forbidden, forbidden, ok)}, state: stateUploaded},
		{authzCase: authzCase{method: "POST", path: "/api/v1/runs/{run}/reproduce", want: who(unauth, forbidden, forbidden, conflict)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}/results.jsonl", want: team(notFound, notFound, ok)}, state: statePrivate},
		{authzCase: authzCase{method: "GET", path: "/api/v1/runs/{run}/results.jsonl", want: team(notFound, notFound, ok)}, state: stateHidden},
		{authzCase: authzCase{method: "GET", path: "/api/v1/benchmarks/mini/leaderboard/changes", want: all(ok)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/api/v1/benchmarks/mini/leaderboard/changes?subset=nope", want: all(bad)}, state: statePublished},
		{authzCase: authzCase{method: "GET", path: "/api/v1/benchmarks/mini/leaderboard/changes", want: who(notFound, notFound, notFound, ok)}, state: statePublished, unpublished: true},
	} {
		for _, actor := range []string{"anonymous", "member", "outsider", "admin"} {
			want, listed := tc.want[actor]
			require.True(t, listed, "%s %s: no expectation for %s", tc.method, tc.path, actor)
			t.Run(tc.method+" "+tc.path+" ("+tc.state+") as "+actor, func(t *testing.T) {
				n := strconv.FormatInt(seq.Add(1), 10)
				run, _ := f.runIn(t, tc.state)
				if tc.unpublished {
					require.NoError(t, f.b.db.SetBenchmarkPublished(f.sys, "mini", false))
					t.Cleanup(func() { require.NoError(t, f.b.db.SetBenchmarkPublished(f.sys, "mini", true)) })
				}
				row := tc.authzCase
				row.path = strings.ReplaceAll(tc.path, "{run}", strconv.FormatInt(run.ID, 10))
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
					if actor == "admin" && secret == "SECRET-ANSWER-42" && strings.HasSuffix(row.path, "/results.jsonl") {
						continue // administrators see what the evaluator expected, as on the timeline
					}
					require.NotContains(t, body, secret, "%s as %s", row.path, actor)
				}
				if want == bad {
					require.Regexp(t, `outcome|site|difficulty|error_class|subset|page|reason|extra|JSON`, body, "a 400 names what is wrong")
				}
				if want == conflict {
					require.Regexp(t, `has not completed|already|not published|not hidden|executed by Proctor`, body, "a 409 says why")
				}
			})
		}
	}
}

// TestModeration_Flow: the team publishes a completed run, the administrators
// verify and hide it with a reason everyone can read, the team's view stays
// whole, and every change is on the public log, newest first.
func TestModeration_Flow(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	anon := f.b.anonymous(t)
	run, ids := f.runIn(t, statePrivate)
	id := strconv.FormatInt(run.ID, 10)

	body := readBody(t, f.member.get("/runs/"+id))
	require.Contains(t, body, `data-testid="badge-private"`)
	require.Contains(t, body, `data-testid="publish-run"`)
	require.NotContains(t, body, `data-testid="admin-moderation"`, "members do not moderate")

	res := f.member.postForm("/runs/"+id+"/publish", nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/runs/"+id+"?notice=published", res.Header.Get("Location"))
	body = readBody(t, f.member.get(res.Header.Get("Location")))
	require.Contains(t, body, `data-testid="flash">Run published: it is public and on the benchmark&#39;s leaderboards.<`)
	require.Contains(t, body, `data-testid="badge-published"`)
	require.Contains(t, body, `data-testid="withdraw-run"`)

	public := readBody(t, anon.get("/runs/"+id))
	require.NotContains(t, public, `data-testid="run-moderation"`, "visitors get no controls")
	require.Contains(t, public, `data-testid="attempt-t1"`)

	admin := readBody(t, f.b.admin.get("/runs/"+id))
	require.Contains(t, admin, `data-testid="verify-run"`)
	require.Contains(t, admin, `data-testid="hide-form"`)
	require.NotContains(t, admin, `data-testid="reproduce-run"`, "an executed run is not reproduced")
	require.Equal(t, http.StatusSeeOther, f.b.admin.postForm("/runs/"+id+"/verify", nil).StatusCode)

	// Hiding needs a reason; the refusal is shown on the run page.
	res = f.b.admin.postForm("/runs/"+id+"/hide", url.Values{"reason": {"  "}})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, readBody(t, res), `data-testid="form-error">a hidden run shows its reason publicly: give one<`)
	res = f.b.admin.postForm("/runs/"+id+"/hide", url.Values{"reason": {hiddenReason}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)

	for name, c := range map[string]*client{"anonymous": anon, "outsider": f.outsider} {
		body := readBody(t, c.get("/runs/"+id))
		require.Contains(t, body, `data-testid="hidden-reason">`+hiddenReason+`<`, name)
		require.Contains(t, body, `data-testid="badge-verified"`, name)
		require.Contains(t, body, `data-testid="attempts-withheld"`, name)
		require.NotContains(t, body, `data-testid="attempt-t1"`, name)
		require.NotContains(t, body, `data-testid="results-export"`, name)
		res := c.get("/runs/" + id + "/attempts/" + strconv.FormatInt(ids[0], 10))
		require.Equal(t, http.StatusNotFound, res.StatusCode, "%s: a hidden run's timelines stay with its team", name)
	}
	for name, c := range map[string]*client{"member": f.member, "admin": f.b.admin} {
		body := readBody(t, c.get("/runs/"+id))
		require.Contains(t, body, `data-testid="hidden-reason">`+hiddenReason+`<`, name)
		require.Contains(t, body, `data-testid="attempt-t1"`, name)
		require.Contains(t, body, `data-testid="metric-success"`, name)
	}
	require.Contains(t, readBody(t, f.b.admin.get("/runs/"+id)), `data-testid="unhide-run"`)

	// The public log, newest first, and its JSON.
	body = readBody(t, anon.get("/benchmarks/mini/leaderboard/changes"))
	require.Contains(t, body, `data-testid="changes-table"`)
	hidden, verified, added := strings.Index(body, `data-testid="change-hidden"`), strings.Index(body, `data-testid="change-verified"`), strings.Index(body, `data-testid="change-added"`)
	require.True(t, hidden > 0 && hidden < verified && verified < added, "newest first")
	require.Contains(t, body, `data-testid="change-reason">`+hiddenReason+`<`)
	require.Contains(t, body, `<a href="/runs/`+id+`">#`+id+`</a>`)

	var list struct {
		Items []struct {
			RunID  int64  `json:"run_id"`
			Kind   string `json:"kind"`
			Reason string `json:"reason"`
			Actor  string `json:"actor"`
			Team   string `json:"team"`
			RunURL string `json:"run_url"`
		} `json:"items"`
		Total int `json:"total"`
	}
	decodeJSON(t, anon.get("/api/v1/benchmarks/mini/leaderboard/changes?subset=smoke"), &list)
	require.Equal(t, 3, list.Total, "a full run shows on the smoke board's log too")
	require.Equal(t, "hidden", list.Items[0].Kind)
	require.Equal(t, hiddenReason, list.Items[0].Reason)
	require.Equal(t, "admin", list.Items[0].Actor)
	require.Equal(t, "team", list.Items[2].Actor)
	require.Equal(t, "lab", list.Items[2].Team)
	require.Equal(t, "/runs/"+id, list.Items[0].RunURL)

	// The API answers with the run's state.
	api := withToken(t, f.b, f.b.admin)
	var state struct {
		Hidden        bool   `json:"hidden"`
		HiddenReason  string `json:"hidden_reason"`
		Published     bool   `json:"published"`
		Verified      bool   `json:"verified"`
		OnLeaderboard bool   `json:"on_leaderboard"`
		Origin        string `json:"origin"`
	}
	res = api.api("POST", "/api/v1/runs/"+id+"/unhide", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	decodeJSON(t, res, &state)
	require.False(t, state.Hidden)
	require.Empty(t, state.HiddenReason)
	require.True(t, state.Published && state.Verified && state.OnLeaderboard)
	require.Equal(t, models.OriginExecuted, state.Origin)
	res = withToken(t, f.b, f.member).api("POST", "/api/v1/runs/"+id+"/withdraw", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	decodeJSON(t, res, &state)
	require.False(t, state.Published)
	require.Equal(t, http.StatusNotFound, anon.get("/runs/"+id).StatusCode, "withdrawn: private again")

	// Refused actions say why.
	queued, _ := f.runIn(t, stateQueued)
	res = f.member.postForm("/runs/"+strconv.FormatInt(queued.ID, 10)+"/publish", nil)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Contains(t, readBody(t, res), "has not completed (it is queued): only completed runs can be published.")
	res = withToken(t, f.b, f.member).api("POST", "/api/v1/runs/"+strconv.FormatInt(queued.ID, 10)+"/publish", nil)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Contains(t, readBody(t, res), `"code":"conflict"`)
}

// TestRuns_AttemptFilters: the attempts table filters by outcome, error class,
// site and difficulty from the address, works without JavaScript, answers htmx
// with the results only, keeps the filter in its page links and names the
// parameter of a bad value.
func TestRuns_AttemptFilters(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, _ := f.runIn(t, statePublished)
	path := "/runs/" + strconv.FormatInt(run.ID, 10)
	rows := func(body string) []string {
		out := []string{}
		for _, id := range []string{"t1", "t2", "t3", "t4"} {
			if strings.Contains(body, `data-testid="attempt-`+id+`"`) {
				out = append(out, id)
			}
		}
		return out
	}

	body := readBody(t, f.outsider.get(path))
	require.Equal(t, []string{"t1", "t2", "t3", "t4"}, rows(body))
	require.Contains(t, body, `data-testid="attempt-filters"`)
	require.Contains(t, body, `<option value="shopping">shopping</option>`)
	require.Contains(t, body, `<option value="none">no outcome yet</option>`)
	require.Contains(t, body, `<option value="evaluation">evaluation failed</option>`)
	require.Contains(t, body, `data-testid="attempt-count">Showing 1–4 of 4 attempts<`)
	require.Contains(t, body, `href="`+path+`/results.jsonl"`)

	for query, want := range map[string][]string{
		"?outcome=success":                    {"t1", "t4"},
		"?outcome=error&error_class=agent":    {"t3"},
		"?site=shopping":                      {"t1", "t4"},
		"?site=multi-site":                    {"t3"},
		"?difficulty=easy&outcome=success":    {"t1", "t4"},
		"?difficulty=medium&outcome=success":  {},
		"?error_class=evaluation":             {},
		"?outcome=none":                       {},
		"?site=gitlab&difficulty=hard&page=1": {"t3"},
	} {
		body := readBody(t, f.outsider.get(path+query))
		require.Equal(t, want, rows(body), query)
		if len(want) == 0 {
			require.Contains(t, body, "No attempt matches these filters.", query)
		}
	}
	body = readBody(t, f.outsider.get(path+"?outcome=success"))
	require.Contains(t, body, `<option value="success" selected>success</option>`, "the form shows the filter")

	// htmx gets the results fragment; the page's links keep the filter.
	res := getHTMX(f.outsider, path+"?site=shopping&per_page=1", nil)
	frag := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotContains(t, frag, "<html")
	require.NotContains(t, frag, `data-testid="run-progress"`)
	require.Equal(t, []string{"t1"}, rows(frag))
	require.Contains(t, frag, `href="`+path+`?page=2&amp;per_page=1&amp;site=shopping"`)
	require.Contains(t, frag, `hx-target="#attempt-results"`)
	require.Contains(t, res.Header.Get("Vary"), "HX-Request")
	require.Equal(t, path+"?per_page=1&site=shopping", res.Header.Get("HX-Push-Url"), "the address shown is the canonical one")
	res = getHTMX(f.outsider, path+"?outcome=&error_class=&site=shopping&difficulty=", nil)
	require.Equal(t, path+"?site=shopping", res.Header.Get("HX-Push-Url"), "the form's empty fields are dropped")
	frag = readBody(t, getHTMX(f.outsider, path+"?site=shopping&per_page=1&page=2", nil))
	require.Equal(t, []string{"t4"}, rows(frag))
	require.Contains(t, frag, `rel="prev"`)

	for query, param := range map[string]string{
		"?outcome=won":            "outcome",
		"?error_class=gremlins":   "error_class",
		"?site=wikipedia":         "site",
		"?difficulty=impossible":  "difficulty",
		"?page=zero":              "page",
		"?per_page=100000":        "per_page",
		"?outcome=success&site=x": "site",
	} {
		res := f.outsider.get(path + query)
		body := readBody(t, res)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, query)
		require.Contains(t, body, param, "%s: the error names the parameter", query)
	}
}

// TestRuns_ResultsExport: one JSON line per attempt in task order, shaped as
// WebArena-Verified's results with Proctor's fields beside them, and never the
// task's hidden answers for anyone but administrators.
func TestRuns_ResultsExport(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.runIn(t, statePublished)
	path := "/runs/" + strconv.FormatInt(run.ID, 10) + "/results.jsonl"

	lines := func(c *client, p string) []map[string]any {
		t.Helper()
		res := c.get(p)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "application/jsonl; charset=utf-8", res.Header.Get("Content-Type"))
		require.Equal(t, `attachment; filename="run-`+strconv.FormatInt(run.ID, 10)+`-results.jsonl"`, res.Header.Get("Content-Disposition"))
		body := readBody(t, res)
		for _, secret := range benchSecrets {
			if c.user == nil || !c.user.IsAdmin {
				require.NotContains(t, body, secret, p)
			}
		}
		require.NotContains(t, body, "SECRET-SKU-7", "the task's own hidden fields are never exported")
		require.NotContains(t, body, "SECRET-PATH")
		var out []map[string]any
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			var m map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
			out = append(out, m)
		}
		return out
	}
	for name, c := range map[string]*client{"anonymous": f.b.anonymous(t), "outsider": f.outsider, "member": f.member, "member-api": withToken(t, f.b, f.member)} {
		p := path
		if c.token != "" {
			p = "/api/v1" + path
		}
		got := lines(c, p)
		require.Len(t, got, 4, name)
		first := got[0]
		require.Equal(t, "t1", first["task_id"])
		require.Equal(t, []any{"shopping"}, first["sites"])
		require.Equal(t, "success", first["status"])
		require.Equal(t, 1.0, first["score"])
		require.Equal(t, "success", first["outcome"])
		require.Equal(t, 2.0, first["steps"])
		require.Contains(t, first, "cost")
		require.Contains(t, first, "tokens_in")
		require.Equal(t, 3000.0, first["duration_ms"])
		require.Nil(t, first["judge_score"])
		require.Equal(t, float64(ids[0]), first["attempt_id"])
		require.Equal(t, "/runs/"+strconv.FormatInt(run.ID, 10)+"/attempts/"+strconv.FormatInt(ids[0], 10), first["timeline_url"])
		results, ok := first["evaluators_results"].([]any)
		require.True(t, ok, name)
		require.Len(t, results, 1)
		ev := results[0].(map[string]any)
		require.Equal(t, "AgentResponseEvaluator", ev["evaluator_name"])
		require.Equal(t, "USB-C cable", ev["actual"], "the agent's own answer is public")
		require.NotContains(t, ev, "expected")
		require.Equal(t, []string{"t1", "t2", "t3", "t4"}, []string{first["task_id"].(string), got[1]["task_id"].(string), got[2]["task_id"].(string), got[3]["task_id"].(string)})
		require.Equal(t, "error", got[2]["outcome"], "the agent's error decides the outcome")
		require.Equal(t, "failure", got[2]["status"], "the check's own verdict")
		require.Equal(t, "agent", got[2]["error_class"])
	}
	admin := lines(f.b.admin, path)
	ev := admin[0]["evaluators_results"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"retrieved_data": []any{"SECRET-ANSWER-42"}}, ev["expected"], "administrators see what the evaluator expected, as on the timeline")

	// A run without attempts yet exports an empty file.
	queued, _ := f.runIn(t, stateQueued)
	res := f.member.get("/runs/" + strconv.FormatInt(queued.ID, 10) + "/results.jsonl")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Empty(t, readBody(t, res))
}

// TestModeration_RescoreChanges: after a re-scoring changes verdicts, the
// public change log (page and JSON), the leaderboard row and the run page say
// which run changed and by how much.
func TestModeration_RescoreChanges(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	run, ids := f.runIn(t, statePublished)
	id := strconv.FormatInt(run.ID, 10)
	require.NoError(t, service.NewMetrics(f.b.db).RefreshRunMetrics(f.sys, run.ID))
	check := func(verdict string) models.EvaluationBatch {
		s := 0.0
		if verdict == models.OutcomeSuccess {
			s = 1
		}
		return models.EvaluationBatch{RescoreID: "rescore-parity",
			Primary: &models.Evaluation{Evaluator: "webarena-verified", EvaluatorVersion: "webarena-verified@2", Verdict: verdict, Score: &s}}
	}
	// The official reading fails the two answers the lenient one passed.
	for _, a := range []struct {
		id      int64
		verdict string
	}{{ids[0], models.OutcomeFailure}, {ids[1], models.OutcomeFailure}, {ids[3], models.OutcomeFailure}} {
		_, err := f.b.db.RecordEvaluations(f.sys, a.id, check(a.verdict), nil)
		require.NoError(t, err)
	}
	require.NoError(t, service.NewMetrics(f.b.db).RefreshRunMetrics(f.sys, run.ID))
	const want = "with webarena-verified@2: 50.0% → 0.0% of 4 tasks (−50.0 points), 2 attempts changed outcome"

	anon := f.b.anonymous(t)
	body := readBody(t, anon.get("/benchmarks/mini/leaderboard/changes"))
	require.Contains(t, body, `data-testid="change-rescored"`)
	require.Contains(t, body, `data-testid="change-rescore">`+html.EscapeString(want)+`<`)

	var list struct {
		Items []struct {
			Kind    string `json:"kind"`
			Rescore *struct {
				SuccessesBefore int    `json:"successes_before"`
				SuccessesAfter  int    `json:"successes_after"`
				Tasks           int    `json:"tasks"`
				ChangedAttempts int    `json:"changed_attempts"`
				Evaluators      string `json:"evaluators"`
			} `json:"rescore"`
		} `json:"items"`
	}
	decodeJSON(t, anon.get("/api/v1/benchmarks/mini/leaderboard/changes"), &list)
	require.Equal(t, models.EventRescored, list.Items[0].Kind)
	require.NotNil(t, list.Items[0].Rescore)
	require.Equal(t, 2, list.Items[0].Rescore.SuccessesBefore)
	require.Equal(t, 0, list.Items[0].Rescore.SuccessesAfter)
	require.Equal(t, 4, list.Items[0].Rescore.Tasks)
	require.Equal(t, 2, list.Items[0].Rescore.ChangedAttempts)
	require.Equal(t, "webarena-verified@2", list.Items[0].Rescore.Evaluators)
	require.Len(t, list.Items, 1, "one line for the request, however many attempts it graded")

	board := readBody(t, anon.get("/benchmarks/mini/leaderboard"))
	require.Contains(t, board, `data-testid="rescored">re-scored: was 50.0%<`)
	require.Contains(t, board, `title="`+html.EscapeString(want)+`"`)

	page := readBody(t, anon.get("/runs/"+id))
	require.Contains(t, page, `data-testid="run-rescore-change">`+html.EscapeString(want)+`<`)
}
