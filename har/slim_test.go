package har

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlim(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	big := strings.Repeat("x", limit+1)
	atLimit := strings.Repeat(`\n`, limit) // 2 MiB as written, 1 MiB decoded
	in := `{"log":{"version":"1.2","creator":{"name":"Playwright"},"entries":[
	  {"request":{"method":"POST","url":"http://s/a","postData":{"mimeType":"application/x-www-form-urlencoded","text":"q=lamp"}},
	   "response":{"status":200,"content":{"size":5,"mimeType":"text/html; charset=utf-8","text":"<p>hi"}}},
	  {"request":{"method":"GET","url":"http://s/p.png"},
	   "response":{"status":200,"content":{"size":3,"mimeType":"image/png","text":"AAAA","encoding":"base64"}}},
	  {"request":{"method":"GET","url":"http://s/big.json"},
	   "response":{"status":200,"content":{"size":1,"mimeType":"application/json","text":"` + big + `"}}},
	  {"request":{"method":"GET","url":"http://s/x"},
	   "response":{"status":200,"content":{"size":12345678901234567890,"mimeType":"","text":"plain"}}},
	  {"request":{"method":"GET","url":"http://s/lines"},
	   "response":{"status":200,"content":{"mimeType":"text/plain","text":"` + atLimit + `"}}},
	  {"request":{"method":"GET","url":"http://s/video"},
	   "response":{"status":200,"content":{"mimeType":"video/mp4","text":"` + big + `","encoding":"base64"}}},
	  {"request":{"method":"GET","url":"http://s/none"},"response":{"status":204,"content":{"mimeType":"image/png"}}}
	]}}`
	var out bytes.Buffer
	require.NoError(t, Slim(&out, strings.NewReader(in), limit))
	var doc struct {
		Log struct {
			Version string `json:"version"`
			Entries []struct {
				Request struct {
					PostData struct{ Text string } `json:"postData"`
				} `json:"request"`
				Response struct {
					Content map[string]json.RawMessage `json:"content"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, "1.2", doc.Log.Version)
	e := doc.Log.Entries
	require.Len(t, e, 7)
	require.Equal(t, "q=lamp", e[0].Request.PostData.Text)
	require.JSONEq(t, `"<p>hi"`, string(e[0].Response.Content["text"]))
	require.NotContains(t, e[1].Response.Content, "text")
	require.NotContains(t, e[1].Response.Content, "encoding")
	require.JSONEq(t, `"binary body omitted by Proctor"`, string(e[1].Response.Content["comment"]))
	require.NotContains(t, e[2].Response.Content, "text")
	require.JSONEq(t, `"body of 1048577 bytes omitted by Proctor (limit 1048576)"`, string(e[2].Response.Content["comment"]))
	require.JSONEq(t, `"plain"`, string(e[3].Response.Content["text"]))
	require.Equal(t, "12345678901234567890", string(e[3].Response.Content["size"]), "numbers kept exactly")
	require.Len(t, e[4].Response.Content["text"], 2*limit+2, "the limit is on the decoded text")
	require.JSONEq(t, `"binary body omitted by Proctor"`, string(e[5].Response.Content["comment"]), "a large binary body is binary first")
	require.NotContains(t, e[6].Response.Content, "comment", "no body, nothing to leave out")
	require.Contains(t, out.String(), `"creator":{"name":"Playwright"}`, "the rest of the log as written")
	require.Contains(t, out.String(), `{"request":{"method":"POST","url":"http://s/a","postData"`, "untouched entries as written")

	for _, bad := range []string{"{not json", `{"log":{"entries":[1,]}}`, `[]`} {
		require.Error(t, Slim(&bytes.Buffer{}, strings.NewReader(bad), limit), bad)
	}
	out.Reset()
	require.NoError(t, Slim(&out, strings.NewReader(`{"log":{"version":"1.2"}}`), limit), "a log without entries is copied")
	require.Equal(t, `{"log":{"version":"1.2"}}`, out.String())
}
