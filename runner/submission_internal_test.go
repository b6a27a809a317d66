package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/bundle/bundletest"
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

// byteCounter is a ReaderAt that counts every byte read from it.
type byteCounter struct {
	r    io.ReaderAt
	read atomic.Int64
}

func (c *byteCounter) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read.Add(int64(n))
	return n, err
}

// memStore keeps what InspectStoring hands it.
type memStore map[string][]byte

func (m memStore) put(path, _ string, size int64, content io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(content, size))
	if err != nil {
		return err
	}
	m[path] = b
	return nil
}

// TestHashedBundle_ReadOnce: validating a bundle reads each of its bytes
// once — hashing, inspecting and storing from the same reads — but for the
// zip's directory, read again for the hash: the bytes read stay within a few
// percent of the archive's size, the SHA-256 is the file's, and each stored
// file holds the archive's content.
func TestHashedBundle_ReadOnce(t *testing.T) {
	t.Parallel()
	shot := bundletest.JPEG(640, 360)
	var tasks []bundletest.ProctorTask
	for i := range 4 {
		task := bundletest.ProctorTask{ID: fmt.Sprintf("t%d", i), HAR: true}
		var lines strings.Builder
		for s := range 10 {
			name := fmt.Sprintf("screenshots/%02d.jpg", s)
			task.Extra = append(task.Extra, bundletest.Entry{Name: name, Body: shot, Store: true})
			lines.WriteString(bundletest.ProctorStepLine(s, name) + "\n")
		}
		task.Extra = append(task.Extra, bundletest.Entry{Name: "big.har", Open: bundletest.LargeHAR(1 << 20)})
		task.StepsJSONL = lines.String()
		tasks = append(tasks, task)
	}
	entries := bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""), tasks...)
	for _, kind := range []bundletest.Kind{bundletest.Zip, bundletest.TarGz} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(bundletest.Write(t, t.TempDir()+"/b."+string(kind), kind, entries))
			require.NoError(t, err)
			src := &byteCounter{r: bytes.NewReader(data)}
			h := &hashedBundle{src: src, size: int64(len(data)), h: sha256.New()}
			stored := memStore{}
			bun, err := bundle.InspectStoring(t.Context(), h, h.size, bundle.DefaultLimits(), stored.put, nil)
			require.NoError(t, err)
			sum, err := h.sum(t.Context())
			require.NoError(t, err)
			want := sha256.Sum256(data)
			require.Equal(t, hex.EncodeToString(want[:]), sum)
			size := int64(len(data))
			require.LessOrEqual(t, src.read.Load(), size+size/20, "each byte is read about once (%d bytes read of %d)", src.read.Load(), size)
			require.LessOrEqual(t, h.again, size/20, "read again for the hash alone")
			require.Len(t, bun.Files(), 4*11, "every screenshot and HAR is kept")
			for _, f := range bun.Files() {
				require.Contains(t, stored, f.Path)
				require.Equal(t, f.Size, int64(len(stored[f.Path])), f.Path)
			}
			require.Equal(t, shot, stored["tasks/t1/screenshots/03.jpg"])
		})
	}
}
