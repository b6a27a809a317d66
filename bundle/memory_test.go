package bundle_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/bundle/bundletest"
)

// peakHeap runs fn and returns how far the heap grew above where it started,
// sampled every millisecond.
func peakHeap(t *testing.T, fn func()) uint64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// TestInspect_Memory inspects and extracts a bundle holding a 64 MiB HAR:
// the heap must stay far below the file's size, since nothing is held whole.
// Not parallel: the heap is the whole process's.
func TestInspect_Memory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB HAR; skipped with -short")
	}
	const harSize = 64 << 20
	const budget = 16 << 20
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			entries := append(bundletest.WebArenaVerifiedEntries(bundletest.WAVTask{ID: "1", NoHAR: true}),
				bundletest.Entry{Name: "1/network.har", Open: bundletest.LargeHAR(harSize)})
			path := bundletest.Write(t, filepath.Join(t.TempDir(), "big."+string(kind)), kind, entries)
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			st, err := f.Stat()
			require.NoError(t, err)

			var b *bundle.Bundle
			grew := peakHeap(t, func() {
				b, err = bundle.Inspect(context.Background(), f, st.Size(), bundle.DefaultLimits(), nil)
			})
			require.NoError(t, err)
			require.Empty(t, b.Report.InvalidFiles)
			require.Equal(t, 1, b.Report.HARs)
			require.Greater(t, b.Report.Bytes, int64(harSize))
			require.Less(t, grew, uint64(budget), "Inspect's heap grew by %d MiB for a %d MiB HAR", grew>>20, harSize>>20)
			t.Logf("Inspect: heap grew by %.1f MiB for a %d MiB HAR", float64(grew)/(1<<20), harSize>>20)

			var n int64
			grew = peakHeap(t, func() {
				err = b.Extract(context.Background(), f, st.Size(), nil, func(_ bundle.File, content io.Reader) error {
					var cerr error
					n, cerr = io.Copy(io.Discard, content)
					return cerr
				})
			})
			require.NoError(t, err)
			require.Greater(t, n, int64(harSize))
			require.Less(t, grew, uint64(budget), "Extract's heap grew by %d MiB", grew>>20)
		})
	}
}

// TestInspect_RetainedMemory inspects a bundle of 168 MiB of steps whose
// thoughts are 2 MiB each: what the bundle keeps is their first 64 KiB, so
// the live heap grows by a few MiB, not by the size of the steps.
// Not parallel: the heap is the whole process's.
func TestInspect_RetainedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 168 MiB of steps; skipped with -short")
	}
	const files, lines, thought = 12, 7, 2 << 20
	// One random letter in 60 compresses about 40:1, under the ratio limit.
	rng := rand.New(rand.NewPCG(3, 4))
	text := make([]byte, thought)
	for i := range text {
		text[i] = 'a'
		if i%60 == 0 {
			text[i] = byte('a' + rng.IntN(26))
		}
	}
	steps := []byte(strings.Repeat(`{"action": "click", "thought": "`+string(text)+`"}`+"\n", lines))
	var tasks []bundletest.ProctorTask
	for i := range files {
		tasks = append(tasks, bundletest.ProctorTask{ID: fmt.Sprint(i), StepsJSONL: string(steps)})
	}
	path := bundletest.Write(t, filepath.Join(t.TempDir(), "thoughts.tar.gz"), bundletest.TarGz,
		bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""), tasks...))
	steps, tasks = nil, nil
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := bundle.Inspect(context.Background(), f, st.Size(), bundle.DefaultLimits(), nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	require.Less(t, grew, int64(32<<20), "the bundle holds %d MiB after Inspect for %d MiB of thoughts", grew>>20, files*lines*thought>>20)
	t.Logf("live heap after Inspect: %+.1f MiB for %d MiB of thoughts", float64(grew)/(1<<20), files*lines*thought>>20)
	require.Greater(t, b.Report.Bytes, int64(files*lines*thought))
	require.Equal(t, files*lines, b.Report.Steps)
	for _, task := range b.Tasks {
		for _, step := range task.Steps {
			require.Equal(t, 64<<10, len(step.Thought), "the thought is cut to 64 KiB, ellipsis included")
		}
	}
	require.Contains(t, strings.Join(b.Report.Warnings, "\n"), "12 files have text")
	runtime.KeepAlive(b)
}

// BenchmarkInspect measures Inspect's throughput (MB/s of archive) on a
// bundle shaped like a real upload: tasks of 1280×800 JPEG screenshots and
// a HAR each.
func BenchmarkInspect(b *testing.B) {
	shot := bundletest.JPEG(1280, 800)
	var tasks []bundletest.ProctorTask
	for i := range 8 {
		task := bundletest.ProctorTask{ID: fmt.Sprint(i + 1)}
		var lines string
		for s := range 10 {
			name := fmt.Sprintf("screenshots/%02d.jpg", s)
			task.Extra = append(task.Extra, bundletest.Entry{Name: name, Body: shot, Store: true})
			lines += bundletest.ProctorStepLine(s, name) + "\n"
		}
		task.StepsJSONL = lines
		task.Extra = append(task.Extra, bundletest.Entry{Name: "network.har", Open: bundletest.LargeHAR(2 << 20)})
		tasks = append(tasks, task)
	}
	for _, kind := range kinds {
		path := bundletest.Write(b, filepath.Join(b.TempDir(), "bench."+string(kind)), kind,
			bundletest.ProctorEntries(bundletest.ProctorManifest("webarena-verified", ""), tasks...))
		f, err := os.Open(path)
		require.NoError(b, err)
		st, err := f.Stat()
		require.NoError(b, err)
		b.Run(string(kind), func(b *testing.B) {
			b.SetBytes(st.Size())
			for b.Loop() {
				bun, err := bundle.Inspect(context.Background(), f, st.Size(), bundle.DefaultLimits(), nil)
				if err != nil || bun.Report.Screenshots != 80 || bun.Report.HARs != 8 {
					b.Fatalf("inspect: %v", err)
				}
			}
		})
		f.Close()
	}
}
