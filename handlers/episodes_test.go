package handlers_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/api"
	"proctor/models"
	"proctor/runner/connect"
	"proctor/service/servicetest"
)

// connectingRun queues a run of the fixture's MCP agent on mini (one episode
// at a time) and dispatches it; its attempts wait for claims.
func (f *runsFixture) connectingRun(t *testing.T) (*models.Run, []int64) {
	t.Helper()
	db := f.b.db
	run, err := servicetest.QueueRun(actorCtx(f.member), db, models.RunRequest{TeamSlug: "lab", AgentSlug: "connector", BenchmarkSlug: "mini", Parallelism: 1})
	require.NoError(t, err)
	require.True(t, run.AgentConnects)
	require.NoError(t, db.DispatchRun(f.sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error {
		t.Error("a connecting run's episodes are queued by claims, not offers")
		return nil
	}))
	var ids []int64
	require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
	return run, ids
}

// claimAs claims an episode of run as c; the claim when the answer is 200.
func claimAs(t *testing.T, d *docChecker, c *client, runID int64, want int) *api.EpisodeClaim {
	t.Helper()
	body := d.send(c, apiRequest{method: http.MethodPost, path: fmt.Sprintf("/api/v1/runs/%d/episodes/claim?wait=0", runID)}, want)
	if want != http.StatusOK {
		return nil
	}
	var claim api.EpisodeClaim
	require.NoError(t, json.Unmarshal(body, &claim))
	return &claim
}

// episodeClient is c sending the claim's episode token.
func episodeClient(c *client, claim *api.EpisodeClaim) *client {
	cp := *c
	cp.token = claim.Token
	return &cp
}

// playedEpisode is an episode the test plays as the episode loop would: a
// page with one button, and the actions it was asked to take.
type playedEpisode struct {
	box     *connect.Mailbox
	actions chan models.Action
}

// startEpisode starts the claimed episode in the fixture's hub, as a worker
// does, and plays its loop until a final action or the context's end.
func (f *runsFixture) startEpisode(t *testing.T, claim *api.EpisodeClaim) *playedEpisode {
	t.Helper()
	lease, err := f.b.db.StartEpisodeLease(f.sys, claim.EpisodeID, claim.Try, "")
	require.NoError(t, err)
	require.NotNil(t, lease)
	p := &playedEpisode{box: connect.NewMailbox(claim.RunID, claim.EpisodeID, claim.Try), actions: make(chan models.Action, 16)}
	t.Cleanup(f.hub.Add(p.box))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for i := 0; ; i++ {
			resp, err := p.box.Step(ctx, &models.StepRequest{Protocol: models.AgentProtocol, RunID: claim.RunID, AttemptID: claim.EpisodeID, Step: i,
				Task: claim.Task, Observation: models.Observation{URL: "http://shop.test/", Title: "Shop",
					Tabs:   []models.Tab{{Index: 0, URL: "http://shop.test/", Title: "Shop", Active: true}},
					AXTree: "[e1] heading(1) \"Shop\"\n[e2] button \"Go\"\n  [e3] link \"Cart\" -> /cart"},
				Budget: models.Budget{StepsLeft: 10 - i, SecondsLeft: 60}})
			if err != nil {
				p.box.End("the test ended it")
				return
			}
			p.actions <- resp.Action
			if resp.Action.Final() {
				p.box.End("the answer was submitted and will be evaluated")
				return
			}
		}
	}()
	return p
}

// mustRequest is a bodiless request with a bearer token.
func mustRequest(t *testing.T, method, url, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// mcpCall sends one JSON-RPC message to the episode's MCP endpoint.
func mcpCall(t *testing.T, d *docChecker, c *client, path, method string, params any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	body := d.send(c, apiRequest{method: http.MethodPost, path: path, json: string(raw),
		headers: map[string]string{"Accept": "application/json, text/event-stream"}}, http.StatusOK)
	var msg struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &msg), string(body))
	require.Nil(t, msg.Error, string(body))
	return msg.Result
}

// toolText is the text of a tools/call result, and whether it is an error.
func toolText(result map[string]any) (string, bool) {
	var b strings.Builder
	content, _ := result["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			b.WriteString(m["text"].(string))
		}
	}
	isError, _ := result["isError"].(bool)
	return b.String(), isError
}

// TestEpisodes_ClaimPullAndMCP claims a connecting run's episode and plays
// it through both pull mode and the MCP endpoint, validating every answer
// against the API document: the lease bounds the run's episodes, a ref must
// be in the snapshot shown, the answer ends the episode, and the claim holds
// nothing of the task's hidden fields.
func TestEpisodes_ClaimPullAndMCP(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	member := withToken(t, f.b, f.member)
	d := newDocChecker(t, f.b.anonymous(t))
	run, attempts := f.connectingRun(t)
	waiting := func() string {
		body := readBody(t, f.member.get("/runs/"+strconv.FormatInt(run.ID, 10)))
		m := regexp.MustCompile(`(?s)data-testid="run-waiting-for-agent">\s*(\d+)`).FindStringSubmatch(body)
		require.NotNil(t, m, "the run page says how many episodes wait for the agent")
		return m[1]
	}
	require.Equal(t, strconv.Itoa(len(attempts)), waiting())

	claim := claimAs(t, d, member, run.ID, http.StatusOK)
	require.Equal(t, strconv.Itoa(len(attempts)-1), waiting(), "the claimed episode no longer waits")
	require.Equal(t, attempts[0], claim.EpisodeID, "the first waiting attempt")
	require.Equal(t, 1, claim.Try)
	require.True(t, strings.HasPrefix(claim.Token, models.EpisodeTokenPrefix))
	require.Equal(t, "Add the cheapest USB-C cable to the cart.", claim.Task.Goal)
	for _, u := range []string{claim.MCPURL, claim.ObservationURL, claim.ActionURL, claim.HeartbeatURL} {
		require.True(t, strings.HasPrefix(u, f.b.srv.URL+"/api/v1/runs/"+strconv.FormatInt(run.ID, 10)+"/episodes/"), u)
	}
	raw, err := json.Marshal(claim)
	require.NoError(t, err)
	for _, secret := range benchSecrets {
		require.NotContains(t, string(raw), secret, "a claim shows nothing of the task's hidden fields")
	}
	claimAs(t, d, member, run.ID, http.StatusNoContent) // parallelism 1: the lease holds the run's only room

	ep := episodeClient(f.b.anonymous(t), claim)
	base := strings.TrimPrefix(claim.MCPURL, f.b.srv.URL)
	base = strings.TrimSuffix(base, "mcp")
	d.send(ep, apiRequest{method: http.MethodPost, path: base + "heartbeat"}, http.StatusOK)
	played := f.startEpisode(t, claim)

	// Pull mode: the observation, then an action for its step.
	var step models.StepRequest
	require.NoError(t, json.Unmarshal(d.send(ep, apiRequest{method: http.MethodGet, path: base + "observation"}, http.StatusOK), &step))
	require.Equal(t, 0, step.Step)
	require.Equal(t, models.AgentProtocol, step.Protocol)
	d.send(ep, apiRequest{method: http.MethodPost, path: base + "action?step=5", json: `{"action":{"type":"click","target":{"element_id":"e2"}}}`}, http.StatusConflict)
	d.send(ep, apiRequest{method: http.MethodPost, path: base + "action?step=0", json: `{"action":{"type":"click","target":{"element_id":"e2"}},"thought":"go"}`}, http.StatusAccepted)
	require.Equal(t, models.ActClick, (<-played.actions).Type)

	// MCP: the tools, a snapshot, a ref the snapshot does not hold, an action, the answer.
	tools := mcpCall(t, d, ep, base+"mcp", "tools/list", map[string]any{})
	names := map[string]bool{}
	for _, tool := range tools["tools"].([]any) {
		names[tool.(map[string]any)["name"].(string)] = true
	}
	for _, want := range []string{"browser_snapshot", "browser_click", "browser_type", "browser_select_option", "browser_press_key", "browser_hover",
		"browser_navigate", "browser_navigate_back", "browser_tabs", "browser_take_screenshot", "browser_wait_for", "submit_answer", "give_up"} {
		require.True(t, names[want], "tool %s", want)
	}
	text, isError := toolText(mcpCall(t, d, ep, base+"mcp", "tools/call", map[string]any{"name": "browser_snapshot", "arguments": map[string]any{}}))
	require.False(t, isError, text)
	require.Contains(t, text, "- Page URL: http://shop.test/")
	require.Contains(t, text, `- button "Go" [ref=e2]`)
	require.Contains(t, text, `- heading "Shop" [level=1] [ref=e1]`)
	require.Contains(t, text, "  - link \"Cart\" [ref=e3]:\n    - /url: /cart")
	text, isError = toolText(mcpCall(t, d, ep, base+"mcp", "tools/call", map[string]any{"name": "browser_click", "arguments": map[string]any{"target": "e99"}}))
	require.True(t, isError)
	require.Contains(t, text, "Ref e99 not found in the current page snapshot")
	text, isError = toolText(mcpCall(t, d, ep, base+"mcp", "tools/call", map[string]any{"name": "browser_click", "arguments": map[string]any{"target": "e2", "thought": "again"}}))
	require.False(t, isError, text)
	require.Contains(t, text, "### Snapshot")
	require.Equal(t, models.ActClick, (<-played.actions).Type)
	text, isError = toolText(mcpCall(t, d, ep, base+"mcp", "tools/call", map[string]any{"name": "submit_answer",
		"arguments": map[string]any{"task_type": "mutate", "status": "SUCCESS", "retrieved_data": nil}}))
	require.False(t, isError, text)
	require.Contains(t, text, "answer was submitted")
	final := <-played.actions
	require.Equal(t, models.ActAnswer, final.Type)
	require.JSONEq(t, `{"task_type":"mutate","status":"SUCCESS","retrieved_data":null,"error_details":null}`, string(final.Response))

	// Over: every call says so.
	d.send(ep, apiRequest{method: http.MethodGet, path: base + "observation"}, http.StatusGone)

	for _, item := range d.doc.Paths.Map() {
		for _, op := range item.Operations() {
			if slices.Contains(op.Tags, "Episodes") {
				require.True(t, d.checked[op.OperationID], "operation %s was validated", op.OperationID)
			}
		}
	}
}

// TestEpisodes_Authorization: claims are for members of the run's team
// only, and an episode token opens its own episode only, while its lease
// lasts.
func TestEpisodes_Authorization(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, runsOptions{})
	member, outsider, admin := withToken(t, f.b, f.member), withToken(t, f.b, f.outsider), f.b.admin
	anon := f.b.anonymous(t)
	d := newDocChecker(t, anon)
	run, _ := f.connectingRun(t)
	called, _ := f.queue(t, true, false) // a run of an agent Proctor calls

	claimAs(t, d, anon, run.ID, http.StatusUnauthorized)
	claimAs(t, d, outsider, run.ID, http.StatusNotFound)                  // another team's private run
	claimAs(t, d, withToken(t, f.b, admin), run.ID, http.StatusForbidden) // a claim runs the team's agent: members only
	claimAs(t, d, member, called.ID, http.StatusConflict)
	claimAs(t, d, member, 999999, http.StatusNotFound)

	claim := claimAs(t, d, member, run.ID, http.StatusOK)
	base := fmt.Sprintf("/api/v1/runs/%d/episodes/%d/", run.ID, claim.EpisodeID)
	// An API token, even an administrator's, opens no episode.
	adminToken := withToken(t, f.b, admin)
	for _, c := range []*client{anon, member, adminToken} {
		d.send(c, apiRequest{method: http.MethodGet, path: base + "observation"}, http.StatusUnauthorized)
		d.send(c, apiRequest{method: http.MethodPost, path: base + "action", json: `{"action":{"type":"stop"}}`}, http.StatusUnauthorized)
		d.send(c, apiRequest{method: http.MethodPost, path: base + "heartbeat"}, http.StatusUnauthorized)
		d.send(c, apiRequest{method: http.MethodPost, path: base + "mcp", json: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`}, http.StatusUnauthorized)
	}
	forged := *claim
	forged.Token = models.EpisodeTokenPrefix + "forged"
	d.send(episodeClient(anon, &forged), apiRequest{method: http.MethodPost, path: base + "heartbeat"}, http.StatusUnauthorized)
	ep := episodeClient(anon, claim)
	other := fmt.Sprintf("/api/v1/runs/%d/episodes/%d/", run.ID, claim.EpisodeID+1)
	d.send(ep, apiRequest{method: http.MethodPost, path: other + "heartbeat"}, http.StatusForbidden)
	d.send(ep, apiRequest{method: http.MethodPost, path: fmt.Sprintf("/api/v1/runs/%d/episodes/%d/heartbeat", called.ID, claim.EpisodeID)}, http.StatusForbidden)
	d.send(ep, apiRequest{method: http.MethodPost, path: base + "heartbeat"}, http.StatusOK)

	// Calls with a wrong token do not spend the episode's allowance.
	for range 3 * 20 {
		res := anon.do(mustRequest(t, http.MethodPost, ep.base+base+"heartbeat", forged.Token))
		res.Body.Close()
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	}
	d.send(ep, apiRequest{method: http.MethodPost, path: base + "heartbeat"}, http.StatusOK)

	// Calls on one episode are bounded: a burst beyond the allowance is refused.
	limited := 0
	for range 3 * 20 {
		res := ep.do(mustRequest(t, http.MethodPost, ep.base+base+"heartbeat", ep.token))
		res.Body.Close()
		if res.StatusCode == http.StatusTooManyRequests {
			limited++
			require.NotEmpty(t, res.Header.Get("Retry-After"))
		}
	}
	require.Positive(t, limited, "60 calls at once on one episode meet its rate limit")
	time.Sleep(2 * time.Second) // the allowance refills

	// A lapsed lease opens nothing, and a heartbeat does not revive it.
	require.NoError(t, f.b.db.Gorm().Model(&models.EpisodeLease{}).Where("attempt_id = ?", claim.EpisodeID).
		Update("expires_at", time.Now().UTC().Add(-time.Second)).Error)
	body := d.send(ep, apiRequest{method: http.MethodPost, path: base + "heartbeat"}, http.StatusGone)
	require.Contains(t, string(body), "lapsed")
}
