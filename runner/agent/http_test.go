package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/netguard"
	"proctor/runner/agent"
)

// sampleRequest is a step request as an episode would send it.
func sampleRequest() *models.StepRequest {
	return &models.StepRequest{
		RunID:     7,
		AttemptID: 42,
		Step:      1,
		Task: models.StepTask{
			ID:        "shop-3",
			Goal:      `Search the shop for "blue mug" and report its price`,
			StartURLs: []string{"http://shop.test/"},
			Sites:     []string{"shop"},
		},
		Observation: models.Observation{
			URL:            "http://shop.test/",
			Title:          "Shop",
			Tabs:           []models.Tab{{Index: 0, URL: "http://shop.test/", Title: "Shop", Active: true}},
			AXTree:         "[e1] heading \"Shop\"\n[e2] searchbox \"Search products\"\n[e3] button \"Search\"",
			Screenshot:     "/9j/AAAA",
			ScreenshotType: "jpeg",
		},
		Budget: models.Budget{StepsLeft: 30, SecondsLeft: 300},
	}
}

// agentServer serves handler and returns an http agent pointed at it.
func agentServer(t *testing.T, handler http.HandlerFunc, edit func(*agent.Config)) agent.Agent {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	cfg := agent.Config{Kind: models.AgentHTTP, EndpointURL: srv.URL + "/step", HTTPClient: srv.Client(), CallTimeout: 5 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	a, err := agent.New(cfg)
	require.NoError(t, err)
	return a
}

// reply answers every call with body.
func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// requireKind asserts err is an *agent.Error of the given kind and returns it.
func requireKind(t *testing.T, err error, kind string) *agent.Error {
	t.Helper()
	require.Error(t, err)
	var ae *agent.Error
	require.ErrorAs(t, err, &ae, "want an agent error of kind %s, got %v", kind, err)
	require.Equal(t, kind, ae.Kind, "message: %s", ae.Message)
	return ae
}

// seen is what a test server recorded of one request.
type seen struct {
	header http.Header
	method string
	path   string
	body   models.StepRequest
	err    error
}

func TestHTTPAgent_Step(t *testing.T) {
	t.Parallel()

	t.Run("HappyPath", func(t *testing.T) {
		t.Parallel()
		got := make(chan seen, 1)
		a := agentServer(t, func(w http.ResponseWriter, r *http.Request) {
			s := seen{header: r.Header.Clone(), method: r.Method, path: r.URL.Path}
			dec := json.NewDecoder(r.Body)
			dec.DisallowUnknownFields()
			s.err = dec.Decode(&s.body)
			got <- s
			_, _ = io.WriteString(w, `{"action": {"type": "click", "target": {"element_id": "e3"}}, "thought": "search",
				"usage": {"input_tokens": 120, "output_tokens": 8, "cost": 0.002}}`)
		}, func(c *agent.Config) { c.Secrets = map[string]string{agent.SecretAgentToken: "tok-123"} })

		require.True(t, a.WantsScreenshot())
		resp, err := a.Step(t.Context(), sampleRequest())
		require.NoError(t, err)
		require.Equal(t, models.ActClick, resp.Action.Type)
		require.Equal(t, "e3", resp.Action.Target.ElementID)
		require.Equal(t, "search", resp.Thought)
		require.Equal(t, models.Usage{InputTokens: 120, OutputTokens: 8, Cost: 0.002}, resp.Usage)

		s := <-got
		require.NoError(t, s.err)
		require.Equal(t, http.MethodPost, s.method)
		require.Equal(t, "/step", s.path)
		require.Equal(t, "application/json", s.header.Get("Content-Type"))
		require.Equal(t, "Proctor/1 (agent protocol v1)", s.header.Get("User-Agent"))
		require.Equal(t, "proctor-agent/v1", s.header.Get("X-Proctor-Protocol"))
		require.Equal(t, "Bearer tok-123", s.header.Get("Authorization"))
		require.Equal(t, models.AgentProtocol, s.body.Protocol)
		require.Equal(t, int64(42), s.body.AttemptID)
		require.Equal(t, sampleRequest().Task, s.body.Task)
		require.Equal(t, sampleRequest().Observation, s.body.Observation)
		require.Equal(t, 30, s.body.Budget.StepsLeft)
	})

	t.Run("NoTokenNoScreenshot", func(t *testing.T) {
		t.Parallel()
		got := make(chan seen, 1)
		a := agentServer(t, func(w http.ResponseWriter, r *http.Request) {
			s := seen{header: r.Header.Clone()}
			s.err = json.NewDecoder(r.Body).Decode(&s.body)
			got <- s
			_, _ = io.WriteString(w, `{"action": {"type": "stop", "reason": "nothing to do"}}`)
		}, func(c *agent.Config) { c.Settings = json.RawMessage(`{"screenshot": false, "team_note": "ignored"}`) })

		require.False(t, a.WantsScreenshot())
		resp, err := a.Step(t.Context(), sampleRequest())
		require.NoError(t, err)
		require.Equal(t, "nothing to do", resp.Action.Reason)
		s := <-got
		require.NoError(t, s.err)
		require.Empty(t, s.header.Get("Authorization"))
		require.Empty(t, s.body.Observation.Screenshot)
		require.Empty(t, s.body.Observation.ScreenshotType)
	})

	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		release := make(chan struct{})
		a := agentServer(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			// Reading the body lets the server notice the client hanging up;
			// the handler answers only after that.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, func(c *agent.Config) { c.CallTimeout = 150 * time.Millisecond })
		t.Cleanup(func() { close(release) }) // runs before the server closes

		_, err := a.Step(t.Context(), sampleRequest())
		ae := requireKind(t, err, agent.KindTimeout)
		require.Contains(t, ae.Message, "150ms")
		require.Equal(t, int32(1), calls.Load(), "a timeout is never retried")
	})

	t.Run("CallerCanceled", func(t *testing.T) {
		t.Parallel()
		a := agentServer(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}, nil)
		ctx, cancel := context.WithCancel(t.Context())
		go func() { cancel() }()
		_, err := a.Step(ctx, sampleRequest())
		require.ErrorIs(t, err, context.Canceled)
		var ae *agent.Error
		require.False(t, errors.As(err, &ae), "the caller's cancellation is not the agent's fault")
	})

	t.Run("CallerDeadline", func(t *testing.T) {
		t.Parallel()
		a := agentServer(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := a.Step(ctx, sampleRequest())
		ae := requireKind(t, err, agent.KindTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the caller can tell its own deadline passed")
		require.NotContains(t, ae.Message, "5s", "the message names the limit that applied")
	})

	t.Run("ServerError", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		a := agentServer(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "boom: the model crashed\n"+strings.Repeat("x", 1000))
		}, nil)
		_, err := a.Step(t.Context(), sampleRequest())
		ae := requireKind(t, err, agent.KindHTTPStatus)
		require.Contains(t, ae.Message, "HTTP 500 Internal Server Error: boom: the model crashed")
		require.Less(t, len(ae.Message), 300, "only the start of the body is quoted")
		require.Equal(t, int32(1), calls.Load(), "a response is never retried")
	})

	t.Run("StatusBodyQuotedAsSent", func(t *testing.T) {
		// The agent's secrets are removed where the message is recorded (the
		// runner's episode recorder, TestFaulty_AgentEchoesItsToken), not here.
		t.Parallel()
		a := agentServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "bad token "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}, func(c *agent.Config) { c.Secrets = map[string]string{agent.SecretAgentToken: "tok-secret"} })
		_, err := a.Step(t.Context(), sampleRequest())
		ae := requireKind(t, err, agent.KindHTTPStatus)
		require.Contains(t, ae.Message, "401 Unauthorized: bad token tok-secret")
	})

	t.Run("TooLarge", func(t *testing.T) {
		t.Parallel()
		huge := `{"action": {"type": "stop"}, "thought": "` + strings.Repeat("a", 5000) + `"}`
		for name, handler := range map[string]http.HandlerFunc{
			"Declared": reply(http.StatusOK, huge),
			"Chunked": func(w http.ResponseWriter, r *http.Request) {
				for range 10 {
					_, _ = io.WriteString(w, huge[:600])
					w.(http.Flusher).Flush()
				}
			},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				a := agentServer(t, handler, func(c *agent.Config) { c.MaxResponseBytes = 1024 })
				_, err := a.Step(t.Context(), sampleRequest())
				ae := requireKind(t, err, agent.KindTooLarge)
				require.Contains(t, ae.Message, "1024")
			})
		}
	})

	t.Run("BadAnswers", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name, body, kind, message string
		}{
			{"Garbage", "<html>hello</html>", agent.KindMalformed, "not a JSON object"},
			{"Empty", "", agent.KindMalformed, "empty"},
			{"Truncated", `{"action": {"type": "click"`, agent.KindMalformed, "not a valid step response"},
			{"UnknownField", `{"action": {"type": "stop"}, "confidence": 0.9}`, agent.KindMalformed, `unknown field "confidence"`},
			{"UnknownTargetField", `{"action": {"type": "click", "target": {"id": "e1"}}}`, agent.KindMalformed, `unknown field "id"`},
			{"WrongType", `{"action": {"type": "stop"}, "thought": 3}`, agent.KindMalformed, `"thought" must be a string`},
			{"TwoObjects", `{"action": {"type": "stop"}} {"action": {"type": "stop"}}`, agent.KindMalformed, "exactly one object"},
			{"Array", `[{"action": {"type": "stop"}}]`, agent.KindMalformed, "not a JSON object"},
			{"NoAction", `{"thought": "hmm"}`, agent.KindInvalidAction, "action.type"},
			{"ClickWithoutTarget", `{"action": {"type": "click"}}`, agent.KindInvalidAction, "action.target: click needs a target"},
			{"UnknownType", `{"action": {"type": "teleport"}}`, agent.KindInvalidAction, `"teleport" is not one of`},
			{"NegativeUsage", `{"action": {"type": "stop"}, "usage": {"cost": -1}}`, agent.KindMalformed, "negative"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				a := agentServer(t, reply(http.StatusOK, tc.body), nil)
				_, err := a.Step(t.Context(), sampleRequest())
				ae := requireKind(t, err, tc.kind)
				require.Contains(t, ae.Message, tc.message)
			})
		}
	})
}

// flakyDialer fails the first failures dials the way a closed port does, then
// dials for real, counting every dial.
type flakyDialer struct {
	failures int32
	fail     error
	dials    atomic.Int32
}

func (d *flakyDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.dials.Add(1) <= d.failures {
		return nil, &net.OpError{Op: "dial", Net: network, Err: d.fail}
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func TestHTTPAgent_Retries(t *testing.T) {
	t.Parallel()

	run := func(t *testing.T, d *flakyDialer) (*models.StepResponse, error) {
		t.Helper()
		srv := httptest.NewServer(reply(http.StatusOK, `{"action": {"type": "go_back"}}`))
		t.Cleanup(srv.Close)
		client := &http.Client{Transport: &http.Transport{DialContext: d.dial}}
		a, err := agent.New(agent.Config{Kind: models.AgentHTTP, EndpointURL: srv.URL, HTTPClient: client, CallTimeout: 5 * time.Second})
		require.NoError(t, err)
		return a.Step(t.Context(), sampleRequest())
	}

	t.Run("RefusedThenAnswered", func(t *testing.T) {
		t.Parallel()
		d := &flakyDialer{failures: 2, fail: syscall.ECONNREFUSED}
		resp, err := run(t, d)
		require.NoError(t, err)
		require.Equal(t, models.ActGoBack, resp.Action.Type)
		require.Equal(t, int32(3), d.dials.Load())
	})

	t.Run("AlwaysRefused", func(t *testing.T) {
		t.Parallel()
		d := &flakyDialer{failures: 100, fail: syscall.ECONNREFUSED}
		_, err := run(t, d)
		ae := requireKind(t, err, agent.KindConnection)
		require.Equal(t, "could not reach the agent endpoint: connection refused (3 tries)", ae.Message)
		require.Equal(t, int32(3), d.dials.Load(), "two retries, no more")
		require.NotContains(t, err.Error(), "127.0.0.1", "the message does not reveal the endpoint")
	})

	t.Run("GuardRefusalNotRetried", func(t *testing.T) {
		t.Parallel()
		d := &flakyDialer{failures: 100, fail: models.FieldError("endpoint_url", `host "10.0.0.5" resolves to a private address`)}
		_, err := run(t, d)
		ae := requireKind(t, err, agent.KindConnection)
		require.Contains(t, ae.Message, "PROCTOR_AGENT_ALLOW_HOSTS")
		require.NotContains(t, ae.Message, "10.0.0.5", "the message does not reveal the endpoint")
		require.Equal(t, int32(1), d.dials.Load())
	})

	t.Run("GuardLookupFailure", func(t *testing.T) {
		t.Parallel()
		guard := netguard.New(nil, nil)
		guard.LookupIP = func(context.Context, string) ([]net.IP, error) {
			return nil, &net.DNSError{Err: "no such host", Name: "agent.invalid", IsNotFound: true}
		}
		refusal := guard.CheckURL(t.Context(), "http://agent.invalid/")
		require.True(t, netguard.Unresolved(refusal), "%v", refusal)
		d := &flakyDialer{failures: 100, fail: refusal}
		_, err := run(t, d)
		ae := requireKind(t, err, agent.KindConnection)
		require.Equal(t, "could not reach the agent endpoint: its host name does not resolve", ae.Message)
	})
}

func TestHTTPAgent_RealConnections(t *testing.T) {
	t.Parallel()

	t.Run("ClosedPort", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		endpoint := "http://" + ln.Addr().String() + "/step"
		require.NoError(t, ln.Close())
		a, err := agent.New(agent.Config{Kind: models.AgentHTTP, EndpointURL: endpoint, HTTPClient: &http.Client{}})
		require.NoError(t, err)
		_, err = a.Step(t.Context(), sampleRequest())
		ae := requireKind(t, err, agent.KindConnection)
		require.Equal(t, "could not reach the agent endpoint: connection refused (3 tries)", ae.Message)
	})

	t.Run("SSRFGuard", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(reply(http.StatusOK, `{"action": {"type": "stop"}}`))
		t.Cleanup(srv.Close)
		for name, allow := range map[string][]string{"Refused": nil, "AllowListed": {"127.0.0.1"}} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				client := netguard.New(allow, nil).Client(0)
				a, err := agent.New(agent.Config{Kind: models.AgentHTTP, EndpointURL: srv.URL, HTTPClient: client})
				require.NoError(t, err)
				resp, err := a.Step(t.Context(), sampleRequest())
				if allow == nil {
					ae := requireKind(t, err, agent.KindConnection)
					require.Contains(t, ae.Message, "SSRF guard refused it")
					require.Contains(t, ae.Message, "PROCTOR_AGENT_ALLOW_HOSTS")
					return
				}
				require.NoError(t, err)
				require.Equal(t, models.ActStop, resp.Action.Type)
			})
		}
	})
}

func TestNew(t *testing.T) {
	t.Parallel()
	client := http.DefaultClient
	cases := []struct {
		name string
		cfg  agent.Config
		want string
	}{
		{"Upload", agent.Config{Kind: models.AgentUpload}, "upload-only agents cannot be executed"},
		{"UnknownKind", agent.Config{Kind: "carrier-pigeon"}, `unknown agent kind "carrier-pigeon"`},
		{"HTTPNoEndpoint", agent.Config{Kind: models.AgentHTTP, HTTPClient: client}, "needs an endpoint URL"},
		{"HTTPBadEndpoint", agent.Config{Kind: models.AgentHTTP, EndpointURL: "ftp://x", HTTPClient: client}, "not an http or https URL"},
		{"HTTPNoClient", agent.Config{Kind: models.AgentHTTP, EndpointURL: "https://agent.example/"}, "needs an HTTP client"},
		{"HTTPBadSettings", agent.Config{Kind: models.AgentHTTP, EndpointURL: "https://agent.example/", HTTPClient: client,
			Settings: json.RawMessage(`{"screenshot": "yes"}`)}, `"screenshot" must be true or false`},
		{"OpenAINoModel", agent.Config{Kind: models.AgentOpenAI, HTTPClient: client}, "needs a model"},
		{"OpenAITypo", agent.Config{Kind: models.AgentOpenAI, Model: "m", HTTPClient: client,
			Settings: json.RawMessage(`{"temprature": 0.2}`)}, `unknown field "temprature"`},
		{"OpenAIRange", agent.Config{Kind: models.AgentOpenAI, Model: "m", HTTPClient: client,
			Settings: json.RawMessage(`{"max_tokens": 0}`)}, "max_tokens must be at least 1"},
		{"ReplayBadScript", agent.Config{Kind: models.AgentReplay,
			ReferenceActions: json.RawMessage(`[{"type": "stop"}, {"type": "fill", "text": "x"}]`)}, "reference_actions: action 2: action.target: fill needs a target"},
		{"ReplayNotAList", agent.Config{Kind: models.AgentReplay, Settings: json.RawMessage(`{"actions": {"type": "stop"}}`)}, "must be a JSON list"},
		{"SettingsNotObject", agent.Config{Kind: models.AgentReplay, Settings: json.RawMessage(`[1]`)}, "must be a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := agent.New(tc.cfg)
			require.Nil(t, a)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestCheckSettings(t *testing.T) {
	t.Parallel()
	require.NoError(t, agent.CheckSettings(models.AgentHTTP, json.RawMessage(`{"screenshot": false, "anything": [1]}`)))
	require.NoError(t, agent.CheckSettings(models.AgentOpenAI, json.RawMessage(`{"model": "gpt-4o", "temperature": 0, "input_cost_per_mtok": 2.5}`)))
	require.NoError(t, agent.CheckSettings(models.AgentUpload, json.RawMessage(`{"whatever": true}`)))
	require.NoError(t, agent.CheckSettings(models.AgentReplay, nil))
	require.ErrorContains(t, agent.CheckSettings(models.AgentOpenAI, json.RawMessage(`{"temprature": 0.2}`)), `unknown field "temprature"`)
	require.ErrorContains(t, agent.CheckSettings(models.AgentReplay, json.RawMessage(`{"actions": [{"type": "click"}]}`)), "config.actions: action 1: action.target: click needs a target")
	require.Equal(t, models.EINVALID, models.ErrorCode(agent.CheckSettings(models.AgentHTTP, json.RawMessage(`{"screenshot": 1}`))))
}
