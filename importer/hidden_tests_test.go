package importer_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/hiddentest"
	"proctor/importer"
	"proctor/models"
)

// pngOf encodes a w × h image of one colour.
func pngOf(t *testing.T, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

// hiddenSuite is a small valid suite on the site shop: a request test and a
// journey whose two checkpoints name the captures header and card.
func hiddenSuite() map[string]any {
	return map[string]any{
		"version": 1,
		"site":    "shop",
		"tests": []any{
			map[string]any{"id": "home", "group": "request", "title": "The home page answers",
				"request": map[string]any{"path": "/", "expect": map[string]any{"status": 200, "body_contains": []any{"<All products>"}}}},
			map[string]any{"id": "home-look", "group": "browser", "level": 1, "title": "The home page looks right",
				"journey": map[string]any{"steps": []any{map[string]any{"action": "goto", "url": "/"}}},
				"checkpoints": []any{
					map[string]any{"capture": "header", "region": map[string]any{"css": "header"}},
					map[string]any{"capture": "card", "region": map[string]any{"css": ".card"}},
				}},
		},
	}
}

// hiddenTask is a valid hidden-tests task line whose eval edit may change.
func hiddenTask(t *testing.T, edit func(eval map[string]any)) map[string]any {
	eval := map[string]any{
		"suite": hiddenSuite(),
		"captures": map[string]any{
			"header": b64(pngOf(t, 8, 4, color.RGBA{R: 200, A: 255})),
			"card":   b64(pngOf(t, 3, 5, color.RGBA{G: 200, A: 255})),
		},
	}
	if edit != nil {
		edit(eval)
	}
	return map[string]any{
		"id":         "shop-rebuild",
		"intent":     "Explore the shop at __SHOP__ and rebuild it.",
		"start_urls": []any{"__SHOP__/"},
		"sites":      []any{"shop"},
		"eval":       eval,
	}
}

func hiddenHeader() map[string]any {
	return map[string]any{"proctor_benchmark": 1, "name": "Rebuild", "evaluator": "hidden-tests"}
}

func parseHidden(t *testing.T, edit func(eval map[string]any)) (*importer.Dataset, error) {
	t.Helper()
	return parse(models.FormatProctor, jsonl(t, hiddenHeader(), hiddenTask(t, edit)))
}

func TestParse_HiddenTests(t *testing.T) {
	t.Parallel()

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()
		d, err := parseHidden(t, nil)
		require.NoError(t, err)
		require.Equal(t, models.EvaluatorHiddenTests, d.Evaluator)
		require.Len(t, d.Tasks, 1)
		task := d.Tasks[0]

		// The evaluation spec is the suite alone, canonical, and parses back
		// to the same suite; the images are not in it.
		require.NotContains(t, task.EvalSpec, "captures")
		require.NotContains(t, task.EvalSpec, b64(pngOf(t, 8, 4, color.RGBA{R: 200, A: 255})))
		require.Contains(t, task.EvalSpec, `"<All products>"`, "canonical JSON does not escape HTML")
		stored, err := hiddentest.Parse(strings.NewReader(task.EvalSpec))
		require.NoError(t, err)
		want, err := hiddentest.Parse(strings.NewReader(encode(t, hiddenSuite())))
		require.NoError(t, err)
		require.Equal(t, want, stored)

		header := pngOf(t, 8, 4, color.RGBA{R: 200, A: 255})
		card := pngOf(t, 3, 5, color.RGBA{G: 200, A: 255})
		require.Equal(t, []models.ReferenceCapture{
			{Name: "card", PNG: card, SHA256: sha256Of(card), Width: 3, Height: 5},
			{Name: "header", PNG: header, SHA256: sha256Of(header), Width: 8, Height: 4},
		}, task.ReferenceCaptures)
	})

	t.Run("ChecksumCountsCaptures", func(t *testing.T) {
		t.Parallel()
		base, err := parseHidden(t, nil)
		require.NoError(t, err)

		// Reformatting the suite or reordering keys changes nothing.
		same, err := parseHidden(t, func(eval map[string]any) {
			raw, err := json.MarshalIndent(eval["suite"], "", "    ")
			require.NoError(t, err)
			eval["suite"] = json.RawMessage(raw)
		})
		require.NoError(t, err)
		require.Equal(t, base.Checksum, same.Checksum)

		// Another image under the same name is a new version.
		recoloured, err := parseHidden(t, func(eval map[string]any) {
			eval["captures"].(map[string]any)["card"] = b64(pngOf(t, 3, 5, color.RGBA{B: 200, A: 255}))
		})
		require.NoError(t, err)
		require.NotEqual(t, base.Checksum, recoloured.Checksum)
		require.Equal(t, base.Tasks[0].EvalSpec, recoloured.Tasks[0].EvalSpec)
	})

	t.Run("SampleSuite", func(t *testing.T) {
		t.Parallel()
		captures := map[string]any{}
		for i, name := range hiddentest.SandboxShopSuiteCaptures() {
			captures[name] = b64(pngOf(t, 10+i, 6, color.Gray{Y: uint8(20 * i)}))
		}
		d, err := parseHidden(t, func(eval map[string]any) {
			eval["suite"] = json.RawMessage(hiddentest.SandboxShopSuite())
			eval["captures"] = captures
		})
		require.NoError(t, err)
		require.Len(t, d.Tasks[0].ReferenceCaptures, 6)
		s, err := hiddentest.Parse(strings.NewReader(d.Tasks[0].EvalSpec))
		require.NoError(t, err)
		require.Equal(t, 43, s.Summary().Total)
	})

	t.Run("NoCheckpointsNoCaptures", func(t *testing.T) {
		t.Parallel()
		d, err := parseHidden(t, func(eval map[string]any) {
			suite := hiddenSuite()
			suite["tests"] = suite["tests"].([]any)[:1]
			eval["suite"] = suite
			delete(eval, "captures")
		})
		require.NoError(t, err)
		require.Empty(t, d.Tasks[0].ReferenceCaptures)
	})
}

func sha256Of(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestParse_HiddenTestsBadInput(t *testing.T) {
	t.Parallel()
	var jpg bytes.Buffer
	require.NoError(t, jpeg.Encode(&jpg, image.NewGray(image.Rect(0, 0, 4, 4)), nil))
	valid := pngOf(t, 8, 4, color.White)
	const where = `line 2 (task shop-rebuild): `

	cases := []struct {
		name  string
		edit  func(t *testing.T, eval map[string]any, task map[string]any)
		code  string
		parts []string
	}{
		{"MissingEval", func(t *testing.T, _, task map[string]any) { delete(task, "eval") },
			models.EINVALID, []string{where + `field "eval": missing: the evaluator is hidden-tests`}},
		{"EvalNotAnObject", func(t *testing.T, _, task map[string]any) { task["eval"] = []any{1} },
			models.EINVALID, []string{where + `field "eval": expected an object {"suite", "captures"}, found an array`}},
		{"EvalUnknownField", func(t *testing.T, eval, _ map[string]any) { eval["tests"] = []any{} },
			models.EINVALID, []string{where + `field "eval.tests": unknown field`}},
		{"MissingSuite", func(t *testing.T, eval, _ map[string]any) { delete(eval, "suite") },
			models.EINVALID, []string{where + `field "eval.suite": missing`}},
		{"SuiteNotJSONObject", func(t *testing.T, eval, _ map[string]any) { eval["suite"] = "tests" },
			models.EINVALID, []string{where + `field "eval.suite": `}},
		{"BadSuite", func(t *testing.T, eval, _ map[string]any) {
			suite := hiddenSuite()
			suite["version"] = 2
			delete(suite["tests"].([]any)[1].(map[string]any), "title")
			eval["suite"] = suite
		}, models.EINVALID, []string{
			where + `field "eval.suite.version": version 2 is not supported: use 1`,
			where + `field "eval.suite.tests[1].title": test home-look: missing: say in a line what the test checks`,
		}},
		{"SuiteUnknownField", func(t *testing.T, eval, _ map[string]any) {
			suite := hiddenSuite()
			suite["tests"].([]any)[0].(map[string]any)["retries"] = 2
			eval["suite"] = suite
		}, models.EINVALID, []string{where + `field "eval.suite.tests[0].retries": test home: `}},
		{"SuiteOnAnotherSite", func(t *testing.T, eval, _ map[string]any) {
			suite := hiddenSuite()
			suite["site"] = "forum"
			eval["suite"] = suite
		}, models.EINVALID, []string{where + `field "eval.suite.site": "forum" is not a site of the task (shop)`}},
		{"MissingCapture", func(t *testing.T, eval, _ map[string]any) { delete(eval["captures"].(map[string]any), "card") },
			models.EINVALID, []string{where + `field "eval.suite.tests[1].checkpoints[1].capture": test home-look: no reference capture named "card"`}},
		{"NoCaptures", func(t *testing.T, eval, _ map[string]any) { delete(eval, "captures") },
			models.EINVALID, []string{
				`field "eval.suite.tests[1].checkpoints[0].capture": test home-look: no reference capture named "header"`,
				`field "eval.suite.tests[1].checkpoints[1].capture": test home-look: no reference capture named "card"`,
			}},
		{"UnusedCapture", func(t *testing.T, eval, _ map[string]any) { eval["captures"].(map[string]any)["footer"] = b64(valid) },
			models.EINVALID, []string{where + `field "eval.captures.footer": unused capture: no checkpoint of the suite names it (the suite's captures: card, header)`}},
		{"CapturesNotAnObject", func(t *testing.T, eval, _ map[string]any) { eval["captures"] = []any{b64(valid)} },
			models.EINVALID, []string{where + `field "eval.captures": expected an object of capture name → base64 PNG, found an array`}},
		{"CaptureNotAString", func(t *testing.T, eval, _ map[string]any) { eval["captures"].(map[string]any)["card"] = 12 },
			models.EINVALID, []string{where + `field "eval.captures.card": expected a base64 PNG string, found a number`}},
		{"CaptureNotBase64", func(t *testing.T, eval, _ map[string]any) { eval["captures"].(map[string]any)["card"] = "not base64!" },
			models.EINVALID, []string{where + `field "eval.captures.card": not base64`}},
		{"CaptureNotAPNG", func(t *testing.T, eval, _ map[string]any) {
			eval["captures"].(map[string]any)["card"] = b64(jpg.Bytes())
		},
			models.EINVALID, []string{where + `field "eval.captures.card": not a PNG image`}},
		{"CaptureTruncated", func(t *testing.T, eval, _ map[string]any) {
			eval["captures"].(map[string]any)["card"] = b64(valid[:len(valid)-20])
		}, models.EINVALID, []string{where + `field "eval.captures.card": the PNG cannot be decoded`}},
		{"CaptureHeaderBroken", func(t *testing.T, eval, _ map[string]any) {
			eval["captures"].(map[string]any)["card"] = b64([]byte("\x89PNG\r\n\x1a\nnot a chunk"))
		}, models.EINVALID, []string{where + `field "eval.captures.card": the PNG cannot be read`}},
		{"CaptureTooManyBytes", func(t *testing.T, eval, _ map[string]any) {
			eval["captures"].(map[string]any)["card"] = b64(append(bytes.Clone(valid), make([]byte, importer.MaxCaptureBytes)...))
		}, models.ETOOLARGE, []string{where + `field "eval.captures.card": larger than 2 MiB`}},
		{"CaptureTooWide", func(t *testing.T, eval, _ map[string]any) {
			eval["captures"].(map[string]any)["card"] = b64(pngOf(t, importer.MaxCaptureSide+1, 1, color.White))
		}, models.ETOOLARGE, []string{where + `field "eval.captures.card": 4097 × 1 pixels: at most 4096 × 4096`}},
		{"CaptureOddName", func(t *testing.T, eval, _ map[string]any) { eval["captures"].(map[string]any)["a b"] = b64(valid) },
			models.EINVALID, []string{where + `field "eval.captures[\"a b\"]": unused capture`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			task := hiddenTask(t, nil)
			tc.edit(t, task["eval"].(map[string]any), task)
			_, err := parse(models.FormatProctor, jsonl(t, hiddenHeader(), task))
			requireError(t, err, tc.code, tc.parts...)
		})
	}

	t.Run("CaptureGivenTwice", func(t *testing.T) {
		t.Parallel()
		line := encode(t, hiddenTask(t, nil))
		twice := strings.Replace(line, `"captures":{`, `"captures":{"card":"`+b64(valid)+`",`, 1)
		require.NotEqual(t, line, twice)
		_, err := parse(models.FormatProctor, jsonl(t, hiddenHeader(), twice))
		requireError(t, err, models.EINVALID, where+`field "eval.captures.card": given twice`)
	})
}

// hiddenDocsExample extracts the ```jsonl block of the section
// "Hidden-tests benchmarks" of docs/benchmark-format.md.
func hiddenDocsExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "benchmark-format.md"))
	require.NoError(t, err)
	_, section, ok := bytes.Cut(doc, []byte("\n## Hidden-tests benchmarks\n"))
	require.True(t, ok, "docs/benchmark-format.md has no section Hidden-tests benchmarks")
	_, rest, ok := bytes.Cut(section, []byte("```jsonl\n"))
	require.True(t, ok, "the section has no ```jsonl block")
	block, _, ok := bytes.Cut(rest, []byte("\n```"))
	require.True(t, ok, "the ```jsonl block is not closed")
	return string(block)
}

func TestParse_HiddenTestsDocsExample(t *testing.T) {
	t.Parallel()
	example := hiddenDocsExample(t)
	d, err := parse(models.FormatProctor, example)
	require.NoError(t, err)
	require.Equal(t, models.EvaluatorHiddenTests, d.Evaluator)
	require.Len(t, d.Tasks, 1)
	task := d.Tasks[0]
	require.Len(t, task.ReferenceCaptures, 1)
	require.Equal(t, "shop-header", task.ReferenceCaptures[0].Name)
	require.Equal(t, [2]int{4, 2}, [2]int{task.ReferenceCaptures[0].Width, task.ReferenceCaptures[0].Height})
	s, err := hiddentest.Parse(strings.NewReader(task.EvalSpec))
	require.NoError(t, err)
	require.Equal(t, []string{"shop-header"}, s.Captures())

	// The error the section quotes is the one a file without the capture gets.
	without := strings.Replace(example, `"captures": {"shop-header": `, `"captures": {"unused": `, 1)
	require.NotEqual(t, example, without)
	_, err = parse(models.FormatProctor, without)
	requireError(t, err, models.EINVALID,
		`line 2 (task shop-rebuild): field "eval.suite.tests[0].checkpoints[0].capture": test cart-tab: no reference capture named "shop-header"`)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "benchmark-format.md"))
	require.NoError(t, err)
	require.Contains(t, string(doc), "`"+`line 2 (task shop-rebuild): field "eval.suite.tests[0].checkpoints[0].capture": test cart-tab: no reference capture named "shop-header"`+"`")
}

// TestParse_HiddenTestsPassThreshold: a hidden-tests benchmark's header may
// state the pass rate a task needs to succeed, in (0, 1]; the default (1:
// every test that ran passed) stated or not is one version, another
// threshold another; anything else is refused naming the field.
func TestParse_HiddenTestsPassThreshold(t *testing.T) {
	t.Parallel()
	withThreshold := func(t *testing.T, threshold any) (*importer.Dataset, error) {
		h := hiddenHeader()
		h["pass_threshold"] = threshold
		return parse(models.FormatProctor, jsonl(t, h, hiddenTask(t, nil)))
	}
	base, err := parseHidden(t, nil)
	require.NoError(t, err)
	require.Nil(t, base.PassThreshold)
	require.InDelta(t, models.DefaultPassThreshold, base.EffectivePassThreshold(), 1e-12)

	stated, err := withThreshold(t, 1)
	require.NoError(t, err)
	require.Nil(t, stated.PassThreshold, "stating the default is the default")
	require.Equal(t, base.Checksum, stated.Checksum, "and makes no new version")

	lenient, err := withThreshold(t, 0.8)
	require.NoError(t, err)
	require.InDelta(t, 0.8, *lenient.PassThreshold, 1e-12)
	require.InDelta(t, 0.8, lenient.EffectivePassThreshold(), 1e-12)
	require.NotEqual(t, base.Checksum, lenient.Checksum, "another threshold grades another way: a new version")

	for _, c := range []struct {
		name      string
		threshold any
		message   string
	}{
		{"Zero", 0, `line 1: field "pass_threshold": 0 is out of range: give the pass rate a task needs to succeed, above 0 and at most 1`},
		{"Negative", -0.5, `line 1: field "pass_threshold": -0.5 is out of range`},
		{"AboveOne", 1.5, `line 1: field "pass_threshold": 1.5 is out of range`},
		{"APercentage", 90, `line 1: field "pass_threshold": 90 is out of range`},
		{"NotANumber", "0.9", `line 1: `},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := withThreshold(t, c.threshold)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), c.message)
			require.Contains(t, models.ErrorMessage(err), "pass_threshold")
		})
	}

	t.Run("OnlyForHiddenTests", func(t *testing.T) {
		_, err := parse(models.FormatProctor, jsonl(t,
			map[string]any{"proctor_benchmark": 1, "evaluator": "none", "pass_threshold": 0.5},
			map[string]any{"id": "t1", "intent": "Do it.", "start_urls": []any{"__SHOP__/"}, "sites": []any{"shop"}}))
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), `line 1: field "pass_threshold": only a hidden-tests benchmark ("evaluator": "hidden-tests") is graded by pass rates`)
	})
}
