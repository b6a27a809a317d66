package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"proctor/api"
	"proctor/models"
)

// Endpoints of an episode, the last element of its path.
const (
	EndpointMCP         = "mcp"
	EndpointObservation = "observation"
	EndpointAction      = "action"
)

// Limits of the agent's calls.
const (
	// MaxRequestBytes bounds a call's body (an MCP message, a pull action).
	MaxRequestBytes = 256 << 10
	// ObservationWait is the longest a pull GET waits for an observation
	// before answering 204 (ask again).
	ObservationWait = 30 * time.Second
	// startWait is how long a call waits for a claimed episode to start.
	startWait = 20 * time.Second
)

// Leases reads the lease of an episode again while its episode starts, and
// renews it while a call on the episode lasts.
type Leases interface {
	EpisodeLease(ctx context.Context, id int64) (*models.EpisodeLease, error)
	RenewEpisodeLease(ctx context.Context, id int64, until time.Time) (bool, error)
}

// Gateway serves the calls on connecting episodes, once the caller's
// episode token has opened the lease: from this process's Hub when it runs
// the episode, or forwarded to the worker that does.
type Gateway struct {
	hub    *Hub
	leases Leases
	proxy  *http.Client
	log    *slog.Logger
	mcp    http.Handler
	poll   time.Duration
	ttl    time.Duration
}

// NewGateway returns the gateway over hub (nil in a process that runs no
// episodes: every call is forwarded). While a call lasts (a tool that
// waits for the page, a long poll) it renews the episode's lease, whose
// length is ttl, so that no call outlives the lease it came with.
func NewGateway(hub *Hub, leases Leases, ttl time.Duration, log *slog.Logger) *Gateway {
	if hub == nil {
		hub = NewHub()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Calls are forwarded to workers on the deployment's own network, never
	// through an egress proxy the environment may name.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	g := &Gateway{hub: hub, leases: leases, log: log, proxy: &http.Client{Transport: transport}, poll: 200 * time.Millisecond, ttl: ttl}
	g.mcp = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if m, ok := r.Context().Value(mailboxKey{}).(*Mailbox); ok {
			return m.server()
		}
		return nil
	}, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: log,
		// Callers are authenticated by their episode token, which a page in
		// a browser never holds; the gateway may sit behind a proxy on
		// loopback with a public Host.
		DisableLocalhostProtection: true,
	})
	return g
}

// Hub returns the gateway's hub.
func (g *Gateway) Hub() *Hub { return g.hub }

type mailboxKey struct{}

// Serve answers one call on the episode of lease (which the caller opened).
// Local selects whether the call may be forwarded: a worker's own endpoint
// serves only its episodes. Errors are *models.Error for the caller.
func (g *Gateway) Serve(w http.ResponseWriter, r *http.Request, lease *models.EpisodeLease, endpoint string, local bool) error {
	defer g.keepLease(r.Context(), lease.ID)()
	m, err := g.find(r.Context(), lease, local)
	if err != nil {
		return err
	}
	if m == nil {
		return g.forward(w, r, lease)
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
	switch endpoint {
	case EndpointMCP:
		g.mcp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mailboxKey{}, m)))
		return nil
	case EndpointObservation:
		return serveObservation(w, r, m)
	case EndpointAction:
		return serveAction(w, r, m)
	}
	return models.Errorf(models.ENOTFOUND, "There is nothing at this address.")
}

// keepLease renews a lease every third of its length until the returned
// function is called.
func (g *Gateway) keepLease(ctx context.Context, id int64) (stop func()) {
	if g.ttl <= 0 || g.leases == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		t := time.NewTicker(g.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := g.leases.RenewEpisodeLease(ctx, id, time.Now().Add(g.ttl)); err != nil && ctx.Err() == nil {
					g.log.Warn("renew an episode lease during a call", "lease_id", id, "error", err.Error())
				}
			}
		}
	}()
	return cancel
}

// find returns the local mailbox of lease's episode, nil when another
// process holds it, waiting a while for a claimed episode to start.
func (g *Gateway) find(ctx context.Context, lease *models.EpisodeLease, local bool) (*Mailbox, error) {
	deadline := time.Now().Add(startWait)
	for {
		if m := g.hub.Get(lease.AttemptID, lease.Try); m != nil {
			if how := m.Ending(); how != "" {
				return nil, models.Errorf(models.EGONE, "Episode %d is over: %s", lease.AttemptID, how)
			}
			return m, nil
		}
		switch {
		case lease.Status == models.LeaseEnded:
			return nil, models.Errorf(models.EGONE, "Episode %d is over: %s", lease.AttemptID, lease.EndedReason)
		case lease.Status == models.LeaseRunning && !local && lease.WorkerURL != "":
			return nil, nil
		case lease.Status == models.LeaseRunning && local:
			return nil, models.Errorf(models.ENOTFOUND, "This worker does not run episode %d.", lease.AttemptID)
		}
		if time.Now().After(deadline) {
			return nil, models.Errorf(models.EUNAVAILABLE, "Episode %d has not started yet: no worker has taken it up. Try again in a few seconds.", lease.AttemptID)
		}
		t := time.NewTimer(g.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		fresh, err := g.leases.EpisodeLease(ctx, lease.ID)
		if err != nil {
			return nil, err
		}
		lease = fresh
	}
}

// forward hands the call to the worker running the episode, which checks
// the episode token again.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, lease *models.EpisodeLease) error {
	target, err := url.Parse(lease.WorkerURL)
	if err != nil || target.Host == "" {
		return fmt.Errorf("episode %d: worker address %q: %v", lease.AttemptID, lease.WorkerURL, err)
	}
	var failed error
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path = r.URL.Path
			pr.Out.URL.RawPath = r.URL.RawPath
			pr.Out.Header.Set("X-Proctor-Forwarded", "1")
		},
		Transport:     g.proxy.Transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			failed = err
		},
	}
	p.ServeHTTP(w, r)
	if failed != nil {
		g.log.Warn("forward to the episode's worker failed", "attempt_id", lease.AttemptID, "worker", lease.WorkerURL, "error", failed.Error())
		return models.Errorf(models.EUNAVAILABLE, "The worker running episode %d cannot be reached. Try again in a few seconds.", lease.AttemptID)
	}
	return nil
}

// serveObservation is pull mode's GET: the step waiting for an action, as
// push mode's request body; 204 when none came within the wait (ask again).
func serveObservation(w http.ResponseWriter, r *http.Request, m *Mailbox) error {
	after := -1
	if s := r.URL.Query().Get("after"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 {
			return models.FieldError("after", "after must be a step number, not %q", s)
		}
		after = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), ObservationWait)
	defer cancel()
	req, err := m.Observation(ctx, after)
	switch {
	case errors.Is(err, ErrEnded):
		return models.Errorf(models.EGONE, "Episode %d is over: %s", m.AttemptID, m.Ending())
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		w.WriteHeader(http.StatusNoContent)
		return nil
	case err != nil:
		return err
	}
	out := *req
	out.Protocol = models.AgentProtocol
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(&out)
}

// serveAction is pull mode's POST: push mode's response body, for the step
// waiting (?step=N, when given, must be that step).
func serveAction(w http.ResponseWriter, r *http.Request, m *Mailbox) error {
	step := -1
	if s := r.URL.Query().Get("step"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return models.FieldError("step", "step must be a step number, not %q", s)
		}
		step = n
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return models.Errorf(models.ETOOLARGE, "The action is larger than %d bytes.", MaxRequestBytes)
		}
		return err
	}
	var resp models.StepResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return models.Errorf(models.EINVALID, "The body is not a step response ({\"action\": {…}, \"thought\": …}): %v", err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), ObservationWait)
	defer cancel()
	n, err := m.Act(ctx, step, &resp)
	switch {
	case errors.Is(err, ErrEnded):
		return models.Errorf(models.EGONE, "Episode %d is over: %s", m.AttemptID, m.Ending())
	case errors.Is(err, ErrOutOfTurn):
		return models.Errorf(models.ECONFLICT, "Step %d of episode %d is not waiting for an action: GET the observation for the step that is.", step, m.AttemptID)
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		return models.Errorf(models.ECONFLICT, "No step of episode %d waited for an action within %s.", m.AttemptID, ObservationWait)
	case err != nil:
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	return json.NewEncoder(w).Encode(api.ActionAccepted{Step: n})
}
