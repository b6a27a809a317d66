// Command http-agent is a minimal web agent speaking Proctor's agent protocol v1
// (docs/agent-protocol.md). It uses only the standard library and nothing from
// Proctor, so a team can copy this file and replace decide with a real policy.
//
// Its policy is deliberately simple: when the goal asks to search for something
// and the page has a search box, it fills the box with the search term, presses
// Enter, and stops; otherwise it stops at once.
//
//	go run ./examples/http-agent -addr :8088
//
// Register http://<host>:8088/step as the agent's endpoint. When the environment
// variable AGENT_TOKEN is set, requests must carry `Authorization: Bearer <token>`
// (store the same value as the agent's AGENT_TOKEN secret in Proctor).
package main

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// protocol is the version this agent speaks; Proctor sends it in every request.
const protocol = "proctor-agent/v1"

// maxRequestBytes bounds a request; screenshots make them a few hundred KiB.
const maxRequestBytes = 32 << 20

// stepRequest is what Proctor POSTs at every step (the fields this agent reads).
type stepRequest struct {
	Protocol  string `json:"protocol"`
	RunID     int64  `json:"run_id"`
	AttemptID int64  `json:"attempt_id"`
	Step      int    `json:"step"`
	Task      struct {
		ID        string   `json:"id"`
		Goal      string   `json:"goal"`
		StartURLs []string `json:"start_urls"`
		Sites     []string `json:"sites"`
	} `json:"task"`
	Observation struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		Tabs  []struct {
			Index  int    `json:"index"`
			URL    string `json:"url"`
			Title  string `json:"title"`
			Active bool   `json:"active"`
		} `json:"tabs"`
		AXTree          string   `json:"axtree"`
		Screenshot      string   `json:"screenshot"` // base64, when the agent asks for it
		ScreenshotType  string   `json:"screenshot_type"`
		LastActionError string   `json:"last_action_error"`
		Downloads       []string `json:"downloads"`
	} `json:"observation"`
	Budget struct {
		StepsLeft   int      `json:"steps_left"`
		SecondsLeft float64  `json:"seconds_left"`
		CostLeft    *float64 `json:"cost_left"`
	} `json:"budget"`
}

// target names an element: by its id from the accessibility text here.
type target struct {
	ElementID string `json:"element_id,omitempty"`
}

// action is one protocol action (only the fields this agent uses).
type action struct {
	Type   string  `json:"type"`
	Target *target `json:"target,omitempty"`
	Text   string  `json:"text,omitempty"`
	Key    string  `json:"key,omitempty"`
	Reason string  `json:"reason,omitempty"`
}

// stepResponse is the agent's answer.
type stepResponse struct {
	Action  action `json:"action"`
	Thought string `json:"thought,omitempty"`
}

// progress is what the agent remembers about one attempt between its steps.
type progress struct {
	searchBox string // the element filled, once it is
	submitted bool
}

// agent serves the step endpoint and remembers each attempt's progress.
type agent struct {
	token string
	mu    sync.Mutex
	seen  map[int64]*progress
}

// newAgent returns an agent that requires token when it is not empty.
func newAgent(token string) *agent {
	return &agent{token: token, seen: map[int64]*progress{}}
}

// ServeHTTP handles one step: parse, decide, reply.
func (a *agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a step request", http.StatusMethodNotAllowed)
		return
	}
	if a.token != "" {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
			http.Error(w, "wrong or missing bearer token", http.StatusUnauthorized)
			return
		}
	}
	var req stepRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes)).Decode(&req); err != nil {
		http.Error(w, "bad step request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.Protocol != protocol {
		http.Error(w, "this agent speaks "+protocol+", not "+req.Protocol, http.StatusBadRequest)
		return
	}
	resp := a.decide(&req)
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(resp); err != nil {
		log.Printf("attempt %d step %d: write reply: %v", req.AttemptID, req.Step, err)
	}
}

// decide is the policy: fill the search box, press Enter, stop.
func (a *agent) decide(req *stepRequest) stepResponse {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.seen[req.AttemptID]
	if p == nil || req.Step == 0 { // step 0 starts an episode, also when Proctor retries one
		p = &progress{}
		a.seen[req.AttemptID] = p
	}
	switch {
	case p.searchBox == "":
		term, box := searchTerm(req.Task.Goal), findSearchBox(req.Observation.AXTree)
		if term == "" || box == "" {
			delete(a.seen, req.AttemptID)
			return stop("the goal names no search term or the page has no search box")
		}
		p.searchBox = box
		return stepResponse{
			Thought: "the goal asks to search for " + term + "; typing it into the search box",
			Action:  action{Type: "fill", Target: &target{ElementID: box}, Text: term},
		}
	case !p.submitted && req.Observation.LastActionError == "":
		p.submitted = true
		return stepResponse{
			Thought: "submitting the search",
			Action:  action{Type: "press", Target: &target{ElementID: p.searchBox}, Key: "Enter"},
		}
	default:
		delete(a.seen, req.AttemptID)
		if req.Observation.LastActionError != "" {
			return stop("my last action failed: " + req.Observation.LastActionError)
		}
		return stop("search submitted; this example agent does nothing more")
	}
}

// stop ends the episode without an answer.
func stop(reason string) stepResponse {
	return stepResponse{Thought: reason, Action: action{Type: "stop", Reason: reason}}
}

var (
	// quotedTerm matches: search ... for "blue mug".
	quotedTerm = regexp.MustCompile(`(?i)\bsearch\b[^"]*"([^"]+)"`)
	// plainTerm matches: search for blue mugs, and ...
	plainTerm = regexp.MustCompile(`(?i)\bsearch(?:\s+\w+){0,3}?\s+for\s+([^.,;:"]+)`)
	// axLine matches one line of the accessibility text: [e12] role "name" ...
	axLine = regexp.MustCompile(`^\s*\[([^\]\s]+)\]\s+(\S+)\s*(.*)$`)
)

// searchTerm finds what the goal asks to search for, or "".
func searchTerm(goal string) string {
	if m := quotedTerm.FindStringSubmatch(goal); m != nil {
		return strings.TrimSpace(m[1])
	}
	if m := plainTerm.FindStringSubmatch(goal); m != nil {
		term := strings.TrimSpace(m[1])
		if i := strings.Index(term, " and "); i > 0 {
			term = term[:i]
		}
		return term
	}
	return ""
}

// findSearchBox returns the element id of the first search box in the
// accessibility text: a searchbox, or a textbox or combobox named like a search.
func findSearchBox(axtree string) string {
	fallback := ""
	for line := range strings.SplitSeq(axtree, "\n") {
		m := axLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, role, rest := m[1], m[2], strings.ToLower(m[3])
		switch {
		case role == "searchbox":
			return id
		case (role == "textbox" || role == "combobox") && strings.Contains(rest, "search") && fallback == "":
			fallback = id
		}
	}
	return fallback
}

func main() {
	addr := flag.String("addr", ":8088", "address to listen on")
	flag.Parse()
	mux := http.NewServeMux()
	mux.Handle("/step", newAgent(os.Getenv("AGENT_TOKEN")))
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("example agent listening on %s; POST steps to /step", *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
