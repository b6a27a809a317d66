package stats_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/stats"
)

// table builds a Confusion from literal counts (rows: first rater).
func table(counts ...[]int) stats.Confusion { return stats.Confusion{Counts: counts} }

// requireValue checks a statistic that must be defined.
func requireValue(t *testing.T, want float64, got float64, ok bool, msg string) {
	t.Helper()
	require.True(t, ok, "%s: undefined, want %v", msg, want)
	require.InDelta(t, want, got, 1e-6, msg)
}

// requireUndefined checks a statistic that must be undefined.
func requireUndefined(t *testing.T, got float64, ok bool, msg string) {
	t.Helper()
	require.False(t, ok, "%s: want undefined, got %v", msg, got)
}

func TestNewConfusion(t *testing.T) {
	t.Parallel()
	c := stats.NewConfusion(3, []stats.Pair{{0, 0}, {0, 2}, {2, 1}, {0, 2}, {3, 0}, {-1, 1}})
	require.Equal(t, [][]int{{1, 0, 2}, {0, 0, 0}, {0, 1, 0}}, c.Counts, "out-of-range pairs are not counted")
	require.Equal(t, 4, c.N())
	require.Equal(t, 3, c.K())
	require.Empty(t, stats.NewConfusion(0, []stats.Pair{{0, 0}}).Counts)
	require.Empty(t, stats.NewConfusion(-2, nil).Counts)
}

// The kappas below are worked by hand from
//
//	pₒ = Σᵢ nᵢᵢ / n,  pₑ = Σᵢ rᵢcᵢ / n²,  κ = (pₒ − pₑ) / (1 − pₑ)
//	κw = 1 − n·Σ (i−j)²·nᵢⱼ / Σ (i−j)²·rᵢ·cⱼ
//
// with rᵢ the row (first rater) sums and cⱼ the column sums.
func TestConfusion_Kappa(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		c         stats.Confusion
		agreement float64
		kappa     float64
		quadratic float64
	}{
		// Cohen (1960)-style 2×2: 50 items, both say yes on 20, both no on 15,
		// 5 yes/no, 10 no/yes. pₒ = 35/50 = 0.7; rows (25, 25), columns (30, 20):
		// pₑ = (25·30 + 25·20)/2500 = 0.5; κ = 0.2/0.5 = 0.4. With two categories
		// the weighted kappa is the same: 1 − 50·15/(25·20 + 25·30) = 1 − 750/1250.
		{"Cohen 2x2", table([]int{20, 5}, []int{10, 15}), 0.7, 0.4, 0.4},
		// Perfect agreement with both categories used: pₒ = 1, pₑ = (9 + 49)/100 =
		// 0.58, κ = 0.42/0.42 = 1.
		{"perfect agreement", table([]int{3, 0}, []int{0, 7}), 1, 1, 1},
		// Total disagreement, balanced: pₒ = 0, pₑ = (5·5 + 5·5)/100 = 0.5,
		// κ = −0.5/0.5 = −1.
		{"total disagreement", table([]int{0, 5}, []int{5, 0}), 0, -1, -1},
		// Total disagreement, unbalanced: rows (6, 4), columns (4, 6):
		// pₑ = (24 + 24)/100 = 0.48, κ = −0.48/0.52 = −0.923077.
		{"total disagreement unbalanced", table([]int{0, 6}, []int{4, 0}), 0, -0.923077, -0.923077},
		// Agreement exactly at chance: pₒ = pₑ = 0.5, κ = 0.
		{"chance", table([]int{25, 25}, []int{25, 25}), 0.5, 0, 0},
		// 3×3 ordinal table, n = 20, rows (7, 6, 7), columns (6, 8, 6), diagonal 14:
		// κ = (20·14 − (42 + 48 + 42))/(400 − 132) = 148/268 = 0.552239.
		// Weighted: the six off-diagonal ratings are each one step off, so the
		// observed weighted disagreement is 6; the expected one is
		// 7·(8·1 + 6·4) + 6·(6·1 + 6·1) + 7·(6·4 + 8·1) = 224 + 72 + 224 = 520;
		// κw = 1 − 20·6/520 = 10/13 = 0.769231. Near misses cost little, so κw > κ.
		{"ordinal 3x3", table([]int{5, 2, 0}, []int{1, 4, 1}, []int{0, 2, 5}), 0.7, 0.552239, 0.769231},
		// A two-step miss costs four times a one-step miss: rows (1, 0, 1),
		// columns (1, 0, 1), one item (0,2), one (2,0): observed 2·4 = 8, expected
		// 1·1·4 + 1·1·4 = 8, κw = 1 − 2·8/8 = −1.
		{"ordinal extremes swapped", table([]int{0, 0, 1}, []int{0, 0, 0}, []int{1, 0, 0}), 0, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tc.c.Agreement()
			requireValue(t, tc.agreement, got, ok, "agreement")
			got, ok = tc.c.CohenKappa()
			requireValue(t, tc.kappa, got, ok, "kappa")
			got, ok = tc.c.QuadraticKappa()
			requireValue(t, tc.quadratic, got, ok, "quadratic kappa")
		})
	}

	t.Run("SingleCategory", func(t *testing.T) {
		t.Parallel()
		// Both raters put all ten items in the first category: pₒ = 1 and
		// pₑ = 10·10/100 = 1, so κ = 0/0. Agreement is still 1.
		for _, c := range []stats.Confusion{
			table([]int{10, 0}, []int{0, 0}),
			table([]int{0, 0, 0}, []int{0, 4, 0}, []int{0, 0, 0}),
			table([]int{7}),
		} {
			got, ok := c.Agreement()
			requireValue(t, 1, got, ok, "agreement")
			got, ok = c.CohenKappa()
			requireUndefined(t, got, ok, "kappa")
			got, ok = c.QuadraticKappa()
			requireUndefined(t, got, ok, "quadratic kappa")
		}
	})

	t.Run("OneRaterConstant", func(t *testing.T) {
		t.Parallel()
		// The second rater always says category 0, the first varies: rows (6, 4),
		// columns (10, 0): pₒ = 0.6 = pₑ = 60/100, so κ = 0 — defined, since
		// pₑ < 1. A judge that always says "successful" earns no kappa.
		c := table([]int{6, 0}, []int{4, 0})
		got, ok := c.CohenKappa()
		requireValue(t, 0, got, ok, "kappa")
		got, ok = c.QuadraticKappa()
		requireValue(t, 0, got, ok, "quadratic kappa")
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		for _, c := range []stats.Confusion{{}, table([]int{0, 0}, []int{0, 0})} {
			got, ok := c.Agreement()
			requireUndefined(t, got, ok, "agreement")
			got, ok = c.CohenKappa()
			requireUndefined(t, got, ok, "kappa")
			got, ok = c.QuadraticKappa()
			requireUndefined(t, got, ok, "quadratic kappa")
		}
	})
}

func TestBinary(t *testing.T) {
	t.Parallel()
	type want struct{ precision, recall, f1, accuracy, npv, tnr *float64 }
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name           string
		tp, fp, fn, tn int
		want           want
	}{
		// precision 4/6, recall 4/5, F1 2·4/(8 + 2 + 1) = 8/11, accuracy 7/10,
		// NPV 3/(3 + 1), TNR 3/(3 + 2).
		{"mixed", 4, 2, 1, 3, want{f(0.666667), f(0.8), f(0.727273), f(0.7), f(0.75), f(0.6)}},
		// No positive anywhere: precision 0/0, recall 0/0, F1 0/0 are undefined;
		// the judge is right on every negative.
		{"no positives", 0, 0, 0, 5, want{nil, nil, nil, f(1), f(1), f(1)}},
		// The judge never says positive and misses all three: precision 0/0, but
		// recall 0/3 = 0 and F1 0/(0 + 0 + 3) = 0; NPV 0/3 = 0; TNR 0/0.
		{"all missed", 0, 0, 3, 0, want{nil, f(0), f(0), f(0), f(0), nil}},
		// No negative anywhere: NPV 0/0 and TNR 0/0.
		{"all positive", 2, 0, 0, 0, want{f(1), f(1), f(1), f(1), nil, nil}},
		{"empty", 0, 0, 0, 0, want{}},
		{"negative counts are zero", -1, -1, -1, 2, want{nil, nil, nil, f(1), f(1), f(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := stats.Binary(tc.tp, tc.fp, tc.fn, tc.tn)
			for _, c := range []struct {
				name      string
				want, got *float64
			}{
				{"precision", tc.want.precision, m.Precision}, {"recall", tc.want.recall, m.Recall},
				{"f1", tc.want.f1, m.F1}, {"accuracy", tc.want.accuracy, m.Accuracy},
				{"npv", tc.want.npv, m.NPV}, {"tnr", tc.want.tnr, m.TNR},
			} {
				if c.want == nil {
					require.Nil(t, c.got, c.name)
					continue
				}
				require.NotNil(t, c.got, c.name)
				require.InDelta(t, *c.want, *c.got, 1e-6, c.name)
			}
		})
	}

	t.Run("FromConfusion", func(t *testing.T) {
		t.Parallel()
		// Rows are the truth, columns the prediction; category 0 is positive.
		m := table([]int{4, 1}, []int{2, 3}).Binary(0)
		require.Equal(t, [4]int{4, 2, 1, 3}, [4]int{m.TP, m.FP, m.FN, m.TN})
		require.Equal(t, 10, m.N())
		// Category 1 positive swaps the roles.
		m = table([]int{4, 1}, []int{2, 3}).Binary(1)
		require.Equal(t, [4]int{3, 1, 2, 4}, [4]int{m.TP, m.FP, m.FN, m.TN})
		// One against the rest on three categories: positive 2.
		m = table([]int{5, 2, 0}, []int{1, 4, 1}, []int{0, 2, 5}).Binary(2)
		require.Equal(t, [4]int{5, 1, 2, 12}, [4]int{m.TP, m.FP, m.FN, m.TN})
	})
}

func TestBootstrapConfusion(t *testing.T) {
	t.Parallel()
	kappa := stats.ConfusionStatistic(stats.Confusion.CohenKappa)
	agreement := stats.ConfusionStatistic(stats.Confusion.Agreement)
	// 30 pairs: 12 (0,0), 3 (0,1), 5 (1,0), 10 (1,1).
	var pairs []stats.Pair
	for _, g := range []struct {
		p stats.Pair
		n int
	}{{stats.Pair{0, 0}, 12}, {stats.Pair{0, 1}, 3}, {stats.Pair{1, 0}, 5}, {stats.Pair{1, 1}, 10}} {
		for range g.n {
			pairs = append(pairs, g.p)
		}
	}

	t.Run("ContainsThePointEstimate", func(t *testing.T) {
		t.Parallel()
		c := stats.NewConfusion(2, pairs)
		k, _ := c.CohenKappa()
		a, _ := c.Agreement()
		for seed := range uint64(10) {
			ci := stats.BootstrapConfusion(2, pairs, 1000, seed, agreement, kappa)
			require.Len(t, ci, 2)
			require.True(t, ci[0].Contains(a), "seed %d: %v does not contain %v", seed, *ci[0], a)
			require.True(t, ci[1].Contains(k), "seed %d: %v does not contain %v", seed, *ci[1], k)
			require.Less(t, ci[1].Low, ci[1].High)
		}
	})

	t.Run("SameSeedSameInterval", func(t *testing.T) {
		t.Parallel()
		a := stats.BootstrapConfusion(2, pairs, 500, 7, kappa)
		require.Equal(t, *a[0], *stats.BootstrapConfusion(2, pairs, 500, 7, kappa)[0])
		require.NotEqual(t, *a[0], *stats.BootstrapConfusion(2, pairs, 500, 8, kappa)[0])
	})

	t.Run("ByHand", func(t *testing.T) {
		t.Parallel()
		// Resampling {(0,0), (0,1)}: agreement is 0, ½ or 1 with probabilities
		// ¼, ½, ¼, so both tails hold far more than 2.5%.
		ci := stats.BootstrapConfusion(2, []stats.Pair{{0, 0}, {0, 1}}, 2000, 1, agreement)
		require.Equal(t, stats.Interval{Low: 0, High: 1}, *ci[0])
	})

	t.Run("UndefinedResamplesLeftOut", func(t *testing.T) {
		t.Parallel()
		// Resampling {(0,0), (1,1)}: half the resamples draw the same pair twice,
		// where κ is undefined (one category); the others have κ = 1.
		ci := stats.BootstrapConfusion(2, []stats.Pair{{0, 0}, {1, 1}}, 2000, 1, kappa)
		require.Equal(t, stats.Interval{Low: 1, High: 1}, *ci[0])
	})

	t.Run("UndefinedEverywhere", func(t *testing.T) {
		t.Parallel()
		ci := stats.BootstrapConfusion(2, []stats.Pair{{0, 0}, {0, 0}, {0, 0}}, 200, 1, kappa, agreement)
		require.Nil(t, ci[0], "one category: κ never exists")
		require.Equal(t, stats.Interval{Low: 1, High: 1}, *ci[1])
	})

	t.Run("NoPairs", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []*stats.Interval{nil, nil}, stats.BootstrapConfusion(2, nil, 200, 1, kappa, agreement))
	})

	t.Run("NonPositiveResamplesMeansDefault", func(t *testing.T) {
		t.Parallel()
		want := stats.BootstrapConfusion(2, pairs, stats.DefaultResamples, 5, kappa)
		require.Equal(t, want, stats.BootstrapConfusion(2, pairs, 0, 5, kappa))
	})
}

func TestBootstrapItems(t *testing.T) {
	t.Parallel()

	t.Run("DrawsEveryIndexUniformly", func(t *testing.T) {
		t.Parallel()
		seen := make([]int, 7)
		stats.BootstrapItems(7, 1, 1000, 3, func(sample []int, values []float64, defined []bool) {
			require.Len(t, sample, 7)
			for _, i := range sample {
				seen[i]++
			}
			values[0], defined[0] = 0, true
		})
		for i, n := range seen {
			// 7000 draws over 7 indices: 1000 each, sd ≈ 29.
			require.InDelta(t, 1000, n, 150, "index %d", i)
		}
	})

	t.Run("NoItemsOrStatistics", func(t *testing.T) {
		t.Parallel()
		calls := 0
		count := func([]int, []float64, []bool) { calls++ }
		require.Equal(t, []*stats.Interval{nil}, stats.BootstrapItems(0, 1, 10, 1, count))
		require.Empty(t, stats.BootstrapItems(5, 0, 10, 1, count))
		require.Zero(t, calls)
	})
}
