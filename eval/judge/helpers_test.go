package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"proctor/internal/chat"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/models"
)

// testModel is the model name the test clients use.
const testModel = "judge-model"

// seenRequest is one request the fake endpoint received.
type seenRequest struct {
	path string
	auth string
	at   time.Time
	body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Temperature    *float64 `json:"temperature"`
		ResponseFormat *struct {
			Type string `json:"type"`
		} `json:"response_format"`
	}
	raw []byte
}

// texts returns every text in the request's messages, in order.
func (r *seenRequest) texts(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range r.body.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			out = append(out, s)
			continue
		}
		var parts []chat.Part
		require.NoError(t, json.Unmarshal(m.Content, &parts))
		for _, p := range parts {
			if p.Type == "text" {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// images returns the image URLs in the request's messages.
func (r *seenRequest) images(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range r.body.Messages {
		var parts []chat.Part
		if json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Type == "image_url" {
				require.NotNil(t, p.ImageURL)
				out = append(out, p.ImageURL.URL)
			}
		}
	}
	return out
}

// userText is the request's first user text: the rendered prompt.
func (r *seenRequest) userText(t *testing.T) string {
	t.Helper()
	texts := r.texts(t)
	require.GreaterOrEqual(t, len(texts), 2, "a system and a user message")
	return texts[1]
}

// fakeEndpoint is an OpenAI-compatible chat-completions server whose answer
// to the n-th request (from 1) is up to the test.
type fakeEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*seenRequest
}

// newEndpoint starts a fake endpoint answering with handle.
func newEndpoint(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *fakeEndpoint {
	t.Helper()
	f := &fakeEndpoint{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := &seenRequest{path: r.URL.Path, auth: r.Header.Get("Authorization"), at: time.Now()}
		seen.raw, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(seen.raw))
		if err := json.Unmarshal(seen.raw, &seen.body); err != nil {
			http.Error(w, "bad request body", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, seen)
		n := len(f.requests)
		f.mu.Unlock()
		handle(w, r, n)
	}))
	t.Cleanup(f.Close)
	return f
}

// replyWith is an endpoint that always answers content.
func replyWith(t *testing.T, content string) *fakeEndpoint {
	return newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeCompletion(w, content) })
}

// seen returns the requests received so far.
func (f *fakeEndpoint) seen() []*seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*seenRequest(nil), f.requests...)
}

// Token counts every fake completion reports.
const (
	fakePromptTokens     = 1200
	fakeCompletionTokens = 80
)

// writeCompletion answers a chat completion with content.
func writeCompletion(w http.ResponseWriter, content string) {
	writeChoice(w, map[string]any{"role": "assistant", "content": content}, "stop")
}

// writeChoice answers a chat completion with one choice.
func writeChoice(w http.ResponseWriter, message map[string]any, finish string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": testModel,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": fakePromptTokens, "completion_tokens": fakeCompletionTokens, "total_tokens": fakePromptTokens + fakeCompletionTokens},
	})
}

// newTestClient builds a Client on the endpoint with fast timings; adjust
// changes the config first. Retry waits are recorded instead of slept unless
// realSleep is set.
func newTestClient(t *testing.T, f *fakeEndpoint, adjust func(*Config)) (*Client, *sleepLog) {
	t.Helper()
	cfg := Config{
		BaseURL: f.URL + "/v1", Model: testModel, APIKey: "sk-test-key",
		Timeout: 5 * time.Second, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Second,
		PriceInputPerMTok: 2.5, PriceOutputPerMTok: 10,
		HTTPClient: f.Client(),
	}
	if adjust != nil {
		adjust(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	log := &sleepLog{}
	c.sleep = log.sleep
	return c, log
}

// sleepLog records retry waits without waiting.
type sleepLog struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepLog) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepLog) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// testJPEG encodes a w×h JPEG with a gradient.
func testJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: 128, A: 255})
		}
	}
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}))
	return b.Bytes()
}

// trajectory builds n steps on a shop, each with a thought of thoughtLen
// characters and, when shot is given, a screenshot.
func trajectory(n, thoughtLen int, shot []byte) []eval.TrajectoryStep {
	steps := make([]eval.TrajectoryStep, n)
	for i := range steps {
		action, _ := json.Marshal(models.Action{Type: models.ActClick, Target: &models.Target{ElementID: fmt.Sprintf("e%d", i)}})
		steps[i] = eval.TrajectoryStep{
			Index: i, URL: fmt.Sprintf("http://shop.test/page/%d?category=kitchen-and-dining&color=blue&sort=price_asc&mode=list&p=%d", i, i), Title: fmt.Sprintf("Page %d", i),
			Action: action, Thought: fmt.Sprintf("thought %d: ", i) + strings.Repeat("x", thoughtLen),
		}
		if shot != nil {
			steps[i].Screenshot = func(context.Context) ([]byte, error) { return shot, nil }
		}
	}
	return steps
}

// shopInput is a small attempt: three steps and a final answer.
func shopInput() eval.Input {
	return eval.Input{
		Task:       &models.Task{ExternalID: "t1", Intent: "What is the price of the blue mug?"},
		Trajectory: trajectory(3, 20, nil),
		Final:      &models.Action{Type: models.ActAnswer, Text: "$12.50"},
		Steps:      3,
	}
}

// judgeDetails decodes a Result's Details.
func judgeDetails(t *testing.T, res *eval.Result) Details {
	t.Helper()
	var d Details
	require.NoError(t, json.Unmarshal(res.Details, &d))
	return d
}

// errorMsg is the Details' error message, "" when none.
func errorMsg(d Details) string {
	if d.ErrorMsg == nil {
		return ""
	}
	return *d.ErrorMsg
}
