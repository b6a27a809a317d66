package har

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// synthHAR is a HAR of n entries, each with a response body of body bytes
// of page text, generated as it is read so that the document itself takes
// no memory.
type synthHAR struct {
	n, body  int
	next     int    // the next entry to start
	pending  []byte // what is left of the current piece
	bodyLeft int    // body bytes still to give of the current entry
	suffix   bool   // the current entry's suffix is still to give
	done     bool
}

// synthChunk is the page text bodies are made of: ASCII with no escapes, so
// that a body may end anywhere in it.
var synthChunk = []byte(strings.Repeat("<p>USB-C cable, 2 m, 4.99 EUR</p>", 2000))

func newSynthHAR(n, body int) *synthHAR {
	return &synthHAR{n: n, body: body, pending: []byte(`{"log":{"version":"1.2","creator":{"name":"synth","version":"1"},"entries":[`)}
}

// size is the document's length in bytes.
func (s *synthHAR) size() int64 {
	n, _ := io.Copy(io.Discard, newSynthHAR(s.n, s.body))
	return n
}

func (s *synthHAR) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		switch {
		case len(s.pending) > 0:
			n := copy(p, s.pending)
			s.pending, p, total = s.pending[n:], p[n:], total+n
		case s.bodyLeft > 0:
			n := copy(p[:min(len(p), s.bodyLeft)], synthChunk)
			s.bodyLeft, p, total = s.bodyLeft-n, p[n:], total+n
		case s.suffix:
			s.pending, s.suffix = []byte(`"}}}`), false
		case s.next < s.n:
			sep := ","
			if s.next == 0 {
				sep = ""
			}
			s.pending = fmt.Appendf(nil, `%s{"startedDateTime":"2025-05-01T08:00:%02d.000Z","time":12.5,`+
				`"request":{"method":"GET","url":"http://shop.test/p/%d","headers":[{"name":"Accept","value":"text/html"}]},`+
				`"response":{"status":200,"cookies":[],"content":{"size":%d,"mimeType":"text/html","text":"`, sep, s.next%60, s.next, s.body)
			s.bodyLeft, s.suffix = s.body, true
			s.next++
		case !s.done:
			s.pending, s.done = []byte(`]}}`), true
		default:
			if total == 0 {
				return 0, io.EOF
			}
			return total, nil
		}
	}
	return total, nil
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestMemory_BodiesAreNeverHeld reads a HAR of 64 MiB of response bodies
// (2 MiB each) with each reader: none that leaves the bodies out allocates
// more than a small fraction of them (a reader that keeps bodies up to 1 MiB
// may also hold one such prefix at a time), while keeping them allocates at
// least their size (so the measure sees them when they are held). Not
// parallel: the count is of the whole process's allocations.
func TestMemory_BodiesAreNeverHeld(t *testing.T) {
	const entries, body = 32, 2 << 20
	bodies := uint64(entries * body)
	count := func(o Options) func() {
		return func() {
			n := 0
			for e, err := range Entries(newSynthHAR(entries, body), o) {
				require.NoError(t, err)
				require.Equal(t, "http://shop.test/p/"+fmt.Sprint(n), e.Request.URL)
				n++
			}
			require.Equal(t, entries, n)
		}
	}
	const prefix = 1 << 20
	for name, tc := range map[string]struct {
		read func()
		held uint64 // the longest body prefix the reader may hold
	}{
		"Entries": {count(Options{}), 0},
		"Entries with request bodies and response bodies up to 1 MiB": {count(Options{RequestBodies: true, ResponseBodies: true, MaxResponseBody: prefix}), prefix},
		"Validate": {func() {
			n, err := Validate(newSynthHAR(entries, body), 0)
			require.NoError(t, err)
			require.Equal(t, entries, n)
		}, 0},
		"Requests": {func() {
			reqs, err := Requests(newSynthHAR(entries, body))
			require.NoError(t, err)
			require.Len(t, reqs, entries)
		}, 0},
		"Slim": {func() { require.NoError(t, Slim(io.Discard, newSynthHAR(entries, body), prefix)) }, prefix},
	} {
		got := allocated(tc.read)
		t.Logf("%s: %d KiB allocated for %d MiB of bodies", name, got>>10, bodies>>20)
		require.Less(t, got, bodies/32+3*tc.held, "%s allocates %d KiB for %d MiB of bodies", name, got>>10, bodies>>20)
	}
	got := allocated(count(Options{ResponseBodies: true}))
	require.Greater(t, got, bodies, "bodies asked for are allocated")
}

// BenchmarkEntriesMemory reads HARs of 4, 64 and 256 MiB, almost all of it
// 1 MiB response bodies, entry by entry without the bodies: MB/s, and the
// peak of the live heap while reading (measured after a collection at every
// entry, in one more read outside the timed loop, above the heap before it)
// with its ratio to the 4 MiB HAR's in the same run: about 1x, however large
// the HAR.
func BenchmarkEntriesMemory(b *testing.B) {
	const body = 1 << 20
	read := func(b *testing.B, mib int, sample func()) {
		for _, err := range Entries(newSynthHAR(mib, body), Options{}) {
			if err != nil {
				b.Fatal(err)
			}
			sample()
		}
	}
	var smallest float64
	for _, mib := range []int{4, 64, 256} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			b.SetBytes(newSynthHAR(mib, body).size())
			b.ReportAllocs()
			for b.Loop() {
				read(b, mib, func() {})
			}
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base, peak := ms.HeapAlloc, uint64(0)
			read(b, mib, func() {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
			})
			peakMiB := float64(peak) / (1 << 20)
			if smallest == 0 {
				smallest = peakMiB
			}
			b.ReportMetric(peakMiB, "peak-heap-MiB")
			b.ReportMetric(peakMiB/smallest, "x-4MiB")
		})
	}
}
