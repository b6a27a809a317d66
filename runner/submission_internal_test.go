package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/storage/artifact"
)

// countingSource is a ReaderAt that counts its calls, as each is a request
// to an S3 store.
type countingSource struct {
	data  []byte
	calls atomic.Int64
}

func (c *countingSource) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	if off >= int64(len(c.data)) {
		return 0, io.EOF
	}
	n := copy(p, c.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestBlockReaderAt(t *testing.T) {
	t.Parallel()
	data := make([]byte, 3*blockBytes+12345)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	src := &countingSource{data: data}
	b := newBlockReaderAt(src, int64(len(data)))

	// Small reads in order cost one request per block.
	var got bytes.Buffer
	_, err := io.Copy(&got, io.NewSectionReader(b, 0, int64(len(data))))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got.Bytes()))
	require.Equal(t, int64(4), src.calls.Load())

	// Reads anywhere, across blocks, return the same bytes as the source.
	for range 200 {
		off := rng.Int64N(int64(len(data)))
		p := make([]byte, rng.IntN(2*blockBytes))
		n, err := b.ReadAt(p, off)
		want := min(len(p), len(data)-int(off))
		require.Equal(t, want, n)
		if want < len(p) {
			require.ErrorIs(t, err, io.EOF)
		} else {
			require.NoError(t, err)
		}
		require.True(t, bytes.Equal(data[off:int(off)+n], p[:n]), "offset %d", off)
	}
	n, err := b.ReadAt(make([]byte, 10), int64(len(data)))
	require.Zero(t, n)
	require.ErrorIs(t, err, io.EOF)
	_, err = b.ReadAt(make([]byte, 10), -1)
	require.Error(t, err)

	// A store that holds less than it said is an error, not a short bundle.
	short := newBlockReaderAt(&countingSource{data: data[:100]}, 200)
	_, err = short.ReadAt(make([]byte, 150), 0)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestTaskFileKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ task, path, want string }{
		{"108", "108/network.har", "submissions/7/tasks/108/108/network.har"},
		{"shop-1", "results/shop-1/trajectory/0_full_screenshot.png", "submissions/7/tasks/shop-1/results/shop-1/trajectory/0_full_screenshot.png"},
		{"a/b", "x//y.png", "submissions/7/tasks/a_b/x/y.png"},
		{"..", ".proctor-meta/x.png", "submissions/7/tasks/_../_.proctor-meta/x.png"},
		{"t", "dir\\evil\x01.png", "submissions/7/tasks/t/dir_evil_.png"},
	} {
		got := taskFileKey(7, tc.task, tc.path)
		require.Equal(t, tc.want, got)
		require.NoError(t, artifact.ValidateKey(got))
	}
	long := taskFileKey(7, "t", strings.Repeat("deep/", 200)+"shot.png")
	require.NoError(t, artifact.ValidateKey(long))
	require.True(t, strings.HasPrefix(long, "submissions/7/tasks/t/f-"))
	require.True(t, strings.HasSuffix(long, ".png"))

	// No segment is longer than a file name may be (with the ".json" the
	// local store adds to its metadata's names).
	for _, tc := range []struct{ task, path, prefix, suffix string }{
		{"t", strings.Repeat("a", 300) + "/shot.png", "submissions/7/tasks/t/f-", ".png"},
		{"t", "a/" + strings.Repeat("b", 600), "submissions/7/tasks/t/f-", "-"},
		{"t", "x." + strings.Repeat("e", 300), "submissions/7/tasks/t/f-", "-"},
		{strings.Repeat("é", 600), "s.png", "submissions/7/tasks/t-", ".png"},
	} {
		got := taskFileKey(7, tc.task, tc.path)
		require.NoError(t, artifact.ValidateKey(got))
		require.True(t, strings.HasPrefix(got, tc.prefix), got)
		if tc.suffix == "-" {
			require.Regexp(t, `/f-[0-9a-f]{24}$`, got, "a long extension is none")
		} else {
			require.True(t, strings.HasSuffix(got, tc.suffix), got)
		}
		for seg := range strings.SplitSeq(got, "/") {
			require.LessOrEqual(t, len(seg), 200, got)
		}
	}
	edge := strings.Repeat("c", 200)
	require.Equal(t, "submissions/7/tasks/t/"+edge+"/shot.png", taskFileKey(7, "t", edge+"/shot.png"), "a 200-byte segment is kept")
	require.Equal(t, taskFileKey(7, "t", "x/"+edge+"c"), taskFileKey(7, "t", "x/"+edge+"c"), "the same path, the same key")
	require.NotEqual(t, taskFileKey(7, "t", "x/"+edge+"c"), taskFileKey(7, "t", "y/"+edge+"c"))
}

// plainStore hands out readers that can only be read in order (spool) or
// only at offsets (blocks), as stores other than the local one may.
type plainStore struct {
	artifact.Store
	data     []byte
	readerAt bool
}

type readerAtOnly struct {
	*bytes.Reader
}

func (readerAtOnly) Close() error { return nil }

func (s plainStore) Get(context.Context, string) (io.ReadCloser, artifact.Info, error) {
	info := artifact.Info{Key: "submissions/1/bundle", Size: int64(len(s.data))}
	if s.readerAt {
		return readerAtOnly{bytes.NewReader(s.data)}, info, nil
	}
	return io.NopCloser(bytes.NewReader(s.data)), info, nil
}

func TestOpenBundle(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("bundle bytes "), 100_000)
	want := sha256.Sum256(data)
	for name, readerAt := range map[string]bool{"Spooled": false, "Blocks": true} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			r := &Runner{artifacts: plainStore{data: data, readerAt: readerAt}, opts: Options{Submissions: SubmissionOptions{TempDir: tmp}}}
			var seen int64
			b, sum, err := r.openBundle(t.Context(), "submissions/1/bundle", true, func(done int64) { seen = done })
			require.NoError(t, err)
			require.Equal(t, hex.EncodeToString(want[:]), sum)
			require.Equal(t, int64(len(data)), seen, "progress saw every byte")
			require.Equal(t, int64(len(data)), b.size)
			got := make([]byte, 1000)
			_, err = b.ReadAt(got, 500_000)
			require.NoError(t, err)
			require.Equal(t, data[500_000:501_000], got)
			entries, err := os.ReadDir(tmp)
			require.NoError(t, err)
			if readerAt {
				require.Empty(t, entries, "a reader at offsets is not spooled")
			} else {
				require.Len(t, entries, 1, "a reader in order is spooled to a temporary file")
			}
			require.NoError(t, b.Close())
			entries, err = os.ReadDir(tmp)
			require.NoError(t, err)
			require.Empty(t, entries, "the spool is removed on close")
		})
	}
}
