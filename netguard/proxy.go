package netguard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"proctor/models"
)

// Proxy is the HTTP proxy Proctor's browser reaches the web through. Chromium
// resolves names itself, so a page whose host name answers a public address
// when checked and an internal one when connected to (DNS rebinding) would
// get past a check made before the browser goes there; through the proxy,
// every connection the browser makes — page loads, subresources, redirects,
// HTTPS tunnels — is dialled by the guard, which checks the very address it
// connects to.
//
// Each browser context gets a scope of its own (its credentials): the hosts
// the scope lists (an episode's benchmark sites, configured by an
// administrator) are let through like the guard's allow-list; every other
// host must resolve to public addresses only.
type Proxy struct {
	guard *Guard
	ln    net.Listener
	srv   *http.Server
	log   *slog.Logger

	mu         sync.Mutex
	scopes     map[string]*proxyScope // by user name
	tunnels    map[int]func()         // closers of the open CONNECT tunnels
	nextTunnel int
}

type proxyScope struct {
	password string
	allow    map[string]bool
}

// ProxyCredentials are the address and credentials of a proxy scope, as a
// browser context is configured with them.
type ProxyCredentials struct {
	Server, Username, Password string
}

// NewProxy starts the guard's proxy on a loopback port; Close stops it.
func (g *Guard) NewProxy(log *slog.Logger) (*Proxy, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errorf("proxy: %w", err)
	}
	p := &Proxy{guard: g, ln: ln, log: log, scopes: map[string]*proxyScope{}, tunnels: map[int]func(){}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("browser proxy stopped", "error", err.Error())
		}
	}()
	return p, nil
}

// Close stops the proxy and its open tunnels.
func (p *Proxy) Close() error {
	err := p.srv.Close() // hijacked tunnels are not the server's any more
	p.mu.Lock()
	closers := make([]func(), 0, len(p.tunnels))
	for _, c := range p.tunnels {
		closers = append(closers, c)
	}
	p.mu.Unlock()
	for _, c := range closers {
		c()
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Scope opens a scope letting allowHosts (each host:port, or a host on any
// port) through besides the guard's own allow-list, and returns its
// credentials and the function that closes it.
func (p *Proxy) Scope(allowHosts []string) (ProxyCredentials, func()) {
	user, pass := randomToken(), randomToken()
	s := &proxyScope{password: pass, allow: map[string]bool{}}
	for _, h := range allowHosts {
		if k := scopeKey(h); k != "" {
			s.allow[k] = true
		}
	}
	p.mu.Lock()
	p.scopes[user] = s
	p.mu.Unlock()
	creds := ProxyCredentials{Server: "http://" + p.ln.Addr().String(), Username: user, Password: pass}
	return creds, func() {
		p.mu.Lock()
		delete(p.scopes, user)
		p.mu.Unlock()
	}
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// scopeOf finds the scope of a request's Proxy-Authorization.
func (p *Proxy) scopeOf(r *http.Request) *proxyScope {
	auth, ok := strings.CutPrefix(r.Header.Get("Proxy-Authorization"), "Basic ")
	if !ok {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(auth)
	if err != nil {
		return nil
	}
	user, pass, _ := strings.Cut(string(raw), ":")
	p.mu.Lock()
	s := p.scopes[user]
	p.mu.Unlock()
	if s == nil || subtle.ConstantTimeCompare([]byte(pass), []byte(s.password)) != 1 {
		return nil
	}
	return s
}

// scopeKey writes a scope entry (host or host:port) canonically.
func scopeKey(entry string) string {
	if host, port, err := net.SplitHostPort(entry); err == nil {
		return canonicalHost(host) + " " + port
	}
	return canonicalHost(entry)
}

// dial connects to addr through the guard, letting the scope's hosts through.
func (p *Proxy) dial(ctx context.Context, s *proxyScope, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, errorf("dial %q: %w", addr, err)
	}
	if s.allow[canonicalHost(host)+" "+port] || s.allow[canonicalHost(host)] {
		return p.guard.dialAllowed(ctx, "tcp", addr)
	}
	return p.guard.DialContext(ctx, "tcp", addr)
}

// ServeHTTP proxies one request: a CONNECT tunnel, or a plain HTTP request
// forwarded as it is (redirects go back to the browser, which comes back
// through the proxy for each hop).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := p.scopeOf(r)
	if s == nil {
		w.Header().Set("Proxy-Authenticate", `Basic realm="proctor"`)
		http.Error(w, "Proxy authentication required.", http.StatusProxyAuthRequired)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, s)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "This proxy forwards absolute http:// URLs and CONNECT tunnels only.", http.StatusBadRequest)
		return
	}
	p.forward(w, r, s)
}

// refuse answers a connection the guard refused, saying why.
func (p *Proxy) refuse(w http.ResponseWriter, target string, err error) {
	status := http.StatusBadGateway
	var me *models.Error
	switch {
	case Unresolved(err):
		// Chromium's own background requests (autofill, updates) to names
		// this machine cannot resolve: not worth a warning.
		status = http.StatusBadGateway
		p.log.Debug("browser connection to an unresolved host", "target", target)
	case errors.As(err, &me):
		status = http.StatusForbidden
		p.log.Warn("browser connection refused by the SSRF guard", "target", target, "reason", me.Message)
	}
	http.Error(w, fmt.Sprintf("Proctor did not connect to %s: %v", target, err), status)
}

func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, s *proxyScope) {
	upstream, err := p.dial(r.Context(), s, r.Host)
	if err != nil {
		p.refuse(w, r.Host, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "tunnels are not supported here", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	// Either side ending ends the tunnel (browsers do not half-close), and
	// Close ends every tunnel still open.
	closeBoth := func() {
		client.Close()
		upstream.Close()
	}
	forget := p.track(closeBoth)
	defer forget()
	go func() {
		defer closeBoth()
		// Bytes the browser sent after its CONNECT request, already buffered.
		if n := buf.Reader.Buffered(); n > 0 {
			pending, _ := buf.Reader.Peek(n)
			_, _ = upstream.Write(pending)
		}
		_, _ = io.Copy(upstream, client)
	}()
	_, _ = io.Copy(client, upstream)
	closeBoth()
}

// track records an open tunnel's closer until the returned function is called.
func (p *Proxy) track(closer func()) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextTunnel++
	id := p.nextTunnel
	p.tunnels[id] = closer
	return func() {
		p.mu.Lock()
		delete(p.tunnels, id)
		p.mu.Unlock()
	}
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, s *proxyScope) {
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return p.dial(ctx, s, addr)
		},
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: 2 * time.Minute,
	}
	defer transport.CloseIdleConnections()
	// The headers of one connection, not forwarded.
	hopHeaders := []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	res, err := transport.RoundTrip(out)
	if err != nil {
		p.refuse(w, r.URL.Host, err)
		return
	}
	defer res.Body.Close()
	for _, h := range hopHeaders {
		res.Header.Del(h)
	}
	for k, vs := range res.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}
