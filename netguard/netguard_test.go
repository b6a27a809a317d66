package netguard_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/netguard"
)

// fakeDNS answers from a fixed table, so no test touches the network.
func fakeDNS(table map[string][]string) func(context.Context, string) ([]net.IP, error) {
	return func(_ context.Context, host string) ([]net.IP, error) {
		addrs, ok := table[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var ips []net.IP
		for _, a := range addrs {
			ips = append(ips, net.ParseIP(a))
		}
		return ips, nil
	}
}

func newGuard(allow ...string) *netguard.Guard {
	g := netguard.New(allow, nil)
	g.LookupIP = fakeDNS(map[string][]string{
		"agent.example.com":   {"93.184.216.34"},
		"v6.example.com":      {"2606:2800:220:1:248:1893:25c8:1946"},
		"mixed.example.com":   {"93.184.216.34", "10.0.0.7"},
		"localhost":           {"127.0.0.1", "::1"},
		"internal.corp":       {"10.0.0.5"},
		"allowed.corp":        {"10.9.9.9"},
		"cgnat.example.com":   {"100.64.1.1"},
		"mapped.example.com":  {"::ffff:127.0.0.1"},
		"nat64.example.com":   {"64:ff9b::a00:1"},
		"sixto4.example.com":  {"2002:a9fe:a9fe::1"},
		"metadata.google.com": {"142.250.1.1"},
	})
	return g
}

func TestGuard_CheckURL(t *testing.T) {
	t.Parallel()
	g := newGuard("allowed.corp", "192.168.1.20", "[::1]")
	tests := []struct {
		url  string
		want string // substring of the refusal; "" means accepted
	}{
		{"https://agent.example.com/step", ""},
		{"http://agent.example.com:8080/v1", ""},
		{"https://AGENT.example.com./x", ""},
		{"https://v6.example.com", ""},
		{"http://93.184.216.34/", ""},
		{"https://metadata.google.com/", ""}, // a public name that merely starts with "metadata"
		{"http://allowed.corp/", ""},
		{"http://ALLOWED.CORP:9000/", ""},
		{"http://192.168.1.20/", ""},
		{"http://[::1]:8000/", ""},
		{"http://[0:0::1]/", ""},

		{"file:///etc/passwd", `must use http or https, not "file"`},
		{"ftp://x", `must use http or https, not "ftp"`},
		{"gopher://agent.example.com", "must use http or https"},
		{"javascript:alert(1)", "must use http or https"},
		{"agent.example.com/step", "must start with http:// or https://"},
		{"http://", "has no host"},
		{"http:opaque", "has no host"},
		{"http://user:pw@agent.example.com/", "credentials in the endpoint URL are not allowed"},
		{"http://agent.example.com:99999/", "invalid port"},
		{"http://nowhere.invalid/", `host "nowhere.invalid" could not be resolved: no such host`},

		{"http://127.0.0.1/", "loopback address (127.0.0.1)"},
		{"http://127.8.9.10:81/", "loopback address"},
		{"http://localhost:8080/", `host "localhost" resolves to a loopback address`},
		{"http://[::1]:8001/x", ""}, // allow-listed above, any port
		{"http://[::ffff:127.0.0.1]/", "loopback address (127.0.0.1)"},
		{"http://mapped.example.com/", "loopback address"},
		{"http://10.1.2.3/", `host "10.1.2.3" resolves to a private address (10.1.2.3); ask an admin to allow-list it with PROCTOR_AGENT_ALLOW_HOSTS`},
		{"http://172.16.0.1/", "private address"},
		{"http://172.31.255.255/", "private address"},
		{"http://192.168.1.21/", "private address"},
		{"http://[fd00:ec2::254]/", "private address"},
		{"http://internal.corp/", `host "internal.corp" resolves to a private address (10.0.0.5)`},
		{"http://mixed.example.com/", "private address (10.0.0.7)"},
		{"http://169.254.169.254/latest/meta-data/", "link-local address"},
		{"http://[fe80::1]/", "link-local address"},
		{"http://[fe80::1%25eth0]/", "IPv6 zone"},
		{"http://0.0.0.0/", "unspecified address"},
		{"http://[::]/", "unspecified address"},
		{"http://0.1.2.3/", `"this network" address`},
		{"http://224.0.0.1/", "multicast address"},
		{"http://[ff02::1]/", "multicast address"},
		{"http://255.255.255.255/", "broadcast address"},
		{"http://100.64.0.1/", "carrier-grade NAT address"},
		{"http://100.100.100.200/", "carrier-grade NAT address"}, // Alibaba Cloud metadata
		{"http://cgnat.example.com/", "carrier-grade NAT address"},
		{"http://[64:ff9b::a00:1]/", "private address (embedded in IPv6)"},
		{"http://nat64.example.com/", "private address (embedded in IPv6)"},
		{"http://sixto4.example.com/", "link-local address (where cloud metadata services live) (embedded in IPv6)"},
		{"http://[::7f00:1]/", "loopback address (embedded in IPv6)"},
		{"http://240.0.0.1/", "reserved address"},
		{"http://metadata.google.internal/computeMetadata/v1/", "is a cloud metadata service"},
		{"http://METADATA/", "is a cloud metadata service"},
		{"http://instance-data/", "is a cloud metadata service"},

		{"http://2130706433/", "looks numeric but is not a canonical IP address"},
		{"http://0x7f000001/", "looks numeric"},
		{"http://0x7f.0.0.1/", "looks numeric"},
		{"http://0177.0.0.1/", "looks numeric"},
		{"http://127.1/", "looks numeric"},
		{"http://127.000.000.001/", "looks numeric"},
		{"http://10.0.0.5.1/", "looks numeric"},
		{"http://foo.123/", "looks numeric"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			err := g.CheckURL(context.Background(), tt.url)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "endpoint_url", models.ErrorField(err))
			require.Contains(t, models.ErrorMessage(err), tt.want)
			// Only a name that does not resolve is unresolved; every other
			// refusal is of the address or the URL.
			require.Equal(t, strings.Contains(tt.want, "could not be resolved"), netguard.Unresolved(err))
		})
	}
}

func TestGuard_CheckURL_ErrorText(t *testing.T) {
	t.Parallel()
	err := newGuard().CheckURL(context.Background(), "http://10.0.0.5/")
	require.EqualError(t, err, `endpoint_url: host "10.0.0.5" resolves to a private address (10.0.0.5); ask an admin to allow-list it with PROCTOR_AGENT_ALLOW_HOSTS`)
}

func TestGuard_Refused(t *testing.T) {
	t.Parallel()
	g := netguard.New(nil, nil)
	for ip, refused := range map[string]bool{
		"8.8.8.8": false, "1.1.1.1": false, "2001:4860:4860::8888": false, "172.32.0.1": false,
		"100.128.0.1": false, "169.255.0.1": false, "::ffff:8.8.8.8": false,
		"127.0.0.1": true, "10.255.255.255": true, "192.168.0.1": true, "169.254.0.1": true,
		"fc00::1": true, "fe80::abcd": true, "::ffff:10.0.0.1": true, "::ffff:169.254.169.254": true,
		"fec0::1": true, "198.18.0.1": true, "192.0.0.8": true,
	} {
		reason := g.Refused(netip.MustParseAddr(ip))
		require.Equal(t, refused, reason != "", "%s: %q", ip, reason)
	}
}

func TestGuard_DNSRebinding(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("internal secret"))
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)

	// The first answer is public, every later one points at the loopback server.
	var lookups atomic.Int32
	g := netguard.New(nil, nil)
	g.LookupIP = func(_ context.Context, host string) ([]net.IP, error) {
		require.Equal(t, "rebind.example.com", host)
		if lookups.Add(1) == 1 {
			return []net.IP{net.ParseIP("93.184.216.34")}, nil
		}
		return []net.IP{net.ParseIP("127.0.0.1")}, nil
	}
	target := "http://rebind.example.com:" + port + "/"
	require.NoError(t, g.CheckURL(context.Background(), target), "the save-time check sees the public address")

	res, err := g.Client(5 * time.Second).Get(target)
	if res != nil {
		res.Body.Close()
	}
	require.Error(t, err, "the connection must be refused once the name points inside")
	require.Equal(t, "endpoint_url", models.ErrorField(err))
	require.Contains(t, models.ErrorMessage(err), `host "rebind.example.com" resolves to a loopback address (127.0.0.1)`)
	require.EqualValues(t, 2, lookups.Load())
}

func TestGuard_ConnectTime(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("hello"))
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)

	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		res, err := netguard.New(nil, nil).Client(5 * time.Second).Get(srv.URL)
		if res != nil {
			res.Body.Close()
		}
		require.Error(t, err)
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "loopback address (127.0.0.1)")
	})
	t.Run("DialContext", func(t *testing.T) {
		t.Parallel()
		_, err := netguard.New(nil, nil).DialContext(context.Background(), "tcp", u.Host)
		require.Error(t, err)
		require.Contains(t, models.ErrorMessage(err), "loopback address")
	})
	t.Run("AllowListed", func(t *testing.T) {
		t.Parallel()
		g := netguard.New([]string{"127.0.0.1"}, nil)
		require.NoError(t, g.CheckURL(context.Background(), srv.URL))
		res, err := g.Client(5 * time.Second).Get(srv.URL)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	})
	t.Run("RedirectInsideRefused", func(t *testing.T) {
		t.Parallel()
		// An allow-listed public-looking front that redirects inside: the
		// redirect's connection is dialled through the guard and refused.
		front := httptest.NewServer(http.RedirectHandler("http://10.0.0.1/", http.StatusFound))
		t.Cleanup(front.Close)
		g := netguard.New([]string{"127.0.0.1"}, nil)
		res, err := g.Client(5 * time.Second).Get(front.URL)
		if res != nil {
			res.Body.Close()
		}
		require.Error(t, err)
		require.Contains(t, models.ErrorMessage(err), "private address (10.0.0.1)")
	})
}
