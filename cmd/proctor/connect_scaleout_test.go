package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"proctor/api"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/sandbox"
	"proctor/service/servicetest"
)

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestScaleOut_MCPThroughEitherServe runs a connecting agent's episode on a
// deployment of two `proctor serve` processes, which run no episodes, and
// one `proctor worker`, on PostgreSQL and S3: the agent claims through one
// serve process and drives the episode's MCP server through both in turn,
// each forwarding to the worker that holds the browser. The attempt passes.
func TestScaleOut_MCPThroughEitherServe(t *testing.T) {
	t.Parallel()
	browserOptionsOrSkip(t)
	env := scaleOutEnv(t)
	env["PROCTOR_WORKER_LEASE"] = faultLease
	rig := newFaultRig(t, env)
	require.NoError(t, servicetest.CreateAgent(rig.app.DB, rig.member, "faults", &models.Agent{Name: "Browser agent", Slug: "browser-agent", Kind: models.AgentMCP}, nil))
	_, token, err := servicetest.Teams(rig.app.DB).CreateAPIToken(rig.member, "scale-out")
	require.NoError(t, err)

	servers := make([]string, 2)
	for i := range servers {
		serveEnv := testEnv{}
		for k, v := range env {
			serveEnv[k] = v
		}
		addr := freeAddr(t)
		serveEnv["PROCTOR_ADDR"], serveEnv["PROCTOR_EPISODES"] = addr, "0"
		serveEnv.start(t, "serve")
		servers[i] = "http://" + addr
	}
	env.start(t, "worker --browsers 1")
	for _, s := range servers {
		require.Eventually(t, func() bool {
			res, err := http.Get(s + "/healthz")
			if err != nil {
				return false
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK
		}, testenv.Scaled(t, time.Minute), 50*time.Millisecond, "serve at %s", s)
	}

	run, err := rig.app.runService(rig.queue).QueueRun(rig.member, models.RunRequest{TeamSlug: "faults", AgentSlug: "browser-agent",
		BenchmarkSlug: sandbox.Slug, Subset: faultSubset, Parallelism: 1, MaxEpisodeSeconds: 120})
	require.NoError(t, err)
	var claim *api.EpisodeClaim
	require.Eventually(t, func() bool {
		claim, _ = claimOn(t, servers[0], token, run.ID, 5)
		return claim != nil
	}, testenv.Scaled(t, 2*time.Minute), time.Millisecond, "no episode could be claimed")
	require.True(t, strings.HasPrefix(claim.MCPURL, servers[0]), claim.MCPURL)

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scaled(t, 3*time.Minute))
	defer cancel()
	sessions := make([]*mcp.ClientSession, 2)
	for i, s := range servers {
		c := *claim
		c.MCPURL = s + strings.TrimPrefix(claim.MCPURL, servers[0])
		cs, err := mcpSession(ctx, &c)
		require.NoError(t, err, "connect through %s", s)
		defer cs.Close()
		sessions[i] = cs
	}
	sites := strings.NewReplacer()
	var sitesList []models.Site
	require.NoError(t, rig.app.DB.Gorm().Table("sites").Find(&sitesList).Error)
	if m, err := models.ResolveSites(sitesList, models.Namespace(claim.EpisodeID, claim.Try)); err == nil {
		var pairs []string
		for _, s := range sitesList {
			pairs = append(pairs, models.PlaceholderFor(s.Name), m.Resolve(models.PlaceholderFor(s.Name)))
		}
		sites = strings.NewReplacer(pairs...)
	}
	actions := sandboxReference(t)[claim.Task.ID]
	for i, a := range actions {
		name, args := toolCall(a, sites)
		cs := sessions[i%2]
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err, "step %d through serve %d", i, i%2)
		require.False(t, res.IsError, "step %d (%s) through serve %d: %s", i, name, i%2, resultText(res))
	}
	attempt := waitAttemptDone(t, rig.app, claim.EpisodeID)
	require.Equal(t, models.OutcomeSuccess, attempt.Outcome, "%s %s", attempt.ErrorClass, attempt.ErrorMessage)
	require.Equal(t, len(actions), attempt.Steps)
	var lease models.EpisodeLease
	require.NoError(t, rig.app.DB.Gorm().Where("attempt_id = ?", claim.EpisodeID).First(&lease).Error)
	require.True(t, strings.HasPrefix(lease.WorkerURL, "http://127.0.0.1:"), "the worker advertised its episode address: %q", lease.WorkerURL)
	for _, s := range servers {
		require.NotEqual(t, s, lease.WorkerURL)
	}
	t.Logf("episode served by the worker at %s", lease.WorkerURL)
	require.NoError(t, rig.app.runService(rig.queue).CancelRun(rig.member, run.ID))
}
