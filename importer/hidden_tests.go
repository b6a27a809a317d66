package importer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"slices"
	"strconv"
	"strings"

	"proctor/hiddentest"
	"proctor/models"
)

// Limits of a hidden-tests task's reference captures. A capture is the
// screenshot of one page region, so a few hundred KiB is typical; the caps
// keep a hostile file from making the importer decode a huge image.
const (
	MaxCaptureBytes = 2 << 20 // the decoded PNG
	MaxCaptureSide  = 4096    // width and height, in pixels
)

// pngSignature starts every PNG file.
const pngSignature = "\x89PNG\r\n\x1a\n"

// hiddenEval is the eval object of a hidden-tests task line.
type hiddenEval struct {
	Suite    json.RawMessage `json:"suite"`
	Captures json.RawMessage `json:"captures"`
}

// hiddenTestsEval reads a hidden-tests task's eval: it parses and validates
// the suite with its captures present, stores the suite's canonical JSON as
// the task's evaluation spec (without the captures) and the decoded images as
// its reference captures. Every problem names the JSON path below eval.
func hiddenTestsEval(where string, t *models.Task, eval json.RawMessage) error {
	if isNull(eval) {
		return fieldErr(where, "eval", `missing: the evaluator is %s: give {"suite": {…}, "captures": {"<name>": "<base64 PNG>"}}`, models.EvaluatorHiddenTests)
	}
	if jsonKind(eval) != "an object" {
		return fieldErr(where, "eval", `expected an object {"suite", "captures"}, found %s`, jsonKind(eval))
	}
	var ev hiddenEval
	dec := json.NewDecoder(bytes.NewReader(eval))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fieldErr(where, "eval."+strings.Trim(name, `"`), `unknown field: eval holds "suite" and "captures" only`)
		}
		return decodeErr(where, err)
	}
	if isNull(ev.Suite) {
		return fieldErr(where, "eval.suite", "missing: the task's hidden-test suite (docs/hidden-tests.md)")
	}
	ids := suiteTestIDs(ev.Suite)
	suite, err := hiddentest.Parse(bytes.NewReader(ev.Suite))
	if err != nil {
		return suiteErr(where, err, ids)
	}
	if len(t.Sites) > 0 && !slices.Contains(t.Sites, suite.Site) {
		return fieldErr(where, "eval.suite.site", "%q is not a site of the task (%s)", suite.Site, strings.Join(t.Sites, ", "))
	}
	captures, err := referenceCaptures(where, ev.Captures)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(captures))
	for _, c := range captures {
		have[c.Name] = true
	}
	if err := hiddentest.Validate(suite, func(name string) bool { return have[name] }); err != nil {
		return suiteErr(where, err, ids)
	}
	used := suite.Captures()
	for _, c := range captures {
		if !slices.Contains(used, c.Name) {
			return fieldErr(where, captureField(c.Name), "unused capture: no checkpoint of the suite names it (the suite's captures: %s)", listOrNone(used))
		}
	}
	canonical, err := json.Marshal(suite)
	if err != nil {
		return &models.Error{Code: models.EINTERNAL, Message: where + ": the suite cannot be encoded", Err: err}
	}
	if t.EvalSpec, err = canonicalJSON(canonical); err != nil {
		return &models.Error{Code: models.EINTERNAL, Message: where + ": the suite cannot be encoded", Err: err}
	}
	t.ReferenceCaptures = captures
	return nil
}

// referenceCaptures decodes the captures object (name → base64 PNG) into
// captures sorted by name. A name given twice is refused: JSON decoding would
// silently keep the last one.
func referenceCaptures(where string, raw json.RawMessage) ([]models.ReferenceCapture, error) {
	if isNull(raw) {
		return nil, nil
	}
	if jsonKind(raw) != "an object" {
		return nil, fieldErr(where, "eval.captures", "expected an object of capture name → base64 PNG, found %s", jsonKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, decodeErr(where, err)
	}
	var out []models.ReferenceCapture
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, decodeErr(where, err)
		}
		name, _ := tok.(string)
		field := captureField(name)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, decodeErr(where, err)
		}
		if seen[name] {
			return nil, fieldErr(where, field, "given twice")
		}
		seen[name] = true
		var encoded string
		if err := json.Unmarshal(value, &encoded); err != nil {
			return nil, fieldErr(where, field, "expected a base64 PNG string, found %s", jsonKind(value))
		}
		c, err := decodeCapture(where, field, name, encoded)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b models.ReferenceCapture) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// decodeCapture decodes and checks one base64 PNG. The size is checked on the
// encoded text and the dimensions on the header before the pixels are
// decoded, so an oversized image costs nothing.
func decodeCapture(where, field, name, encoded string) (models.ReferenceCapture, error) {
	if base64.StdEncoding.DecodedLen(len(encoded)) > MaxCaptureBytes+2 {
		return models.ReferenceCapture{}, models.Errorf(models.ETOOLARGE, "%s: field %q: larger than %s", where, field, formatBytes(MaxCaptureBytes))
	}
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return models.ReferenceCapture{}, fieldErr(where, field, "not base64 (standard alphabet, padded): %v", err)
	}
	if len(data) > MaxCaptureBytes {
		return models.ReferenceCapture{}, models.Errorf(models.ETOOLARGE, "%s: field %q: larger than %s", where, field, formatBytes(MaxCaptureBytes))
	}
	if !bytes.HasPrefix(data, []byte(pngSignature)) {
		return models.ReferenceCapture{}, fieldErr(where, field, "not a PNG image (captures are PNG files, base64-encoded)")
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return models.ReferenceCapture{}, fieldErr(where, field, "the PNG cannot be read: %v", err)
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > MaxCaptureSide || cfg.Height > MaxCaptureSide {
		return models.ReferenceCapture{}, models.Errorf(models.ETOOLARGE, "%s: field %q: %d × %d pixels: at most %d × %d", where, field, cfg.Width, cfg.Height, MaxCaptureSide, MaxCaptureSide)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		return models.ReferenceCapture{}, fieldErr(where, field, "the PNG cannot be decoded: %v", err)
	}
	return models.ReferenceCapture{Name: name, PNG: data, SHA256: sha256Hex(data), Width: cfg.Width, Height: cfg.Height}, nil
}

// suiteErr turns a hiddentest error into the importer's: each problem's path
// goes below eval.suite, and a problem inside a test names the test's id.
func suiteErr(where string, err error, ids []string) error {
	var verr *hiddentest.ValidationError
	if !errors.As(err, &verr) {
		return &models.Error{Code: models.EINVALID, Message: where + `: field "eval.suite": cannot be read`, Err: err}
	}
	lines := make([]string, 0, len(verr.Problems)+1)
	for _, p := range verr.Problems {
		field := "eval.suite"
		if p.Path != "" {
			field += "." + p.Path
		}
		msg := p.Message
		if i, ok := testIndex(p.Path); ok && i < len(ids) && ids[i] != "" {
			msg = "test " + quoteID(ids[i]) + ": " + msg
		}
		lines = append(lines, fmt.Sprintf("%s: field %q: %s", where, field, msg))
	}
	if verr.More > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more problems", verr.More))
	}
	code := models.EINVALID
	if verr.TooLarge {
		code = models.ETOOLARGE
	}
	return &models.Error{Code: code, Message: strings.Join(lines, "\n"), Err: err}
}

// testIndex finds the test a problem's path is in: 3 for tests[3].title.
func testIndex(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "tests[")
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	return i, err == nil && i >= 0
}

// suiteTestIDs reads the test ids of a suite, leniently, so that problems can
// name their test even when the suite itself is refused.
func suiteTestIDs(raw json.RawMessage) []string {
	var loose struct {
		Tests []struct {
			ID any `json:"id"`
		} `json:"tests"`
	}
	if json.Unmarshal(raw, &loose) != nil {
		return nil
	}
	ids := make([]string, len(loose.Tests))
	for i, t := range loose.Tests {
		if id, ok := t.ID.(string); ok {
			ids[i] = id
		}
	}
	return ids
}

// captureField is the JSON path of one capture: eval.captures.cart-table, or
// eval.captures["odd name"] when the name is not plain.
func captureField(name string) string {
	plain := name != ""
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			plain = false
			break
		}
	}
	if !plain {
		return "eval.captures[" + strconv.Quote(name) + "]"
	}
	return "eval.captures." + name
}

// listOrNone lists names for a message.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
