package episode

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/models"
)

// probeSite serves the pages the probe tests read.
func probeSite(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	serve := func(path, title, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page(title, body))
		})
	}
	mux.HandleFunc("GET /start", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cr3t", Path: "/"})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page("Start", `<h1>Start page</h1>
<label for="name">Name</label> <input id="name" value="initial">
<ul><li>one</li><li>two</li></ul>`))
	})
	// The biography arrives by a request after the page's load event, as on
	// pages that render with scripts.
	serve("GET /profile", "Profile", `<div class="bio"></div>
<script>window.addEventListener('load', () => fetch('/bio.txt').then((r) => r.text()).then((t) => { document.querySelector('.bio').textContent = t; }));</script>`)
	mux.HandleFunc("GET /bio.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "Pro Python Developer")
	})
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Cookie("session")
		v := "nobody"
		if c != nil {
			v = c.Value
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page("Who", "<p>session "+v+"</p>"))
	})
	mux.HandleFunc("GET /down", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})
	serve("GET /gone", "Not found", `<p>This page is gone</p>`)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// probeResult finds the result of the probe with locator.
func probeResult(t *testing.T, ps *eval.PageState, url, locator string) eval.ProbeResult {
	t.Helper()
	for _, r := range ps.Probes {
		if r.URL == url && r.Locator == locator {
			return r
		}
	}
	t.Fatalf("no probe result for %s %q in %+v", url, locator, ps.Probes)
	return eval.ProbeResult{}
}

func TestRun_Probes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	site := probeSite(t)
	agent := actions(
		func(req *models.StepRequest) models.Action {
			return models.Action{Type: models.ActFill, Target: byID(elementID(t, req.Observation.AXTree, "textbox", "Name")), Text: "changed"}
		},
		fixed(answer("done")),
	)
	ep := b.episode(agent, "/")
	ep.Task.StartURLs = []string{site.URL + "/start"}
	ep.AllowedOrigins = []string{site.URL}
	probes := []eval.PageProbe{
		{URL: "last", Locator: "document.querySelector('#name').value"},
		{URL: "", Locator: ""},
		{URL: "last", Locator: "document.querySelectorAll('li').length"},
		{URL: "last", Locator: "({shown: true, items: ['one', 'two']})"},
		{URL: "last", Locator: "document.querySelector('#missing').textContent"},
		{URL: site.URL + "/profile", Locator: "document.querySelector('.bio').textContent"},
		{URL: site.URL + "/whoami", Locator: ""},
		{URL: site.URL + "/gone", Locator: "document.title"},
		{URL: site.URL + "/down", Locator: "document.title"},
		{URL: b.off.URL + "/secret", Locator: "document.title"},
		{URL: "last", Locator: "location.pathname"},
	}
	ep.Probes = probes
	res := b.run(t, ep)

	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.Equal(t, 2, res.Steps, "probes are not steps")
	require.Len(t, b.sink.all(), 2)
	ps := res.PageState
	require.NotNil(t, ps)
	require.Equal(t, site.URL+"/start", ps.FinalURL)
	require.Len(t, ps.Probes, len(probes))
	for i, p := range probes {
		require.Equal(t, p, ps.Probes[i].PageProbe, "results keep the probes' order")
	}

	get := func(i int) eval.ProbeResult { return probeResult(t, ps, probes[i].URL, probes[i].Locator) }
	require.Equal(t, eval.ProbeResult{PageProbe: probes[0], Value: "changed"}, get(0), "the live page, not a reload")
	require.Contains(t, get(1).Value, "Start page", "an empty locator reads the page's text")
	require.NotContains(t, get(1).Value, "<h1>")
	require.Equal(t, "2", get(2).Value, "non-strings are JSON")
	require.JSONEq(t, `{"shown":true,"items":["one","two"]}`, get(3).Value)
	require.Empty(t, get(4).Value)
	require.Contains(t, get(4).Error, "evaluate the locator:")
	require.Contains(t, get(4).Error, "textContent")
	require.Equal(t, eval.ProbeResult{PageProbe: probes[5], Value: "Pro Python Developer"}, get(5), "content rendered after load is read")
	require.Contains(t, get(6).Value, "session s3cr3t", "opened pages share the episode's cookies")
	require.Equal(t, "Not found", get(7).Value)
	require.Contains(t, get(8).Error, "answered HTTP 502")
	require.Equal(t, "probe URL "+b.off.URL+"/secret is outside the benchmark's allowed origins; it was not fetched", get(9).Error)
	require.Zero(t, b.offHits.Load(), "a refused probe URL is never fetched")
	require.Equal(t, "/start", get(10).Value, "probes that open pages leave the active tab where it was")

	// The pages the probes opened are in the HAR, after the agent's requests.
	har := string(readArtifact(t, b, res.HARKey))
	require.Contains(t, har, site.URL+"/profile")
	require.NotContains(t, har, b.off.URL+"/secret")
}

func TestRun_ProbesAfterBudgetAndNotAfterFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	probe := []eval.PageProbe{{URL: "last", Locator: "document.title"}}

	t.Run("StepBudget", func(t *testing.T) {
		t.Parallel()
		agent := actions(fixed(models.Action{Type: models.ActGoto, URL: b.site.URL + "/grow"}), fixed(answer("late")))
		ep := b.episode(agent, "/form")
		ep.Budget.MaxSteps = 1
		ep.Probes = probe
		res := b.run(t, ep)
		require.Equal(t, models.ErrorClassBudget, res.ErrorClass)
		require.NotNil(t, res.PageState)
		require.Equal(t, b.site.URL+"/grow", res.PageState.FinalURL, "the page the last action led to")
		require.Equal(t, "Grow", res.PageState.Probes[0].Value)
	})

	t.Run("NoProbesStillRecordTheFinalURL", func(t *testing.T) {
		t.Parallel()
		res := b.run(t, b.episode(actions(fixed(answer("ok"))), "/form"))
		require.NotNil(t, res.PageState)
		require.Equal(t, b.site.URL+"/form", res.PageState.FinalURL)
		require.Empty(t, res.PageState.Probes)
	})

	t.Run("SiteDown", func(t *testing.T) {
		t.Parallel()
		site := probeSite(t)
		ep := b.episode(actions(fixed(answer("never"))), "/")
		ep.Task.StartURLs = []string{site.URL + "/down"}
		ep.AllowedOrigins = []string{site.URL}
		ep.Probes = probe
		res := b.run(t, ep)
		require.Equal(t, models.ErrorClassEnvironment, res.ErrorClass)
		require.Nil(t, res.PageState, "nothing the agent did to read")
	})

	t.Run("Canceled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		agent := &scripted{next: func(context.Context, int, *models.StepRequest) (*models.StepResponse, error) {
			cancel()
			return &models.StepResponse{Action: answer("too late")}, nil
		}}
		ep := b.episode(agent, "/form")
		ep.Probes = probe
		res, err := Run(ctx, b.browser, ep)
		require.ErrorIs(t, err, context.Canceled)
		require.Nil(t, res.PageState)
	})
}

func TestProbeValue(t *testing.T) {
	t.Parallel()
	v, msg := probeValue("plain")
	require.Equal(t, "plain", v)
	require.Empty(t, msg)
	v, msg = probeValue(map[string]any{"a": []any{1, true, nil}})
	require.JSONEq(t, `{"a":[1,true,null]}`, v)
	require.Empty(t, msg)
	v, msg = probeValue(nil)
	require.Equal(t, "null", v)
	require.Empty(t, msg)

	// Three-byte runes: the cut backs off to a whole rune.
	big := strings.Repeat("€", maxProbeValue/3+10)
	v, msg = probeValue(big)
	require.LessOrEqual(t, len(v), maxProbeValue)
	require.Greater(t, len(v), maxProbeValue-3)
	require.True(t, strings.HasPrefix(big, v))
	require.Zero(t, len(v)%3, "no rune is split")
	require.Contains(t, msg, "value truncated to its first")

	_, msg = probeValue(map[string]any{"bad": func() {}})
	require.Contains(t, msg, "cannot be recorded")
}
