package handlers_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocs: the documentation pages link to is served as plain text to
// anyone, and nothing but its own Markdown files can be named.
func TestDocs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []*client{b.anonymous(t), b.newUser(t, "reader@example.org", false), b.admin} {
		res := c.get("/docs/bundle-formats.md")
		body := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "text/plain; charset=utf-8", res.Header.Get("Content-Type"))
		require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
		require.Contains(t, body, "# ")
		require.Contains(t, body, "agent_response.json")
	}
	anon := b.anonymous(t)
	for _, path := range []string{"/docs/missing.md", "/docs/docs.go", "/docs/..%2Fgo.mod", "/docs/API.md"} {
		res := anon.get(path)
		readBody(t, res)
		require.Equal(t, http.StatusNotFound, res.StatusCode, path)
	}
}
