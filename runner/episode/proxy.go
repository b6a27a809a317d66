package episode

import (
	"net"

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

// hosts lists the host names of the allowed origins (a proxy scope's).
func (a *allowlist) hosts() []string {
	out := make([]string, 0, len(a.origins))
	for _, o := range a.origins {
		host := o.host
		if h, _, err := net.SplitHostPort(o.host); err == nil {
			host = h
		}
		out = append(out, host)
	}
	return out
}
