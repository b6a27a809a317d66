package episode

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/mxschmitt/playwright-go"
)

// origin is one place the browser may load from: a scheme, a host with its
// port, and an optional path prefix ("" allows the whole origin).
type origin struct {
	scheme, host string
	prefix       string // cleaned, without trailing slash; "" for the whole origin
}

// allowlist decides which URLs the episode's browser may load.
type allowlist struct {
	origins []origin
}

// newAllowlist parses scheme://host[:port][/path/prefix] entries.
func newAllowlist(entries []string) (*allowlist, error) {
	a := &allowlist{}
	for _, e := range entries {
		u, err := url.Parse(strings.TrimSpace(e))
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("allowed origin %q is not an http(s)://host[:port][/path] URL", e)
		}
		o := origin{scheme: u.Scheme, host: hostPort(u)}
		if p := path.Clean("/" + u.Path); p != "/" {
			o.prefix = p
		}
		a.origins = append(a.origins, o)
	}
	return a, nil
}

// hostPort lower-cases the host and drops the scheme's default port, so that
// http://Example.org:80 and http://example.org compare equal.
func hostPort(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if ((u.Scheme == "http" || u.Scheme == "ws") && port == "80") || ((u.Scheme == "https" || u.Scheme == "wss") && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return host + ":" + port
	}
	return host
}

// allows reports whether raw may be loaded. data:, blob: and about: URLs are
// local to the browser and always allowed; WebSocket URLs are checked against
// the origins of their http(s) counterparts. Paths are compared decoded and
// cleaned, so /sandbox/a1/../a2/ is not under /sandbox/a1/.
func (a *allowlist) allows(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return true
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	case "http", "https":
	default:
		return false
	}
	if u.User != nil {
		return false
	}
	host := hostPort(u)
	p := path.Clean("/" + u.Path)
	for _, o := range a.origins {
		if o.scheme != u.Scheme || o.host != host {
			continue
		}
		if o.prefix == "" || p == o.prefix || strings.HasPrefix(p, o.prefix+"/") {
			return true
		}
	}
	return false
}

// maxBlocked caps how many blocked URLs one step records.
const maxBlocked = 50

// maxBlockedURLLen shortens huge blocked URLs (data-laden beacons).
const maxBlockedURLLen = 500

// blockedLog collects the URLs refused since the last step was saved. The
// route handler runs on Playwright's goroutines, hence the mutex.
type blockedLog struct {
	mu       sync.Mutex
	urls     []string
	seen     map[string]bool
	navigate []string // blocked top-level navigations, reported as action errors
}

// add records a blocked URL once per step, up to maxBlocked.
func (l *blockedLog) add(raw string, navigation bool) {
	if len(raw) > maxBlockedURLLen {
		raw = raw[:maxBlockedURLLen] + "…"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if navigation {
		l.navigate = append(l.navigate, raw)
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if l.seen[raw] || len(l.urls) >= maxBlocked {
		return
	}
	l.seen[raw] = true
	l.urls = append(l.urls, raw)
}

// takeNavigations returns and forgets the blocked top-level navigations.
func (l *blockedLog) takeNavigations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.navigate
	l.navigate = nil
	return n
}

// take returns and forgets the URLs blocked since the last call.
func (l *blockedLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.urls
	l.urls, l.seen = nil, nil
	return u
}

// route lets allowed requests through and aborts the rest, noting them for
// the step. Playwright calls it on its own goroutines.
func (r *runner) route(rt playwright.Route) {
	req := rt.Request()
	u := req.URL()
	if req.IsNavigationRequest() {
		if f := req.Frame(); f != nil && f.ParentFrame() == nil {
			r.navs.request(f.Page())
		}
	}
	if r.allow.allows(u) {
		_ = rt.Continue()
		return
	}
	r.blocked.add(u, req.IsNavigationRequest() && isMainFrame(req))
	_ = rt.Abort("blockedbyclient")
}

// isMainFrame reports whether req belongs to a tab's top frame (a request
// whose frame is not known yet is a new tab's first navigation).
func isMainFrame(req playwright.Request) bool {
	f := req.Frame()
	return f == nil || f.ParentFrame() == nil
}

// routeWebSocket connects allowed WebSockets to their server and closes the
// rest, noting them for the step.
func (r *runner) routeWebSocket(ws playwright.WebSocketRoute) {
	if r.allow.allows(ws.URL()) {
		_, _ = ws.ConnectToServer()
		return
	}
	r.blocked.add(ws.URL(), false)
	ws.Close()
}
