package bundle

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"fmt"
	"github.com/stretchr/testify/require"
	"math/rand/v2"
	"unicode/utf8"
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

func TestScanHAR(t *testing.T) {
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
		{"not an object", `[]`, "an array where an object was expected", 0},
		{"log not an object", `{"log": []}`, `"log" is not an object`, 0},
		{"entries not an array", `{"log": {"entries": {}}}`, `"entries" is not an array`, 0},
		{"no log", `{"logs": {"entries": []}}`, `no "log" object`, 0},
		{"no entries", `{"log": {}}`, `no "entries" array`, 0},
		{"a string", `"log"`, "a string where an object was expected", 0},
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
		{"truncated", `{"log": {"entries": [{"a": "b`, "ends too early", 0},
		{"two documents", `{"log": {"entries": []}} {}`, "after the document", 0},
		{"bad literal", `{"log": {"entries": [nul]}}`, "invalid literal", 0},
		{"empty", ``, "ends too early", 0},
		{"missing colon", `{"log" {"entries": []}}`, "':' was expected", 0},
		{"too deep", `{"log": {"entries": [` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `]}}`, "nested too deeply", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			scan, problem, err := scanHAR(strings.NewReader(c.doc), 1<<20)
			require.NoError(t, err)
			if c.problem == "" {
				require.Empty(t, problem)
				require.Equal(t, c.entries, scan.Entries)
				require.True(t, json.Valid(bytes.TrimPrefix([]byte(c.doc), []byte("\xef\xbb\xbf"))), "the case itself is valid JSON")
				return
			}
			require.Contains(t, problem, c.problem)
		})
	}
	t.Run("over the limit", func(t *testing.T) {
		t.Parallel()
		doc := testHAR(50, 100)
		_, problem, err := scanHAR(bytes.NewReader(doc), int64(len(doc)))
		require.NoError(t, err)
		require.Empty(t, problem, "exactly at the limit is accepted")
		_, problem, err = scanHAR(bytes.NewReader(doc), int64(len(doc)-1))
		require.NoError(t, err)
		require.Equal(t, "the HAR is over the limit of "+humanBytes(int64(len(doc)-1)), problem)
	})
	t.Run("read error", func(t *testing.T) {
		t.Parallel()
		boom := io.ErrClosedPipe
		_, _, err := scanHAR(io.MultiReader(strings.NewReader(`{"log": {"entries": ["abc`), errReader{boom}), 1<<20)
		require.ErrorIs(t, err, boom)
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestScanHAR_AgreesWithEncodingJSON checks the scanner's verdict on
// mutations of a HAR against encoding/json's.
func TestScanHAR_AgreesWithEncodingJSON(t *testing.T) {
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
		_, problem, err := scanHAR(bytes.NewReader(doc), 1<<20)
		require.NoError(t, err)
		valid := json.Valid(doc) && utf8.Valid(doc) // encoding/json lets invalid UTF-8 through
		if problem == "" {
			require.True(t, valid, "scanner accepted invalid JSON: %q", doc)
		} else if valid {
			require.NotContains(t, problem, "not valid JSON", "scanner refused valid JSON: %q", doc)
		}
	}
}

func BenchmarkScanHAR(b *testing.B) {
	doc := testHAR(4096, 4096)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, problem, err := scanHAR(bytes.NewReader(doc), 1<<30); problem != "" || err != nil {
			b.Fatal(problem, err)
		}
	}
}

func TestCleanName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, clean string
		dir         bool
		reason      string
	}{
		{"107/agent_response.json", "107/agent_response.json", false, ""},
		{"./107/", "107", true, ""},
		{"./", "", true, ""},
		{"a//b/./c", "a/b/c", false, ""},
		{"a/b..c/...", "a/b..c/...", false, ""},
		{"café/日本.png", "café/日本.png", false, ""},
		{"../x", "", false, `".."`},
		{"a/../../x", "", false, `".."`},
		{"a/..", "", false, `".."`},
		{"/etc/passwd", "", false, "absolute path"},
		{"C:/Windows/x", "", false, "absolute path (drive letter)"},
		{`a\..\x`, "", false, "backslash"},
		{"a\x00b", "", false, "control character"},
		{"a\nb", "", false, "control character"},
		{"caf\xe9", "", false, "not valid UTF-8"},
	}
	for _, c := range cases {
		clean, dir, reason := cleanName(c.name)
		if c.reason != "" {
			require.Contains(t, reason, c.reason, c.name)
			continue
		}
		require.Empty(t, reason, c.name)
		require.Equal(t, c.clean, clean, c.name)
		require.Equal(t, c.dir, dir, c.name)
	}
	require.Equal(t, "caf\uFFFD\uFFFD", printableName("caf\xe9\x01"))
}

func TestIgnoredName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"__MACOSX/107/._a.json": true, "x/__MACOSX/a": true, "__MACOSX": true, ".DS_Store": true, "107/.DS_Store": true,
		"107/._network.har": true, "e/step_3.pkl.gz": true, "e/exp_args.pkl": true,
		"107/agent_response.json": false, "MACOSX/a": false, "107/.missing": false, "a.pkl.txt": false,
	} {
		require.Equal(t, want, ignoredName(name), name)
	}
}

func TestHumanBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0: "0 bytes", 900: "900 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 512 << 20: "512 MiB", 8 << 30: "8 GiB",
		1<<20 + 1: "1048577 bytes", 3 << 40: "3 TiB",
	} {
		require.Equal(t, want, humanBytes(n), n)
	}
}

func TestCompareIDs(t *testing.T) {
	t.Parallel()
	ids := []string{"abc", "10", "9", "108", "a1", "0"}
	sortIDs(ids)
	require.Equal(t, []string{"0", "9", "10", "108", "a1", "abc"}, ids)
	require.Equal(t, -1, compareNumbered("t/2_full_screenshot.png", "t/10_full_screenshot.png"))
	require.Equal(t, -1, compareNumbered("t/10.png", "t/final.png"))
	require.Equal(t, 1, compareNumbered("t/b.png", "t/a.png"))
}

func sortIDs(ids []string) {
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if compareIDs(ids[j], ids[i]) < 0 {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
}

func TestAgentLabNames(t *testing.T) {
	t.Parallel()
	re := agentLabFolder()
	for folder, want := range map[string][2]string{
		"2024-10-01_12-30-00_GenericAgent-gpt-4o_on_webarena.310_42":      {"GenericAgent-gpt-4o", "webarena.310"},
		"2024-10-01_12-30-00_GenericAgent-gpt-4o_on_webarena.310_42_1":    {"GenericAgent-gpt-4o", "webarena.310"},
		"GenericAgent_on_workarena.servicenow.order-ipad-pro_7":           {"GenericAgent", "workarena.servicenow.order-ipad-pro"},
		"MyAgent_on_webarena.12":                                          {"MyAgent", "webarena.12"},
		"2025-01-02_03-04-05_Agent_with_underscores_on_miniwob.click-a_3": {"Agent_with_underscores", "miniwob.click-a"},
	} {
		m := re.FindStringSubmatch(folder)
		require.NotNil(t, m, folder)
		require.Equal(t, want, [2]string{m[1], m[2]}, folder)
	}
	require.Nil(t, re.FindStringSubmatch("results-2024"))
	require.Equal(t, "310", agentLabTaskID("webarena.310"))
	require.Equal(t, "servicenow.order-ipad-pro", agentLabTaskID("workarena.servicenow.order-ipad-pro"))
	require.Equal(t, "310", agentLabTaskID("310"))

	for action, want := range map[string]string{
		`send_msg_to_user("The answer is 42")`:   `{"type":"answer","text":"The answer is 42"}`,
		`send_msg_to_user('it\'s "done"\nok')`:   `{"type":"answer","text":"it's \"done\"\nok"}`,
		` report_infeasible("no such order") `:   `{"type":"stop","reason":"no such order"}`,
		`click('12')`:                            ``,
		`send_msg_to_user("")`:                   ``,
		`send_msg_to_user(text)`:                 ``,
		`send_msg_to_user("a") ; click('1')`:     ``,
		`send_msg_to_user("<b>bold</b> & more")`: `{"type":"answer","text":"<b>bold</b> & more"}`,
	} {
		raw, ok := agentLabFinal(action)
		require.Equal(t, want != "", ok, action)
		if ok {
			require.JSONEq(t, want, string(raw), action)
		}
	}
}
