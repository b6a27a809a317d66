package apiclient

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/api"
	"proctor/models"
)

// testBundle is a client of an httptest server whose handler a test sets.
type testBundle struct {
	client *Client
	server *httptest.Server
}

func setup(t *testing.T, h http.HandlerFunc) testBundle {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL+"/", "prt_secret")
	require.NoError(t, err)
	c.Backoff = time.Millisecond
	return testBundle{client: c, server: srv}
}

// hangUp drops the connection without an answer, as a lost network would.
func hangUp(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	require.NoError(t, err)
	conn.Close()
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want string
	}{
		{"http://proctor.example.org", ""},
		{"https://proctor.example.org/base/", ""},
		{"proctor.example.org", "must be absolute"},
		{"ftp://proctor.example.org", "must be absolute"},
		{"http://", "must be absolute"},
		{"http://[::1", "server URL"},
	} {
		c, err := New(tc.url, "t")
		if tc.want == "" {
			require.NoError(t, err, tc.url)
			require.False(t, strings.HasSuffix(c.BaseURL(), "/"), "the base has no trailing slash")
			continue
		}
		require.ErrorContains(t, err, tc.want, tc.url)
	}
	c, err := New("https://proctor.example.org/base/", "t")
	require.NoError(t, err)
	require.Equal(t, "https://proctor.example.org/base/runs/3", c.URL("/runs/3"))
	require.Equal(t, "https://s3.example.org/x", c.URL("https://s3.example.org/x"), "absolute URLs are kept")
}

func TestClient_Errors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		status      int
		header      map[string]string
		body        string
		code, field string
		message     string
	}{
		{"APIShape", 400, nil, `{"error":{"code":"invalid","field":"benchmark","message":"benchmark \"nope\" not found"}}`,
			models.EINVALID, "benchmark", `benchmark "nope" not found`},
		{"NotFound", 404, nil, `{"error":{"code":"not_found","message":"Run 9 not found."}}`, models.ENOTFOUND, "", "Run 9 not found."},
		{"Unauthorized", 401, nil, `{"error":{"code":"unauthorized","message":"You must be signed in."}}`, models.EUNAUTHORIZED, "", "You must be signed in."},
		{"RateLimited", 429, map[string]string{"Retry-After": "60"}, `{"error":{"code":"rate_limited","message":"Too many submissions today."}}`,
			models.ERATELIMIT, "", "Too many submissions today. (try again in 1m0s)"},
		{"StorageXML", 403, nil, `<?xml version="1.0"?><Error><Code>SignatureDoesNotMatch</Code><Message>The signature does not match.</Message></Error>`,
			models.EFORBIDDEN, "", "storage answered 403 SignatureDoesNotMatch: The signature does not match."},
		{"PlainText", 413, nil, "body too big\nmore", models.ETOOLARGE, "", "the server answered 413 Request Entity Too Large: body too big"},
		{"Problems", 400, nil, `{"error":{"code":"invalid","field":"candidates[1].task_id","message":"task \"s3\" is not in subset \"pair\"",` +
			`"problems":[{"field":"candidates[1].task_id","message":"task \"s3\" is not in subset \"pair\""},{"field":"candidates[0].cost_usd","message":"the cost must be a number, zero or more"}]}}`,
			models.EINVALID, "candidates[1].task_id", `task "s3" is not in subset "pair"`},
		{"HTMLPage", 500, map[string]string{"X-Request-Id": "req-7"}, "<html><body>oops</body></html>", models.EINTERNAL, "", "the server answered 500 Internal Server Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			_, err := b.client.Run(context.Background(), 9)
			var apiErr *Error
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, tc.status, apiErr.Status)
			require.Equal(t, tc.code, apiErr.Code)
			require.Equal(t, tc.field, apiErr.Field)
			require.Equal(t, tc.message, apiErr.Message)
			require.Equal(t, tc.code, models.ErrorCode(err), "the error reads as a models.Error")
			require.Equal(t, tc.field, models.ErrorField(err))
			require.False(t, IsConnectionError(err))
			if tc.name == "Problems" {
				require.Equal(t, "run 9: 2 problems:\n  candidates[1].task_id: task \"s3\" is not in subset \"pair\"\n  candidates[0].cost_usd: the cost must be a number, zero or more", err.Error())
			}
			if tc.code == models.EINTERNAL {
				require.Contains(t, err.Error(), "request id req-7", "internal errors carry the request id to report")
			}
		})
	}
}

func TestClient_BearerToken(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/storage/part" {
			w.Header().Set("ETag", `"`+r.Header.Get("X-Want-ETag")+`"`)
			return
		}
		io.WriteString(w, `{"id":4,"status":"completed","finished":true}`)
	})
	ctx := context.Background()
	run, err := b.client.Run(ctx, 4)
	require.NoError(t, err)
	require.True(t, run.Successful())
	part := io.NewSectionReader(strings.NewReader("bytes"), 0, 5)
	require.NoError(t, b.client.PutPresigned(ctx, 1, &api.PresignedPart{URL: b.server.URL + "/storage/part?X-Amz-Signature=abc"}, part, nil, nil))
	require.Equal(t, []string{"/api/v1/runs/4 Bearer prt_secret", "/storage/part "}, got,
		"the token goes to the API, never to a presigned storage URL")
}

func TestClient_Retries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("IdempotentCallRetried", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			switch calls.Add(1) {
			case 1:
				hangUp(t, w)
			case 2:
				w.WriteHeader(http.StatusBadGateway)
			default:
				io.WriteString(w, `{"id":5,"status":"running"}`)
			}
		})
		run, err := b.client.Run(ctx, 5)
		require.NoError(t, err)
		require.Equal(t, "running", run.Status)
		require.EqualValues(t, 3, calls.Load(), "a lost connection and a gateway failure are retried")
	})
	t.Run("GivesUp", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			hangUp(t, w)
		})
		b.client.Retries = 2
		_, err := b.client.Run(ctx, 5)
		require.True(t, IsConnectionError(err), "%v", err)
		var ce *ConnectionError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 3, ce.Tries)
		require.Contains(t, err.Error(), "tried 3 times")
		require.EqualValues(t, 3, calls.Load())
	})
	t.Run("PostNotRetried", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			hangUp(t, w)
		})
		_, err := b.client.CompleteSubmission(ctx, 3)
		require.True(t, IsConnectionError(err), "%v", err)
		require.EqualValues(t, 1, calls.Load(), "the server may have acted on a POST")
	})
	t.Run("ErrorAnswersNotRetried", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":"unavailable","message":"The database is down."}}`)
		})
		_, err := b.client.Run(ctx, 5)
		require.Equal(t, models.EUNAVAILABLE, models.ErrorCode(err))
		require.EqualValues(t, 1, calls.Load())
	})
	t.Run("Canceled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(ctx)
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			cancel()
			<-r.Context().Done()
		})
		_, err := b.client.Run(ctx, 5)
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, IsConnectionError(err), "an interruption is not a connection error")
	})
}

func TestClient_PutPart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := bytes.Repeat([]byte("0123456789"), 1000)
	sum := md5.Sum(file[2000:5000])
	var tries atomic.Int32
	var received []byte
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, http.MethodPut, r.Method)
		require.Equal(t, "/api/v1/submissions/7/parts/2", r.URL.Path)
		require.EqualValues(t, 3000, r.ContentLength)
		require.Equal(t, base64.StdEncoding.EncodeToString(sum[:]), r.Header.Get("Content-MD5"))
		if tries.Add(1) == 1 {
			_, _ = io.CopyN(io.Discard, r.Body, 1000) // half a part, then the line drops
			hangUp(t, w)
			return
		}
		var err error
		received, err = io.ReadAll(r.Body)
		require.NoError(t, err)
		got := md5.Sum(received)
		json.NewEncoder(w).Encode(models.SubmissionPart{Number: 2, Size: int64(len(received)), MD5: hex.EncodeToString(got[:])})
	})
	var progress []int64
	part, err := b.client.PutPart(ctx, 7, 2, io.NewSectionReader(bytes.NewReader(file), 2000, 3000), sum[:], func(n int64) {
		if n == 0 || n == 3000 {
			progress = append(progress, n)
		}
	})
	require.NoError(t, err)
	require.EqualValues(t, 2, tries.Load())
	require.Equal(t, file[2000:5000], received, "the retry sends the whole part again")
	require.Equal(t, hex.EncodeToString(sum[:]), part.MD5)
	require.Equal(t, int64(0), progress[len(progress)-2], "progress restarts with the retry")
	require.Equal(t, int64(3000), progress[len(progress)-1])

	t.Run("MismatchedMD5", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			io.WriteString(w, `{"number":1,"size":3,"md5":"00000000000000000000000000000000"}`)
		})
		sum := md5.Sum([]byte("abc"))
		_, err := b.client.PutPart(ctx, 7, 1, io.NewSectionReader(strings.NewReader("abc"), 0, 3), sum[:], nil)
		require.ErrorContains(t, err, "the server stored MD5 00000000000000000000000000000000")
	})
}

func TestClient_CreateSubmission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/api/v1/submissions", r.URL.Path)
		var req models.SubmissionRequest
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		switch req.Benchmark {
		case "dup":
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error":{"code":"conflict","message":"This bundle was already submitted as run 4 on 2026-01-02."}}`)
		case "resume":
			json.NewEncoder(w).Encode(map[string]any{"resumed": true, "submission": models.SubmissionView{
				Submission: models.Submission{ID: 3, Status: models.SubmissionUploading, Size: 10, PartSize: 4},
				Parts:      []models.SubmissionPart{{Number: 1, Size: 4, MD5: "x"}}}})
		default:
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"resumed": false, "submission": models.SubmissionView{
				Submission: models.Submission{ID: 2, Status: models.SubmissionUploading, Size: 10, PartSize: 4}}})
		}
	})
	sub, resumed, err := b.client.CreateSubmission(ctx, models.SubmissionRequest{Benchmark: "new"})
	require.NoError(t, err)
	require.False(t, resumed)
	require.Equal(t, 3, sub.PartsTotal())
	require.EqualValues(t, 2, sub.PartLength(3))
	require.EqualValues(t, 8, sub.PartOffset(3))

	sub, resumed, err = b.client.CreateSubmission(ctx, models.SubmissionRequest{Benchmark: "resume"})
	require.NoError(t, err)
	require.True(t, resumed)
	require.Len(t, sub.Parts, 1)

	_, _, err = b.client.CreateSubmission(ctx, models.SubmissionRequest{Benchmark: "dup"})
	require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
	require.Equal(t, "This bundle was already submitted as run 4 on 2026-01-02.", models.ErrorMessage(err))
	require.False(t, errors.Is(err, context.Canceled))
}

func TestClient_SubmissionCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var calls []string
	var mu sync.Mutex
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case strings.HasSuffix(r.URL.Path, "/url"):
			io.WriteString(w, `{"url":"https://s3.example.org/b/k?X-Amz-Signature=s","method":"PUT","expires_at":"2026-01-02T03:04:05Z"}`)
		case strings.HasSuffix(r.URL.Path, "/ingest"):
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error":{"code":"conflict","message":"Submission 5 is refused: it cannot be ingested."}}`)
		default:
			w.WriteHeader(http.StatusAccepted)
			json.NewEncoder(w).Encode(models.SubmissionView{Submission: models.Submission{ID: 5, Status: models.SubmissionUploaded}})
		}
	})
	sub, err := b.client.CompleteSubmission(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, models.SubmissionUploaded, sub.Status)
	u, err := b.client.PartURL(ctx, 5, 2)
	require.NoError(t, err)
	require.Equal(t, "PUT", u.Method)
	require.Equal(t, 2026, u.ExpiresAt.Year())
	_, err = b.client.IngestSubmission(ctx, 5)
	require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
	require.NoError(t, b.client.DiscardSubmission(ctx, 5))
	require.Equal(t, []string{
		"POST /api/v1/submissions/5/complete", "GET /api/v1/submissions/5/parts/2/url",
		"POST /api/v1/submissions/5/ingest", "DELETE /api/v1/submissions/5",
	}, calls)
}
