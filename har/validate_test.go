package har

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// testHAR is a HAR of n entries whose responses hold size bytes of page
// text with random ids (so it compresses like a real HAR).
func testHAR(n, size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var entries []any
	for i := range n {
		var text strings.Builder
		for text.Len() < size {
			fmt.Fprintf(&text, "<p>item %016x — café %d</p>", rng.Uint64(), rng.IntN(1000))
		}
		entries = append(entries, map[string]any{
			"startedDateTime": "2025-10-19T14:40:00.000Z", "time": 12.5,
			"request":  map[string]any{"method": "GET", "url": fmt.Sprintf("http://shopping.test/p/%d?q=a%%20b", i), "headers": []any{}},
			"response": map[string]any{"status": 200, "content": map[string]any{"size": text.Len(), "text": text.String()}},
		})
	}
	b, err := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": entries}})
	if err != nil {
		panic(err)
	}
	return b
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, problem string
		entries            int
	}{
		{"minimal", `{"log": {"entries": []}}`, "", 0},
		{"entries counted", `{"log": {"version": "1.2", "entries": [{"a": 1}, {"b": [1, 2, {"c": null}]}, {}]}}`, "", 3},
		{"byte order mark", "\xef\xbb\xbf{\"log\": {\"entries\": [{}]}}", "", 1},
		{"whitespace around", " \n\t{\"log\":{\"entries\":[ ]}} \r\n", "", 0},
		{"nested entries keys are not the log's", `{"log": {"x": {"entries": [1]}, "entries": [{"entries": []}]}}`, "", 1},
		{"escapes and unicode", `{"log": {"entries": [{"t": "a\"b\\c\/d\b\f\n\r\t\u00e9 é 日本 😀"}]}}`, "", 1},
		{"numbers", `{"log": {"entries": [0, -0, 1.5, -2e10, 3E+2, 4e-3, 123456789012345678901234567890]}}`, "", 7},
		{"literals", `{"log": {"entries": [true, false, null]}}`, "", 3},
		{"not an object", `[]`, "not a HAR: the document is an array, not an object (byte 1)", 0},
		{"log not an object", `{"log": []}`, `"log" is an array, not an object`, 0},
		{"entries not an array", `{"log": {"entries": {}}}`, `"entries" is an object, not an array`, 0},
		{"no log", `{"logs": {"entries": []}}`, `no "log" object`, 0},
		{"no entries", `{"log": {}}`, `no "entries" array`, 0},
		{"a string", `"log"`, "the document is a string, not an object", 0},
		{"trailing comma", `{"log": {"entries": [1,]}}`, "not valid JSON", 0},
		{"leading zero", `{"log": {"entries": [01]}}`, "not valid JSON", 0},
		{"bare minus", `{"log": {"entries": [-]}}`, "invalid number", 0},
		{"dot without digits", `{"log": {"entries": [1.]}}`, "invalid number", 0},
		{"exponent without digits", `{"log": {"entries": [1e]}}`, "invalid number", 0},
		{"bad escape", `{"log": {"entries": ["\x"]}}`, "invalid escape", 0},
		{"bad unicode escape", `{"log": {"entries": ["\u12G4"]}}`, `invalid \u escape`, 0},
		{"control character", "{\"log\": {\"entries\": [\"a\x01\"]}}", "control character", 0},
		{"invalid UTF-8", "{\"log\": {\"entries\": [\"\xc3\x28\"]}}", "invalid UTF-8", 0},
		{"overlong UTF-8", "{\"log\": {\"entries\": [\"\xc0\xaf\"]}}", "invalid UTF-8", 0},
		{"surrogate in UTF-8", "{\"log\": {\"entries\": [\"\xed\xa0\x80\"]}}", "invalid UTF-8", 0},
		{"truncated", `{"log": {"entries": [{"a": "b`, "the HAR is truncated: the document ends too early, after 29 bytes and 0 complete entries", 0},
		{"two documents", `{"log": {"entries": []}} {}`, "after the document", 0},
		{"bad literal", `{"log": {"entries": [nul]}}`, "invalid literal", 0},
		{"empty", ``, "the HAR is empty", 0},
		{"only white space", " \n", "the HAR is empty", 0},
		{"gzip", "\x1f\x8b\x08\x00", "gzip-compressed", 0},
		{"missing colon", `{"log" {"entries": []}}`, "':' was expected", 0},
		{"too deep", `{"log": {"entries": [` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `]}}`, "nested too deeply", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n, err := Validate(strings.NewReader(c.doc), 1<<20)
			if c.problem == "" {
				require.NoError(t, err)
				require.Equal(t, c.entries, n)
				require.True(t, json.Valid(bytes.TrimPrefix([]byte(c.doc), []byte("\xef\xbb\xbf"))), "the case itself is valid JSON")
				return
			}
			require.NotZero(t, KindOf(err), "a problem with the content, not a read error: %v", err)
			require.Contains(t, err.Error(), c.problem)
		})
	}
	t.Run("over the limit", func(t *testing.T) {
		t.Parallel()
		doc := testHAR(50, 100)
		_, err := Validate(bytes.NewReader(doc), int64(len(doc)))
		require.NoError(t, err, "exactly at the limit is accepted")
		_, err = Validate(bytes.NewReader(doc), int64(len(doc)-1))
		require.Equal(t, TooLarge, KindOf(err))
		require.EqualError(t, err, "the HAR is over the limit of "+models.FormatBytes(int64(len(doc)-1)))
		_, err = Validate(bytes.NewReader(doc), 1<<10)
		require.EqualError(t, err, "the HAR is over the limit of 1 KiB")
	})
	t.Run("read error", func(t *testing.T) {
		t.Parallel()
		boom := io.ErrClosedPipe
		_, err := Validate(io.MultiReader(strings.NewReader(`{"log": {"entries": ["abc`), errReader{boom}), 1<<20)
		require.ErrorIs(t, err, boom)
		require.Zero(t, KindOf(err), "a read error is not a problem with the HAR")
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestValidate_AgreesWithEncodingJSON checks the scanner's verdict on
// mutations of a HAR against encoding/json's.
func TestValidate_AgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	base := testHAR(3, 60)
	seed := uint64(7)
	next := func() uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return seed >> 33 }
	alphabet := []byte("{}[]\",:\\ 0123456789.eE+-truefalsn\x00\x1f\x7f\xc3\xa9\xff")
	for i := range 5000 {
		doc := bytes.Clone(base)
		for range 1 + i%3 {
			doc[next()%uint64(len(doc))] = alphabet[next()%uint64(len(alphabet))]
		}
		_, err := Validate(bytes.NewReader(doc), 1<<20)
		valid := json.Valid(doc) && utf8.Valid(doc) // encoding/json lets invalid UTF-8 through
		if err == nil {
			require.True(t, valid, "scanner accepted invalid JSON: %q", doc)
		} else if valid {
			require.NotEqual(t, Syntax, KindOf(err), "scanner refused valid JSON: %q", doc)
		}
	}
}

// TestValidate_ReplacementCharAtBufferEdge puts a correctly encoded U+FFFD,
// and broken sequences, at every offset around the end of the scanner's
// 64 KiB buffer, and reads documents through readers that return one byte
// or half a buffer at a time, so characters straddle every read.
func TestValidate_ReplacementCharAtBufferEdge(t *testing.T) {
	t.Parallel()
	const prefix = `{"log":{"entries":[{"response":{"content":{"text":"`
	doc := func(start int, char string) string {
		return prefix + strings.Repeat("a", start-len(prefix)) + char + `"}}}]}}`
	}
	for start := 64<<10 - 4; start <= 64<<10+1; start++ {
		for _, char := range []string{"\uFFFD", "é", "日", "😀", "\uFFFD\uFFFD"} {
			_, err := Validate(strings.NewReader(doc(start, char)), 1<<20)
			require.NoError(t, err, "%q at byte %d", char, start)
		}
		for _, broken := range []string{"\xEF\xBF", "\xEF\xBF\xBF\xBF", "\xED\xA0\x80", "\xC0\xAF", "\xFF"} {
			_, err := Validate(strings.NewReader(doc(start, broken)), 1<<20)
			require.ErrorContains(t, err, "invalid UTF-8", "%q at byte %d", broken, start)
		}
	}
	small := doc(len(prefix)+10, strings.Repeat("a\uFFFDé日😀", 20))
	for name, reader := range map[string]io.Reader{
		"one byte": iotest.OneByteReader(strings.NewReader(small)),
		"half":     iotest.HalfReader(strings.NewReader(small)),
	} {
		_, err := Validate(reader, 1<<20)
		require.NoError(t, err, name)
	}
}

func TestLimitReader(t *testing.T) {
	t.Parallel()
	data := strings.Repeat("x", 100)
	got, err := io.ReadAll(LimitReader(strings.NewReader(data), 100))
	require.NoError(t, err)
	require.Equal(t, data, string(got), "exactly the limit reads whole")
	_, err = io.ReadAll(LimitReader(strings.NewReader(data+"y"), 100))
	require.Equal(t, TooLarge, KindOf(err))
	require.EqualError(t, err, "the HAR is over the limit of 100 bytes")

	// Read through the entry reader, the limit's error is the reader's.
	var hit error
	for _, err := range Entries(LimitReader(bytes.NewReader(testHAR(5, 100)), 200), Options{}) {
		hit = err
	}
	require.EqualError(t, hit, "the HAR is over the limit of 200 bytes")
}

func BenchmarkValidate(b *testing.B) {
	doc := testHAR(4096, 4096)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := Validate(bytes.NewReader(doc), 1<<30); err != nil {
			b.Fatal(err)
		}
	}
}
