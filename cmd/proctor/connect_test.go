package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/api"
	"proctor/internal/apiclient"
	"proctor/internal/mcpref"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/sandbox"
	"proctor/service/servicetest"
)

// connectBundle is a server with the sandbox benchmark and a team "lab"
// whose agent "browser-agent" connects over MCP, and an API token of the
// team's member.
type connectBundle struct {
	remoteBundle
	client *apiclient.Client
}

// setupConnect seeds and starts a server that runs episodes.
func setupConnect(t *testing.T, extra map[string]string) connectBundle {
	t.Helper()
	opts := browserOptionsOrSkip(t)
	env := map[string]string{"PROCTOR_EPISODES": "2", "PLAYWRIGHT_DRIVER_PATH": opts.DriverDir, "PROCTOR_CHROMIUM_PATH": opts.ExecutablePath}
	for k, v := range extra {
		env[k] = v
	}
	b := setupRemote(t, env)
	// The sandbox's sites are served by the server itself, at the port it
	// picked when it started.
	system := models.WithActor(context.Background(), models.SystemActor())
	for name, u := range sandbox.SiteURLs(b.server) {
		_, err := b.app.DB.UpdateSite(system, sandbox.Slug, name, u, "", 0)
		require.NoError(t, err)
	}
	require.NoError(t, servicetest.CreateAgent(b.app.DB, b.member, "lab", &models.Agent{Name: "Browser agent", Slug: "browser-agent", Kind: models.AgentMCP}, nil))
	client, err := apiclient.New(b.server, b.token)
	require.NoError(t, err)
	return connectBundle{remoteBundle: b, client: client}
}

// queue queues a run of the MCP agent through the API.
func (b connectBundle) queue(t *testing.T, subset string, parallelism int) int64 {
	t.Helper()
	in := api.RunInput{Team: "lab", Agent: "browser-agent", Benchmark: sandbox.Slug, Subset: subset}
	in.Parallelism = parallelism
	run, err := b.client.QueueRun(context.Background(), in)
	require.NoError(t, err)
	return run.ID
}

// claim asks for an episode of run; nil when none came within wait seconds.
func (b connectBundle) claim(t *testing.T, runID int64, wait int) (*api.EpisodeClaim, int) {
	t.Helper()
	return claimOn(t, b.server, b.token, runID, wait)
}

// claimOn asks server for an episode of run with an API token.
func claimOn(t *testing.T, server, token string, runID int64, wait int) (*api.EpisodeClaim, int) {
	t.Helper()
	status, body := pullCall(t, http.MethodPost, fmt.Sprintf("%s/api/v1/runs/%d/episodes/claim?wait=%d", server, runID, wait), token, nil)
	if status != http.StatusOK {
		return nil, status
	}
	var c api.EpisodeClaim
	require.NoError(t, json.Unmarshal(body, &c), string(body))
	return &c, status
}

// bearer sends a bearer token with every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// mcpSession connects the MCP Go SDK's client to a claimed episode.
func mcpSession(ctx context.Context, c *api.EpisodeClaim) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "proctor-test-agent", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   c.MCPURL,
		HTTPClient: &http.Client{Transport: bearer{token: c.Token, base: http.DefaultTransport}},
	}, nil)
}

// sandboxReference returns the sandbox tasks' reference actions by task id.
func sandboxReference(t *testing.T) map[string][]models.Action {
	t.Helper()
	out := map[string][]models.Action{}
	sc := bufio.NewScanner(bytes.NewReader(sandbox.Benchmark()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var task struct {
			ID      string          `json:"id"`
			Actions []models.Action `json:"reference_actions"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &task))
		if task.ID != "" {
			out[task.ID] = task.Actions
		}
	}
	return out
}

// siteResolver replaces the sandbox's site placeholders with the claimed
// episode's own sites.
func siteResolver(server string, c *api.EpisodeClaim) *strings.Replacer {
	ns := models.Namespace(c.EpisodeID, c.Try)
	var pairs []string
	for site, u := range sandbox.SiteURLs(server) {
		pairs = append(pairs, models.PlaceholderFor(site), strings.ReplaceAll(u, sandbox.EpisodeToken, ns))
	}
	return strings.NewReplacer(pairs...)
}

// toolCall is the Playwright MCP tool call that takes a protocol action.
func toolCall(a models.Action, sites *strings.Replacer) (string, map[string]any) {
	target := func() string {
		if a.Target.ElementID != "" {
			return a.Target.ElementID
		}
		return a.Target.Selector
	}
	switch a.Type {
	case models.ActClick:
		return "browser_click", map[string]any{"target": target(), "thought": "reference step"}
	case models.ActFill:
		return "browser_type", map[string]any{"target": target(), "text": a.Text}
	case models.ActSelect:
		return "browser_select_option", map[string]any{"target": target(), "values": a.Values}
	case models.ActGoto:
		return "browser_navigate", map[string]any{"url": sites.Replace(a.URL)}
	case models.ActPress:
		return "browser_press_key", map[string]any{"key": a.Key}
	case models.ActAnswer:
		var resp map[string]any
		_ = json.Unmarshal([]byte(sites.Replace(string(a.Response))), &resp)
		return "submit_answer", resp
	case models.ActStop:
		return "give_up", map[string]any{"reason": a.Reason}
	}
	panic("no tool for action " + a.Type)
}

// replayOverMCP plays a task's reference actions through the episode's MCP
// tools and returns the text of the last result.
func replayOverMCP(ctx context.Context, cs *mcp.ClientSession, actions []models.Action, sites *strings.Replacer) (string, error) {
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_snapshot", Arguments: map[string]any{}}); err != nil {
		return "", err
	}
	last := ""
	for i, a := range actions {
		name, args := toolCall(a, sites)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "", fmt.Errorf("step %d (%s): %w", i, name, err)
		}
		last = resultText(res)
		if res.IsError {
			return last, fmt.Errorf("step %d (%s) failed: %s", i, name, last)
		}
	}
	return last, nil
}

// resultText joins a tool result's text blocks.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// waitRun waits for a run to finish and returns its state.
func (b connectBundle) waitRun(t *testing.T, runID int64, within time.Duration) *models.Run {
	t.Helper()
	var run models.Run
	require.Eventually(t, func() bool {
		require.NoError(t, b.app.DB.Gorm().First(&run, runID).Error)
		return run.Finished()
	}, testenv.Scaled(t, within), 200*time.Millisecond, "run %d did not finish", runID)
	return &run
}

// waitAttemptDone waits until an attempt is graded and returns it.
func waitAttemptDone(t *testing.T, app *App, id int64) models.Attempt {
	t.Helper()
	var attempt models.Attempt
	require.Eventually(t, func() bool {
		require.NoError(t, app.DB.Gorm().First(&attempt, id).Error)
		return attempt.Status == models.AttemptDone
	}, testenv.Scaled(t, time.Minute), 100*time.Millisecond, "attempt %d was not graded", id)
	return attempt
}

// TestConnect_MCPReplaysHardSubset claims every episode of a run of the
// sandbox's hard subset and drives each through its MCP server with the
// official Go SDK's client, from the tasks' reference actions: every task
// passes, and every tool call that acts is a step of the attempt.
func TestConnect_MCPReplaysHardSubset(t *testing.T) {
	t.Parallel()
	b := setupConnect(t, nil)
	runID := b.queue(t, "hard", 2)
	reference := sandboxReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(t, 5*time.Minute))
	defer cancel()

	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	steps := map[int64]int{}
	listed := false
	for {
		c, status := b.claim(t, runID, 5)
		if c == nil {
			if status == http.StatusConflict {
				break // the run is over
			}
			require.Equal(t, http.StatusNoContent, status)
			var run models.Run
			require.NoError(t, b.app.DB.Gorm().First(&run, runID).Error)
			if run.Finished() {
				break
			}
			continue
		}
		require.NotEmpty(t, c.Task.Goal)
		require.NotEmpty(t, c.Task.StartURLs)
		require.True(t, strings.HasPrefix(c.Token, models.EpisodeTokenPrefix))
		actions, ok := reference[c.Task.ID]
		require.True(t, ok, "task %s has reference actions", c.Task.ID)
		if !listed {
			listed = true
			cs, err := mcpSession(ctx, c)
			require.NoError(t, err)
			tools, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			require.Subset(t, names, []string{"browser_snapshot", "browser_click", "browser_type", "browser_navigate", "submit_answer", "give_up"})
			require.NoError(t, cs.Close())
		}
		wg.Add(1)
		go func(c *api.EpisodeClaim, actions []models.Action) {
			defer wg.Done()
			cs, err := mcpSession(ctx, c)
			if err == nil {
				defer cs.Close()
				var last string
				last, err = replayOverMCP(ctx, cs, actions, siteResolver(b.server, c))
				if err == nil && !strings.Contains(last, "submitted") {
					err = fmt.Errorf("the answer's result says %q", last)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			steps[c.EpisodeID] = len(actions)
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: %v", c.Task.ID, err))
			}
		}(c, actions)
	}
	wg.Wait()
	if len(failures) > 0 {
		var attempts []models.Attempt
		require.NoError(t, b.app.DB.Gorm().Where("run_id = ?", runID).Find(&attempts).Error)
		for _, a := range attempts {
			t.Logf("attempt %d: %s %s %s", a.ID, a.Status, a.ErrorClass, a.ErrorMessage)
		}
	}
	require.Empty(t, failures)
	run := b.waitRun(t, runID, 2*time.Minute)
	require.Equal(t, models.RunCompleted, run.Status)
	var attempts []models.Attempt
	require.NoError(t, b.app.DB.Gorm().Where("run_id = ?", runID).Find(&attempts).Error)
	require.Len(t, attempts, run.TasksTotal)
	require.Equal(t, run.TasksTotal, len(steps), "every attempt was claimed once")
	var evals []models.Evaluation
	require.NoError(t, b.app.DB.Gorm().Where("attempt_id IN (SELECT id FROM attempts WHERE run_id = ?) AND is_current = ?", runID, true).Find(&evals).Error)
	for _, a := range attempts {
		require.Equal(t, steps[a.ID], a.Steps, "attempt %d: one step per acting tool call", a.ID)
	}
	require.Equal(t, run.TasksTotal, run.Successes, "every hard task passes when replayed through MCP: %+v", evals)
	var thoughts int64
	require.NoError(t, b.app.DB.Gorm().Model(&models.Step{}).Where("attempt_id IN (SELECT id FROM attempts WHERE run_id = ?) AND thought = ?", runID, "reference step").Count(&thoughts).Error)
	require.Positive(t, thoughts, "the thought passed to a tool is kept on its step")
}

// pullCall makes one pull-mode request with the episode token.
func pullCall(t *testing.T, method, url, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, out
}

// TestConnect_PullReplaysHardSubset drives every episode of a pull-mode
// http agent's run by fetching observations and posting the reference
// actions as push mode's replies: every task passes.
func TestConnect_PullReplaysHardSubset(t *testing.T) {
	t.Parallel()
	b := setupConnect(t, nil)
	require.NoError(t, servicetest.CreateAgent(b.app.DB, b.member, "lab", &models.Agent{Name: "Puller", Slug: "puller", Kind: models.AgentHTTP, Config: `{"pull": true}`}, nil))
	in := api.RunInput{Team: "lab", Agent: "puller", Benchmark: sandbox.Slug, Subset: "hard"}
	in.Parallelism = 3
	queued, err := b.client.QueueRun(context.Background(), in)
	require.NoError(t, err)
	reference := sandboxReference(t)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for {
		c, status := b.claim(t, queued.ID, 5)
		if c == nil {
			if status == http.StatusConflict {
				break
			}
			continue
		}
		wg.Add(1)
		go func(c *api.EpisodeClaim) {
			defer wg.Done()
			sites := siteResolver(b.server, c)
			after := -1
			for _, a := range reference[c.Task.ID] {
				status, body := pullCall(t, http.MethodGet, fmt.Sprintf("%s?after=%d", c.ObservationURL, after), c.Token, nil)
				var req models.StepRequest
				if status != http.StatusOK || json.Unmarshal(body, &req) != nil || req.Protocol != models.AgentProtocol {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: observation: %d %s", c.Task.ID, status, body))
					mu.Unlock()
					return
				}
				if a.URL != "" {
					a.URL = sites.Replace(a.URL)
				}
				reply, _ := json.Marshal(models.StepResponse{Action: a, Thought: "pulled"})
				status, body = pullCall(t, http.MethodPost, fmt.Sprintf("%s?step=%d", c.ActionURL, req.Step), c.Token, reply)
				if status != http.StatusAccepted {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: action: %d %s", c.Task.ID, status, body))
					mu.Unlock()
					return
				}
				after = req.Step
			}
			// The answer ended the episode: the next observation is gone.
			status, body := pullCall(t, http.MethodGet, c.ObservationURL, c.Token, nil)
			if status != http.StatusGone || !strings.Contains(string(body), "answer was submitted") {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%s: after the answer: %d %s", c.Task.ID, status, body))
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	require.Empty(t, failures)
	run := b.waitRun(t, queued.ID, 2*time.Minute)
	require.Equal(t, run.TasksTotal, run.Successes, "every hard task passes when replayed in pull mode")
}

// TestConnect_PullExampleAgent runs examples/pull-agent against a run of a
// pull-mode http agent, relaying every episode to examples/http-agent on
// loopback: each episode's steps are the example agent's replies.
func TestConnect_PullExampleAgent(t *testing.T) {
	t.Parallel()
	b := setupConnect(t, nil)
	require.NoError(t, servicetest.CreateAgent(b.app.DB, b.member, "lab", &models.Agent{Name: "Bridge", Slug: "bridge", Kind: models.AgentHTTP, Config: `{"pull": true}`}, nil))
	in := api.RunInput{Team: "lab", Agent: "bridge", Benchmark: sandbox.Slug, Subset: "hard"}
	in.Parallelism = 2
	queued, err := b.client.QueueRun(context.Background(), in)
	require.NoError(t, err)

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./examples/http-agent", "./examples/pull-agent")
	build.Dir = "../.." // the module root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	agentAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(t, 3*time.Minute))
	defer cancel()
	agentCmd := exec.CommandContext(ctx, filepath.Join(bin, "http-agent"), "-addr", agentAddr)
	require.NoError(t, agentCmd.Start())
	t.Cleanup(func() { _ = agentCmd.Process.Kill(); _ = agentCmd.Wait() })

	pull := exec.CommandContext(ctx, filepath.Join(bin, "pull-agent"), "-server", b.server, "-run", fmt.Sprint(queued.ID),
		"-agent", "http://"+agentAddr+"/step", "-parallel", "2")
	pull.Env = append(os.Environ(), "PROCTOR_TOKEN="+b.token)
	logs, err := pull.CombinedOutput()
	require.NoError(t, err, "pull-agent:\n%s", logs)

	run := b.waitRun(t, queued.ID, time.Minute)
	require.Equal(t, models.RunCompleted, run.Status, "pull-agent:\n%s", logs)
	var steps []models.Step
	require.NoError(t, b.app.DB.Gorm().Where("attempt_id IN (SELECT id FROM attempts WHERE run_id = ?)", queued.ID).Find(&steps).Error)
	require.Len(t, steps, run.TasksTotal, "one step an episode: the example agent stops at once on these goals")
	for _, s := range steps {
		require.Contains(t, s.Thought, "no search term", "the step's thought is the example agent's")
		require.Contains(t, string(s.Action), `"stop"`)
	}
}

// inspector runs one MCP Inspector command-line call on a claimed episode
// and returns the tool result's text (tools/call) or tool names (tools/list).
func inspector(t *testing.T, root string, c *api.EpisodeClaim, args ...string) (text string, tools []string, isError bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(t, time.Minute))
	defer cancel()
	cmd, err := mcpref.InspectorCLI(ctx, root, append([]string{c.MCPURL, "--transport", "http",
		"--header", "Authorization: Bearer " + c.Token}, args...)...)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "inspector %v:\n%s", args, stderr.String())
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), stdout.String())
	for _, tool := range out.Tools {
		tools = append(tools, tool.Name)
	}
	for _, c := range out.Content {
		if c.Type == "text" {
			text += c.Text
		}
	}
	return text, tools, out.IsError
}

// refOf finds the ref of the element a snapshot lists as `- <role> "<name>"`.
func refOf(t *testing.T, snapshot, role, name string) string {
	t.Helper()
	m := regexp.MustCompile(`- ` + regexp.QuoteMeta(role) + ` "` + regexp.QuoteMeta(name) + `"[^\n]*\[ref=(e[0-9]+)\]`).FindStringSubmatch(snapshot)
	require.NotNil(t, m, "no %s %q in the snapshot:\n%s", role, name, snapshot)
	return m[1]
}

// TestConnect_InspectorCLI drives an episode with a client no one here
// wrote, the MCP Inspector's command-line mode from npm: it lists the
// tools, takes a snapshot, types into the search box by its ref, clicks
// the product and submits the answer. The attempt passes its check, and
// its timeline holds a step for every acting call.
func TestConnect_InspectorCLI(t *testing.T) {
	t.Parallel()
	root, err := mcpref.FindRoot(".")
	require.NoError(t, err)
	_, ierr := mcpref.InspectorCLI(context.Background(), root)
	why := ""
	if ierr != nil {
		why = "the MCP Inspector from npm: " + ierr.Error()
	}
	testenv.SkipUnlessAvailable(t, "browser", ierr == nil, why)
	b := setupConnect(t, nil)
	runID := b.queue(t, "", 1)
	c, status := b.claim(t, runID, 30)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "shop-keyboard-price", c.Task.ID, "the first task of the sandbox")

	_, tools, _ := inspector(t, root, c, "--method", "tools/list")
	require.Subset(t, tools, []string{"browser_snapshot", "browser_click", "browser_type", "submit_answer", "give_up"})
	snap, _, isError := inspector(t, root, c, "--method", "tools/call", "--tool-name", "browser_snapshot")
	require.False(t, isError, snap)
	box := refOf(t, snap, "searchbox", "Search products")
	page, _, isError := inspector(t, root, c, "--method", "tools/call", "--tool-name", "browser_type",
		"--tool-arg", "target="+box, "--tool-arg", "text=keyboard", "--tool-arg", "submit=true",
		"--tool-arg", "thought=search for the keyboard")
	require.False(t, isError, page)
	product := refOf(t, page, "link", "Mechanical Keyboard")
	page, _, isError = inspector(t, root, c, "--method", "tools/call", "--tool-name", "browser_click", "--tool-arg", "target="+product)
	require.False(t, isError, page)
	require.Contains(t, page, "$79.00")
	done, _, isError := inspector(t, root, c, "--method", "tools/call", "--tool-name", "submit_answer",
		"--tool-arg", "task_type=retrieve", "--tool-arg", "status=SUCCESS", "--tool-arg", `retrieved_data=["$79.00"]`)
	require.False(t, isError, done)
	require.Contains(t, done, "answer was submitted")

	attempt := waitAttemptDone(t, b.app, c.EpisodeID)
	require.Equal(t, models.OutcomeSuccess, attempt.Outcome, "the attempt passes its check: %s %s", attempt.ErrorClass, attempt.ErrorMessage)
	var steps []models.Step
	require.NoError(t, b.app.DB.Gorm().Where("attempt_id = ?", c.EpisodeID).Order("step_index").Find(&steps).Error)
	var kinds []string
	for _, s := range steps {
		var a models.Action
		require.NoError(t, json.Unmarshal([]byte(s.Action), &a))
		kinds = append(kinds, a.Type)
		require.NotEmpty(t, s.ScreenshotKey, "step %d has its screenshot", s.Index)
	}
	require.Equal(t, []string{models.ActFill, models.ActPress, models.ActClick, models.ActAnswer}, kinds, "a step for every acting call; the typed text was submitted with Enter")
	require.Equal(t, "search for the keyboard", steps[0].Thought)

	// The attempt's timeline shows every call.
	var timeline api.Timeline
	require.NoError(t, b.client.Get(context.Background(), fmt.Sprintf("/runs/%d/attempts/%d", runID, c.EpisodeID), nil, &timeline))
	require.Len(t, timeline.Steps, 4)
	for i, want := range []string{"fill", "press", "click", "answer"} {
		require.True(t, strings.HasPrefix(timeline.Steps[i].Summary, want), "step %d: %s", i, timeline.Steps[i].Summary)
	}
	status, body := pullCall(t, http.MethodPost, fmt.Sprintf("%s/api/v1/runs/%d/cancel", b.server, runID), b.token, nil)
	require.Equal(t, http.StatusNoContent, status, "%s", body)
}

// TestConnect_LeaseLapses: an agent that stops renewing its lease loses the
// episode without being charged; the episode is offered again as a new try
// with a new token, and a second agent completes it. The run is queued with
// `proctor queue`, its progress counts the episodes waiting for the agent,
// and a navigation off the benchmark's sites is refused through the tools.
func TestConnect_LeaseLapses(t *testing.T) {
	t.Parallel()
	b := setupConnect(t, map[string]string{"PROCTOR_EPISODE_LEASE": "3s"})
	code, stdout, stderr := b.cli(t, "queue", "--team", "lab", "--agent", "browser-agent", "--benchmark", sandbox.Slug,
		"--subset", "hard", "--parallelism", "1", "--json")
	require.Equal(t, exitOK, code, stderr)
	var queued api.Run
	require.NoError(t, json.Unmarshal([]byte(stdout), &queued), stdout)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(t, 3*time.Minute))
	defer cancel()

	first, status := b.claim(t, queued.ID, 30)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 1, first.Try)
	var state api.RunState
	require.NoError(t, b.client.Get(ctx, fmt.Sprintf("/runs/%d", queued.ID), nil, &state))
	require.Equal(t, state.TasksTotal-1, state.WaitingForAgent, "every episode but the claimed one waits for the agent")

	cs, err := mcpSession(ctx, first)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": "https://example.org/"}})
	require.NoError(t, err)
	require.True(t, res.IsError, "an off-site navigation fails")
	require.Contains(t, resultText(res), "blocked: https://example.org/ is not one of the benchmark's sites")
	require.NoError(t, cs.Close())

	// The agent goes silent: the lease lapses and the attempt waits again.
	var attempt models.Attempt
	require.Eventually(t, func() bool {
		var row struct {
			Status string
			Tries  int
			Queued bool
		}
		require.NoError(t, b.app.DB.Gorm().Table("attempts").Select("status, tries, queued").Where("id = ?", first.EpisodeID).Scan(&row).Error)
		return row.Status == models.AttemptPending && row.Tries == 1 && !row.Queued
	}, testenv.Scaled(t, 30*time.Second), 100*time.Millisecond, "the lapsed try is handed back to the claims")
	status, body := pullCall(t, http.MethodPost, first.HeartbeatURL, first.Token, nil)
	require.Equal(t, http.StatusGone, status, "%s", body)

	second, status := b.claim(t, queued.ID, 30)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, first.EpisodeID, second.EpisodeID, "the same episode is offered again")
	require.Equal(t, 2, second.Try)
	require.NotEqual(t, first.Token, second.Token)
	status, _ = pullCall(t, http.MethodPost, first.HeartbeatURL, first.Token, nil)
	require.Equal(t, http.StatusGone, status, "the first try's token opens nothing")

	cs, err = mcpSession(ctx, second)
	require.NoError(t, err)
	actions := sandboxReference(t)[second.Task.ID]
	_, err = replayOverMCP(ctx, cs, actions, siteResolver(b.server, second))
	require.NoError(t, err)
	require.NoError(t, cs.Close())
	attempt = waitAttemptDone(t, b.app, first.EpisodeID)
	require.Equal(t, models.OutcomeSuccess, attempt.Outcome, "the lapse was not charged to the agent: %s %s", attempt.ErrorClass, attempt.ErrorMessage)
	require.Equal(t, 2, attempt.Tries)
	require.Equal(t, len(actions), attempt.Steps, "the new try started clean: the lapsed try's step is gone")
	status, body = pullCall(t, http.MethodPost, fmt.Sprintf("%s/api/v1/runs/%d/cancel", b.server, queued.ID), b.token, nil)
	require.Equal(t, http.StatusNoContent, status, "%s", body)
}

// TestBrowser_ConnectingAgentRegisteredAndWaiting registers an MCP agent
// through the agent form, queues a run of it, and looks at the run page at
// 1280 and 390 px: it says how many episodes wait for the agent and links
// to how agents connect.
func TestBrowser_ConnectingAgentRegisteredAndWaiting(t *testing.T) {
	t.Parallel()
	b := setupConnect(t, map[string]string{"PROCTOR_EPISODES": "0"})
	br := launchBrowser(t)
	page := newBrowserPage(t, br, 1280, 900)
	expect := browserExpect(t)
	signIn(t, page, b.server, "ci@example.org", "correct horse battery")

	_, err := page.Goto(b.server + "/teams/lab/agents/new")
	require.NoError(t, err)
	form := page.GetByTestId("agent-form")
	require.NoError(t, form.GetByLabel("Name", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(true)}).Fill("Claude over MCP"))
	_, err = form.GetByLabel("Kind").SelectOption(playwright.SelectOptionValues{Values: &[]string{models.AgentMCP}})
	require.NoError(t, err)
	shot(t, page, "connect-agent-form")
	require.NoError(t, form.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Register agent"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("agent-name")).ToHaveText("Claude over MCP"))

	in := api.RunInput{Team: "lab", Agent: "claude-over-mcp", Benchmark: sandbox.Slug, Subset: "hard"}
	run, err := b.client.QueueRun(context.Background(), in)
	require.NoError(t, err)
	for _, width := range []int{1280, 390} {
		require.NoError(t, page.SetViewportSize(width, 900))
		_, err = page.Goto(fmt.Sprintf("%s/runs/%d", b.server, run.ID))
		require.NoError(t, err)
		waiting := page.GetByTestId("run-waiting-for-agent")
		require.NoError(t, expect.Locator(waiting).ToContainText("6"))
		require.NoError(t, expect.Locator(waiting.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "how agents connect"})).ToBeVisible())
		overflow, err := page.Evaluate("() => document.documentElement.scrollWidth > document.documentElement.clientWidth")
		require.NoError(t, err)
		require.Equal(t, false, overflow, "the run page fits %d px", width)
		shot(t, page, fmt.Sprintf("connect-run-waiting-%d", width))
	}
}
