package handlers_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// TestLeaderboard_ConditionalGET: a board and each of its exports carry an
// ETag of their content; asked again with it, the answer is 304 with no
// body; once the board changes (a run withdrawn) the tag changes and the
// new board is sent. A refusal carries no tag.
func TestLeaderboard_ConditionalGET(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	anon := f.b.anonymous(t)
	paths := []string{
		"/benchmarks/mini/leaderboard",
		"/benchmarks/mini/leaderboard.json",
		"/benchmarks/mini/leaderboard.csv",
		"/benchmarks/mini/leaderboard/smoke",
		"/api/v1/benchmarks/mini/leaderboard",
	}
	revalidate := func(path, tag string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, anon.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("If-None-Match", tag)
		return anon.do(req)
	}
	tags := map[string]string{}
	for _, path := range paths {
		res := anon.get(path)
		body := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", path, body)
		tag := res.Header.Get("ETag")
		require.Regexp(t, `^"[0-9a-f]{32}"$`, tag, path)
		require.Equal(t, "no-cache", res.Header.Get("Cache-Control"), path)
		again := anon.get(path)
		require.Equal(t, tag, again.Header.Get("ETag"), "%s: the same board, the same tag", path)
		readBody(t, again)

		res = revalidate(path, tag)
		require.Equal(t, http.StatusNotModified, res.StatusCode, path)
		require.Empty(t, readBody(t, res), path)
		res = revalidate(path, `"0123", W/`+tag)
		require.Equal(t, http.StatusNotModified, res.StatusCode, "%s: a list naming the tag, weakly", path)
		readBody(t, res)
		res = revalidate(path, `"stale"`)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.Equal(t, body, readBody(t, res), path)
		tags[path] = tag
	}

	// Withdrawing a run changes the board, so every tag changes.
	require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", f.runs["navigator"].ID).Update("published", false).Error)
	for _, path := range paths {
		res := revalidate(path, tags[path])
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.NotEqual(t, tags[path], res.Header.Get("ETag"), path)
		require.NotContains(t, readBody(t, res), "Navigator", path)
	}

	// A refusal is not tagged.
	res := anon.get("/benchmarks/nope/leaderboard")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Empty(t, res.Header.Get("ETag"))
	readBody(t, res)
}
