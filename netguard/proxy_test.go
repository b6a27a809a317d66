package netguard

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProxy: the browser's proxy asks for its credentials, lets a scope's
// own hosts through, and dials every other host through the guard, for
// plain requests and CONNECT tunnels alike, resolving the name itself for
// each connection (a name that starts answering a loopback address is
// refused from then on).
func TestProxy(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "hello from "+r.Host)
	})
	plainLn, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	plain := httptest.NewUnstartedServer(handler)
	plain.Listener = plainLn
	plain.Start()
	t.Cleanup(plain.Close)
	tlsLn, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	secure := httptest.NewUnstartedServer(handler)
	secure.Listener = tlsLn
	secure.StartTLS()
	t.Cleanup(secure.Close)
	plainPort, tlsPort := plainLn.Addr().(*net.TCPAddr).Port, tlsLn.Addr().(*net.TCPAddr).Port

	g := New([]string{"127.0.0.2"}, nil)
	var rebound atomic.Bool
	g.LookupIP = func(_ context.Context, host string) ([]net.IP, error) {
		switch {
		case host == "site.test" && rebound.Load():
			return []net.IP{net.ParseIP("127.0.0.1")}, nil
		case host == "site.test":
			return []net.IP{net.ParseIP("127.0.0.2")}, nil
		case host == "admin-site.test":
			return []net.IP{net.ParseIP("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host %q", host)
	}
	p, err := g.NewProxy(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	creds, closeScope := p.Scope([]string{"admin-site.test"})

	client := func(user *url.Userinfo) *http.Client {
		u, err := url.Parse(creds.Server)
		require.NoError(t, err)
		u.User = user
		return &http.Client{Transport: &http.Transport{
			Proxy:           http.ProxyURL(u),
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test server's certificate names no test host
		}}
	}
	withCreds := client(url.UserPassword(creds.Username, creds.Password))
	get := func(c *http.Client, target string) (int, string) {
		t.Helper()
		res, err := c.Get(target)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	code, _ := get(client(nil), fmt.Sprintf("http://site.test:%d/", plainPort))
	require.Equal(t, http.StatusProxyAuthRequired, code, "no credentials")
	code, _ = get(client(url.UserPassword(creds.Username, "wrong")), fmt.Sprintf("http://site.test:%d/", plainPort))
	require.Equal(t, http.StatusProxyAuthRequired, code, "a wrong password")

	code, body := get(withCreds, fmt.Sprintf("http://site.test:%d/", plainPort))
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, fmt.Sprintf("hello from site.test:%d", plainPort), body)
	code, body = get(withCreds, fmt.Sprintf("https://site.test:%d/", tlsPort))
	require.Equal(t, http.StatusOK, code, body)

	code, body = get(withCreds, "http://admin-site.test:1/")
	require.NotEqual(t, http.StatusForbidden, code, "the scope's own host is let through (nothing listens there): %s", body)

	// A scope entry with a port lets that port through only.
	portCreds, closePortScope := p.Scope([]string{"admin-site.test:1"})
	portClient := func() *http.Client {
		u, err := url.Parse(portCreds.Server)
		require.NoError(t, err)
		u.User = url.UserPassword(portCreds.Username, portCreds.Password)
		return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
	}()
	code, body = get(portClient, "http://admin-site.test:1/")
	require.NotEqual(t, http.StatusForbidden, code, "the scope's own port is let through: %s", body)
	code, body = get(portClient, "http://admin-site.test:2/")
	require.Equal(t, http.StatusForbidden, code, "another port of the same host is checked like any host: %s", body)
	closePortScope()

	rebound.Store(true)
	before := hits.Load()
	code, body = get(withCreds, fmt.Sprintf("http://site.test:%d/", plainPort))
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "loopback address (127.0.0.1)")
	// An open tunnel stays as it was dialled; a new one is refused.
	_, body = get(client(url.UserPassword(creds.Username, creds.Password)), fmt.Sprintf("https://site.test:%d/", tlsPort))
	require.Contains(t, body, "Forbidden", "a new tunnel is refused too")
	require.Equal(t, before, hits.Load())

	closeScope()
	code, _ = get(withCreds, fmt.Sprintf("http://site.test:%d/", plainPort))
	require.Equal(t, http.StatusProxyAuthRequired, code, "a closed scope's credentials no longer work")
}
