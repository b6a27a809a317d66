package hiddenbench_test

import (
	"bytes"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/hiddenbench"
	"proctor/hiddentest"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/runner/episode"
	"proctor/runner/hidden"
	"proctor/sandbox"
	"proctor/visual"
)

// testBrowser starts Chromium for the test, or skips (fails under
// PROCTOR_TEST_REQUIRE=browser) when it or the Playwright driver is missing.
func testBrowser(t *testing.T) playwright.Browser {
	t.Helper()
	opts := episode.BrowserOptionsFromEnv(os.Getenv)
	err := opts.Check()
	why := ""
	if err != nil {
		why = err.Error()
	}
	testenv.SkipUnlessAvailable(t, "browser", err == nil, "recording captures needs Chromium and the Playwright driver (make deps): "+why)
	b, err := episode.LaunchBrowser(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b.Playwright()
}

func TestFromSandbox(t *testing.T) {
	t.Parallel()
	b := testBrowser(t)
	file, err := hiddenbench.FromSandbox(t.Context(), b)
	require.NoError(t, err)

	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(file), nil)
	require.NoError(t, err)

	t.Run("TheFileImports", func(t *testing.T) {
		require.Equal(t, models.EvaluatorHiddenTests, ds.Evaluator)
		require.Equal(t, hiddenbench.Name, ds.Name)
		require.Equal(t, []importer.SiteSpec{{Name: "shop", Placeholder: "__SHOP__"}}, ds.Sites)
		require.Len(t, ds.Tasks, 1)
		task := ds.Tasks[0]
		require.Equal(t, hiddenbench.TaskID, task.ExternalID)
		require.Contains(t, task.Intent, "__SHOP__")
		require.Equal(t, []string{"__SHOP__"}, []string(task.StartURLs))

		// The stored suite is the sample suite, and validates with the captures.
		stored, err := hiddentest.Parse(strings.NewReader(task.EvalSpec))
		require.NoError(t, err)
		sample, err := hiddentest.Parse(bytes.NewReader(hiddentest.SandboxShopSuite()))
		require.NoError(t, err)
		require.Equal(t, sample, stored)
		names := make([]string, len(task.ReferenceCaptures))
		for i, c := range task.ReferenceCaptures {
			names[i] = c.Name
		}
		require.Equal(t, hiddentest.SandboxShopSuiteCaptures(), names)
		require.NoError(t, hiddentest.Validate(stored, func(name string) bool { return slices.Contains(names, name) }))
		for _, c := range task.ReferenceCaptures {
			img, err := png.Decode(bytes.NewReader(c.PNG))
			require.NoError(t, err, c.Name)
			require.Equal(t, image.Pt(c.Width, c.Height), img.Bounds().Size(), c.Name)
			require.Greater(t, c.Width, 50, c.Name)
			require.Greater(t, c.Height, 20, c.Name)
		}
		require.NotEqual(t, task.ReferenceCaptures[0].SHA256, task.ReferenceCaptures[1].SHA256, "each capture is its own region")
	})

	t.Run("RecordingAgainLooksTheSame", func(t *testing.T) {
		// Two recordings need not be byte for byte the same (a busy machine
		// may render a few pixels differently), but they show the same.
		again, err := hiddenbench.FromSandbox(t.Context(), b)
		require.NoError(t, err)
		ds2, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(again), nil)
		require.NoError(t, err)
		require.Equal(t, ds.Tasks[0].EvalSpec, ds2.Tasks[0].EvalSpec)
		first, second := ds.Tasks[0].ReferenceCaptures, ds2.Tasks[0].ReferenceCaptures
		require.Len(t, second, len(first))
		for i := range first {
			require.Equal(t, first[i].Name, second[i].Name)
			a, err := png.Decode(bytes.NewReader(first[i].PNG))
			require.NoError(t, err)
			b, err := png.Decode(bytes.NewReader(second[i].PNG))
			require.NoError(t, err)
			res, err := visual.Compare(b, a, visual.Options{})
			require.NoError(t, err)
			require.Greater(t, res.Score, 0.98, first[i].Name)
		}
	})

	t.Run("TheShopMatchesItsCaptures", func(t *testing.T) {
		// A shop served today, with its own clock, passes the journeys the
		// captures were recorded with: the captures are usable references.
		srv := httptest.NewServer(sandbox.New(sandbox.Options{}))
		t.Cleanup(srv.Close)
		suite, err := hiddentest.Parse(strings.NewReader(ds.Tasks[0].EvalSpec))
		require.NoError(t, err)
		caps := map[string]image.Image{}
		for _, c := range ds.Tasks[0].ReferenceCaptures {
			img, err := png.Decode(bytes.NewReader(c.PNG))
			require.NoError(t, err)
			caps[c.Name] = img
		}
		lookup := func(name string) (image.Image, bool) { img, ok := caps[name]; return img, ok }
		cand := hidden.Candidate{BaseURL: srv.URL + "/sandbox/{visitor}/shop"}
		played := 0
		for i := range suite.Tests {
			test := &suite.Tests[i]
			if len(test.Checkpoints) == 0 || slices.ContainsFunc(test.Journey.Steps, func(s hiddentest.Step) bool { return s.Action == hiddentest.ActionRestart }) {
				continue
			}
			out := hidden.RunJourney(t.Context(), b, cand, test, lookup, hidden.JourneyOptionsFor(suite))
			require.Equal(t, hidden.Passed, out.Result, "%s: %s", test.ID, out.Reason)
			for _, cp := range out.Checkpoints {
				require.Greater(t, cp.Score, 0.98, "%s %s", test.ID, cp.Capture)
			}
			played++
		}
		require.Equal(t, 5, played)
	})
}

func TestSampleBenchmark_BrokenReference(t *testing.T) {
	t.Parallel()
	b := testBrowser(t)
	// A reference whose home page answers 404 cannot give its captures.
	shop := sandbox.New(sandbox.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/shop/") || strings.HasSuffix(r.URL.Path, "/shop") {
			http.NotFound(w, r)
			return
		}
		shop.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	_, err := hiddenbench.SampleBenchmark(t.Context(), b, srv.URL+"/sandbox/{visitor}/shop")
	require.ErrorContains(t, err, "record reference captures: journey b1-home-page failed on the reference site")
}
