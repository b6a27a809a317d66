package bundle_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/bundle/bundletest"
	"proctor/models"
)

// manyFolders is how many task folders the scale tests write: half the
// default file limit, each folder holding one file.
const manyFolders = 100_000

// manyFoldersEntries are the entries of a bundle of n task folders in the
// format shapes whose assembly once read every path once per folder.
func manyFoldersEntries(format string, n int) []bundletest.Entry {
	entries := make([]bundletest.Entry, 0, n+1)
	switch format {
	case models.BundleAgentLab:
		for i := range n {
			entries = append(entries, bundletest.Entry{Name: fmt.Sprintf("agent_on_webarena.%d_0/summary_info.json", i), Body: []byte(`{}`)})
		}
	case models.BundleProctor:
		entries = append(entries, bundletest.Entry{Name: "manifest.json", Body: []byte(`{"format": "proctor-trajectory/1"}`)})
		for i := range n {
			entries = append(entries, bundletest.Entry{Name: fmt.Sprintf("tasks/%d/.missing", i)})
		}
	}
	return entries
}

// TestInspect_ManyFolders inspects bundles of 100 000 task folders. Their
// assembly is linear: it finishes within a deadline that is minutes away
// from the seconds it takes, which a pass over every path per folder (tens
// of minutes here) would miss, its context being checked in every loop.
func TestInspect_ManyFolders(t *testing.T) {
	t.Parallel()
	for _, format := range []string{models.BundleAgentLab, models.BundleProctor} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			path := bundletest.Write(t, filepath.Join(t.TempDir(), "many.tar.gz"), bundletest.TarGz, manyFoldersEntries(format, manyFolders))
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			st, err := f.Stat()
			require.NoError(t, err)

			const deadline = 2 * time.Minute
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			defer cancel()
			start := time.Now()
			b, err := bundle.Inspect(ctx, f, st.Size(), bundle.DefaultLimits(), nil)
			require.NoError(t, err, "a linear assembly of %d folders takes seconds", manyFolders)
			require.Less(t, time.Since(start), deadline, "a linear assembly of %d folders takes seconds", manyFolders)
			require.Equal(t, format, b.Format)
			require.Len(t, b.Tasks, manyFolders)
			require.Empty(t, b.Report.InvalidFiles)
		})
	}
}

// TestInspect_CanceledWhileAssembling cancels the context once the archive
// is read, before the bundle is assembled: Inspect returns the context's
// error instead of a bundle.
func TestInspect_CanceledWhileAssembling(t *testing.T) {
	t.Parallel()
	path := bundletest.Write(t, filepath.Join(t.TempDir(), "b.tar.gz"), bundletest.TarGz, manyFoldersEntries(models.BundleAgentLab, 5000))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	read := false
	b, err := bundle.Inspect(ctx, f, st.Size(), bundle.DefaultLimits(), func(done, total int64) {
		if done == total { // the walk's last word: every entry is read
			read = true
			cancel()
		}
	})
	require.True(t, read)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, b)
}

// BenchmarkInspect_ManyFolders inspects bundles of growing numbers of task
// folders: the time per folder stays flat when the assembly is linear.
func BenchmarkInspect_ManyFolders(b *testing.B) {
	for _, format := range []string{models.BundleAgentLab, models.BundleProctor} {
		for _, n := range []int{10_000, 20_000, 40_000} {
			path := bundletest.Write(b, filepath.Join(b.TempDir(), "many.tar.gz"), bundletest.TarGz, manyFoldersEntries(format, n))
			f, err := os.Open(path)
			require.NoError(b, err)
			st, err := f.Stat()
			require.NoError(b, err)
			b.Run(fmt.Sprintf("%s/%d", format, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := bundle.Inspect(b.Context(), f, st.Size(), bundle.DefaultLimits(), nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/folder")
			})
			f.Close()
		}
	}
}
