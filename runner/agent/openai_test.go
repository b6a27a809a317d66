package agent_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/runner/agent"
)

// chatCall is one request the fake chat-completions server received.
type chatCall struct {
	path   string
	auth   string
	model  string
	system string
	user   string // the user message's text
	images []string
	body   map[string]any
}

// fakeOpenAI is an OpenAI-compatible chat-completions server answering from a
// script of (status, body) replies and recording what it was sent.
type fakeOpenAI struct {
	mu      sync.Mutex
	calls   []chatCall
	replies []fakeReply
	srv     *httptest.Server
}

// fakeReply is one scripted answer; hold, when set, delays it until the client gives up.
type fakeReply struct {
	status int
	body   string
	hold   bool
}

// completion wraps content as a chat completion with usage.
func completion(content string, promptTokens, completionTokens int) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": promptTokens, "completion_tokens": completionTokens,
			"total_tokens": promptTokens + completionTokens},
	})
	return string(b)
}

func newFakeOpenAI(t *testing.T, replies ...fakeReply) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	call := chatCall{path: r.URL.Path, auth: r.Header.Get("Authorization")}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(raw, &req)
	_ = json.Unmarshal(raw, &call.body)
	call.model = req.Model
	for _, m := range req.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			var parts []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				switch p.Type {
				case "text":
					text += p.Text
				case "image_url":
					call.images = append(call.images, p.ImageURL.URL)
				}
			}
		}
		switch m.Role {
		case "system":
			call.system = text
		case "user":
			call.user = text
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, call)
	next := fakeReply{status: http.StatusInternalServerError, body: `{"error": "script exhausted"}`}
	if len(f.replies) > 0 {
		next, f.replies = f.replies[0], f.replies[1:]
	}
	f.mu.Unlock()
	if next.hold {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(next.status)
	_, _ = io.WriteString(w, next.body)
}

// recorded returns the calls received so far.
func (f *fakeOpenAI) recorded() []chatCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatCall(nil), f.calls...)
}

// openAIAgent builds an openai agent against the fake server.
func (f *fakeOpenAI) agent(t *testing.T, settings string) agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{
		Kind:        models.AgentOpenAI,
		EndpointURL: f.srv.URL + "/v1/",
		Model:       "test-model",
		Secrets:     map[string]string{models.SecretOpenAIKey: "sk-test-123"},
		Settings:    json.RawMessage(settings),
		HTTPClient:  f.srv.Client(),
		CallTimeout: 5 * time.Second,
	})
	require.NoError(t, err)
	return a
}

func TestOpenAIAgent_Step(t *testing.T) {
	t.Parallel()

	t.Run("ScriptedEpisode", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t,
			fakeReply{status: 200, body: completion(`{"thought": "type the query", "action": {"type": "fill", "target": {"element_id": "e2"}, "text": "blue mug"}}`, 1000, 200)},
			fakeReply{status: 200, body: completion("Sure!\n```json\n{\"thought\": \"submit\", \"action\": {\"type\": \"press\", \"key\": \"Enter\"}}\n```", 1500, 100)},
		)
		a := f.agent(t, `{"input_cost_per_mtok": 2.5, "output_cost_per_mtok": 10, "temperature": 0.1, "max_tokens": 300}`)
		require.True(t, a.WantsScreenshot())

		req := sampleRequest()
		resp, err := a.Step(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, models.ActFill, resp.Action.Type)
		require.Equal(t, "e2", resp.Action.Target.ElementID)
		require.Equal(t, "blue mug", resp.Action.Text)
		require.Equal(t, "type the query", resp.Thought)
		require.Equal(t, int64(1000), resp.Usage.InputTokens)
		require.Equal(t, int64(200), resp.Usage.OutputTokens)
		require.InDelta(t, 1000*2.5/1e6+200*10/1e6, resp.Usage.Cost, 1e-12)

		req.Step = 2
		req.Observation.LastActionError = "element e2 is not editable"
		resp, err = a.Step(t.Context(), req)
		require.NoError(t, err, "a fenced JSON reply is accepted")
		require.Equal(t, models.ActPress, resp.Action.Type)
		require.Equal(t, "Enter", resp.Action.Key)
		require.Equal(t, "submit", resp.Thought)

		calls := f.recorded()
		require.Len(t, calls, 2)
		first := calls[0]
		require.Equal(t, "/v1/chat/completions", first.path)
		require.Equal(t, "Bearer sk-test-123", first.auth)
		require.Equal(t, "test-model", first.model)
		require.Equal(t, 0.1, first.body["temperature"])
		require.Equal(t, 300.0, first.body["max_tokens"])
		require.Contains(t, first.system, `"action"`)
		require.Contains(t, first.system, `[e12] button "Add to cart"`)
		require.Contains(t, first.user, req.Task.Goal)
		require.Contains(t, first.user, `[e2] searchbox "Search products"`)
		require.Contains(t, first.user, "http://shop.test/")
		require.Equal(t, []string{"data:image/jpeg;base64,/9j/AAAA"}, first.images)

		second := calls[1]
		require.Contains(t, second.user, `"element_id":"e2"`, "the history recalls the previous action")
		require.Contains(t, second.user, "type the query")
		require.Contains(t, second.user, "element e2 is not editable")
	})

	t.Run("NoScreenshotTruncatedTree", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t, fakeReply{status: 200, body: completion(`{"thought": "", "action": {"type": "stop", "reason": "done"}}`, 10, 5)})
		a := f.agent(t, `{"screenshot": false, "max_axtree_chars": 12, "model": "other-model"}`)
		require.False(t, a.WantsScreenshot())
		resp, err := a.Step(t.Context(), sampleRequest())
		require.NoError(t, err)
		require.Equal(t, models.ActStop, resp.Action.Type)
		require.Zero(t, resp.Usage.Cost, "no prices configured")

		call := f.recorded()[0]
		require.Empty(t, call.images)
		require.Equal(t, "other-model", call.model, "the settings' model wins")
		require.Contains(t, call.user, `[e1] heading`)
		require.NotContains(t, call.user, "searchbox")
		require.Contains(t, call.user, "more characters cut")
		require.NotContains(t, call.body, "temperature")
	})

	t.Run("BareActionAndProse", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t, fakeReply{status: 200, body: completion(`I will answer now: {"type": "answer", "text": "$12.99"} That is all.`, 1, 1)})
		resp, err := f.agent(t, "").Step(t.Context(), sampleRequest())
		require.NoError(t, err)
		require.Equal(t, models.ActAnswer, resp.Action.Type)
		require.Equal(t, "$12.99", resp.Action.Text)
	})

	t.Run("Malformed", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t, fakeReply{status: 200, body: completion("I think I should click the search button.", 400, 30)})
		_, err := f.agent(t, `{"input_cost_per_mtok": 1}`).Step(t.Context(), sampleRequest())
		ae := requireKind(t, err, agent.KindMalformed)
		require.Contains(t, ae.Message, "no JSON object")
		require.Equal(t, int64(400), ae.Usage.InputTokens, "the wasted call's usage is reported")
		require.InDelta(t, 400/1e6, ae.Usage.Cost, 1e-12)
	})

	t.Run("BrokenJSON", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t, fakeReply{status: 200, body: completion(`{"thought": "x", "action": {"type": "click", }`, 1, 1)})
		_, err := f.agent(t, "").Step(t.Context(), sampleRequest())
		requireKind(t, err, agent.KindMalformed)
	})

	t.Run("NotACompletion", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t, fakeReply{status: 200, body: `{"choices": []}`})
		_, err := f.agent(t, "").Step(t.Context(), sampleRequest())
		ae := requireKind(t, err, agent.KindMalformed)
		require.Contains(t, ae.Message, "no choices")
	})

	t.Run("InvalidAction", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t, fakeReply{status: 200, body: completion(`{"thought": "t", "action": {"type": "click"}}`, 1, 1)})
		_, err := f.agent(t, "").Step(t.Context(), sampleRequest())
		ae := requireKind(t, err, agent.KindInvalidAction)
		require.Contains(t, ae.Message, "click needs a target")
	})

	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t, fakeReply{hold: true})
		a, err := agent.New(agent.Config{Kind: models.AgentOpenAI, EndpointURL: f.srv.URL, Model: "m",
			HTTPClient: f.srv.Client(), CallTimeout: 150 * time.Millisecond})
		require.NoError(t, err)
		_, err = a.Step(t.Context(), sampleRequest())
		requireKind(t, err, agent.KindTimeout)
		require.Len(t, f.recorded(), 1, "a timeout is never retried")
		require.Empty(t, f.recorded()[0].auth, "no key, no Authorization header")
	})

	t.Run("Unauthorized", func(t *testing.T) {
		t.Parallel()
		f := newFakeOpenAI(t, fakeReply{status: 401, body: `{"error": {"message": "Incorrect API key provided: sk-test-123", "type": "invalid_request_error"}}`})
		_, err := f.agent(t, "").Step(t.Context(), sampleRequest())
		ae := requireKind(t, err, agent.KindHTTPStatus)
		require.Contains(t, ae.Message, "401 Unauthorized")
		require.Contains(t, ae.Message, "Incorrect API key provided: sk-test-123", "redacted where it is recorded, not here")
	})

	t.Run("HistoryResetsPerAttempt", func(t *testing.T) {
		t.Parallel()
		stop := completion(`{"thought": "remember me", "action": {"type": "stop"}}`, 1, 1)
		f := newFakeOpenAI(t, fakeReply{status: 200, body: stop}, fakeReply{status: 200, body: stop}, fakeReply{status: 200, body: stop})
		a := f.agent(t, `{"history": 1}`)
		req := sampleRequest()
		for range 2 {
			_, err := a.Step(t.Context(), req)
			require.NoError(t, err)
		}
		req.AttemptID++
		_, err := a.Step(t.Context(), req)
		require.NoError(t, err)
		calls := f.recorded()
		require.NotContains(t, calls[0].user, "remember me")
		require.Equal(t, 1, strings.Count(calls[1].user, "remember me"))
		require.NotContains(t, calls[2].user, "remember me", "a new attempt starts without history")
	})
}
