package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// sampleStep is a protocol v1 request as Proctor sends it.
const sampleStep = `{
  "protocol": "proctor-agent/v1",
  "run_id": 7, "attempt_id": 42, "step": 0,
  "task": {"id": "shop-search", "goal": "Search the shop for \"blue mug\" and report its price",
           "start_urls": ["http://127.0.0.1:8080/sandbox/a42t1/shop"], "sites": ["shop"]},
  "observation": {
    "url": "http://127.0.0.1:8080/sandbox/a42t1/shop", "title": "Shop",
    "tabs": [{"index": 0, "url": "http://127.0.0.1:8080/sandbox/a42t1/shop", "title": "Shop", "active": true}],
    "axtree": "[e1] heading \"Shop\"\n[e2] link \"Cart\"\n[e3] searchbox \"Search products\"\n[e4] button \"Search\""
  },
  "budget": {"steps_left": 30, "seconds_left": 300}
}`

// post sends body to the agent and decodes its reply strictly, as Proctor does.
func post(t *testing.T, a http.Handler, body string) stepResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/step", strings.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	var resp stepResponse
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("reply %s: %v", rec.Body, err)
	}
	if dec.More() {
		t.Fatalf("reply %s holds more than one object", rec.Body)
	}
	return resp
}

func TestAgent_SearchEpisode(t *testing.T) {
	t.Parallel()
	a := newAgent("")

	fill := post(t, a, sampleStep)
	if fill.Action.Type != "fill" || fill.Action.Target == nil || fill.Action.Target.ElementID != "e3" || fill.Action.Text != "blue mug" {
		t.Fatalf("first step: want fill [e3] \"blue mug\", got %+v", fill.Action)
	}
	press := post(t, a, strings.Replace(sampleStep, `"step": 0`, `"step": 1`, 1))
	if press.Action.Type != "press" || press.Action.Key != "Enter" || press.Action.Target.ElementID != "e3" {
		t.Fatalf("second step: want press Enter on e3, got %+v", press.Action)
	}
	end := post(t, a, strings.Replace(sampleStep, `"step": 0`, `"step": 2`, 1))
	if end.Action.Type != "stop" || end.Action.Reason == "" {
		t.Fatalf("third step: want stop with a reason, got %+v", end.Action)
	}
	again := post(t, a, sampleStep)
	if again.Action.Type != "fill" {
		t.Fatalf("a retried episode starts over at step 0: want fill, got %+v", again.Action)
	}
}

func TestAgent_StopsWithoutSearch(t *testing.T) {
	t.Parallel()
	body := strings.Replace(sampleStep, `Search the shop for \"blue mug\" and report its price`, `How many reviews does the first product have?`, 1)
	resp := post(t, newAgent(""), body)
	if resp.Action.Type != "stop" {
		t.Fatalf("want stop, got %+v", resp.Action)
	}
}

func TestAgent_RefusesBadRequests(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, method, body, auth string
		want                     int
	}{
		{"GET", http.MethodGet, "", "", http.StatusMethodNotAllowed},
		{"NotJSON", http.MethodPost, "hello", "Bearer s3cret", http.StatusBadRequest},
		{"OtherProtocol", http.MethodPost, `{"protocol": "proctor-agent/v9"}`, "Bearer s3cret", http.StatusBadRequest},
		{"NoToken", http.MethodPost, sampleStep, "", http.StatusUnauthorized},
		{"WrongToken", http.MethodPost, sampleStep, "Bearer nope", http.StatusUnauthorized},
		{"RightToken", http.MethodPost, sampleStep, "Bearer s3cret", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tc.method, "/step", strings.NewReader(tc.body))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			newAgent("s3cret").ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
		})
	}
}

func TestSearchTerm(t *testing.T) {
	t.Parallel()
	for goal, want := range map[string]string{
		`Search the shop for "blue mug" and report its price`:   "blue mug",
		`search for wireless headphones, then open the first`:   "wireless headphones",
		`Search the forum for vim tips and upvote the top post`: "vim tips",
		`What is the price of the blue mug?`:                    "",
	} {
		if got := searchTerm(goal); got != want {
			t.Errorf("searchTerm(%q) = %q, want %q", goal, got, want)
		}
	}
}
