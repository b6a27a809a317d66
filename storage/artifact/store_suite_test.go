package artifact

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runStoreSuite is the contract every Store driver must meet. newStore returns
// a fresh, empty store per call; for URL checks its links must be fetchable
// with a plain HTTP GET.
func runStoreSuite(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()

	t.Run("PutGet", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		body := []byte("\x89PNG fake screenshot bytes")
		require.NoError(t, s.Put(ctx, "runs/1/step-1.png", bytes.NewReader(body), int64(len(body)), "image/png"))

		rc, info, err := s.Get(ctx, "runs/1/step-1.png")
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		require.Equal(t, body, got)
		require.Equal(t, "runs/1/step-1.png", info.Key)
		require.Equal(t, int64(len(body)), info.Size)
		require.Equal(t, "image/png", info.ContentType)
		require.WithinDuration(t, time.Now(), info.ModTime, time.Minute)
	})

	t.Run("PutOverwrites", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		putString(t, s, "a.txt", "first", "text/plain")
		putString(t, s, "a.txt", `{"second":true}`, "application/json")
		require.Equal(t, `{"second":true}`, getString(t, s, "a.txt"))
		info, err := s.Stat(ctx, "a.txt")
		require.NoError(t, err)
		require.Equal(t, "application/json", info.ContentType)
	})

	t.Run("PutDefaultContentType", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		putString(t, s, "blob", "x", "")
		info, err := s.Stat(ctx, "blob")
		require.NoError(t, err)
		require.Equal(t, "application/octet-stream", info.ContentType)
	})

	t.Run("PutSizeMismatch", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		// Not seekable, so the S3 client cannot retry the doomed request.
		short := struct{ io.Reader }{strings.NewReader("abc")}
		err := s.Put(ctx, "short", short, 10, "text/plain")
		require.Error(t, err)
		_, err = s.Stat(ctx, "short")
		require.ErrorIs(t, err, ErrNotFound)

		// A longer reader is read only up to size.
		require.NoError(t, s.Put(ctx, "long", strings.NewReader("abcdef"), 3, "text/plain"))
		require.Equal(t, "abc", getString(t, s, "long"))
	})

	t.Run("Stat", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		putString(t, s, "runs/2/trace.har", `{"log":{}}`, "application/json")
		info, err := s.Stat(ctx, "runs/2/trace.har")
		require.NoError(t, err)
		require.Equal(t, Info{Key: "runs/2/trace.har", Size: 10, ContentType: "application/json", ModTime: info.ModTime}, info)
		require.False(t, info.ModTime.IsZero())
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		putString(t, s, "runs/3/file", "x", "text/plain")

		for _, key := range []string{"missing", "runs/3/missing", "runs/3", "runs/3/file/below"} {
			_, _, err := s.Get(ctx, key)
			require.ErrorIs(t, err, ErrNotFound, "Get %q", key)
			_, err = s.Stat(ctx, key)
			require.ErrorIs(t, err, ErrNotFound, "Stat %q", key)
		}
	})

	t.Run("DeleteIdempotent", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		putString(t, s, "runs/4/a", "x", "text/plain")
		putString(t, s, "runs/4/b", "y", "text/plain")

		require.NoError(t, s.Delete(ctx, "runs/4/a"))
		require.NoError(t, s.Delete(ctx, "runs/4/a"))
		require.NoError(t, s.Delete(ctx, "never/existed"))
		_, err := s.Stat(ctx, "runs/4/a")
		require.ErrorIs(t, err, ErrNotFound)
		require.Equal(t, "y", getString(t, s, "runs/4/b"))

		require.NoError(t, s.Delete(ctx, "runs/4/b"))
		list, err := s.List(ctx, "")
		require.NoError(t, err)
		require.Empty(t, list)

		// The key can be used again, also as a prefix of deeper keys.
		putString(t, s, "runs/4/a", "again", "text/plain")
		require.Equal(t, "again", getString(t, s, "runs/4/a"))
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		for _, k := range []string{
			"runs/10/z.png", "runs/10/a.png", "runs/10/sub/deep.har",
			"runs/100/x.png", "runs/1/y.png", "runs/10-x", "other/runs/10/q",
		} {
			putString(t, s, k, k, "text/plain")
		}

		requireKeys(t, s, "runs/10/", "runs/10/a.png", "runs/10/sub/deep.har", "runs/10/z.png")
		requireKeys(t, s, "runs/10", "runs/10-x", "runs/10/a.png", "runs/10/sub/deep.har", "runs/10/z.png", "runs/100/x.png")
		requireKeys(t, s, "runs/10/sub/d", "runs/10/sub/deep.har")
		requireKeys(t, s, "runs/2")
		requireKeys(t, s, "nothing/here/")
		requireKeys(t, s, "",
			"other/runs/10/q", "runs/1/y.png", "runs/10-x", "runs/10/a.png",
			"runs/10/sub/deep.har", "runs/10/z.png", "runs/100/x.png")

		list, err := s.List(ctx, "runs/10/sub/")
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, int64(len("runs/10/sub/deep.har")), list[0].Size)
		require.False(t, list[0].ModTime.IsZero())

		_, err = s.List(ctx, "../")
		require.ErrorIs(t, err, ErrInvalidKey)
		_, err = s.List(ctx, "/runs")
		require.ErrorIs(t, err, ErrInvalidKey)
	})

	t.Run("InvalidKey", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		for _, key := range []string{
			"../x", "/abs", "a//b", "a/./b", `a\b`, "", "a/", "a/..", ".", "a\x00b",
			"tab\there", ".proctor-meta/x", strings.Repeat("k", MaxKeyLen+1),
		} {
			err := s.Put(ctx, key, strings.NewReader("evil"), 4, "text/plain")
			require.ErrorIs(t, err, ErrInvalidKey, "Put %q", key)
			_, _, err = s.Get(ctx, key)
			require.ErrorIs(t, err, ErrInvalidKey, "Get %q", key)
			_, err = s.Stat(ctx, key)
			require.ErrorIs(t, err, ErrInvalidKey, "Stat %q", key)
			require.ErrorIs(t, s.Delete(ctx, key), ErrInvalidKey, "Delete %q", key)
			_, err = s.URL(ctx, key, time.Minute)
			require.ErrorIs(t, err, ErrInvalidKey, "URL %q", key)
		}
		list, err := s.List(ctx, "")
		require.NoError(t, err)
		require.Empty(t, list, "nothing may be written for an invalid key")
	})

	t.Run("LargeStreamingPutUnknownSize", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		const size = 20 << 20
		want := sha256.New()
		_, err := io.Copy(want, newByteSource(size))
		require.NoError(t, err)

		// An io.Reader with no Seek/ReadAt, so drivers must stream it.
		require.NoError(t, s.Put(ctx, "runs/5/bundle.tar", newByteSource(size), -1, "application/x-tar"))

		info, err := s.Stat(ctx, "runs/5/bundle.tar")
		require.NoError(t, err)
		require.Equal(t, int64(size), info.Size)
		rc, _, err := s.Get(ctx, "runs/5/bundle.tar")
		require.NoError(t, err)
		defer rc.Close()
		got := sha256.New()
		n, err := io.Copy(got, rc)
		require.NoError(t, err)
		require.Equal(t, int64(size), n)
		require.Equal(t, want.Sum(nil), got.Sum(nil))
	})

	t.Run("URL", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		body := `<html><body>captured page</body></html>`
		putString(t, s, "runs/6/page 1.html", body, "text/html; charset=utf-8")

		link, err := s.URL(ctx, "runs/6/page 1.html", 10*time.Minute)
		require.NoError(t, err)
		status, hdr, got := httpGet(t, link)
		require.Equal(t, http.StatusOK, status, got)
		require.Equal(t, body, got)
		require.Equal(t, "text/html; charset=utf-8", hdr.Get("Content-Type"))

		status, _, _ = httpGet(t, tamperSignature(t, link))
		require.Equal(t, http.StatusForbidden, status, "tampered signature")

		_, err = s.URL(ctx, "runs/6/page 1.html", 0)
		require.Error(t, err)
	})

	t.Run("Multipart", func(t *testing.T) {
		t.Parallel()
		runMultipartSuite(t, newStore)
	})

	t.Run("Ping", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, newStore(t).Ping(t.Context()))
	})
}

func putString(t *testing.T, s Store, key, body, contentType string) {
	t.Helper()
	require.NoError(t, s.Put(t.Context(), key, strings.NewReader(body), int64(len(body)), contentType))
}

func getString(t *testing.T, s Store, key string) string {
	t.Helper()
	rc, _, err := s.Get(t.Context(), key)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

func requireKeys(t *testing.T, s Store, prefix string, want ...string) {
	t.Helper()
	list, err := s.List(t.Context(), prefix)
	require.NoError(t, err)
	got := make([]string, 0, len(list))
	for _, info := range list {
		got = append(got, info.Key)
	}
	if want == nil {
		want = []string{}
	}
	require.Equal(t, want, got, "List(%q)", prefix)
}

func httpGet(t *testing.T, link string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, link, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

// tamperSignature flips one hex digit of the signature, whichever driver made the link.
func tamperSignature(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	q := u.Query()
	for _, name := range []string{"sig", "X-Amz-Signature"} {
		if sig := q.Get(name); sig != "" {
			flipped := "0"
			if sig[0] == '0' {
				flipped = "1"
			}
			q.Set(name, flipped+sig[1:])
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	t.Fatalf("no signature parameter in %s", link)
	return ""
}

// newByteSource returns n deterministic pseudo-random bytes behind a bare io.Reader.
func newByteSource(n int64) io.Reader {
	return struct{ io.Reader }{io.LimitReader(rand.NewChaCha8([32]byte{'p', 'r', 'o', 'c', 't', 'o', 'r'}), n)}
}
