package episode

import (
	"net"
	"strings"

	"github.com/mxschmitt/playwright-go"

	"proctor/netguard"
)

// ContextProxy opens a scope of the browser proxy p letting hosts through,
// and returns the browser context's proxy setting and the function that
// closes the scope once the context is closed. Without a proxy it returns
// nil (the browser connects directly) and a no-op.
func ContextProxy(p *netguard.Proxy, hosts []string) (*playwright.Proxy, func()) {
	if p == nil {
		return nil, func() {}
	}
	creds, closeScope := p.Scope(hosts)
	return &playwright.Proxy{Server: creds.Server, Username: &creds.Username, Password: &creds.Password}, closeScope
}

// hosts lists the host:port of each allowed origin (a proxy scope's).
func (a *allowlist) hosts() []string {
	out := make([]string, 0, len(a.origins))
	for _, o := range a.origins {
		if _, _, err := net.SplitHostPort(o.host); err == nil {
			out = append(out, o.host)
			continue
		}
		port := "80"
		if o.scheme == "https" {
			port = "443"
		}
		out = append(out, net.JoinHostPort(strings.Trim(o.host, "[]"), port))
	}
	return out
}
