// Package connect serves episodes to agents that connect to Proctor instead
// of being called: the MCP server of an episode's browser (kind mcp) and the
// observation and action endpoints of pull mode (an http agent with
// "pull": true). Both sit on a Mailbox, the episode's agent from the
// episode loop's side: Step publishes the observation and waits for the
// action that arrives over HTTP.
package connect

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"proctor/models"
)

// ErrEnded is the error of a call on an episode that is over; Ending says how.
var ErrEnded = errors.New("the episode is over")

// ErrOutOfTurn is a pull-mode action for a step that is not the one waiting.
var ErrOutOfTurn = errors.New("that step is not waiting for an action")

// Mailbox is the agent of one connecting episode. The episode loop calls
// Step at every step; the agent's calls (Observation, Act) arrive from HTTP
// handlers. One action is in flight at a time.
type Mailbox struct {
	RunID, AttemptID int64
	Try              int
	// NoScreenshot leaves the screenshot out of observations (a pull-mode
	// agent that asked for none); MCP agents always get it.
	NoScreenshot bool

	mu      sync.Mutex
	pending *models.StepRequest // the observation waiting for an action; nil while acting
	changed chan struct{}       // closed and replaced whenever pending changes or the episode ends
	ended   bool
	ending  string
	actions chan *models.StepResponse

	turn chan struct{} // one acting call at a time (a semaphore of one)

	srvOnce sync.Once
	srv     *mcp.Server
}

// server returns the episode's MCP server, built on first use.
func (m *Mailbox) server() *mcp.Server {
	m.srvOnce.Do(func() { m.srv = newServer(m) })
	return m.srv
}

// NewMailbox returns the mailbox of one try of an attempt.
func NewMailbox(runID, attemptID int64, try int) *Mailbox {
	return &Mailbox{RunID: runID, AttemptID: attemptID, Try: try,
		changed: make(chan struct{}), actions: make(chan *models.StepResponse), turn: make(chan struct{}, 1)}
}

// WantsScreenshot is true unless NoScreenshot is set: MCP agents may ask
// for the screenshot, and pull agents get it as push agents do.
func (m *Mailbox) WantsScreenshot() bool { return !m.NoScreenshot }

// Step publishes req as the pending observation and waits for the agent's
// action, or ctx (the idle limit, the episode's end).
func (m *Mailbox) Step(ctx context.Context, req *models.StepRequest) (*models.StepResponse, error) {
	m.mu.Lock()
	m.pending = req
	m.signal()
	m.mu.Unlock()
	select {
	case resp := <-m.actions:
		return resp, nil
	case <-ctx.Done():
		m.mu.Lock()
		m.pending = nil
		m.signal()
		m.mu.Unlock()
		return nil, ctx.Err()
	}
}

// End closes the mailbox: every waiting and later call gets ErrEnded with
// how the episode ended.
func (m *Mailbox) End(how string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return
	}
	m.ended, m.ending, m.pending = true, how, nil
	m.signal()
}

// Ending says how the episode ended ("" while it runs).
func (m *Mailbox) Ending() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ending
}

// signal wakes every waiter; m.mu is held.
func (m *Mailbox) signal() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Observation waits for an observation waiting for an action, of a step
// after `after` (-1: any), and returns it; ErrEnded once the episode is over.
func (m *Mailbox) Observation(ctx context.Context, after int) (*models.StepRequest, error) {
	for {
		m.mu.Lock()
		p, ended, ch := m.pending, m.ended, m.changed
		m.mu.Unlock()
		if ended {
			return nil, ErrEnded
		}
		if p != nil && p.Step > after {
			return p, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Act hands resp to the step waiting for an action (step, unless it is -1,
// must be that step's number: ErrOutOfTurn otherwise) and returns the step's
// number. Calls take turns: one waits until the previous action was taken.
func (m *Mailbox) Act(ctx context.Context, step int, resp *models.StepResponse) (int, error) {
	select {
	case m.turn <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-m.turn }()
	p, err := m.Observation(ctx, -1)
	if err != nil {
		return 0, err
	}
	if step >= 0 && p.Step != step {
		return 0, ErrOutOfTurn
	}
	m.mu.Lock()
	ch := m.changed
	m.mu.Unlock()
	for {
		select {
		case m.actions <- resp:
			m.mu.Lock()
			if m.pending == p {
				m.pending = nil
				m.signal()
			}
			m.mu.Unlock()
			return p.Step, nil
		case <-ch:
			// The step gave up waiting (its idle limit) or the episode ended.
			m.mu.Lock()
			ended, still := m.ended, m.pending == p
			ch = m.changed
			m.mu.Unlock()
			if ended {
				return 0, ErrEnded
			}
			if !still {
				return 0, ErrOutOfTurn
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Pending returns the observation waiting for an action, or nil.
func (m *Mailbox) Pending() *models.StepRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pending
}
