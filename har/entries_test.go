package har

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readAll collects what Entries yields.
func readAll(t *testing.T, doc string, o Options) ([]*Entry, error) {
	t.Helper()
	var out []*Entry
	for e, err := range Entries(strings.NewReader(doc), o) {
		if err != nil {
			require.Nil(t, e)
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

const twoEntries = `{"log": {"version": "1.2", "entries": [
  {"pageref": "page@1", "_resourceType": "document", "startedDateTime": "2025-05-01T08:00:00.100Z", "time": 42.5,
   "request": {"method": "POST", "url": "http://shop.test/cart/add", "headers": [{"name": "Accept", "value": "text/html"}],
     "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "sku=usb-c&q=a%20b", "params": [{"name": "sku", "value": "usb-c"}]}},
   "response": {"status": 302, "cookies": [{"name": "cart", "value": "1"}], "content": {"size": 11, "mimeType": "text/html", "text": "<p>moved</p>"}}},
  {"request": {"method": "GET", "url": "http://shop.test/img.png"},
   "response": {"status": 200, "content": {"mimeType": "image/png", "text": "iVBORw0KGgo=", "encoding": "base64"}}}
]}}`

func TestEntries(t *testing.T) {
	t.Parallel()
	t.Run("WithoutBodies", func(t *testing.T) {
		t.Parallel()
		got, err := readAll(t, twoEntries, Options{})
		require.NoError(t, err)
		require.Len(t, got, 2)
		e := got[0]
		require.Equal(t, 0, e.Index)
		require.Equal(t, "page@1", e.Pageref)
		require.Equal(t, "document", e.ResourceType)
		require.Equal(t, "2025-05-01T08:00:00.100Z", e.StartedDateTime)
		require.Equal(t, 42.5, e.Time)
		require.Equal(t, "POST", e.Request.Method)
		require.Equal(t, "http://shop.test/cart/add", e.Request.URL)
		require.Equal(t, []NameValue{{"Accept", "text/html"}}, e.Request.Headers)
		require.Equal(t, &PostData{MimeType: "application/x-www-form-urlencoded", Params: []NameValue{{"sku", "usb-c"}}, Omitted: 17}, e.Request.PostData)
		require.Equal(t, 302, e.Response.Status)
		require.Equal(t, []NameValue{{"cart", "1"}}, e.Response.Cookies)
		require.Equal(t, Content{MimeType: "text/html", Omitted: 12}, e.Response.Content)
		require.Equal(t, 1, got[1].Index)
		require.Nil(t, got[1].Request.PostData)
		require.Equal(t, Content{MimeType: "image/png", Encoding: "base64", Omitted: 12}, got[1].Response.Content)
	})
	t.Run("WithBodies", func(t *testing.T) {
		t.Parallel()
		got, err := readAll(t, twoEntries, Options{RequestBodies: true, ResponseBodies: true})
		require.NoError(t, err)
		require.Equal(t, "sku=usb-c&q=a%20b", got[0].Request.PostData.Text)
		require.Zero(t, got[0].Request.PostData.Omitted)
		require.Equal(t, Content{MimeType: "text/html", Text: "<p>moved</p>"}, got[0].Response.Content)
		require.Equal(t, "iVBORw0KGgo=", got[1].Response.Content.Text)
	})
	t.Run("OneKindOfBody", func(t *testing.T) {
		t.Parallel()
		got, err := readAll(t, twoEntries, Options{RequestBodies: true})
		require.NoError(t, err)
		require.Equal(t, "sku=usb-c&q=a%20b", got[0].Request.PostData.Text)
		require.Empty(t, got[0].Response.Content.Text)
		got, err = readAll(t, twoEntries, Options{ResponseBodies: true, MaxResponseBody: 12})
		require.NoError(t, err)
		require.Empty(t, got[0].Request.PostData.Text)
		require.Equal(t, "<p>moved</p>", got[0].Response.Content.Text, "exactly at the limit")
		got, err = readAll(t, twoEntries, Options{ResponseBodies: true, MaxResponseBody: 11})
		require.NoError(t, err)
		require.Equal(t, Content{MimeType: "text/html", Omitted: 12}, got[0].Response.Content)
	})
	t.Run("Stop", func(t *testing.T) {
		t.Parallel()
		n := 0
		for e, err := range Entries(strings.NewReader(twoEntries+"not read"), Options{}) {
			require.NoError(t, err)
			require.NotNil(t, e)
			n++
			break
		}
		require.Equal(t, 1, n, "a consumer that stops is not handed the rest, nor an error")
	})
	t.Run("Problems", func(t *testing.T) {
		t.Parallel()
		cut := strings.Index(twoEntries, "img.png")
		for name, tc := range map[string]struct {
			doc  string
			kind Kind
			msg  string
			read int
		}{
			"no entries":     {`{"log": {"version": "1.2"}}`, NoEntries, `not a HAR: "log" has no "entries" array`, 0},
			"not an object":  {`{"log": {"entries": [{"request": {"url": "x"}}, 5]}}`, BadEntry, "not a HAR: entry 1 is a number, not an object", 1},
			"wrong type":     {`{"log": {"entries": [{"request": {"method": "GET", "url": 5}}]}}`, BadEntry, "not a HAR: entry 0 has a number where the HAR format has a string (request.url)", 0},
			"wrong headers":  {`{"log": {"entries": [{"request": {"headers": {"a": "b"}}}]}}`, BadEntry, "entry 0 has a object where the HAR format has a []har.NameValue (request.headers)", 0},
			"truncated":      {twoEntries[:cut], Truncated, fmt.Sprintf("the HAR is truncated: the document ends too early, after %d bytes and 1 complete entry", cut), 1},
			"over the limit": {twoEntries, TooLarge, "the HAR is over the limit of 512 bytes", 0},
			"syntax":         {`{"log": {"entries": [{"request": {"url": "x"}} {}]}}`, Syntax, "the HAR is not valid JSON: unexpected '{' where ',' or ']' was expected (byte 48)", 1},
		} {
			o := Options{}
			if tc.kind == TooLarge {
				o.MaxBytes = 512
			}
			got, err := readAll(t, tc.doc, o)
			require.Equal(t, tc.kind, KindOf(err), name)
			require.ErrorContains(t, err, tc.msg, name)
			require.Len(t, got, tc.read, name)
		}
		var he *Error
		_, err := readAll(t, `{"log": {"entries": [{}, {"time": "soon"}]}}`, Options{})
		require.ErrorAs(t, err, &he)
		require.Equal(t, Error{Kind: BadEntry, Entry: 1, Offset: 25, Detail: "has a string where the HAR format has a float64 (time)"}, *he)
	})
}

// TestEntries_OmittedLength: the length recorded for a body left out is
// the length of the text encoding/json decodes, escapes and all.
func TestEntries_OmittedLength(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		`plain`, `a\nb\tc\"d\\e\/f\b\f\r`, `caf\u00e9 日本 😀`, `\u0041\u00e9\u65e5`,
		`\ud83d\ude00`, `\ud83d`, `\ude00`, `\ud83d\ud83d\ude00`, `\ud83dx`, `\ud83d\u0041`, `x\ude00\ud83d`,
		`` + strings.Repeat(`é\u00e9`, 40000), // over the scanner's buffer
	} {
		doc := `{"log": {"entries": [{"response": {"content": {"text": "` + text + `"}}}]}}`
		var want string
		require.NoError(t, json.Unmarshal([]byte(`"`+text+`"`), &want))
		got, err := readAll(t, doc, Options{})
		require.NoError(t, err)
		require.Equal(t, int64(len(want)), got[0].Response.Content.Omitted, text[:min(len(text), 40)])
		for _, limit := range []int64{int64(len(want)) - 1, int64(len(want))} {
			got, err = readAll(t, doc, Options{ResponseBodies: true, MaxResponseBody: limit})
			require.NoError(t, err)
			if limit < int64(len(want)) {
				require.Empty(t, got[0].Response.Content.Text)
				require.Equal(t, int64(len(want)), got[0].Response.Content.Omitted)
			} else {
				require.Equal(t, want, got[0].Response.Content.Text)
			}
		}
	}
}

// TestEntries_AgreeWithEncodingJSON: every entry reads as encoding/json
// decodes the whole document, with or without bodies.
func TestEntries_AgreeWithEncodingJSON(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile("testdata/timeline.har")
	require.NoError(t, err)
	doc := testHAR(200, 3000)
	for _, doc := range [][]byte{fixture, doc} {
		var whole struct {
			Log struct {
				Entries []*Entry `json:"entries"`
			} `json:"log"`
		}
		require.NoError(t, json.Unmarshal(doc, &whole))
		i := 0
		for e, err := range Entries(bytes.NewReader(doc), Options{RequestBodies: true, ResponseBodies: true}) {
			require.NoError(t, err)
			want := whole.Log.Entries[i]
			want.Index = i
			require.Equal(t, want, e)
			i++
		}
		require.Len(t, whole.Log.Entries, i)
		i = 0
		for e, err := range Entries(bytes.NewReader(doc), Options{}) {
			require.NoError(t, err)
			want := whole.Log.Entries[i]
			if p := want.Request.PostData; p != nil {
				p.Omitted, p.Text = int64(len(p.Text)), ""
			}
			if r := want.Response; r != nil {
				r.Content.Omitted, r.Content.Text = int64(len(r.Content.Text)), ""
			}
			require.Equal(t, want, e, fmt.Sprint(i))
			i++
		}
	}
}

// TestEntries_Pruned: the members no Entry field reads are left out of an
// entry before it is decoded, wherever they stand among the others, and
// every member an Entry field reads is kept.
func TestEntries_Pruned(t *testing.T) {
	t.Parallel()
	// Every JSON member an Entry reads, by the place it is read at.
	fields := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ","); name != "-" {
				out = append(out, name)
			}
		}
		return out
	}
	for at, v := range map[int]any{atEntry: Entry{}, atRequest: Request{}, atPostData: PostData{}, atResponse: Response{}, atContent: Content{}} {
		for _, name := range fields(v) {
			require.True(t, entryReads(at, name), "%T.%s is read", v, name)
		}
		require.False(t, entryReads(at, "timings"))
	}

	const doc = `{"log": {"entries": [
	  {"cache": {}, "request": {"cookies": [{"name": "a", "value": "b"}], "url": "http://s/1", "queryString": [] },
	   "response": {"headers": [{"name": "X", "value": "y"}], "status": 200, "content": {"size": 3, "mimeType": "text/plain", "compression": 0}, "redirectURL": ""},
	   "timings": {"wait": 1}},
	  {"timings": {}, "cache": {}},
	  {"request": {"url": "http://s/2"}, "serverIPAddress": "10.0.0.1" ,
	   "_initiator": {"type": "script", "stack": {"callFrames": [{"url": "http://s/app.js"}]}}}
	]}}`
	var whole struct {
		Log struct {
			Entries []*Entry `json:"entries"`
		} `json:"log"`
	}
	require.NoError(t, json.Unmarshal([]byte(doc), &whole))
	var raws []string
	_, err := walk(strings.NewReader(doc), Options{}, nil, func(e *rawEntry) error {
		raws = append(raws, string(e.json))
		var got Entry
		require.NoError(t, json.Unmarshal(e.json, &got), string(e.json))
		got.Index = e.index
		want := whole.Log.Entries[e.index]
		want.Index = e.index
		require.Equal(t, want, &got)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{
		`{ "request": { "url": "http://s/1"},
	   "response": { "status": 200, "content": { "mimeType": "text/plain"}}}`,
		`{}`,
		`{"request": {"url": "http://s/2"}}`,
	}, raws)
}
