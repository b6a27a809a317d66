package handlers_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/internal/evaltest"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// secondServer is another server process over db: its own handlers and
// kept boards. Clients of the first reach it with on.
func secondServer(t *testing.T, db *storage.DB) *httptest.Server {
	t.Helper()
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0),
		Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Candidates: servicetest.Candidates(db, nil), Accounts: servicetest.Accounts(db),
		Moderation: servicetest.Moderation(db), Submissions: servicetest.Submissions(db), Studies: servicetest.Studies(db, nil),
		Store: db, Static: static.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// on is the client talking to another server (sessions live in the shared
// database; cookies for 127.0.0.1 go to every port), with the first
// server's Host so that both render the same absolute links.
func (c *client) on(srv *httptest.Server) *client {
	o := *c
	o.base, o.app = srv.URL, nil
	return &o
}

// getAs asks for path with the Host of host's server and If-None-Match tag
// ("" for none).
func (c *client) getAs(host, path, tag string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	u, err := url.Parse(host)
	require.NoError(c.t, err)
	req.Host = u.Host
	if tag != "" {
		req.Header.Set("If-None-Match", tag)
	}
	return c.do(req)
}

// TestLeaderboard_KeptAcrossServers: two server processes over one
// database each keep their rendered boards; a change made through one (a
// run withdrawn, hidden, shown again) reaches the other's next answer with a
// new tag, never its kept board; both agree on the tags of the same board.
// On PostgreSQL the processes have their own connections; on SQLite they
// share the database file's handle.
func TestLeaderboard_KeptAcrossServers(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			opts := runsOptions{}
			second := (*storage.DB)(nil)
			if d == "postgres" {
				opts.db, second = storagetest.OpenPostgresPair(t)
			}
			f := newBoardFixtureOn(t, opts)
			if second == nil {
				second = f.b.db
			}
			b := secondServer(t, second)
			host := f.b.srv.URL
			anonA := f.b.anonymous(t)
			anonB := anonA.on(b)
			paths := []string{
				"/benchmarks/mini/leaderboard",
				"/benchmarks/mini/leaderboard.json",
				"/benchmarks/mini/leaderboard.csv",
				"/benchmarks/mini/leaderboard/smoke",
				"/api/v1/benchmarks/mini/leaderboard?sort=cost_per_task",
			}
			// Each server renders and keeps every board; asked again, each
			// answers from what it keeps, with the same tag as the other.
			tags := map[string]string{}
			for _, p := range paths {
				resA := anonA.getAs(host, p, "")
				bodyA := readBody(t, resA)
				require.Equal(t, http.StatusOK, resA.StatusCode, "%s: %s", p, bodyA)
				require.Contains(t, bodyA, "Navigator", p)
				resB := anonB.getAs(host, p, "")
				bodyB := readBody(t, resB)
				require.Equal(t, http.StatusOK, resB.StatusCode, p)
				tags[p] = resA.Header.Get("ETag")
				require.Equal(t, tags[p], resB.Header.Get("ETag"), "%s: both processes tag the board alike", p)
				require.Equal(t, bodyA, bodyB, p)
				again := anonA.getAs(host, p, tags[p])
				require.Equal(t, http.StatusNotModified, again.StatusCode, p)
				readBody(t, again)
			}

			// The member withdraws Navigator's run through B: A's kept
			// boards are not served.
			member := f.member.on(b)
			res := member.postForm("/runs/"+strconv.FormatInt(f.runs["navigator"].ID, 10)+"/withdraw", url.Values{})
			require.Less(t, res.StatusCode, http.StatusBadRequest, readBody(t, res))
			changed := func(what string) {
				t.Helper()
				for _, p := range paths {
					res := anonA.getAs(host, p, tags[p])
					body := readBody(t, res)
					require.Equal(t, http.StatusOK, res.StatusCode, "%s after %s", p, what)
					require.NotEqual(t, tags[p], res.Header.Get("ETag"), "%s after %s: a new tag", p, what)
					tags[p] = res.Header.Get("ETag")
					if what == "withdrawal" {
						require.NotContains(t, body, "Navigator", p)
					} else {
						require.Contains(t, body, "Navigator", p)
					}
				}
			}
			changed("withdrawal")

			// Published again through A, hidden through B, shown again through A:
			// each time A serves the board anew.
			res = f.member.postForm("/runs/"+strconv.FormatInt(f.runs["navigator"].ID, 10)+"/publish", url.Values{})
			require.Less(t, res.StatusCode, http.StatusBadRequest, readBody(t, res))
			changed("publication")
			res = f.b.admin.on(b).postForm("/runs/"+strconv.FormatInt(f.runs["scout"].ID, 10)+"/hide", url.Values{"reason": {"duplicate"}})
			require.Less(t, res.StatusCode, http.StatusBadRequest, readBody(t, res))
			for _, p := range paths {
				res := anonA.getAs(host, p, tags[p])
				require.Equal(t, http.StatusOK, res.StatusCode, p)
				require.NotContains(t, readBody(t, res), "Scout", "%s: the hidden run has left A's board", p)
				tags[p] = res.Header.Get("ETag")
			}
			// A re-score's new figures, written by the metrics job of
			// whichever process: the entries' rows move the version.
			require.NoError(t, second.Gorm().Exec("UPDATE leaderboard_entries SET successes = 7 WHERE run_id = ?", f.runs["navigator"].ID).Error)
			for _, p := range paths[:1] {
				res := anonA.getAs(host, p, tags[p])
				require.Equal(t, http.StatusOK, res.StatusCode, p)
				readBody(t, res)
			}
		})
	}
}

// TestLeaderboard_KeptBoardsAuthz: what a server keeps of a board holds
// nothing of the visitor who had it rendered. An administrator's rendering
// of an unpublished benchmark's board is never served to anyone else (404,
// also from the exports); on a published board, each visitor gets their own
// layout, CSRF token and name around the kept board, and a tag of their own,
// so the administrator's tag is no 304 for an anonymous visitor.
func TestLeaderboard_KeptBoardsAuthz(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	admin, anon := f.b.admin, f.b.anonymous(t)
	paths := []string{
		"/benchmarks/mini/leaderboard",
		"/benchmarks/mini/leaderboard.json",
		"/benchmarks/mini/leaderboard.csv",
		"/benchmarks/mini/leaderboard/smoke",
		"/api/v1/benchmarks/mini/leaderboard",
	}
	host := f.b.srv.URL

	// Published: the same board, each visitor's own page around it.
	res := admin.get(paths[0])
	adminPage := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	adminTag := res.Header.Get("ETag")
	adminToken := admin.csrf()
	require.Contains(t, adminPage, adminToken)
	require.Contains(t, adminPage, `href="/admin"`)
	res = anon.get(paths[0])
	anonPage := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotEqual(t, adminTag, res.Header.Get("ETag"), "a visitor's page has a tag of its own")
	require.NotContains(t, anonPage, adminToken, "the admin's CSRF token stays theirs")
	require.NotContains(t, anonPage, `href="/admin"`)
	require.NotContains(t, anonPage, `data-testid="nav-account"`)
	require.Contains(t, anonPage, anon.csrf())
	res = anon.getAs(host, paths[0], adminTag)
	require.Equal(t, http.StatusOK, res.StatusCode, "the admin's tag is no 304 for a visitor")
	readBody(t, res)
	member := f.member
	res = member.get(paths[0])
	memberPage := readBody(t, res)
	require.Contains(t, memberPage, `data-testid="nav-account"`)
	require.NotContains(t, memberPage, `href="/admin"`)
	// The board itself is the same for all three.
	board := func(page string) string {
		start := strings.Index(page, `<div class="leaderboard">`)
		end := strings.Index(page, `<footer`)
		require.True(t, start > 0 && end > start)
		return page[start:end]
	}
	require.Equal(t, board(adminPage), board(anonPage))
	require.Equal(t, board(adminPage), board(memberPage))

	// Unpublished: administrators' renderings are theirs alone.
	require.NoError(t, servicetest.Benchmarks(f.b.db).SetPublished(actorCtx(admin), "mini", false))
	for _, p := range paths {
		res := admin.get(p)
		body := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", p, body)
		require.Contains(t, body, "Navigator", p)
		tag := res.Header.Get("ETag")
		for _, c := range []*client{anon, member} {
			res := c.get(p)
			body := readBody(t, res)
			require.Equal(t, http.StatusNotFound, res.StatusCode, "%s for %s: %s", p, c.role(), body)
			require.NotContains(t, body, "Navigator", p)
			require.Empty(t, res.Header.Get("ETag"), p)
			res = c.getAs(host, p, tag)
			require.Equal(t, http.StatusNotFound, res.StatusCode, "%s for %s with the admin's tag", p, c.role())
			readBody(t, res)
		}
	}
}
