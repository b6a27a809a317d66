// Command pull-agent runs a protocol v1 agent that Proctor cannot reach (on a
// laptop, behind NAT) by pulling its work: it claims the episodes of a run,
// fetches each observation, hands it to the agent's step endpoint on this
// machine, and posts the agent's reply back as the action
// (docs/agent-protocol.md, "Pull mode"). It uses only the standard library
// and nothing from Proctor, so a team can copy it.
//
//	go run ./examples/http-agent -addr 127.0.0.1:8088 &
//	PROCTOR_TOKEN=prt_… go run ./examples/pull-agent \
//	    -server https://proctor.example.org -run 42 -agent http://127.0.0.1:8088/step
//
// The run is of an http agent registered with {"pull": true} in its
// configuration (and no endpoint URL). The token is an API token of a member
// of the run's team. The command ends when the run has no episode left.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"
)

// claim is the part of a claim's answer this bridge reads.
type claim struct {
	EpisodeID      int64  `json:"episode_id"`
	Token          string `json:"token"`
	LeaseSeconds   int    `json:"lease_seconds"`
	ObservationURL string `json:"observation_url"`
	ActionURL      string `json:"action_url"`
	HeartbeatURL   string `json:"heartbeat_url"`
	Task           struct {
		ID string `json:"id"`
	} `json:"task"`
}

// bridge claims episodes of one run and relays them to a local agent.
type bridge struct {
	server, token, agent string
	runID                int64
	client               *http.Client
	log                  *log.Logger
}

// errRunOver ends the claims: the run has no episode left.
var errRunOver = errors.New("the run is over")

func main() {
	server := flag.String("server", "http://127.0.0.1:8080", "the Proctor server")
	runID := flag.Int64("run", 0, "the run whose episodes to claim")
	agentURL := flag.String("agent", "http://127.0.0.1:8088/step", "the agent's protocol v1 step endpoint")
	parallel := flag.Int("parallel", 1, "episodes driven at once (the run's parallelism bounds it too)")
	flag.Parse()
	token := os.Getenv("PROCTOR_TOKEN")
	if *runID <= 0 || token == "" {
		fmt.Fprintln(os.Stderr, "usage: PROCTOR_TOKEN=<API token> pull-agent -server URL -run ID [-agent URL] [-parallel N]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	b := &bridge{server: strings.TrimRight(*server, "/"), token: token, agent: *agentURL, runID: *runID,
		client: &http.Client{Timeout: 2 * time.Minute}, log: log.New(os.Stderr, "pull-agent: ", log.LstdFlags)}
	if err := b.run(ctx, *parallel); err != nil {
		b.log.Print(err)
		os.Exit(1)
	}
}

// run drives up to parallel episodes at once until the run is over.
func (b *bridge) run(ctx context.Context, parallel int) error {
	var wg sync.WaitGroup
	errs := make(chan error, parallel)
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := b.claim(ctx)
				if errors.Is(err, errRunOver) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if c == nil {
					continue // none free yet: claim again
				}
				b.log.Printf("episode %d (task %s) claimed", c.EpisodeID, c.Task.ID)
				if err := b.drive(ctx, c); err != nil {
					b.log.Printf("episode %d: %v", c.EpisodeID, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// claim long-polls for an episode: nil when none came, errRunOver when
// the run has none left.
func (b *bridge) claim(ctx context.Context) (*claim, error) {
	url := fmt.Sprintf("%s/api/v1/runs/%d/episodes/claim?wait=30", b.server, b.runID)
	res, body, err := b.call(ctx, http.MethodPost, url, b.token, nil)
	if err != nil {
		return nil, err
	}
	switch res.StatusCode {
	case http.StatusOK:
		var c claim
		return &c, json.Unmarshal(body, &c)
	case http.StatusNoContent:
		return nil, nil
	case http.StatusConflict:
		return nil, errRunOver
	}
	return nil, fmt.Errorf("claim: HTTP %d: %s", res.StatusCode, body)
}

// drive relays one episode until it is over: observation → agent → action.
// A heartbeat keeps the lease while the agent thinks.
func (b *bridge) drive(ctx context.Context, c *claim) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go b.heartbeat(ctx, c)
	after := -1
	for {
		res, body, err := b.call(ctx, http.MethodGet, fmt.Sprintf("%s?after=%d", c.ObservationURL, after), c.Token, nil)
		if err != nil {
			return err
		}
		switch res.StatusCode {
		case http.StatusNoContent:
			continue // nothing yet: ask again
		case http.StatusGone:
			b.log.Printf("episode %d is over: %s", c.EpisodeID, message(body))
			return nil
		case http.StatusOK:
		default:
			return fmt.Errorf("observation: HTTP %d: %s", res.StatusCode, message(body))
		}
		var step struct {
			Step int `json:"step"`
		}
		if err := json.Unmarshal(body, &step); err != nil {
			return fmt.Errorf("observation: %w", err)
		}
		reply, err := b.ask(ctx, body)
		if err != nil {
			return err
		}
		res, body, err = b.call(ctx, http.MethodPost, fmt.Sprintf("%s?step=%d", c.ActionURL, step.Step), c.Token, reply)
		if err != nil {
			return err
		}
		switch res.StatusCode {
		case http.StatusAccepted:
			after = step.Step
		case http.StatusGone:
			b.log.Printf("episode %d is over: %s", c.EpisodeID, message(body))
			return nil
		default:
			return fmt.Errorf("action: HTTP %d: %s", res.StatusCode, message(body))
		}
	}
}

// ask posts the observation to the agent's step endpoint, as Proctor would.
func (b *bridge) ask(ctx context.Context, observation []byte) ([]byte, error) {
	res, body, err := b.call(ctx, http.MethodPost, b.agent, "", observation)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("agent: HTTP %d: %s", res.StatusCode, body)
	}
	return body, nil
}

// heartbeat renews the lease a few times within its length.
func (b *bridge) heartbeat(ctx context.Context, c *claim) {
	t := time.NewTicker(time.Duration(max(c.LeaseSeconds, 3)) * time.Second / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, _, err := b.call(ctx, http.MethodPost, c.HeartbeatURL, c.Token, nil); err != nil && ctx.Err() == nil {
				b.log.Printf("episode %d: heartbeat: %v", c.EpisodeID, err)
			}
		}
	}
}

// call makes one request with an optional bearer token and JSON body.
func (b *bridge) call(ctx context.Context, method, url, token string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := b.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	return res, out, err
}

// message is the message of a Proctor error body, or the body itself.
func message(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return string(body)
}
