package handlers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/hiddentest"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
)

// hiddenBenchFile is a hidden-tests benchmark of one task graded by the
// sample suite, with noise images as its captures (each distinct, so that a
// piece of its base64 identifies it).
func hiddenBenchFile(t *testing.T) (file string, captures []string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	encoded := map[string]string{}
	for _, name := range hiddentest.SandboxShopSuiteCaptures() {
		img := image.NewRGBA(image.Rect(0, 0, 24, 16))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Set(i/4%24, i/4/24, color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255})
		}
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, img))
		encoded[name] = base64.StdEncoding.EncodeToString(buf.Bytes())
		captures = append(captures, encoded[name])
	}
	lines := []any{
		map[string]any{"proctor_benchmark": 1, "name": "Shop rebuild", "evaluator": "hidden-tests"},
		map[string]any{"id": "shop-rebuild", "intent": "Explore the shop at __SHOP__ and rebuild it.", "start_urls": []string{"__SHOP__"},
			"sites": []string{"shop"}, "eval": map[string]any{"suite": json.RawMessage(hiddentest.SandboxShopSuite()), "captures": encoded}},
	}
	var b strings.Builder
	for _, l := range lines {
		enc, err := json.Marshal(l)
		require.NoError(t, err)
		b.Write(enc)
		b.WriteByte('\n')
	}
	return b.String(), captures
}

// TestBenchmarks_HiddenTestsStayHidden imports a hidden-tests benchmark whose
// references are revealed (as the sample's are) and reads every page and API
// answer about it: no one sees the suite's tests through them but
// administrators, and no one, administrators included, gets the captures.
func TestBenchmarks_HiddenTestsStayHidden(t *testing.T) {
	t.Parallel()
	b := setup(t)
	file, captures := hiddenBenchFile(t)
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(file), nil)
	require.NoError(t, err)
	sys := models.WithActor(context.Background(), models.SystemActor())
	_, err = b.db.ImportBenchmark(sys, "rebuild", ds, "rebuild.jsonl", 0)
	require.NoError(t, err)
	require.NoError(t, b.db.SetRevealReferences(sys, "rebuild", true))

	suite, err := hiddentest.Parse(bytes.NewReader(hiddentest.SandboxShopSuite()))
	require.NoError(t, err)
	var secrets []string
	for _, test := range suite.Tests {
		secrets = append(secrets, test.Title, html.EscapeString(test.Title), test.ID)
	}
	secrets = append(secrets, suite.Description)
	var imageParts []string
	for _, c := range captures {
		imageParts = append(imageParts, c[len(c)/2:len(c)/2+40]) // past the header all PNGs share
	}
	for _, c := range ds.Tasks[0].ReferenceCaptures {
		imageParts = append(imageParts, c.SHA256)
	}

	paths := []string{
		"/benchmarks",
		"/benchmarks/rebuild",
		"/benchmarks/rebuild/tasks",
		"/benchmarks/rebuild/tasks/shop-rebuild",
		"/benchmarks/rebuild/leaderboard",
		"/benchmarks/rebuild/leaderboard.json",
		"/api/v1/benchmarks",
		"/api/v1/benchmarks/rebuild",
		"/api/v1/benchmarks/rebuild/tasks",
		"/api/v1/benchmarks/rebuild/tasks/shop-rebuild",
		"/api/v1/benchmarks/rebuild/leaderboard",
	}
	user := b.newUser(t, "user@example.org", false)
	for name, c := range map[string]*client{"anonymous": b.anonymous(t), "user": user} {
		t.Run(name, func(t *testing.T) {
			for _, p := range paths {
				res := c.get(p)
				require.Equal(t, http.StatusOK, res.StatusCode, p)
				body := readBody(t, res)
				if strings.HasSuffix(p, "shop-rebuild") {
					require.Contains(t, body, "Explore the shop", "%s shows the task", p)
				}
				for _, s := range append(secrets, imageParts...) {
					require.NotContains(t, body, s, p)
				}
				for _, key := range []string{`"eval_spec"`, "Evaluation (hidden)", "checkpoints", "reference_captures", "ReferenceCaptures"} {
					require.NotContains(t, body, key, p)
				}
			}
		})
	}
	t.Run("admin", func(t *testing.T) {
		// Administrators see the suite as the task's hidden evaluation, and
		// still never the images: no page reads them.
		body := readBody(t, b.admin.get("/benchmarks/rebuild/tasks/shop-rebuild"))
		require.Contains(t, body, "Evaluation (hidden)")
		require.Contains(t, body, suite.Tests[0].ID)
		for _, p := range paths {
			res := b.admin.get(p)
			require.Equal(t, http.StatusOK, res.StatusCode, p)
			body := readBody(t, res)
			for _, s := range imageParts {
				require.NotContains(t, body, s, p)
			}
		}
	})
}
