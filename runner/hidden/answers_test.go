package hidden

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/netguard"
)

func TestAnswers(t *testing.T) {
	t.Parallel()
	client := NewClient(netguard.New([]string{"127.0.0.1"}, nil))
	serve := func(t *testing.T, h http.HandlerFunc) Candidate {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return Candidate{BaseURL: srv.URL + "/sandbox/{visitor}/shop"}
	}

	t.Run("any status is an answer, at the base URL with a fresh visitor", func(t *testing.T) {
		t.Parallel()
		var path atomic.Value
		c := serve(t, func(w http.ResponseWriter, r *http.Request) {
			path.Store(r.URL.Path)
			w.WriteHeader(http.StatusInternalServerError)
		})
		ok, why := Answers(t.Context(), client, c, 5*time.Second)
		require.True(t, ok, why)
		require.Regexp(t, `^/sandbox/v[0-9a-f]{16}/shop$`, path.Load())
	})

	t.Run("a candidate still starting gets another try", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int64
		c := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				// The first answer never completes: the connection drops.
				hj, _ := w.(http.Hijacker)
				conn, _, err := hj.Hijack()
				if err == nil {
					_ = conn.Close()
				}
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		ok, why := Answers(t.Context(), client, c, 10*time.Second)
		require.True(t, ok, why)
		require.Equal(t, int64(2), calls.Load())
	})

	t.Run("an unreachable candidate is asked three times", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		counted, tries := countingClient(netguard.New([]string{"127.0.0.1"}, nil))
		ok, why := Answers(t.Context(), counted, Candidate{BaseURL: "http://" + addr + "/shop"}, 30*time.Second)
		require.False(t, ok)
		require.Equal(t, "unreachable: connection refused", why)
		require.Equal(t, int64(answerTries), tries.Load())
		require.NotContains(t, why, addr, "the reason names no address")
	})

	t.Run("a candidate that never answers is given up on at the limit", func(t *testing.T) {
		t.Parallel()
		c := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		ok, why := Answers(t.Context(), client, c, 500*time.Millisecond)
		require.False(t, ok)
		require.Equal(t, "no answer within 500ms", why)
	})

	t.Run("an address the guard refuses is said so, once", func(t *testing.T) {
		t.Parallel()
		strict, tries := countingClient(netguard.New(nil, nil))
		var calls atomic.Int64
		c := serve(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
		ok, why := Answers(t.Context(), strict, c, 30*time.Second)
		require.False(t, ok)
		require.True(t, strings.HasPrefix(why, "the SSRF guard refused the candidate's address: "), why)
		require.Zero(t, calls.Load(), "nothing reached the candidate")
		require.Equal(t, int64(1), tries.Load(), "no second try: the guard's answer would not change")
	})
}

// countingClient is NewClient's client through guard, counting the
// requests it sends.
func countingClient(guard *netguard.Guard) (*http.Client, *atomic.Int64) {
	c := NewClient(guard)
	var n atomic.Int64
	guarded := c.Transport
	c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n.Add(1)
		return guarded.RoundTrip(r)
	})
	return c, &n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
