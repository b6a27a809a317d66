package judge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// redirectTarget is where a redirecting endpoint points: it counts the
// requests it gets and the Authorization headers they carry.
type redirectTarget struct {
	*httptest.Server
	mu    sync.Mutex
	hits  int
	auths []string
}

func newRedirectTarget(t *testing.T) *redirectTarget {
	t.Helper()
	target := &redirectTarget{}
	target.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target.mu.Lock()
		target.hits++
		if a := r.Header.Get("Authorization"); a != "" {
			target.auths = append(target.auths, a)
		}
		target.mu.Unlock()
		writeCompletion(w, `{"success": true, "score": 5, "rationale": "redirected"}`)
	}))
	t.Cleanup(target.Close)
	return target
}

func (r *redirectTarget) seen() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits, append([]string(nil), r.auths...)
}

func TestClient_RedirectsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		client func(f *fakeEndpoint) *http.Client
	}{
		{"default client 307", http.StatusTemporaryRedirect, func(*fakeEndpoint) *http.Client { return nil }},
		{"default client 302", http.StatusFound, func(*fakeEndpoint) *http.Client { return nil }},
		{"given client 308", http.StatusPermanentRedirect, func(f *fakeEndpoint) *http.Client { return f.Client() }},
		{"given client following redirects 301", http.StatusMovedPermanently, func(f *fakeEndpoint) *http.Client {
			return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			target := newRedirectTarget(t)
			location := target.URL + "/v1/chat/completions"
			f := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				http.Redirect(w, r, location, tc.status)
			})
			given := tc.client(f)
			var givenPolicy func(*http.Request, []*http.Request) error
			if given != nil {
				givenPolicy = given.CheckRedirect
			}
			c, sleeps := newTestClient(t, f, func(cfg *Config) { cfg.HTTPClient = given })

			res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
			require.NoError(t, err)
			require.Equal(t, models.OutcomeError, res.Verdict)
			d := judgeDetails(t, res)
			require.Equal(t, KindUnavailable, d.ErrorKind)
			require.Contains(t, errorMsg(d), "the judge endpoint redirected to "+location)
			require.Contains(t, errorMsg(d), "redirects are not followed")
			require.Empty(t, d.Rationale)
			require.Equal(t, 1, d.Attempts, "a redirect is not retried")
			require.Empty(t, sleeps.all())

			ok, _, err := c.FuzzyMatch(context.Background(), "How long?", "2 hours", "two hours")
			require.False(t, ok)
			var jerr *Error
			require.True(t, errors.As(err, &jerr), "%v", err)
			require.Equal(t, KindUnavailable, jerr.Kind)

			require.Len(t, f.seen(), 2)
			require.Equal(t, "Bearer sk-test-key", f.seen()[0].auth, "the endpoint itself gets the key")
			hits, auths := target.seen()
			require.Zero(t, hits, "the redirect target is never requested")
			require.Empty(t, auths, "the key goes nowhere else")
			if given != nil {
				require.Equal(t, givenPolicy == nil, given.CheckRedirect == nil, "the caller's client is left as it was")
			}
		})
	}

	t.Run("NoLocation", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusMultipleChoices) })
		c, _ := newTestClient(t, f, nil)
		res, err := c.Trajectory().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		d := judgeDetails(t, res)
		require.Equal(t, KindUnavailable, d.ErrorKind)
		require.Contains(t, errorMsg(d), "the judge endpoint answered HTTP 300, a redirect without a location; redirects are not followed")
	})
}
