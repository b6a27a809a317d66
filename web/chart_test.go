package web

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNiceTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		lo, hi   float64
		want     []float64
		wantStep float64
	}{
		{"Rates", 0, 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, 0.2},
		{"RoundsUp", 0, 0.87, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, 0.2},
		{"SmallCosts", 0, 0.034, []float64{0, 0.01, 0.02, 0.03, 0.04}, 0.01},
		{"Steps", 0, 37, []float64{0, 10, 20, 30, 40}, 10},
		{"FiveStep", 0, 1.2, []float64{0, 0.5, 1, 1.5}, 0.5},
		{"EmptySpanIsWidened", 0, 0, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, 0.2},
		{"SingleValue", 3, 3, []float64{3, 3.2, 3.4, 3.6, 3.8, 4}, 0.2},
		{"Reversed", 1, 0, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, 0.2},
		{"OffZero", 12, 58, []float64{10, 20, 30, 40, 50, 60}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, step := niceTicks(tc.lo, tc.hi, 5)
			require.Equal(t, tc.want, got, "exact values, so labels and golden files are stable")
			require.Equal(t, tc.wantStep, step)
		})
	}
	require.Equal(t, 1.0, niceStep(math.NaN(), 5))
	require.Equal(t, 1.0, niceStep(-2, 5))
}

func TestTickLabels(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1, decimalsFor(0.2))
	require.Equal(t, 2, decimalsFor(0.05))
	require.Equal(t, 2, decimalsFor(0.01))
	require.Equal(t, 0, decimalsFor(10))
	require.Equal(t, 0, decimalsFor(1))
	require.Equal(t, "$0.05", numberLabel(0.05, "$")(0.05))
	require.Equal(t, "$1.50", numberLabel(0.05, "$")(1.5))
	require.Equal(t, "30", numberLabel(10, "")(30))
	require.Equal(t, "40%", percentLabel(0.4))
}

func TestLinearScale(t *testing.T) {
	t.Parallel()
	s := linearScale{d0: 0, d1: 1, r0: 324, r1: 16} // a y axis: up is smaller
	require.Equal(t, 324.0, s.at(0))
	require.Equal(t, 16.0, s.at(1))
	require.Equal(t, 170.0, s.at(0.5))
	require.Equal(t, 5.0, linearScale{d0: 2, d1: 2, r0: 0, r1: 10}.at(2), "a single-value domain maps to the middle")
}

func TestLayoutScatter(t *testing.T) {
	t.Parallel()
	spec := scatterSpec{ID: "cost", Title: "Cost", XLabel: "Cost per task (USD)", YLabel: "Success rate", XPrefix: "$"}

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		c := layoutScatter(spec)
		require.True(t, c.Empty())
		require.Empty(t, c.FrontierPath)
		require.Len(t, c.X.Ticks, 6, "an axis from $0 to $1 all the same")
		require.Equal(t, "$1.0", c.X.Ticks[5].Label)
	})
	t.Run("OnePoint", func(t *testing.T) {
		t.Parallel()
		s := spec
		s.Points = []scatterPoint{{X: 0, Y: 0.5, Label: "Solo", Title: "Solo: 50%"}}
		s.Frontier = []int{0}
		c := layoutScatter(s)
		require.Len(t, c.Points, 1)
		p := c.Points[0]
		require.Equal(t, c.Plot.Left, p.CX, "a free entry sits on the y axis")
		require.Equal(t, 160.0, p.CY)
		require.True(t, p.OnFrontier)
		require.Equal(t, "Solo", p.Label)
		require.Equal(t, "M64.0 160.0", c.FrontierPath, "a frontier of one point is that point")
	})
	t.Run("AxesAndFrontier", func(t *testing.T) {
		t.Parallel()
		s := spec
		s.Points = []scatterPoint{
			{X: 0.1, Y: 0.3, Label: "A"},
			{X: 0.5, Y: 0.6, Label: "B"},
			{X: 0.8, Y: 0.55, Label: "C"},
			{X: 1.2, Y: 0.7, Label: "An agent with a very long name indeed"},
			{X: math.NaN(), Y: 0.9, Label: "Broken"},
		}
		s.Frontier = []int{0, 1, 3}
		c := layoutScatter(s)

		// X: 0 to 1.5 in steps of 0.5 over pixels 64–544; Y: 0–100% over 304–16.
		require.Equal(t, []chartTick{{64, "$0.0"}, {224, "$0.5"}, {384, "$1.0"}, {544, "$1.5"}}, c.X.Ticks)
		require.Equal(t, chartTick{Pos: 304, Label: "0%"}, c.Y.Ticks[0])
		require.Equal(t, chartTick{Pos: 16, Label: "100%"}, c.Y.Ticks[5])
		require.Equal(t, "Cost per task (USD)", c.X.Label)

		require.Equal(t, "M96.0 217.6 H224.0 V131.2 H448.0 V102.4", c.FrontierPath, "a staircase through A, B and D by cost")
		require.Len(t, c.Points, 4, "the point that is not a number is left out")
		require.False(t, c.Points[0].OnFrontier, "C is drawn first, under the frontier")
		require.Equal(t, "C", c.Points[0].Label, "few points are all labelled")
		last := c.Points[3]
		require.True(t, last.OnFrontier)
		require.Equal(t, "An agent with a very lo…", last.Label)
		require.Equal(t, "end", last.Anchor, "a label near the right edge runs leftwards")
		require.Equal(t, last.CX-8, last.LabelX)
		require.Equal(t, "start", c.Points[1].Anchor)
	})
	t.Run("ManyPointsOnlyFrontierLabelled", func(t *testing.T) {
		t.Parallel()
		s := spec
		for i := range 11 {
			s.Points = append(s.Points, scatterPoint{X: float64(i), Y: float64(i) / 20, Label: fmt.Sprint("P", i)})
		}
		s.Frontier = []int{10}
		c := layoutScatter(s)
		var labelled []string
		for _, p := range c.Points {
			if p.Label != "" {
				labelled = append(labelled, p.Label)
			}
		}
		require.Equal(t, []string{"P10"}, labelled)
	})
	t.Run("RatesOutsideTheAxisAreClamped", func(t *testing.T) {
		t.Parallel()
		s := spec
		s.Points = []scatterPoint{{X: 1, Y: 1.3}, {X: 1, Y: -0.2}}
		c := layoutScatter(s)
		require.Equal(t, c.Plot.Top, c.Points[0].CY)
		require.Equal(t, c.Plot.Bottom, c.Points[1].CY)
	})
}

func TestLayoutBars(t *testing.T) {
	t.Parallel()
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		require.True(t, layoutBars(barsSpec{ID: "d", Series: []string{"easy"}}).Empty())
		require.True(t, layoutBars(barsSpec{ID: "d", Groups: []barGroup{{Label: "A"}}}).Empty(), "no series")
	})
	t.Run("Groups", func(t *testing.T) {
		t.Parallel()
		c := layoutBars(barsSpec{
			ID: "difficulty", XLabel: "Success rate", Series: []string{"easy", "medium", "hard"},
			Groups: []barGroup{
				{Label: "Agent A", Values: []barValue{{Rate: 1, Low: 0.6, High: 1}, {Rate: 0.5, Low: 0.2, High: 0.8}, {Missing: true, Title: "no tasks"}}},
				{Label: "Agent B", Values: []barValue{{Rate: 0}, {Rate: 0.25}, {Rate: 0.75}}},
			},
		})
		require.False(t, c.Empty())
		// Each group: 3 bars of 10 with gaps of 2, plus 14 between groups.
		require.Equal(t, 40+2*(34+14)+48.0, c.Height)
		require.Equal(t, c.Height-48, c.Plot.Bottom)
		require.Len(t, c.Legend, 3)
		require.Equal(t, "medium", c.Legend[1].Label)
		require.Equal(t, 1, c.Legend[1].Series)

		a := c.Groups[0]
		require.Equal(t, "Agent A", a.Label)
		require.Equal(t, 40+7.0, a.Bars[0].Y)
		require.Equal(t, 40+7+12.0, a.Bars[1].Y)
		require.Equal(t, c.Plot.Width(), a.Bars[0].W, "100% fills the plot")
		require.Equal(t, c.Plot.Width()/2, a.Bars[1].W)
		require.InDelta(t, c.Plot.Left+0.6*c.Plot.Width(), a.Bars[0].WhiskerX1, 1e-9)
		require.Equal(t, c.Plot.Right, a.Bars[0].WhiskerX2)
		require.True(t, a.Bars[2].Missing)
		require.Zero(t, a.Bars[2].W)
		require.Equal(t, "series-2", seriesClass(a.Bars[2].Series))
		require.Equal(t, "series-0", seriesClass(5), "series styles repeat after five")
		require.Equal(t, 40+7+48.0, c.Groups[1].Bars[0].Y)
		require.Equal(t, 1.5, c.Groups[1].Bars[0].W, "a zero rate draws a sliver: it is not missing")
		require.False(t, c.Groups[1].Bars[0].Missing)
	})
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "task", "0 tasks"},
		{1, "task", "1 task"},
		{2, "subset", "2 subsets"},
		{1, "study/studies", "1 study"},
		{3, "study/studies", "3 studies"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
