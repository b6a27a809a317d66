package har

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/internal/testenv"
)

// agreeWithEncodingJSON checks every entry of doc, captured as Entries
// captures it: decodeEntry either gives what encoding/json gives (and
// encoding/json no error) or declines. It returns how many it declined.
func agreeWithEncodingJSON(t testing.TB, doc []byte, o Options) (entries, declined int) {
	t.Helper()
	_, err := walk(strings.NewReader(string(doc)), o, nil, func(raw *rawEntry) error {
		entries++
		var want Entry
		wantErr := json.Unmarshal(raw.json, &want)
		got, ok := decodeEntry(raw.json)
		if !ok {
			declined++
			return nil
		}
		require.NoError(t, wantErr, "decodeEntry read %s, which encoding/json refuses", raw.json)
		require.Equal(t, &want, got, "%s", raw.json)
		return nil
	})
	if err != nil && KindOf(err) == 0 {
		require.NoError(t, err)
	}
	return entries, declined
}

// TestDecodeEntry_AgreesWithEncodingJSON: entries of every shape read as
// encoding/json reads them; the unusual ones are left to it.
func TestDecodeEntry_AgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		entry    string
		declined bool // left to encoding/json
	}{
		{entry: `{}`},
		{entry: `{"pageref": "p", "startedDateTime": "2025-05-01T08:00:00Z", "time": 1.5e2, "_resourceType": "xhr",
		  "request": {"method": "GET", "url": "http://s/a?b=c", "headers": [{"name": "Accept", "value": "text/html"}, null, {}],
		    "postData": {"mimeType": "text/plain", "text": "x", "params": []}},
		  "response": {"status": -0, "cookies": [], "content": {"mimeType": "text/html", "text": "<p>", "encoding": ""}}}`},
		{entry: ` { "request" : { "url" : "u" , "headers" : [ { "name" : "a" , "value" : "b" , "comment" : {"x": [1, true, null, "y\"]"]} } ] } } `},
		{entry: `{"request": {"headers": null, "postData": null}, "response": null, "time": null, "pageref": null}`},
		{entry: `{"request": null, "response": {"content": null, "status": null, "cookies": null}}`},
		{entry: `{"request": {"headers": [{"name": "sec-ch-ua", "value": "\"Chromium\";v=\"141\"\\ \/ \b\f\n\r\t"}]}}`},
		{entry: `{"request": {"url": "\u00e9\ud83d\ude00 \ud800 \udc00x", "method": "G\u0045T"}}`},
		{entry: `{"request": {"url": "héllo ✓ 𝄞"}}`},
		{entry: `{"response": {"status": 9223372036854775807}, "time": 1e308}`},
		// encoding/json refuses these (the caller gets its error).
		{entry: `{"response": {"status": 200.0}}`, declined: true},
		{entry: `{"response": {"status": 2e2}}`, declined: true},
		{entry: `{"response": {"status": 92233720368547758070}}`, declined: true},
		{entry: `{"response": {"status": "200"}}`, declined: true},
		{entry: `{"time": "1"}`, declined: true},
		{entry: `{"time": 1e999}`, declined: true},
		{entry: `{"request": {"url": 1}}`, declined: true},
		{entry: `{"request": {"headers": {}}}`, declined: true},
		{entry: `{"request": {"headers": ["a"]}}`, declined: true},
		{entry: `{"request": {"headers": [{"name": 1}]}}`, declined: true},
		{entry: `{"request": []}`, declined: true},
		{entry: `{"response": "ok"}`, declined: true},
		{entry: `[]`, declined: true},
		{entry: `"entry"`, declined: true},
		// encoding/json reads these its own way: merged, folded or unescaped keys.
		{entry: `null`, declined: true},
		{entry: `{"request": {"headers": [{"name": "a", "value": "1"}]}, "request": {"headers": [{"name": "b"}]}}`, declined: true},
		{entry: `{"request": {"url": "a", "url": "b"}}`, declined: true},
		{entry: `{"response": {"status": 1}, "response": {"content": {}}}`, declined: true},
		{entry: `{"request": {"headers": [{"Name": "a", "VALUE": "b"}]}}`, declined: true},
		{entry: `{"request": {"headers": [{"n\u0061me": "a"}]}}`, declined: true},
		{entry: `{"request": {"headers": [{"ſ": "a", "name": "b"}]}}`, declined: true},
	} {
		doc := `{"log": {"entries": [` + c.entry + `]}}`
		n, declined := agreeWithEncodingJSON(t, []byte(doc), Options{RequestBodies: true, ResponseBodies: true})
		require.Equal(t, 1, n, c.entry)
		require.Equal(t, c.declined, declined == 1, c.entry)
	}
}

// TestDecodeEntry_RealHARs: the recorded HARs (the timeline fixture, the
// WebArena-Verified demo recording and every network log of its parity
// corpus) read as encoding/json reads them, and none is left to it.
func TestDecodeEntry_RealHARs(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile("testdata/timeline.har")
	require.NoError(t, err)
	n, declined := agreeWithEncodingJSON(t, fixture, Options{RequestBodies: true, ResponseBodies: true})
	require.Positive(t, n)
	require.Zero(t, declined)

	data := testenv.SharedDataDir(t)
	demo, err := os.ReadFile(filepath.Join(data, "webarena-verified", "demo-outputs", "108", "network.har"))
	require.NoError(t, err)
	for _, o := range []Options{{}, {RequestBodies: true, ResponseBodies: true}} {
		n, declined := agreeWithEncodingJSON(t, demo, o)
		require.Equal(t, 359, n)
		require.Zero(t, declined)
	}

	f, err := os.Open(filepath.Join(data, "webarena-verified", "parity", "corpus.tgz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	hars, entries, declines := 0, 0, 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if !strings.HasSuffix(h.Name, ".har") {
			continue
		}
		doc, err := io.ReadAll(tr)
		require.NoError(t, err)
		hars++
		n, declined := agreeWithEncodingJSON(t, doc, Options{RequestBodies: true, ResponseBodies: true})
		entries, declines = entries+n, declines+declined
	}
	require.Equal(t, 10643, hars)
	t.Logf("%d entries in %d HARs, %d left to encoding/json", entries, hars, declines)
	require.Less(t, declines*100, entries, "the hand-written reader reads almost every entry")
}

// FuzzDecodeEntry: whatever an entry holds, decodeEntry agrees with
// encoding/json or leaves the entry to it.
func FuzzDecodeEntry(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `{"request": {"url": "u", "headers": [{"name": "a", "value": "\"b\""}]}}`,
		`{"response": {"status": 200, "cookies": [null], "content": {"text": "\ud800"}}}`,
		`{"time": -1.5e-3, "request": {"postData": {"params": [{"value": "v"}]}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		doc := `{"log": {"entries": [` + entry + `]}}`
		agreeWithEncodingJSON(t, []byte(doc), Options{RequestBodies: true, ResponseBodies: true})
	})
}

// BenchmarkEntries_DemoHAR reads the WebArena-Verified demo recording (805
// KB, 359 entries, mostly headers) entry by entry without bodies, as the
// network checks do, against only validating it (Validate) in the same run:
// x-validate is reading's time over validating's.
func BenchmarkEntries_DemoHAR(b *testing.B) {
	doc, err := os.ReadFile(filepath.Join(testenv.SharedDataDir(b), "webarena-verified", "demo-outputs", "108", "network.har"))
	require.NoError(b, err)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var read, validated time.Duration
	for b.Loop() {
		start := time.Now()
		for _, err := range Entries(bytes.NewReader(doc), Options{}) {
			if err != nil {
				b.Fatal(err)
			}
		}
		read += time.Since(start)
		start = time.Now()
		if _, err := Validate(bytes.NewReader(doc), 0); err != nil {
			b.Fatal(err)
		}
		validated += time.Since(start)
	}
	b.ReportMetric(read.Seconds()/validated.Seconds(), "x-validate")
}
