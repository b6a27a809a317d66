package storage

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/migrations"
)

// TestBoardVersionTriggersCoverBoardColumns: every column of runs, agents
// and teams a board reads (boardJoinColumns) is one whose change the board
// version's triggers watch, in both dialects, so a column added to the
// board without its trigger fails here rather than serving stale boards.
func TestBoardVersionTriggersCoverBoardColumns(t *testing.T) {
	t.Parallel()
	read := map[string][]string{"r": {"published", "hidden_at"}}
	for _, m := range regexp.MustCompile(`\b([rat])\.(\w+)`).FindAllStringSubmatch(boardJoinColumns, -1) {
		read[m[1]] = append(read[m[1]], m[2])
	}
	require.NotEmpty(t, read["a"])
	require.NotEmpty(t, read["t"])
	trigger := map[string]string{"r": "board_runs_update", "a": "board_agents_update", "t": "board_teams_update"}
	for _, dialect := range []string{migrations.SQLite, migrations.Postgres} {
		list, err := migrations.For(dialect)
		require.NoError(t, err)
		var sql string
		for _, m := range list {
			if m.Name == "board_versions" {
				sql = m.SQL
			}
		}
		require.NotEmpty(t, sql, "%s: the board versions migration", dialect)
		for alias, cols := range read {
			start := strings.Index(sql, "CREATE TRIGGER "+trigger[alias])
			require.GreaterOrEqual(t, start, 0, "%s: trigger %s", dialect, trigger[alias])
			body := sql[start:]
			if end := strings.Index(body[1:], "CREATE TRIGGER"); end >= 0 {
				body = body[:end+1]
			}
			for _, col := range cols {
				require.Contains(t, body, "OLD."+col+" IS", "%s: %s watches %s", dialect, trigger[alias], col)
			}
		}
	}
}
