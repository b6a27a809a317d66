package web

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// renderBoard renders a board's table and returns its HTML.
func renderBoard(t *testing.T, lb *models.Leaderboard) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, LeaderboardTable(LeaderboardView{Board: lb}).Render(context.Background(), &b))
	return b.String()
}

// boardRow is a row with every figure a task board shows.
func boardRow() models.LeaderboardRow {
	x := func(v float64) *float64 { return &v }
	r := models.LeaderboardRow{AgentName: "Navigator", TeamName: "Lab", TeamSlug: "lab", Model: "gpt-4o", Origin: models.OriginExecuted}
	r.RunID, r.Tasks, r.Successes, r.SuccessRate, r.CILow, r.CIHigh = 4, 10, 6, 0.6, 0.3, 0.85
	r.JudgeScore, r.Judged, r.RubricScore, r.PerfectRate, r.Efficiency = x(4.2), 10, x(0.812), x(0.4), x(0.0707)
	r.MeanSteps, r.CostPerTask, r.Tokens = 11.5, 0.0231, 2_450_000
	return r
}

// TestLeaderboardTable_ColumnsFromTheList: the table's header and cells are
// its board's columns, whatever they are: a column the table has never seen
// (here one made up for the test) gets its header, its sort link, its
// arrow and its cells, formatted as it says, from its description alone.
func TestLeaderboardTable_ColumnsFromTheList(t *testing.T) {
	t.Parallel()
	lb := &models.Leaderboard{BenchmarkSlug: "mini", BenchmarkName: "Mini", Subset: models.SubsetFull, Query: models.LeaderboardQuery{}.Normalized()}
	lb.SetRows([]models.LeaderboardRow{boardRow()})
	shown := len(lb.Columns)
	lb.Columns = append(lb.Columns, models.LeaderboardColumn{
		Key: "pages_per_task", Label: "Pages", Title: "Pages visited per task", Boards: models.TaskBoards, Better: models.SortAsc,
		Format: models.FormatFixed2, Minor: true, TestID: "pages", Note: func(models.LeaderboardRow) string { return "a made-up figure" },
		Kind: models.KindNumber, Value: func(r models.LeaderboardRow) models.LeaderboardValue {
			return models.LeaderboardValue{Number: r.MeanSteps / 2}
		},
	})
	html := renderBoard(t, lb)

	header := regexp.MustCompile(`<th scope="col"[^>]*data-testid="sort-([a-z_]+)"`).FindAllStringSubmatch(html, -1)
	require.Len(t, header, shown+1)
	for i, c := range lb.Columns {
		require.Equal(t, c.Key, header[i][1], "the headers in the columns' order")
	}
	require.Contains(t, html, `<th scope="col" class="num lb-minor" data-testid="sort-pages_per_task"><a href="/benchmarks/mini/leaderboard?dir=asc&amp;sort=pages_per_task"`)
	require.Contains(t, html, `<abbr title="Pages visited per task">Pages</abbr>`)
	require.Contains(t, html, `<td class="num lb-minor" title="a made-up figure" data-testid="pages">5.75</td>`)

	row := regexp.MustCompile(`(?s)<tr class="[^"]*" data-testid="leaderboard-row".*?</tr>`).FindString(html)
	cells := regexp.MustCompile(`<t[hd] `).FindAllString(row, -1)
	require.Len(t, cells, shown+2, "a cell per column, and the compare box")
	for _, want := range []string{">4.20<", ">0.812<", ">40.0%<", ">7.07<", ">11.5<", ">$0.0231<", ">2.5M<", "60.0%"} {
		require.Contains(t, row, want)
	}
}

// TestLeaderboardTable_MissingValues: a figure a row lacks shows as a dash.
func TestLeaderboardTable_MissingValues(t *testing.T) {
	t.Parallel()
	r := boardRow()
	r.Unknown = models.Unknown{Steps: true, Tokens: true, Cost: true}
	other := boardRow()
	other.RunID, other.JudgeScore = 5, nil
	lb := &models.Leaderboard{BenchmarkSlug: "mini", Subset: models.SubsetFull, Query: models.LeaderboardQuery{}.Normalized()}
	lb.SetRows([]models.LeaderboardRow{r, other})
	html := renderBoard(t, lb)
	for _, id := range []string{"mean-steps", "cost-per-task", "tokens"} {
		require.Contains(t, html, `data-testid="`+id+`">—</td>`, id)
	}
	require.Contains(t, html, `<td class="num lb-minor" title="not judged">—</td>`)
	require.Contains(t, html, `<td class="date lb-minor">—</td>`, "never finished")
}
