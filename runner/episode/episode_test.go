package episode

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image/jpeg"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestRun_HappyPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := actions(
		func(req *models.StepRequest) models.Action {
			return models.Action{Type: models.ActFill, Target: byID(elementID(t, req.Observation.AXTree, "textbox", "Search")), Text: "lamp"}
		},
		func(req *models.StepRequest) models.Action {
			return models.Action{Type: models.ActSelect, Target: byID(elementID(t, req.Observation.AXTree, "combobox", "Color")), Values: []string{"Green"}}
		},
		clickID(t, "button", "Go"),
		fixed(answer("lamp in g")),
	)
	agent.screenshot = true
	usage := agent.next
	agent.next = func(ctx context.Context, i int, req *models.StepRequest) (*models.StepResponse, error) {
		resp, err := usage(ctx, i, req)
		resp.Usage = models.Usage{InputTokens: 100, OutputTokens: 10, Cost: 0.01}
		return resp, err
	}
	res := b.run(t, b.episode(agent, "/form"))

	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.NotNil(t, res.Final)
	require.Equal(t, "lamp in g", res.Final.Text)
	require.Equal(t, 4, res.Steps)
	require.Equal(t, models.Usage{InputTokens: 400, OutputTokens: 40, Cost: 0.04}, roundUsage(res.Usage))
	require.Positive(t, res.Duration)

	reqs := agent.requests()
	require.Len(t, reqs, 4)
	first := reqs[0]
	require.Equal(t, models.AgentProtocol, first.Protocol)
	require.Equal(t, "test goal", first.Task.Goal)
	require.Equal(t, 12, first.Budget.StepsLeft)
	require.Equal(t, "Search form", first.Observation.Title)
	require.Contains(t, first.Observation.AXTree, `heading(1) "Find a product"`)
	require.Contains(t, first.Observation.AXTree, `link "Grow page" -> /grow`)
	require.Contains(t, first.Observation.AXTree, `text "Price: $12.99"`)
	require.Equal(t, "jpeg", first.Observation.ScreenshotType)
	shot, err := base64.StdEncoding.DecodeString(first.Observation.Screenshot)
	require.NoError(t, err)
	img, err := jpeg.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	require.Equal(t, 1280, img.Bounds().Dx())
	require.Equal(t, 800, img.Bounds().Dy())
	require.Contains(t, reqs[1].Observation.AXTree, `textbox "Search" value="lamp"`)
	require.Contains(t, reqs[2].Observation.AXTree, `combobox "Color" value="Green"`)
	require.Equal(t, "Results", reqs[3].Observation.Title)
	require.Contains(t, reqs[3].Observation.AXTree, "You searched for lamp in g")

	steps := b.sink.all()
	require.Len(t, steps, 4)
	for i, s := range steps {
		require.Equal(t, i, s.Index)
		require.EqualValues(t, 2, s.AttemptID)
		require.Empty(t, s.Error)
		require.NotEmpty(t, s.Action)
		require.Equal(t, int64(100), s.TokensIn)
		for _, key := range []string{s.ScreenshotKey, s.ThumbnailKey, s.AXTreeKey} {
			_, err := b.store.Stat(context.Background(), key)
			require.NoError(t, err, key)
		}
		info, err := b.store.Stat(context.Background(), s.ScreenshotKey)
		require.NoError(t, err)
		require.Equal(t, "image/jpeg", info.ContentType)
		var tabs []models.Tab
		require.NoError(t, json.Unmarshal([]byte(s.Tabs), &tabs))
		require.Len(t, tabs, 1)
		require.True(t, tabs[0].Active)
	}
	require.Equal(t, testPrefix+"/steps/000.jpg", steps[0].ScreenshotKey)
	require.Equal(t, testPrefix+"/steps/003-thumb.jpg", steps[3].ThumbnailKey)
	require.Equal(t, "step 2", steps[2].Thought)
	require.Contains(t, steps[3].URL, "/submit")
	var final models.Action
	require.NoError(t, json.Unmarshal([]byte(steps[3].Action), &final))
	require.Equal(t, models.ActAnswer, final.Type)

	thumb := readArtifact(t, b, steps[0].ThumbnailKey)
	timg, err := jpeg.Decode(bytes.NewReader(thumb))
	require.NoError(t, err)
	require.Equal(t, 320, timg.Bounds().Dx())
	require.Equal(t, 200, timg.Bounds().Dy())
	require.Equal(t, first.Observation.AXTree, string(readArtifact(t, b, steps[0].AXTreeKey)))

	// The HAR holds the form's POST with its body.
	require.Equal(t, testPrefix+"/network.har", res.HARKey)
	found := false
	for _, e := range readHAR(t, b, res.HARKey) {
		if e.Request.Method == "POST" && strings.HasSuffix(e.Request.URL, "/submit") {
			found = true
			require.Contains(t, e.Request.PostData.Text, "q=lamp")
			require.Equal(t, 200, e.Response.Status)
		}
	}
	require.True(t, found, "no POST /submit in the HAR")
}

func TestRun_StableElementIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := actions(clickID(t, "button", "Add item"), clickID(t, "button", "Add item"), fixed(answer("done")))
	res := b.run(t, b.episode(agent, "/grow"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)

	reqs := agent.requests()
	require.Len(t, reqs, 3)
	ax0, ax2 := reqs[0].Observation.AXTree, reqs[2].Observation.AXTree
	for _, el := range [][2]string{{"button", "Add item"}, {"heading(2)", "Cart"}, {"listitem", "first item"}} {
		require.Equal(t, elementID(t, ax0, el[0], el[1]), elementID(t, ax2, el[0], el[1]), "%s %q keeps its id", el[0], el[1])
	}
	require.Equal(t, 2, strings.Count(ax2, `listitem "new item"`))
	ids := map[string]bool{}
	for _, line := range strings.Split(ax2, "\n") {
		id := strings.TrimSpace(line)[1:strings.Index(strings.TrimSpace(line), "]")]
		require.False(t, ids[id], "id %s given twice:\n%s", id, ax2)
		ids[id] = true
	}
}

// An agent that answers right after the click that opened its final page
// still leaves that page loaded in the HAR, down to its late image: the
// episode lets the active tab finish loading before it closes the context.
func TestRun_FinalPageLoadsBeforeTheEpisodeEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := actions(
		fixed(models.Action{Type: models.ActClick, Target: &models.Target{Selector: "#final-link"}}),
		fixed(answer("done")),
	)
	res := b.run(t, b.episode(agent, "/to-final"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	statuses := map[string]int{}
	for _, e := range readHAR(t, b, res.HARKey) {
		statuses[strings.TrimPrefix(e.Request.URL, b.site.URL)] = e.Response.Status
	}
	require.Equal(t, map[string]int{"/to-final": 200, "/final": 200, "/late.png": 200}, statuses)
}

// TestRun_ClickWaitsForTheNavigationItStarted: a click that leaves for a
// page answering later than the click waits by itself is observed on the new
// page, not on the one being left (whose document counts as loaded until the
// new one commits), so the agent's next action never acts on a page already
// left, as a replayed double click on a sort link did on a busy machine.
func TestRun_ClickWaitsForTheNavigationItStarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := actions(
		fixed(models.Action{Type: models.ActClick, Target: &models.Target{Selector: "#late-link"}}),
		fixed(answer("done")),
	)
	res := b.run(t, b.episode(agent, "/to-late"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	reqs := agent.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, b.site.URL+"/late-page", reqs[1].Observation.URL)
	require.Contains(t, reqs[1].Observation.AXTree, `heading(1) "Late page"`)
	require.Empty(t, reqs[1].Observation.LastActionError, "the click took effect: only the page was slow")
}

func TestRun_CoordinateAndSelectorClicks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := actions(
		fixed(models.Action{Type: models.ActClick, Target: &models.Target{X: ptr(200.0), Y: ptr(425.0)}}),
		fixed(models.Action{Type: models.ActClick, Target: &models.Target{Selector: "#sel-btn"}}),
		fixed(answer("done")),
	)
	res := b.run(t, b.episode(agent, "/form"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	reqs := agent.requests()
	require.Len(t, reqs, 3)
	require.Contains(t, reqs[1].Observation.AXTree, `paragraph "point clicked"`)
	require.Empty(t, reqs[1].Observation.LastActionError)
	require.Contains(t, reqs[2].Observation.AXTree, `paragraph "selector clicked"`)
}

func TestRun_MissingElementIsShownAndTheEpisodeGoesOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := actions(
		fixed(models.Action{Type: models.ActClick, Target: byID("e9999")}),
		fixed(models.Action{Type: models.ActPress}), // invalid: no key
		fixed(answer("gave up nicely")),
	)
	res := b.run(t, b.episode(agent, "/form"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.Equal(t, "gave up nicely", res.Final.Text)

	reqs := agent.requests()
	require.Contains(t, reqs[1].Observation.LastActionError, "no element [e9999]")
	require.Contains(t, reqs[2].Observation.LastActionError, "invalid action")
	steps := b.sink.all()
	require.Len(t, steps, 3)
	require.Empty(t, steps[0].Error)
	require.Contains(t, steps[1].Error, "e9999")
	require.Contains(t, steps[2].Error, "key")
}

func TestRun_FiveFailuresInARowEndAsAgentError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(context.Context, int, *models.StepRequest) (*models.StepResponse, error) {
		return &models.StepResponse{Action: models.Action{Type: models.ActClick, Target: byID("e4242")}}, nil
	}}
	res := b.run(t, b.episode(agent, "/form"))
	require.Equal(t, models.ErrorClassAgent, res.ErrorClass)
	require.Contains(t, res.ErrorMessage, "5 actions in a row failed")
	require.Contains(t, res.ErrorMessage, "e4242")
	require.Equal(t, 5, res.Steps)
	require.Nil(t, res.Final)
	require.NotEmpty(t, res.HARKey)
}

func TestRun_OffSiteGotoIsBlockedAndNoted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	off := b.off.URL + "/page"
	agent := actions(fixed(models.Action{Type: models.ActGoto, URL: off}), fixed(answer("ok")))
	res := b.run(t, b.episode(agent, "/form"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)

	reqs := agent.requests()
	require.Equal(t, "blocked: "+off+" is not one of the benchmark's sites", reqs[1].Observation.LastActionError)
	require.Contains(t, reqs[1].Observation.URL, b.site.URL+"/form")
	steps := b.sink.all()
	require.JSONEq(t, `["`+off+`"]`, steps[0].BlockedRequests)
	require.Zero(t, b.offHits.Load())
}

func TestRun_OffSiteSubresourcesAreBlockedAndListed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := actions(clickID(t, "link", "Elsewhere"), fixed(answer("ok")))
	res := b.run(t, b.episode(agent, "/offsite"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)

	steps := b.sink.all()
	require.Len(t, steps, 2)
	var blocked []string
	require.NoError(t, json.Unmarshal([]byte(steps[0].BlockedRequests), &blocked))
	require.Contains(t, blocked, b.off.URL+"/pixel.png")
	require.Contains(t, blocked, b.off.URL+"/x.js")
	require.Contains(t, blocked, b.off.URL+"/elsewhere", "the clicked off-site link")
	ws := "ws" + strings.TrimPrefix(b.off.URL, "http") + "/ws"
	all := steps[0].BlockedRequests + steps[1].BlockedRequests
	require.Contains(t, all, ws, "the off-site WebSocket")
	require.Contains(t, agent.requests()[1].Observation.LastActionError, "blocked: "+b.off.URL+"/elsewhere")
	require.Zero(t, b.offHits.Load())
}

func TestRun_SameOriginWebSocketWorks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(_ context.Context, i int, req *models.StepRequest) (*models.StepResponse, error) {
		if strings.Contains(req.Observation.AXTree, `"echo: ping"`) || i > 10 {
			return &models.StepResponse{Action: answer(req.Observation.AXTree)}, nil
		}
		return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: 1}}, nil
	}}
	res := b.run(t, b.episode(agent, "/ws-page"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.Contains(t, res.Final.Text, `paragraph "echo: ping"`)
	for _, s := range b.sink.all() {
		require.Empty(t, s.BlockedRequests)
	}
}

func TestRun_StepBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(context.Context, int, *models.StepRequest) (*models.StepResponse, error) {
		return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: 100}}, nil
	}}
	ep := b.episode(agent, "/form")
	ep.Budget.MaxSteps = 3
	res := b.run(t, ep)
	require.Equal(t, models.ErrorClassBudget, res.ErrorClass)
	require.Equal(t, "step budget of 3 exhausted", res.ErrorMessage)
	require.Equal(t, 3, res.Steps)
	reqs := agent.requests()
	require.Equal(t, []int{3, 2, 1}, []int{reqs[0].Budget.StepsLeft, reqs[1].Budget.StepsLeft, reqs[2].Budget.StepsLeft})
}

func TestRun_DurationBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(ctx context.Context, _ int, _ *models.StepRequest) (*models.StepResponse, error) {
		<-ctx.Done() // an agent that thinks forever
		return nil, ctx.Err()
	}}
	ep := b.episode(agent, "/form")
	ep.Budget.MaxDuration = b.scaled(10 * time.Second) // room for the first observation on a loaded machine
	res := b.run(t, ep)
	require.Equal(t, models.ErrorClassTimeout, res.ErrorClass, res.ErrorMessage)
	require.Contains(t, res.ErrorMessage, "time limit of "+ep.Budget.MaxDuration.String())
	require.NotEmpty(t, agent.requests(), "the first observation reached the agent within the budget")
	require.Equal(t, 1, res.Steps, "the step in flight is saved")
}

func TestRun_HungPageEndsAtTheTimeLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(_ context.Context, i int, req *models.StepRequest) (*models.StepResponse, error) {
		if i == 0 {
			return &models.StepResponse{Action: models.Action{Type: models.ActClick, Target: byID(elementID(t, req.Observation.AXTree, "button", "Hang"))}}, nil
		}
		return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: 1}}, nil
	}}
	ep := b.episode(agent, "/hang")
	ep.Budget.MaxDuration = 4 * time.Second
	res := b.run(t, ep)
	require.Equal(t, models.ErrorClassTimeout, res.ErrorClass, res.ErrorMessage)
	require.Less(t, res.Duration, 4*time.Second+b.scaled(hardStopGrace+cleanupTimeout))
}

func TestRun_AgentCallTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(ctx context.Context, _ int, _ *models.StepRequest) (*models.StepResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	ep := b.episode(agent, "/form")
	ep.Budget.MaxAgentCall = 300 * time.Millisecond
	res := b.run(t, ep)
	require.Equal(t, models.ErrorClassAgent, res.ErrorClass)
	require.Contains(t, res.ErrorMessage, "did not answer step 0 within 300ms")
}

func TestRun_CostBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(_ context.Context, _ int, req *models.StepRequest) (*models.StepResponse, error) {
		return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: 50}, Usage: models.Usage{Cost: 0.4}}, nil
	}}
	ep := b.episode(agent, "/form")
	ep.Budget.MaxCost = ptr(1.0)
	res := b.run(t, ep)
	require.Equal(t, models.ErrorClassBudget, res.ErrorClass)
	require.Contains(t, res.ErrorMessage, "cost budget of 1 exceeded")
	require.Equal(t, 3, res.Steps)
	reqs := agent.requests()
	require.InDelta(t, 0.2, *reqs[2].Budget.CostLeft, 1e-9)
}

func TestRun_AgentErrorEndsAsAgentClass(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(_ context.Context, i int, _ *models.StepRequest) (*models.StepResponse, error) {
		if i == 1 {
			return nil, errors.New("agent endpoint answered HTTP 500")
		}
		return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: 50}}, nil
	}}
	res := b.run(t, b.episode(agent, "/form"))
	require.Equal(t, models.ErrorClassAgent, res.ErrorClass)
	require.Equal(t, "agent endpoint answered HTTP 500", res.ErrorMessage)
	require.Equal(t, 2, res.Steps)
	steps := b.sink.all()
	require.Empty(t, steps[1].Action, "no action on the failed step")
	require.NotEmpty(t, steps[1].ScreenshotKey)
}

func TestRun_Tabs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	phase := 0
	agent := &scripted{next: func(_ context.Context, i int, req *models.StepRequest) (*models.StepResponse, error) {
		obs := req.Observation
		act := func(a models.Action) (*models.StepResponse, error) { return &models.StepResponse{Action: a}, nil }
		wait := models.Action{Type: models.ActScroll, DeltaY: 1}
		switch {
		case i > 10:
			return act(models.Action{Type: models.ActStop, Reason: "stuck in phase " + string(rune('0'+phase))})
		case phase == 0: // the page opens a popup
			phase++
			return act(models.Action{Type: models.ActClick, Target: byID(elementID(t, obs.AXTree, "button", "Open grow"))})
		case phase == 1: // the popup becomes the active tab
			if len(obs.Tabs) < 2 {
				return act(wait)
			}
			if !obs.Tabs[1].Active || !strings.HasSuffix(obs.URL, "/grow") {
				t.Errorf("popup not active: %+v", obs.Tabs)
			}
			phase++
			return act(models.Action{Type: models.ActNewTab, URL: "/form"})
		case phase == 2:
			if len(obs.Tabs) != 3 || !obs.Tabs[2].Active || obs.Title != "Search form" {
				t.Errorf("new tab not active: %+v", obs.Tabs)
			}
			phase++
			return act(models.Action{Type: models.ActSwitchTab, Tab: ptr(0)})
		case phase == 3:
			if !obs.Tabs[0].Active || obs.Title != "Tabs" {
				t.Errorf("tab 0 not active: %+v", obs.Tabs)
			}
			phase++
			return act(models.Action{Type: models.ActCloseTab, Tab: ptr(1)})
		case phase == 4:
			if len(obs.Tabs) != 2 || !obs.Tabs[0].Active || !strings.HasSuffix(obs.Tabs[1].URL, "/form") {
				t.Errorf("tab 1 not closed: %+v", obs.Tabs)
			}
			phase++
			return act(models.Action{Type: models.ActCloseTab, Tab: ptr(0)}) // the active one
		case phase == 5:
			if len(obs.Tabs) != 1 || !obs.Tabs[0].Active || obs.Title != "Search form" {
				t.Errorf("active tab not closed: %+v", obs.Tabs)
			}
			phase++
			return act(models.Action{Type: models.ActCloseTab, Tab: ptr(0)})
		default:
			if !strings.Contains(obs.LastActionError, "cannot close the last tab") {
				t.Errorf("closing the last tab: %q", obs.LastActionError)
			}
			return act(answer("tabs work"))
		}
	}}
	res := b.run(t, b.episode(agent, "/tabs"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.Equal(t, "tabs work", res.Final.Text)
	var tabs []models.Tab
	steps := b.sink.all()
	require.NoError(t, json.Unmarshal([]byte(steps[len(steps)-1].Tabs), &tabs))
	require.Len(t, tabs, 1)
}

func TestRun_DownloadIsStoredAndListed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := &scripted{next: func(_ context.Context, i int, req *models.StepRequest) (*models.StepResponse, error) {
		switch {
		case i == 0:
			return &models.StepResponse{Action: models.Action{Type: models.ActClick, Target: byID(elementID(t, req.Observation.AXTree, "link", "Report"))}}, nil
		case len(req.Observation.Downloads) > 0 || i > 10:
			return &models.StepResponse{Action: answer(strings.Join(req.Observation.Downloads, ","))}, nil
		}
		return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: 1}}, nil
	}}
	res := b.run(t, b.episode(agent, "/download"))
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	require.Equal(t, "report.csv", res.Final.Text)
	require.Equal(t, "a,b\n1,2\n", string(readArtifact(t, b, testPrefix+"/downloads/report.csv")))
}

func TestRun_CancelStopsPromptly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelledAt time.Time
	f := func() { cancelledAt = time.Now(); cancel() }
	b.slow.Store(&f)
	agent := actions(fixed(models.Action{Type: models.ActGoto, URL: "/slow"}), fixed(answer("never")))
	res, err := Run(ctx, b.browser, b.episode(agent, "/form"))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, context.Canceled, err)
	require.Less(t, time.Since(cancelledAt), b.scaled(3*time.Second), "stopped within a few seconds of the cancel")
	require.Equal(t, 0, res.Steps, "the step in flight is lost, nothing else")
	require.Equal(t, testPrefix+"/network.har", res.HARKey, "HAR stored on a best-effort basis")
}

func TestRun_StartURLUnreachableIsEnvironmentError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	agent := actions(fixed(answer("unreachable")))
	ep := b.episode(agent, "/")
	ep.Task.StartURLs = []string{dead + "/"}
	ep.AllowedOrigins = []string{dead}
	res := b.run(t, ep)
	require.Equal(t, models.ErrorClassEnvironment, res.ErrorClass)
	require.Contains(t, res.ErrorMessage, "start URL "+dead+"/ did not load")
	require.Zero(t, res.Steps)
	require.Empty(t, agent.requests())
}

func TestRun_SeveralStartURLsOpenOneTabEach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := actions(fixed(answer("ok")))
	ep := b.episode(agent, "/form")
	ep.Task.StartURLs = append(ep.Task.StartURLs, b.site.URL+"/grow")
	res := b.run(t, ep)
	require.Empty(t, res.ErrorClass, res.ErrorMessage)
	obs := agent.requests()[0].Observation
	require.Len(t, obs.Tabs, 2)
	require.True(t, obs.Tabs[0].Active)
	require.Equal(t, "Search form", obs.Title)
	require.Equal(t, "Grow", obs.Tabs[1].Title)
}

func TestRun_RefusesIncompleteEpisode(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), nil, Episode{Prefix: "../x"})
	require.Error(t, err)
	for _, want := range []string{"no browser", "no agent", "no artifact store", "no step sink", "artifact prefix", "no allowed origins"} {
		require.Contains(t, err.Error(), want)
	}
}

func readArtifact(t *testing.T, b *bundle, key string) []byte {
	t.Helper()
	rc, _, err := b.store.Get(context.Background(), key)
	require.NoError(t, err, key)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return data
}

// harEntry is what the tests read of a stored HAR's entry.
type harEntry struct {
	Request struct {
		Method   string `json:"method"`
		URL      string `json:"url"`
		PostData struct {
			Text string `json:"text"`
		} `json:"postData"`
	} `json:"request"`
	Response struct {
		Status int `json:"status"` // -1 for a request still in flight when the context closed
	} `json:"response"`
}

// readHAR reads the entries of the HAR stored at key.
func readHAR(t *testing.T, b *bundle, key string) []harEntry {
	t.Helper()
	var har struct {
		Log struct {
			Entries []harEntry `json:"entries"`
		} `json:"log"`
	}
	require.NoError(t, json.Unmarshal(readArtifact(t, b, key), &har))
	return har.Log.Entries
}

// roundUsage rounds the summed cost, which float addition leaves inexact.
func roundUsage(u models.Usage) models.Usage {
	u.Cost = float64(int64(u.Cost*1e6+0.5)) / 1e6
	return u
}
