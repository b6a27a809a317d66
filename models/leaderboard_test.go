package models_test

import (
	"math/rand/v2"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestParseLeaderboardQuery(t *testing.T) {
	t.Parallel()
	day := func(s string) *time.Time {
		d, err := time.Parse(time.DateOnly, s)
		require.NoError(t, err)
		return &d
	}
	t.Run("Defaults", func(t *testing.T) {
		q, err := models.ParseLeaderboardQuery(url.Values{})
		require.NoError(t, err)
		require.Equal(t, models.LeaderboardQuery{Sort: models.SortSuccessRate, Dir: models.SortDesc, ModelMatch: models.ModelContains}, q)
		require.Empty(t, q.Values(), "the default board has a bare URL")
		require.False(t, q.Filtered())
	})
	t.Run("EveryParameter", func(t *testing.T) {
		in := url.Values{
			"sort": {"cost_per_task"}, "dir": {"desc"}, "origin": {"uploaded"}, "open_source": {"no"},
			"model": {" GPT-4o "}, "model_match": {"exact"}, "from": {"2026-01-02"}, "to": {"2026-02-03"},
			"best": {"on"}, "version": {"2"},
		}
		q, err := models.ParseLeaderboardQuery(in)
		require.NoError(t, err)
		closed := false
		require.Equal(t, models.LeaderboardQuery{
			Sort: models.SortCostPerTask, Dir: models.SortDesc, Origin: models.OriginUploaded, OpenSource: &closed,
			Model: "GPT-4o", ModelMatch: models.ModelExact, From: day("2026-01-02"), To: day("2026-02-03"),
			BestPerAgent: true, Version: 2,
		}, q)
		back, err := models.ParseLeaderboardQuery(q.Values())
		require.NoError(t, err)
		require.Equal(t, q, back, "a permalink reads back as the same query")
		require.Equal(t, "best=1&dir=desc&from=2026-01-02&model=GPT-4o&model_match=exact&open_source=no&origin=uploaded&sort=cost_per_task&to=2026-02-03&version=2", q.Values().Encode())
	})
	t.Run("KeyDefaultDirection", func(t *testing.T) {
		q, err := models.ParseLeaderboardQuery(url.Values{"sort": {"mean_steps"}})
		require.NoError(t, err)
		require.Equal(t, models.SortAsc, q.Dir, "fewer steps is better, so they come first")
		require.Equal(t, models.SortDesc, q.SortedBy(models.SortMeanSteps).Dir, "a second click flips")
		require.Equal(t, models.SortDesc, q.SortedBy(models.SortJudgeScore).Dir, "another key starts at its better end")
	})
	bad := []struct {
		name, param, value string
	}{
		{"UnknownSort", "sort", "secret_column"},
		{"SQLInSort", "sort", "success_rate; DROP TABLE runs"},
		{"Dir", "dir", "up"},
		{"Origin", "origin", "imported"},
		{"OpenSource", "open_source", "maybe"},
		{"ModelMatch", "model_match", "regex"},
		{"LongModel", "model", string(make([]byte, 201))},
		{"From", "from", "2026-13-01"},
		{"To", "to", "yesterday"},
		{"Best", "best", "2"},
		{"Version", "version", "0"},
		{"VersionText", "version", "latest"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := models.ParseLeaderboardQuery(url.Values{tc.param: {tc.value}})
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, tc.param, models.ErrorField(err))
			require.Contains(t, models.ErrorMessage(err), tc.param, "the message names the parameter")
		})
	}
	t.Run("ToBeforeFrom", func(t *testing.T) {
		_, err := models.ParseLeaderboardQuery(url.Values{"from": {"2026-02-01"}, "to": {"2026-01-01"}})
		require.Equal(t, "to", models.ErrorField(err))
	})
}

// row is a board row with a success rate and its interval.
func row(id, agent int64, rate, low, high float64) models.LeaderboardRow {
	return models.LeaderboardRow{LeaderboardEntry: models.LeaderboardEntry{RunID: id, SuccessRate: rate, CILow: low, CIHigh: high, Tasks: 100}, AgentID: agent, AgentName: "agent"}
}

func ids(rows []models.LeaderboardRow) []int64 {
	out := []int64{}
	for _, r := range rows {
		out = append(out, r.RunID)
	}
	return out
}

func TestLeaderboardQuery_Apply(t *testing.T) {
	t.Parallel()
	t.Run("RankRanges", func(t *testing.T) {
		rows := []models.LeaderboardRow{
			row(5, 5, 0.20, 0.10, 0.30), // clear of everything
			row(1, 1, 0.90, 0.85, 0.95), // clear of everything
			row(2, 2, 0.70, 0.60, 0.80), // overlaps 3
			row(3, 3, 0.65, 0.55, 0.75), // overlaps 2 and 4
			row(4, 4, 0.52, 0.45, 0.58), // overlaps 3, clearly below 2
		}
		got := models.LeaderboardQuery{}.Apply(rows)
		require.Equal(t, []int64{1, 2, 3, 4, 5}, ids(got))
		var text []string
		var above []bool
		for _, r := range got {
			text = append(text, r.RankText())
			above = append(above, r.OverlapsAbove)
		}
		require.Equal(t, []string{"1", "2–3", "2–4", "3–4", "5"}, text, "4 may swap with 3 but not with 2")
		require.Equal(t, []bool{false, false, true, true, false}, above)
		require.Equal(t, 3, got[2].Rank)
		require.Equal(t, int64(5), rows[0].RunID, "the input is left alone")
	})
	t.Run("TiesShareRank", func(t *testing.T) {
		got := models.LeaderboardQuery{}.Apply([]models.LeaderboardRow{
			row(1, 1, 0.5, 0.45, 0.55), row(2, 2, 0.5, 0.40, 0.60), row(3, 3, 0.1, 0.05, 0.15),
		})
		require.Equal(t, []int64{1, 2, 3}, ids(got), "the narrower interval first")
		require.Equal(t, []int{1, 1, 3}, []int{got[0].Rank, got[1].Rank, got[2].Rank})
		require.Equal(t, "1–2", got[0].RankText())
		require.Equal(t, "3", got[2].RankText())
	})
	t.Run("RangesMatchPairwiseDefinition", func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(7, 11))
		var rows []models.LeaderboardRow
		for i := range 400 {
			rate := float64(rnd.IntN(41)) / 40 // many ties
			half := 0.01 + rnd.Float64()*0.1
			rows = append(rows, row(int64(i+1), int64(i+1), rate, max(rate-half, 0), min(rate+half, 1)))
		}
		got := models.LeaderboardQuery{}.Apply(rows)
		for _, r := range got {
			best, worst := 1, 0
			for _, o := range got {
				if o.CILow > r.CIHigh {
					best++
				}
				if o.CIHigh >= r.CILow {
					worst++
				}
			}
			require.Equal(t, best, r.RankBest, "run %d", r.RunID)
			require.Equal(t, worst, r.RankWorst, "run %d", r.RunID)
			require.LessOrEqual(t, r.RankBest, r.Rank)
			require.GreaterOrEqual(t, r.RankWorst, r.Rank)
		}
	})
	t.Run("TouchingIntervalsOverlap", func(t *testing.T) {
		got := models.LeaderboardQuery{}.Apply([]models.LeaderboardRow{row(1, 1, 0.6, 0.5, 0.7), row(2, 2, 0.4, 0.3, 0.5)})
		require.Equal(t, []string{"1–2", "1–2"}, []string{got[0].RankText(), got[1].RankText()})
	})
	t.Run("BestPerAgent", func(t *testing.T) {
		rows := []models.LeaderboardRow{
			row(1, 7, 0.30, 0.2, 0.4), row(2, 7, 0.60, 0.5, 0.7), row(3, 8, 0.40, 0.3, 0.5), row(4, 7, 0.60, 0.55, 0.65),
		}
		got := models.LeaderboardQuery{BestPerAgent: true}.Apply(rows)
		require.Equal(t, []int64{4, 3}, ids(got), "agent 7's best is run 4 (same rate as 2, narrower interval)")
		require.Equal(t, []int{1, 2}, []int{got[0].Rank, got[1].Rank})
	})
	t.Run("Filters", func(t *testing.T) {
		jan := time.Date(2026, 1, 31, 23, 30, 0, 0, time.UTC)
		feb := time.Date(2026, 2, 1, 0, 30, 0, 0, time.UTC)
		rows := []models.LeaderboardRow{
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 1}, AgentID: 1, Origin: models.OriginExecuted, Model: "gpt-4o-mini", OpenSource: false, FinishedAt: &jan},
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 2}, AgentID: 2, Origin: models.OriginUploaded, Model: "Qwen2.5-VL", OpenSource: true, FinishedAt: &feb},
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 3}, AgentID: 3, Origin: models.OriginReproduced, Model: "gpt-4o", OpenSource: true},
		}
		day := func(s string) *time.Time { d, _ := time.Parse(time.DateOnly, s); return &d }
		yes, no := true, false
		for _, tc := range []struct {
			name string
			q    models.LeaderboardQuery
			want []int64
		}{
			{"Origin", models.LeaderboardQuery{Origin: models.OriginUploaded}, []int64{2}},
			{"OpenSource", models.LeaderboardQuery{OpenSource: &yes}, []int64{2, 3}},
			{"Closed", models.LeaderboardQuery{OpenSource: &no}, []int64{1}},
			{"ModelContains", models.LeaderboardQuery{Model: "GPT-4O"}, []int64{1, 3}},
			{"ModelExact", models.LeaderboardQuery{Model: "GPT-4O", ModelMatch: models.ModelExact}, []int64{3}},
			{"To", models.LeaderboardQuery{To: day("2026-01-31")}, []int64{1}},
			{"From", models.LeaderboardQuery{From: day("2026-02-01")}, []int64{2}},
			{"SameDay", models.LeaderboardQuery{From: day("2026-01-31"), To: day("2026-01-31")}, []int64{1}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.Equal(t, tc.want, ids(tc.q.Apply(rows)))
			})
		}
	})
	t.Run("SortMissingLast", func(t *testing.T) {
		j := func(v float64) *float64 { return &v }
		rows := []models.LeaderboardRow{
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 1, SuccessRate: 0.9, JudgeScore: nil, CostPerTask: 0.3}, AgentID: 1},
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 2, SuccessRate: 0.5, JudgeScore: j(4.5), CostPerTask: 0.1}, AgentID: 2},
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 3, SuccessRate: 0.1, JudgeScore: j(2), CostPerTask: 0.2}, AgentID: 3},
		}
		require.Equal(t, []int64{2, 3, 1}, ids(models.LeaderboardQuery{Sort: models.SortJudgeScore}.Apply(rows)))
		require.Equal(t, []int64{3, 2, 1}, ids(models.LeaderboardQuery{Sort: models.SortJudgeScore, Dir: models.SortAsc}.Apply(rows)))
		require.Equal(t, []int64{2, 3, 1}, ids(models.LeaderboardQuery{Sort: models.SortCostPerTask}.Apply(rows)), "cheapest first")
		require.Equal(t, []int64{3, 2, 1}, ids(models.LeaderboardQuery{Sort: models.SortRank, Dir: models.SortDesc}.Apply(rows)))
	})
	t.Run("SortUnknownLast", func(t *testing.T) {
		// Run 4 was uploaded without its cost, tokens or steps: its zeros
		// mean nothing, and it sorts after every known value either way.
		rows := []models.LeaderboardRow{
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 1, CostPerTask: 0.3, Tokens: 300, MeanSteps: 9, Tasks: 1}, AgentID: 1},
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 4, Unknown: models.Unknown{Steps: true, Tokens: true, Cost: true}, Tasks: 1}, AgentID: 4},
			{LeaderboardEntry: models.LeaderboardEntry{RunID: 2, CostPerTask: 0.1, Tokens: 100, MeanSteps: 3, Tasks: 1}, AgentID: 2},
		}
		for _, sort := range []string{models.SortCostPerTask, models.SortTokens, models.SortTokensPerTask, models.SortMeanSteps} {
			require.Equal(t, []int64{2, 1, 4}, ids(models.LeaderboardQuery{Sort: sort, Dir: models.SortAsc}.Apply(rows)), sort)
			require.Equal(t, []int64{1, 2, 4}, ids(models.LeaderboardQuery{Sort: sort, Dir: models.SortDesc}.Apply(rows)), sort)
		}
	})
}

func TestBoardVersion_Before(t *testing.T) {
	v := func(id, board, shared int64) models.BoardVersion {
		return models.BoardVersion{BenchmarkID: id, Board: board, Shared: shared}
	}
	staff := v(1, 1, 1)
	staff.Scope = models.BenchmarkScope{Unpublished: true}
	for _, tc := range []struct {
		name string
		a, b models.BoardVersion
		want bool
	}{
		{"the board moved", v(1, 1, 1), v(1, 2, 1), true},
		{"the names moved", v(1, 1, 1), v(1, 1, 2), true},
		{"both moved", v(1, 1, 1), v(1, 2, 2), true},
		{"the same version", v(1, 1, 1), v(1, 1, 1), false},
		{"a later version", v(1, 2, 1), v(1, 1, 1), false},
		{"imported again", v(1, 9, 9), v(2, 0, 0), true},
		{"another scope", v(1, 1, 1), staff, false},
	} {
		if got := tc.a.Before(tc.b); got != tc.want {
			t.Errorf("%s: %v.Before(%v) = %v, want %v", tc.name, tc.a.Key(), tc.b.Key(), got, tc.want)
		}
	}
}
