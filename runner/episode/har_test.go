package episode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/storage/artifact"
)

// TestStoreHAR: the stored HAR is the slimmed one; a file that is not a HAR
// is stored as it was written; no copy is left beside the file.
func TestStoreHAR(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := artifact.NewLocal(filepath.Join(dir, "artifacts"), artifact.NewURLSigner([]byte("k0123456789abcdef0123456789abcdef")), "")
	require.NoError(t, err)
	path := filepath.Join(dir, "network.har")
	big := strings.Repeat("x", maxHARTextBody+1)
	require.NoError(t, os.WriteFile(path, []byte(`{"log":{"entries":[
	  {"request":{"method":"GET","url":"http://s/a"},"response":{"status":200,"content":{"mimeType":"text/html","text":"<p>hi"}}},
	  {"request":{"method":"GET","url":"http://s/big"},"response":{"status":200,"content":{"mimeType":"text/html","text":"`+big+`"}}}]}}`), 0o644))
	require.NoError(t, storeHAR(t.Context(), store, "e/network.har", path))
	stored := readArtifact(t, &bundle{store: store}, "e/network.har")
	var doc struct {
		Log struct {
			Entries []struct {
				Response struct {
					Content map[string]any `json:"content"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	require.NoError(t, json.Unmarshal(stored, &doc))
	require.Len(t, doc.Log.Entries, 2)
	require.Equal(t, "<p>hi", doc.Log.Entries[0].Response.Content["text"])
	require.NotContains(t, doc.Log.Entries[1].Response.Content, "text")
	require.Contains(t, doc.Log.Entries[1].Response.Content["comment"], "omitted by Proctor")

	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	require.NoError(t, storeHAR(t.Context(), store, "e/network.har", path))
	require.Equal(t, "{not json", string(readArtifact(t, &bundle{store: store}, "e/network.har")))
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, left, 2, "the HAR and the artifacts, no slimmed copy")
}
