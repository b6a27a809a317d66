package episode

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAllowlist(t *testing.T) {
	t.Parallel()
	a, err := newAllowlist([]string{"http://127.0.0.1:8080/sandbox/a42t1/", "https://Shop.Example.org", "http://forum.test:80"})
	require.NoError(t, err)
	for raw, want := range map[string]bool{
		"http://127.0.0.1:8080/sandbox/a42t1/shop/cart?x=1": true,
		"http://127.0.0.1:8080/sandbox/a42t1":               true,
		"http://127.0.0.1:8080/sandbox/a42t1/":              true,
		"ws://127.0.0.1:8080/sandbox/a42t1/live":            true,
		"http://127.0.0.1:8080/sandbox/a42t10/shop":         false, // another namespace sharing the prefix
		"http://127.0.0.1:8080/sandbox/a43t1/shop":          false,
		"http://127.0.0.1:8080/sandbox/a42t1/../a43t1/shop": false,
		"http://127.0.0.1:8080/sandbox/a42t1/%2e%2e/a43t1":  false,
		"http://127.0.0.1:8080/":                            false,
		"http://127.0.0.1:8081/sandbox/a42t1/":              false,
		"https://127.0.0.1:8080/sandbox/a42t1/":             false,
		"https://shop.example.org/any/path":                 true,
		"https://shop.example.org:443/":                     true,
		"http://shop.example.org/":                          false,
		"https://user@shop.example.org/":                    false,
		"http://forum.test/t/1":                             true,
		"http://evil.test/":                                 false,
		"data:image/png;base64,AAAA":                        true,
		"blob:http://127.0.0.1:8080/uuid":                   true,
		"about:blank":                                       true,
		"javascript:alert(1)":                               false,
		"file:///etc/passwd":                                false,
		"chrome://settings":                                 false,
		"::not a url":                                       false,
	} {
		require.Equal(t, want, a.allows(raw), raw)
	}

	for _, bad := range []string{"127.0.0.1:8080", "ftp://host", "http://", "not a url"} {
		_, err := newAllowlist([]string{bad})
		require.Error(t, err, bad)
	}
}

func TestBlockedLog(t *testing.T) {
	t.Parallel()
	var l blockedLog
	for i := range 80 {
		l.add("http://x.test/"+string(rune('a'+i%60)), i == 3)
	}
	l.add("http://x.test/a", false)
	urls := l.take()
	require.Len(t, urls, maxBlocked)
	require.Equal(t, "http://x.test/a", urls[0])
	require.Equal(t, []string{"http://x.test/d"}, l.takeNavigations())
	require.Empty(t, l.take())
	require.Empty(t, l.takeNavigations())
}
