package stats_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/stats"
)

func TestParetoFrontier(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		points []stats.CostPoint
		want   []int
	}{
		{"Empty", nil, nil},
		{"OnePoint", []stats.CostPoint{{Cost: 0.3, Success: 0.2}}, []int{0}},
		{
			// B costs more than A and succeeds more: both stay. C is beaten
			// by B (cheaper, better); D by A (same cost, better).
			name: "HandBuilt",
			points: []stats.CostPoint{
				{Cost: 0.10, Success: 0.30}, // A
				{Cost: 0.50, Success: 0.60}, // B
				{Cost: 0.80, Success: 0.55}, // C
				{Cost: 0.10, Success: 0.25}, // D
				{Cost: 1.20, Success: 0.70}, // E: the most successful, at a price
			},
			want: []int{0, 1, 4},
		},
		{
			name:   "EqualSuccessCheaperWins",
			points: []stats.CostPoint{{Cost: 0.4, Success: 0.5}, {Cost: 0.2, Success: 0.5}},
			want:   []int{1},
		},
		{
			name:   "ExactTiesBothStay",
			points: []stats.CostPoint{{Cost: 0.2, Success: 0.5}, {Cost: 0.9, Success: 0.1}, {Cost: 0.2, Success: 0.5}},
			want:   []int{0, 2},
		},
		{
			name:   "FreeEntries",
			points: []stats.CostPoint{{Cost: 0, Success: 0.1}, {Cost: 0, Success: 0.4}, {Cost: 0, Success: 0.2}},
			want:   []int{1},
		},
		{
			name:   "NotANumberLeftOut",
			points: []stats.CostPoint{{Cost: math.NaN(), Success: 1}, {Cost: 0.5, Success: math.Inf(1)}, {Cost: 0.5, Success: 0.5}},
			want:   []int{2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, stats.ParetoFrontier(tc.points))
		})
	}
}

// TestParetoFrontier_MatchesDefinition compares the sweep with the definition
// checked pair by pair, on random points with many ties.
func TestParetoFrontier_MatchesDefinition(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 200; round++ {
		points := make([]stats.CostPoint, r.IntN(12))
		for i := range points {
			points[i] = stats.CostPoint{Cost: float64(r.IntN(5)) / 4, Success: float64(r.IntN(5)) / 4}
		}
		var want []int
		for i, q := range points {
			dominated := false
			for _, p := range points {
				if p.Cost <= q.Cost && p.Success >= q.Success && (p.Cost < q.Cost || p.Success > q.Success) {
					dominated = true
				}
			}
			if !dominated {
				want = append(want, i)
			}
		}
		got := stats.ParetoFrontier(points)
		require.ElementsMatch(t, want, got, "points %v", points)
		for k := 1; k < len(got); k++ {
			a, b := points[got[k-1]], points[got[k]]
			require.True(t, a.Cost < b.Cost || (a.Cost == b.Cost && got[k-1] < got[k]), "ordered by cost, then index")
			require.Less(t, a.Success, b.Success+1e-12, "success never falls along the frontier")
		}
	}
}

// TestCostFrontier: the frontier of a board's entries, as indexes into the
// entries, cheapest first; an entry whose cost is unknown is left out even
// when its stated cost (zero) would put it on the frontier.
func TestCostFrontier(t *testing.T) {
	t.Parallel()
	entry := func(cost, rate float64, unknown bool) models.BreakdownEntry {
		return models.BreakdownEntry{CostPerTask: cost, Success: models.RateCell{Rate: rate}, Unknown: models.Unknown{Cost: unknown}}
	}
	entries := []models.BreakdownEntry{
		entry(1.20, 0.70, false), // the most successful, at a price: on it
		entry(0, 0.65, true),     // free on paper, but unknown: left out
		entry(0.50, 0.60, false), // on it
		entry(0.80, 0.55, false), // beaten by the one above
		entry(0.10, 0.30, false), // the cheapest: on it
	}
	require.Equal(t, []int{4, 2, 0}, stats.CostFrontier(entries))
	require.Empty(t, stats.CostFrontier(nil))
	require.Empty(t, stats.CostFrontier([]models.BreakdownEntry{entry(0.1, 0.5, true)}), "no known cost, no frontier")
}
