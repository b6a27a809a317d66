package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// maxRedirects caps the redirects a Guard's client follows; each hop is dialled
// through the guard again.
const maxRedirects = 5

// DialContext connects to addr (host:port) like net.Dialer.DialContext, but
// resolves the host itself, refuses it when any of its addresses is not public,
// dials the checked addresses directly and checks the socket's address once more
// just before connecting. Because the address that is checked is the address
// that is dialled, a DNS answer that changes after CheckURL (DNS rebinding)
// cannot reach an internal address. Allow-listed hosts skip the checks.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return g.dial(ctx, network, addr, false)
}

// dialAllowed connects to addr as to an allow-listed host: resolved and
// dialled without checks (a proxy scope's own hosts).
func (g *Guard) dialAllowed(ctx context.Context, network, addr string) (net.Conn, error) {
	return g.dial(ctx, network, addr, true)
}

func (g *Guard) dial(ctx context.Context, network, addr string, allowed bool) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, errorf("dial %q: %w", addr, err)
	}
	d := &net.Dialer{Timeout: g.DialTimeout, KeepAlive: 30 * time.Second}
	var ips []netip.Addr
	if allowed || g.Allowed(host) {
		ips, err = g.resolve(ctx, host)
	} else {
		ips, err = g.checkedAddrs(ctx, host)
		d.Control = g.control(host)
	}
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ip := range ips {
		if !familyMatches(network, ip) {
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, errorf("dial %s: host %q has no address for network %s", addr, host, network)
	}
	return nil, errors.Join(errs...)
}

// control is the last check, on the very address the socket connects to.
func (g *Guard) control(host string) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return errorf("connect to %q: not an IP address and port", address)
		}
		if reason := g.Refused(ap.Addr()); reason != "" {
			return refusal(host, ap.Addr(), reason)
		}
		return nil
	}
}

// familyMatches reports whether ip can be dialled on network (tcp, tcp4, tcp6, …).
func familyMatches(network string, ip netip.Addr) bool {
	switch network[len(network)-1] {
	case '4':
		return ip.Unmap().Is4()
	case '6':
		return !ip.Unmap().Is4()
	}
	return true
}

// Transport returns an HTTP transport that connects only through DialContext.
// It ignores HTTP(S)_PROXY: a proxy would make the connection on our behalf,
// out of the guard's sight.
func (g *Guard) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = g.DialContext
	return t
}

// Client returns an HTTP client over Transport with the given overall timeout,
// following at most a few redirects (each one checked when dialled).
func (g *Guard) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: g.Transport(),
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return errorf("stopped after %d redirects at %s", maxRedirects, req.URL.Redacted())
			}
			return nil
		},
	}
}
