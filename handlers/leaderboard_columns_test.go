package handlers_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// entryKeys are the keys of the first entry of a JSON export, in order.
func entryKeys(t *testing.T, body []byte) []string {
	t.Helper()
	var board struct {
		Entries []json.RawMessage `json:"entries"`
	}
	require.NoError(t, json.Unmarshal(body, &board))
	require.NotEmpty(t, board.Entries)
	dec := json.NewDecoder(bytes.NewReader(board.Entries[0]))
	var keys []string
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return keys
}

// checkBoardColumns checks a board's page, CSV and JSON against the list of
// columns: the page heads every column its kind of board shows, in order;
// the CSV's header is every exported field but the JSON-only ones; the
// JSON's entries carry every exported field, those only hidden-tests boards
// have on those boards only.
func checkBoardColumns(t *testing.T, c *client, path string, hidden bool) {
	t.Helper()
	var want []string
	for _, col := range models.LeaderboardColumns() {
		if col.ShownOn(hidden) {
			want = append(want, col.Key)
		}
	}
	html := readBody(t, c.get(path))
	var header []string
	for _, m := range regexp.MustCompile(`<th scope="col"[^>]*data-testid="sort-([a-z_]+)"`).FindAllStringSubmatch(html, -1) {
		header = append(header, m[1])
	}
	require.Equal(t, want, header, "the table heads the board's columns")

	var csvWant, jsonWant []string
	for _, col := range models.LeaderboardExports() {
		if !col.JSONOnly {
			csvWant = append(csvWant, col.Field)
		}
		if hidden || !col.HiddenTestsOnly {
			jsonWant = append(jsonWant, col.Field)
		}
	}
	res := c.get(path + ".csv")
	require.Equal(t, http.StatusOK, res.StatusCode)
	records, err := csv.NewReader(strings.NewReader(readBody(t, res))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, csvWant, records[0])
	for _, rec := range records[1:] {
		require.Len(t, rec, len(csvWant))
	}

	res = c.get(path + ".json")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, jsonWant, entryKeys(t, []byte(readBody(t, res))))
}

// TestLeaderboard_ColumnsEverywhere: every column of the list reaches the
// table, the CSV and the JSON of both kinds of board, from the list alone.
func TestLeaderboard_ColumnsEverywhere(t *testing.T) {
	t.Parallel()
	t.Run("TaskBoard", func(t *testing.T) {
		t.Parallel()
		f := newBoardFixture(t) // judged, rubric-scored and plain runs: every optional column shows
		checkBoardColumns(t, f.b.anonymous(t), "/benchmarks/mini/leaderboard", false)
	})
	t.Run("HiddenTestsBoard", func(t *testing.T) {
		t.Parallel()
		f := newHiddenFixture(t)
		f.set(t, true, false)
		checkBoardColumns(t, f.b.anonymous(t), "/benchmarks/"+f.seed.BenchmarkSlug+"/leaderboard", true)
	})
}
