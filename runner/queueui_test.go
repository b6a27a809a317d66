package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/internal/evaltest"
	"proctor/runner"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestRunner_QueueUI serves the real River UI under a prefix, on every database
// driver: its index page, a script it links to and its JSON API answer.
func TestRunner_QueueUI(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		r, err := runner.New(runner.Config{Evaluators: evaltest.Registry(),
			DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
			Options:     runner.Options{Episodes: 0},
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		h, err := r.QueueUI(ctx, "/admin/queue")
		require.NoError(t, err)
		mux := http.NewServeMux()
		mux.Handle("/admin/queue/", h)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)

		get := func(path, accept string) (*http.Response, string) {
			t.Helper()
			req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			require.NoError(t, err)
			req.Header.Set("Accept", accept)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, res.StatusCode, "GET %s: %s", path, body)
			return res, string(body)
		}

		t.Run("Index", func(t *testing.T) {
			res, body := get("/admin/queue/", "text/html")
			require.Contains(t, res.Header.Get("Content-Type"), "text/html")
			require.Contains(t, body, `"apiUrl":"/admin/queue/api"`)
			script := regexp.MustCompile(`<script type="module" src="(/admin/queue/assets/[^"]+\.js)"`).FindStringSubmatch(body)
			require.NotNil(t, script, "index links no script under the prefix:\n%s", body)
			res, _ = get(script[1], "*/*")
			require.Contains(t, res.Header.Get("Content-Type"), "javascript")
		})
		t.Run("JobsAPI", func(t *testing.T) {
			res, body := get("/admin/queue/api/jobs?state=available", "application/json")
			require.Contains(t, res.Header.Get("Content-Type"), "application/json")
			var out struct {
				Data []json.RawMessage `json:"data"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &out), body)
			require.NotNil(t, out.Data, body)
		})
		t.Run("StatesAPI", func(t *testing.T) {
			_, body := get("/admin/queue/api/states", "application/json")
			require.Contains(t, body, `"available"`)
		})
	})
}
