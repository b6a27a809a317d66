package bundle_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/bundle/bundletest"
)

// TestInspectValidated: inspecting bytes inspected before gives the same
// bundle, report and kept files, with the screenshot verdicts of the earlier
// report instead of decoding every screenshot again.
func TestInspectValidated(t *testing.T) {
	t.Parallel()
	entries := bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""),
		bundletest.ProctorTask{ID: "1", Steps: 3, HAR: true},
		bundletest.ProctorTask{ID: "2", StepsJSONL: `{"action": "x", "screenshot": "bad.png"}` + "\n" + `{"action": "y", "screenshot": "lying.png"}`,
			Extra: []bundletest.Entry{
				{Name: "bad.png", Body: []byte("nope")},
				// A PNG signature over garbage: only decoding tells.
				{Name: "lying.png", Body: append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)},
				{Name: "screenshots/photo.jpg", Body: bundletest.JPEG(32, 20)},
			}})
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			path := bundletest.Write(t, filepath.Join(t.TempDir(), "b."+string(kind)), kind, entries)
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			st, err := f.Stat()
			require.NoError(t, err)
			ctx := context.Background()

			first, err := bundle.Inspect(ctx, f, st.Size(), bundle.DefaultLimits(), nil)
			require.NoError(t, err)
			problems := map[string]string{}
			for _, p := range first.Report.InvalidFiles {
				problems[p.Path] = p.Problem
			}
			require.Contains(t, problems, "tasks/2/bad.png")
			require.Contains(t, problems, "tasks/2/lying.png", "decoding finds the garbage behind the signature")

			again, err := bundle.InspectValidated(ctx, f, st.Size(), bundle.DefaultLimits(), first.Report.InvalidFiles, nil)
			require.NoError(t, err)
			require.Equal(t, first.Report, again.Report)
			require.Equal(t, first.Tasks, again.Tasks)
			require.ElementsMatch(t, first.Files(), again.Files())

			// Without the earlier verdicts, only the signature is looked at:
			// the lying PNG passes, which is why the earlier report is needed.
			blind, err := bundle.InspectValidated(ctx, f, st.Size(), bundle.DefaultLimits(), nil, nil)
			require.NoError(t, err)
			require.Len(t, blind.Report.InvalidFiles, len(first.Report.InvalidFiles)-1)
		})
	}
}

// TestInspectValidated_CappedReport: when the earlier report may not name
// every broken screenshot (its list is at the cap, or a path in it was
// shortened), every screenshot is decoded again, so none passes unseen.
func TestInspectValidated_CappedReport(t *testing.T) {
	t.Parallel()
	lying := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...) // a PNG signature over garbage
	cases := map[string][]bundletest.Entry{
		"more broken screenshots than the list holds": func() []bundletest.Entry {
			var extra []bundletest.Entry
			for i := range 1001 {
				extra = append(extra, bundletest.Entry{Name: fmt.Sprintf("broken/%04d.png", i), Body: lying})
			}
			return extra
		}(),
		"a broken screenshot with a long name": {{Name: "screenshots/" + strings.Repeat("n", 300) + ".png", Body: lying}},
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			entries := bundletest.ProctorEntries(bundletest.ProctorManifest("b", ""), bundletest.ProctorTask{ID: "1", Steps: 1, Extra: extra})
			path := bundletest.Write(t, filepath.Join(t.TempDir(), "b.tar.gz"), bundletest.TarGz, entries)
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			st, err := f.Stat()
			require.NoError(t, err)

			first, err := bundle.Inspect(t.Context(), f, st.Size(), bundle.DefaultLimits(), nil)
			require.NoError(t, err)
			require.Equal(t, len(extra), first.Report.Counts.InvalidFiles)
			again, err := bundle.InspectValidated(t.Context(), f, st.Size(), bundle.DefaultLimits(), first.Report.InvalidFiles, nil)
			require.NoError(t, err)
			require.Equal(t, first.Report, again.Report)
			require.Equal(t, first.Tasks, again.Tasks)
		})
	}
}
