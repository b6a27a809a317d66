package handlers_test

import (
	"io"
	"mime/multipart"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// countingReader yields n bytes of a multipart body lazily and counts how many
// the server pulled, so a test can tell whether a refused upload was read.
type countingReader struct {
	r    io.Reader
	read atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// streamUpload sends a multipart upload of size bytes with the given method.
func streamUpload(t *testing.T, c *client, method, path string, size int64) (*http.Response, int64) {
	t.Helper()
	pr, pw := io.Pipe()
	w := multipart.NewWriter(pw)
	go func() {
		part, _ := w.CreateFormFile("dataset", "big.jsonl")
		_, err := io.CopyN(part, zeros{}, size)
		if err == nil {
			err = w.Close()
		}
		pw.CloseWithError(err)
	}()
	body := &countingReader{r: pr}
	req, err := http.NewRequest(method, c.base+path, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	res := c.do(req)
	pr.CloseWithError(io.ErrClosedPipe)
	return res, body.read.Load()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestUploads_RefusedBeforeReading: an upload from anyone but an administrator is
// refused before its body is read, whatever the method.
func TestUploads_RefusedBeforeReading(t *testing.T) {
	t.Parallel()
	b := setup(t)
	user := b.newUser(t, "uploader@example.org", false)
	const size = 64 << 20
	for _, tc := range []struct {
		name   string
		c      *client
		method string
		path   string
		want   int
	}{
		{"AnonymousPost", b.anonymous(t), http.MethodPost, "/admin/benchmarks/import", http.StatusUnauthorized},
		{"UserPost", user, http.MethodPost, "/admin/benchmarks/import", http.StatusForbidden},
		{"UserAPIPost", user, http.MethodPost, "/api/v1/benchmarks/import", http.StatusForbidden},
		{"AnonymousPut", b.anonymous(t), http.MethodPut, "/admin/benchmarks/import", http.StatusForbidden},     // no CSRF token in the first 2 MB
		{"AnonymousPatch", b.anonymous(t), http.MethodPatch, "/api/v1/benchmarks/import", http.StatusNotFound}, // no such method
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.t = t
			res, read := streamUpload(t, tc.c, tc.method, tc.path, size)
			require.Equal(t, tc.want, res.StatusCode)
			require.Less(t, read, int64(8<<20), "the server read %d bytes of a refused %d-byte upload", read, size)
		})
	}
}
