package episode

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlimHAR(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", maxHARTextBody+1)
	in := `{"log":{"version":"1.2","entries":[
	  {"request":{"method":"POST","url":"http://s/a","postData":{"mimeType":"application/x-www-form-urlencoded","text":"q=lamp"}},
	   "response":{"status":200,"content":{"size":5,"mimeType":"text/html; charset=utf-8","text":"<p>hi"}}},
	  {"request":{"method":"GET","url":"http://s/p.png"},
	   "response":{"status":200,"content":{"size":3,"mimeType":"image/png","text":"AAAA","encoding":"base64"}}},
	  {"request":{"method":"GET","url":"http://s/big.json"},
	   "response":{"status":200,"content":{"size":1,"mimeType":"application/json","text":"` + big + `"}}},
	  {"request":{"method":"GET","url":"http://s/x"},
	   "response":{"status":200,"content":{"size":12345678901234567890,"mimeType":"","text":"plain"}}}
	]}}`
	out, err := slimHAR([]byte(in))
	require.NoError(t, err)
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
	require.NoError(t, json.Unmarshal(out, &doc))
	require.Equal(t, "1.2", doc.Log.Version)
	e := doc.Log.Entries
	require.Equal(t, "q=lamp", e[0].Request.PostData.Text)
	require.JSONEq(t, `"<p>hi"`, string(e[0].Response.Content["text"]))
	require.NotContains(t, e[1].Response.Content, "text")
	require.NotContains(t, e[1].Response.Content, "encoding")
	require.Contains(t, string(e[1].Response.Content["comment"]), "binary")
	require.NotContains(t, e[2].Response.Content, "text")
	require.JSONEq(t, `"plain"`, string(e[3].Response.Content["text"]))
	require.Equal(t, "12345678901234567890", string(e[3].Response.Content["size"]), "numbers kept exactly")

	_, err = slimHAR([]byte("{not json"))
	require.Error(t, err)
}

func TestSanitizeFileName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"report.csv":              "report.csv",
		"../../etc/passwd":        "passwd",
		`C:\temp\my file (1).pdf`: "my_file__1_.pdf",
		".proctor-meta":           "proctor-meta",
		"":                        "download",
		"..":                      "download",
		"données.csv":             "donn_es.csv",
	} {
		require.Equal(t, want, sanitizeFileName(in), in)
	}
	used := map[string]bool{"a.csv": true, "a-2.csv": true}
	require.Equal(t, "a-3.csv", uniqueName("a.csv", used))
	require.Equal(t, "b.csv", uniqueName("b.csv", used))
}
