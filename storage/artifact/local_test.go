package artifact

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type localBundle struct {
	dir    string // the store's directory
	outer  string // a directory around it, for escape checks
	store  *Local
	signer URLSigner
	server *httptest.Server // runs NewLocalHandler; the store's baseURL
}

func setupLocal(t *testing.T) localBundle {
	t.Helper()
	outer := t.TempDir()
	dir := filepath.Join(outer, "store")
	signer := NewURLSigner([]byte("test key: 32 bytes of entropy..."))

	server := httptest.NewUnstartedServer(nil)
	t.Cleanup(server.Close)
	store, err := NewLocal(dir, signer, "http://"+server.Listener.Addr().String()+"/")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	server.Config.Handler = NewLocalHandler(store, signer)
	server.Start()

	return localBundle{dir: dir, outer: outer, store: store, signer: signer, server: server}
}

func TestLocal_Store(t *testing.T) {
	t.Parallel()
	runStoreSuite(t, func(t *testing.T) Store { return setupLocal(t).store })
}

// stridedLocal begins every upload as a strided one of S3-sized parts, so
// the multipart suite runs on the local store's in-place assembly.
type stridedLocal struct{ *Local }

func (s stridedLocal) BeginMultipart(ctx context.Context, key string) (string, error) {
	return s.BeginMultipartStrided(ctx, key, minPart)
}

// TestLocal_StridedMultipart: an upload that says its part size meets the
// multipart contract, completes by linking the file its parts were written
// into (no byte copied), and refuses parts of other sizes.
func TestLocal_StridedMultipart(t *testing.T) {
	t.Parallel()
	runMultipartSuite(t, func(t *testing.T) Store { return stridedLocal{setupLocal(t).store} })

	const stride = 4
	begin := func(t *testing.T) (localBundle, string, string) {
		b := setupLocal(t)
		id, err := b.store.BeginMultipartStrided(t.Context(), "submissions/9/bundle.zip", stride)
		require.NoError(t, err)
		return b, "submissions/9/bundle.zip", id
	}
	putPart := func(t *testing.T, b localBundle, key, id string, n int, body string) Part {
		t.Helper()
		p, err := b.store.PutPart(t.Context(), key, id, n, strings.NewReader(body), int64(len(body)))
		require.NoError(t, err)
		return p
	}

	t.Run("CompleteCopiesNothing", func(t *testing.T) {
		t.Parallel()
		b, key, id := begin(t)
		parts := []Part{putPart(t, b, key, id, 3, "ij"), putPart(t, b, key, id, 1, "abcd"), putPart(t, b, key, id, 2, "efgh")}
		parts[0], parts[1], parts[2] = parts[1], parts[2], parts[0]
		data := filepath.Join(b.dir, uploadsDir, id, uploadData)
		before, err := os.Stat(data)
		require.NoError(t, err)
		require.NoError(t, b.store.CompleteMultipart(t.Context(), key, id, parts))
		after, err := os.Stat(filepath.Join(b.dir, filepath.FromSlash(key)))
		require.NoError(t, err)
		require.True(t, os.SameFile(before, after), "the artifact is the file the parts were written into")
		require.Equal(t, "abcdefghij", getString(t, b.store, key))
		require.NoDirExists(t, filepath.Join(b.dir, uploadsDir, id))
	})

	t.Run("PartSentAgainWins", func(t *testing.T) {
		t.Parallel()
		b, key, id := begin(t)
		putPart(t, b, key, id, 1, "xxxx")
		p1 := putPart(t, b, key, id, 1, "abcd")
		p2 := putPart(t, b, key, id, 2, "ef")
		listed, err := b.store.ListParts(t.Context(), key, id)
		require.NoError(t, err)
		require.Equal(t, []Part{p1, p2}, listed)
		require.NoError(t, b.store.CompleteMultipart(t.Context(), key, id, listed))
		require.Equal(t, "abcdef", getString(t, b.store, key))
	})

	t.Run("PartsOfOtherSizesRefused", func(t *testing.T) {
		t.Parallel()
		b, key, id := begin(t)
		parts := []Part{putPart(t, b, key, id, 1, "abc"), putPart(t, b, key, id, 2, "defg")}
		err := b.store.CompleteMultipart(t.Context(), key, id, parts)
		require.ErrorContains(t, err, "part 1 holds 3 bytes: every part of this upload but the last holds 4")
		_, err = b.store.Stat(t.Context(), key)
		require.ErrorIs(t, err, ErrNotFound)
		parts = []Part{putPart(t, b, key, id, 1, "abcd"), parts[1], putPart(t, b, key, id, 3, "hijkl")}
		err = b.store.CompleteMultipart(t.Context(), key, id, parts)
		require.ErrorContains(t, err, "part 3 holds 5 bytes: every part of this upload but the last holds 4")
		_, err = b.store.BeginMultipartStrided(t.Context(), key, 0)
		require.ErrorContains(t, err, "part size 0 is not positive")
	})
}

func TestLocal_New(t *testing.T) {
	t.Parallel()

	t.Run("NoSignerKey", func(t *testing.T) {
		t.Parallel()
		_, err := NewLocal(t.TempDir(), URLSigner{}, "")
		require.Error(t, err)
	})

	t.Run("PingReportsLowSpace", func(t *testing.T) {
		t.Parallel()
		b := setupLocal(t)
		b.store.SetMinFreeBytes(1 << 62)
		err := b.store.Ping(t.Context())
		require.ErrorIs(t, err, ErrLowSpace)
		require.Contains(t, err.Error(), "bytes free, below the 4611686018427387904 bytes required")
		b.store.SetMinFreeBytes(1)
		require.NoError(t, b.store.Ping(t.Context()))
	})

	t.Run("PingDetectsReplacedDir", func(t *testing.T) {
		t.Parallel()
		b := setupLocal(t)
		require.NoError(t, b.store.Ping(t.Context()))
		require.NoError(t, os.Rename(b.dir, b.dir+".old"))
		require.NoError(t, os.Mkdir(b.dir, 0o750))
		require.Error(t, b.store.Ping(t.Context()))
	})
}

func TestLocal_Layout(t *testing.T) {
	t.Parallel()

	t.Run("InvalidKeyWritesNothingOutside", func(t *testing.T) {
		t.Parallel()
		b := setupLocal(t)
		for _, key := range []string{"../x", "../../x", "/abs", `..\x`, "a/../../x"} {
			require.ErrorIs(t, b.store.Put(t.Context(), key, strings.NewReader("evil"), 4, ""), ErrInvalidKey)
		}
		require.Equal(t, []string{"store"}, dirNames(t, b.outer))
		require.Equal(t, []string{metaDir}, dirNames(t, b.dir))
	})

	t.Run("NoTempFilesOrEmptyDirsLeft", func(t *testing.T) {
		t.Parallel()
		b := setupLocal(t)
		putString(t, b.store, "runs/1/a/b.png", "x", "image/png")
		require.Error(t, b.store.Put(t.Context(), "runs/1/short", strings.NewReader("x"), 5, ""))
		require.Error(t, b.store.Put(t.Context(), "runs/2/x/short", strings.NewReader("x"), 5, ""))
		require.NoError(t, b.store.Delete(t.Context(), "runs/1/a/b.png"))
		require.Equal(t, []string{metaDir}, dirNames(t, b.dir))
		require.Empty(t, dirNames(t, filepath.Join(b.dir, metaDir)))
	})

	t.Run("FilesArePrivate", func(t *testing.T) {
		t.Parallel()
		b := setupLocal(t)
		putString(t, b.store, "runs/1/a/b.png", "x", "image/png")
		seen := 0
		require.NoError(t, filepath.WalkDir(b.dir, func(path string, d os.DirEntry, err error) error {
			require.NoError(t, err)
			info, err := d.Info()
			require.NoError(t, err)
			want := os.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			require.Equal(t, want, info.Mode().Perm(), path)
			seen++
			return nil
		}))
		require.Greater(t, seen, 5, "the store, its metadata folder, the key's folders and file")
	})

	t.Run("MetadataOnlyWhenNotImplied", func(t *testing.T) {
		t.Parallel()
		b := setupLocal(t)
		ctx := t.Context()
		metaFile := func(key string) string { return filepath.Join(b.dir, filepath.FromSlash(metaPath(key))) }
		requireType := func(key, want string) {
			t.Helper()
			info, err := b.store.Stat(ctx, key)
			require.NoError(t, err)
			require.Equal(t, want, info.ContentType, key)
		}

		putString(t, b.store, "runs/1/shot.jpg", "x", "image/jpeg")
		putString(t, b.store, "runs/1/blob", "x", "")
		putString(t, b.store, "runs/1/ax.txt", "x", "text/plain; charset=utf-8")
		require.Empty(t, dirNames(t, filepath.Join(b.dir, metaDir)), "each type is the one the key implies")
		requireType("runs/1/shot.jpg", "image/jpeg")
		requireType("runs/1/blob", "application/octet-stream")
		requireType("runs/1/ax.txt", "text/plain; charset=utf-8")

		putString(t, b.store, "runs/1/shot.jpg", "x", "image/png")
		require.FileExists(t, metaFile("runs/1/shot.jpg"))
		requireType("runs/1/shot.jpg", "image/png")
		putString(t, b.store, "runs/1/shot.jpg", "x", "image/jpeg")
		require.NoFileExists(t, metaFile("runs/1/shot.jpg"), "a replacement of the implied type removes the old metadata")
		requireType("runs/1/shot.jpg", "image/jpeg")

		require.NoError(t, b.store.PutUnsynced(ctx, "runs/2/report.csv", strings.NewReader("a,b"), 3, "text/csv"))
		require.NoError(t, b.store.PutUnsynced(ctx, "runs/2/step.json", strings.NewReader("{}"), 2, "application/json"))
		require.NoError(t, b.store.SyncKeys(ctx, []string{"runs/2/report.csv", "runs/2/step.json"}))
		requireType("runs/2/report.csv", "text/csv")
		requireType("runs/2/step.json", "application/json")
		require.NoFileExists(t, metaFile("runs/2/step.json"))
	})

	t.Run("FileAndDirectoryConflict", func(t *testing.T) {
		t.Parallel()
		b := setupLocal(t)
		putString(t, b.store, "a/b", "x", "")
		require.Error(t, b.store.Put(t.Context(), "a", strings.NewReader("y"), 1, ""))
		require.Error(t, b.store.Put(t.Context(), "a/b/c", strings.NewReader("y"), 1, ""))
		require.NoError(t, b.store.Delete(t.Context(), "a"), "a directory is a missing key")
		require.Equal(t, "x", getString(t, b.store, "a/b"))
	})
}

// A symlink planted in the store must not let anyone read or write outside it.
func TestLocal_Symlink(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := t.Context()
	secret := filepath.Join(b.outer, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("top secret"), 0o600))
	outsideDir := filepath.Join(b.outer, "outside")
	require.NoError(t, os.Mkdir(outsideDir, 0o750))
	require.NoError(t, os.Symlink(secret, filepath.Join(b.dir, "file-link")))
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(b.dir, "rel-link")))
	require.NoError(t, os.Symlink(outsideDir, filepath.Join(b.dir, "dir-link")))
	require.NoError(t, os.Symlink("../outside", filepath.Join(b.dir, "rel-dir-link")))

	for _, key := range []string{"file-link", "rel-link"} {
		_, _, err := b.store.Get(ctx, key)
		require.Error(t, err, "Get %q", key)
		_, err = b.store.Stat(ctx, key)
		require.Error(t, err, "Stat %q", key)

		link, err := b.store.URL(ctx, key, time.Minute)
		require.NoError(t, err)
		status, _, body := httpGet(t, link)
		require.NotEqual(t, http.StatusOK, status)
		require.NotContains(t, body, "top secret")
	}
	for _, key := range []string{"dir-link/x", "rel-dir-link/x", "dir-link/sub/x"} {
		require.Error(t, b.store.Put(ctx, key, strings.NewReader("pwned"), 5, ""), "Put %q", key)
		_, _, err := b.store.Get(ctx, key)
		require.Error(t, err, "Get %q", key)
		require.Error(t, b.store.Delete(ctx, key), "Delete %q", key) // path escapes the root
	}

	// Overwriting a key that is a symlink replaces the link, not its target.
	putString(t, b.store, "file-link", "replaced", "text/plain")
	require.Equal(t, "replaced", getString(t, b.store, "file-link"))

	got, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "top secret", string(got))
	require.Empty(t, dirNames(t, outsideDir))

	// Links are not artifacts.
	requireKeys(t, b.store, "", "file-link")
}

func TestLocal_Handler(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := t.Context()
	putString(t, b.store, "runs/7/shot.png", "PNGDATA", "image/png")

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		link, err := b.store.URL(ctx, "runs/7/shot.png", time.Hour)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(link, b.server.URL+"/artifacts/runs/7/shot.png?"), link)
		status, hdr, body := httpGet(t, link)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "PNGDATA", body)
		require.Equal(t, "image/png", hdr.Get("Content-Type"))
		require.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"))
		require.Equal(t, "sandbox", hdr.Get("Content-Security-Policy"))
		age, ok := strings.CutPrefix(hdr.Get("Cache-Control"), "private, max-age=")
		require.True(t, ok, hdr.Get("Cache-Control"))
		n, err := strconv.Atoi(age)
		require.NoError(t, err)
		require.InDelta(t, 3600, n, 5)
		require.NotEmpty(t, hdr.Get("Last-Modified"))
	})

	t.Run("HEADAndRange", func(t *testing.T) {
		t.Parallel()
		link, err := b.store.URL(ctx, "runs/7/shot.png", time.Hour)
		require.NoError(t, err)
		resp := do(t, http.MethodHead, link, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "7", resp.Header.Get("Content-Length"))

		resp = do(t, http.MethodGet, link, http.Header{"Range": {"bytes=0-2"}})
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	})

	t.Run("Expired", func(t *testing.T) {
		t.Parallel()
		link := signedLink(b, "runs/7/shot.png", time.Now().Add(-time.Second), "")
		status, _, body := httpGet(t, link)
		require.Equal(t, http.StatusForbidden, status)
		require.NotContains(t, body, "PNGDATA")
	})

	t.Run("Forbidden", func(t *testing.T) {
		t.Parallel()
		exp := time.Now().Add(time.Hour)
		good := signedLink(b, "runs/7/shot.png", exp, "")
		u, err := url.Parse(good)
		require.NoError(t, err)

		otherKey := signedLink(b, "runs/7/other.png", exp, "")
		otherKey = strings.Replace(otherKey, "other.png", "shot.png", 1)
		longer := strings.Replace(good, "expires="+strconv.FormatInt(exp.Unix(), 10), "expires="+strconv.FormatInt(exp.Unix()+3600, 10), 1)
		for name, link := range map[string]string{
			"TamperedSig":   tamperSignature(t, good),
			"SigOfOtherKey": otherKey,
			"LaterExpiry":   longer,
			"NoSig":         b.server.URL + u.Path + "?expires=" + u.Query().Get("expires"),
			"NoQuery":       b.server.URL + u.Path,
			"OtherSigner":   signedLink(b, "runs/7/shot.png", exp, "another key"),
		} {
			status, _, body := httpGet(t, link)
			require.Equal(t, http.StatusForbidden, status, name)
			require.NotContains(t, body, "PNGDATA", name)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		link, err := b.store.URL(ctx, "runs/7/missing.png", time.Hour)
		require.NoError(t, err)
		status, _, _ := httpGet(t, link)
		require.Equal(t, http.StatusNotFound, status)

		link, err = b.store.URL(ctx, "runs/7", time.Hour) // a directory
		require.NoError(t, err)
		status, _, _ = httpGet(t, link)
		require.Equal(t, http.StatusNotFound, status)

		status, _, _ = httpGet(t, b.server.URL+"/elsewhere/runs/7/shot.png")
		require.Equal(t, http.StatusNotFound, status)
	})

	t.Run("MethodNotAllowed", func(t *testing.T) {
		t.Parallel()
		link, err := b.store.URL(ctx, "runs/7/shot.png", time.Hour)
		require.NoError(t, err)
		resp := do(t, http.MethodPost, link, nil)
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	})
}

func signedLink(b localBundle, key string, expires time.Time, signerKey string) string {
	signer := b.signer
	if signerKey != "" {
		signer = NewURLSigner([]byte(signerKey))
	}
	q := url.Values{
		"expires": {strconv.FormatInt(expires.Unix(), 10)},
		"sig":     {signer.Sign(key, expires)},
	}
	return b.server.URL + "/artifacts/" + escapeKey(key) + "?" + q.Encode()
}

func do(t *testing.T, method, link string, hdr http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, link, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestLocal_Deferred writes artifacts without waiting for the disk, then
// makes them durable together: each is readable with its content type at
// once, a short body stores nothing, SyncKeys covers files in new folders,
// and invalid keys are refused.
func TestLocal_Deferred(t *testing.T) {
	t.Parallel()
	b := setupLocal(t)
	ctx := t.Context()
	var keys []string
	for i := range 40 {
		key := fmt.Sprintf("submissions/7/files/tasks/t%d/screenshots/%02d.jpg", i%5, i)
		require.NoError(t, b.store.PutUnsynced(ctx, key, strings.NewReader("jpeg "+key), int64(len("jpeg "+key)), "image/jpeg"))
		keys = append(keys, key)
	}
	require.Error(t, b.store.PutUnsynced(ctx, "submissions/7/files/short", strings.NewReader("x"), 5, ""))
	_, err := b.store.Stat(ctx, "submissions/7/files/short")
	require.ErrorIs(t, err, ErrNotFound, "a short body stores nothing")
	require.NoError(t, b.store.SyncKeys(ctx, keys))
	for _, key := range keys {
		rc, info, err := b.store.Get(ctx, key)
		require.NoError(t, err)
		body, err := io.ReadAll(rc)
		require.NoError(t, rc.Close())
		require.NoError(t, err)
		require.Equal(t, "jpeg "+key, string(body))
		require.Equal(t, "image/jpeg", info.ContentType)
	}
	require.ErrorIs(t, b.store.PutUnsynced(ctx, "../x", strings.NewReader("x"), 1, ""), ErrInvalidKey)
	require.ErrorIs(t, b.store.SyncKeys(ctx, []string{"a/../../x"}), ErrInvalidKey)
	require.ErrorIs(t, b.store.SyncKeys(ctx, []string{"never/written"}), ErrNotFound)
}

func TestSyncBatches(t *testing.T) {
	names := []string{"a/1", "b/1", "a/2", ".", "a", "a/3", "a/4", "a/5", "a/6", "a/7", "a/8", "a/9"}
	got := syncBatches(names)
	want := [][]string{
		{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "a/7", "a/8"}, {"a/9"}, // a folder's, at most 8 at a time
		{"b/1"},
		{".", "a"}, // the root's own entries and the root itself
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("syncBatches = %q, want %q", got, want)
	}
}
