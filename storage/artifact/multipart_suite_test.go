package artifact

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// minPart is S3's smallest part but the last.
const minPart = 5 << 20

// runMultipartSuite is the Multipart contract every Store driver must meet.
func runMultipartSuite(t *testing.T, newStore func(t *testing.T) Store) {
	payload := make([]byte, 2*minPart+1234)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range payload {
		payload[i] = byte(rng.UintN(256))
	}
	chunk := func(n int) []byte { // part n from 1
		start := (n - 1) * minPart
		return payload[start:min(start+minPart, len(payload))]
	}
	digest := func(b []byte) string {
		sum := md5.Sum(b)
		return hex.EncodeToString(sum[:])
	}
	put := func(t *testing.T, s Store, key, id string, n int, body []byte) Part {
		t.Helper()
		p, err := s.PutPart(t.Context(), key, id, n, bytes.NewReader(body), int64(len(body)))
		require.NoError(t, err)
		require.Equal(t, Part{Number: n, Size: int64(len(body)), MD5: digest(body)}, p)
		return p
	}

	t.Run("OutOfOrderResentAndCompleted", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		key := "submissions/1/bundle"
		id, err := s.BeginMultipart(ctx, key)
		require.NoError(t, err)

		put(t, s, key, id, 3, chunk(3))
		put(t, s, key, id, 1, []byte(strings.Repeat("x", minPart))) // wrong bytes, replaced below
		put(t, s, key, id, 1, chunk(1))
		parts, err := s.ListParts(ctx, key, id)
		require.NoError(t, err)
		require.Equal(t, []Part{
			{Number: 1, Size: minPart, MD5: digest(chunk(1))},
			{Number: 3, Size: int64(len(chunk(3))), MD5: digest(chunk(3))},
		}, parts)

		_, err = s.Stat(ctx, key)
		require.ErrorIs(t, err, ErrNotFound, "parts are invisible until completed")
		all := []Part{{Number: 1, Size: minPart}, {Number: 2, Size: minPart}, {Number: 3, Size: int64(len(chunk(3)))}}
		err = s.CompleteMultipart(ctx, key, id, all)
		require.ErrorContains(t, err, "part 2 was never stored")

		put(t, s, key, id, 2, chunk(2))
		require.NoError(t, s.CompleteMultipart(ctx, key, id, all))
		rc, info, err := s.Get(ctx, key)
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, rc.Close())
		require.NoError(t, err)
		require.Equal(t, int64(len(payload)), info.Size)
		require.True(t, bytes.Equal(payload, got), "the joined object is the parts in order")

		_, err = s.ListParts(ctx, key, id)
		require.ErrorIs(t, err, ErrNotFound, "a completed upload is gone")
		keys, err := s.List(ctx, "")
		require.NoError(t, err)
		require.Len(t, keys, 1, "no staging files are listed")
	})

	// A cancelled completion leaves no artifact, and the parts are still
	// there to complete again (the local store checks between parts).
	t.Run("CancelledCompleteKeepsParts", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		key := "submissions/3/bundle"
		id, err := s.BeginMultipart(ctx, key)
		require.NoError(t, err)
		put(t, s, key, id, 1, chunk(1))
		put(t, s, key, id, 2, chunk(2))
		all := []Part{{Number: 1, Size: minPart}, {Number: 2, Size: minPart}}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, s.CompleteMultipart(cancelled, key, id, all), context.Canceled)
		_, err = s.Stat(ctx, key)
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, s.CompleteMultipart(ctx, key, id, all))
		rc, info, err := s.Get(ctx, key)
		require.NoError(t, err)
		defer rc.Close()
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.Equal(t, int64(2*minPart), info.Size)
		require.Equal(t, payload[:2*minPart], got)
	})

	t.Run("CompleteChecksSizesAndDigests", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		key := "submissions/2/bundle"
		id, err := s.BeginMultipart(ctx, key)
		require.NoError(t, err)
		put(t, s, key, id, 1, chunk(1))
		err = s.CompleteMultipart(ctx, key, id, []Part{{Number: 1, Size: 7}})
		require.ErrorContains(t, err, "part 1 holds 5242880 bytes, not 7")
		err = s.CompleteMultipart(ctx, key, id, []Part{{Number: 1, Size: minPart, MD5: digest([]byte("other"))}})
		require.ErrorContains(t, err, "part 1 has MD5")
		err = s.CompleteMultipart(ctx, key, id, []Part{{Number: 2, Size: minPart}})
		require.ErrorContains(t, err, "numbered 1 to 1")
	})

	t.Run("ShortPartStoresNothing", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		key := "submissions/3/bundle"
		id, err := s.BeginMultipart(ctx, key)
		require.NoError(t, err)
		_, err = s.PutPart(ctx, key, id, 1, strings.NewReader("short"), 10)
		require.Error(t, err)
		parts, err := s.ListParts(ctx, key, id)
		require.NoError(t, err)
		require.Empty(t, parts)
	})

	t.Run("AbortDiscards", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		key := "submissions/4/bundle"
		id, err := s.BeginMultipart(ctx, key)
		require.NoError(t, err)
		put(t, s, key, id, 1, chunk(1))
		require.NoError(t, s.AbortMultipart(ctx, key, id))
		require.NoError(t, s.AbortMultipart(ctx, key, id), "aborting twice is fine")
		_, err = s.ListParts(ctx, key, id)
		require.ErrorIs(t, err, ErrNotFound)
		_, err = s.PutPart(ctx, key, id, 2, bytes.NewReader(chunk(2)), minPart)
		require.Error(t, err)
	})

	t.Run("UploadBelongsToItsKey", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		id, err := s.BeginMultipart(ctx, "submissions/5/bundle")
		require.NoError(t, err)
		_, err = s.ListParts(ctx, "submissions/6/bundle", id)
		require.Error(t, err)
		_, err = s.BeginMultipart(ctx, "../escape")
		require.ErrorIs(t, err, ErrInvalidKey)
		_, err = s.PutPart(ctx, "submissions/5/bundle", id, 0, strings.NewReader(""), 0)
		require.ErrorContains(t, err, "outside 1–10000")
	})

	t.Run("PartURL", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), newStore(t)
		key := "submissions/7/bundle"
		id, err := s.BeginMultipart(ctx, key)
		require.NoError(t, err)
		link, err := s.PartURL(ctx, key, id, 1, minPart, time.Minute)
		if errors.Is(err, ErrNoDirectUpload) {
			return // the local store takes parts through the API only
		}
		require.NoError(t, err)
		putURL := func(body []byte) (int, string, error) {
			t.Helper()
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, link, bytes.NewReader(body))
			require.NoError(t, err)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, "", err
			}
			answer, _ := io.ReadAll(res.Body)
			require.NoError(t, res.Body.Close())
			return res.StatusCode, string(answer), nil
		}

		// The URL was signed for minPart bytes: neither more (the size limit
		// would be passed until the upload completes) nor fewer is stored.
		// The store answers 403, or closes the connection before a large
		// body is sent whole.
		for _, body := range [][]byte{payload[:minPart+1], payload[:2*minPart], chunk(1)[:minPart-1]} {
			status, answer, err := putURL(body)
			if err == nil {
				require.Equal(t, http.StatusForbidden, status, "a PUT of %d bytes to a URL signed for %d: %s", len(body), minPart, answer)
			}
		}
		parts, err := s.ListParts(ctx, key, id)
		require.NoError(t, err)
		require.Empty(t, parts, "a PUT of the wrong size stores nothing")

		status, answer, err := putURL(chunk(1))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, answer)
		parts, err = s.ListParts(ctx, key, id)
		require.NoError(t, err)
		require.Equal(t, []Part{{Number: 1, Size: minPart, MD5: digest(chunk(1))}}, parts)
		require.NoError(t, s.CompleteMultipart(ctx, key, id, parts))
		info, err := s.Stat(ctx, key)
		require.NoError(t, err)
		require.Equal(t, int64(minPart), info.Size)

		_, err = s.PartURL(ctx, key, id, 1, -1, time.Minute)
		require.ErrorContains(t, err, "negative part size")
	})
}
