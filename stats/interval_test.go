package stats_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/stats"
)

// The expected Wilson bounds below are worked by hand from
//
//	center = (p + z²/2n) / (1 + z²/n)
//	half   = z / (1 + z²/n) · √(p(1−p)/n + z²/4n²)
//
// with z = 1.959963984540054, z² = 3.841458820694124.
func TestWilson(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		successes, n int
		z            float64
		want         stats.Interval
	}{
		// p = 0.8, z²/n = 0.384146, denominator 1.384146;
		// center = 0.992073/1.384146 = 0.716739;
		// half = 1.959964/1.384146 · √(0.016 + 0.009604) = 1.416009 · 0.160011 = 0.226577.
		{"8 of 10", 8, 10, stats.Z95, stats.Interval{Low: 0.490162, High: 0.943318}},
		// p = 0: the lower bound is 0 and the upper is (z²/n)/(1 + z²/n) = 0.384146/1.384146.
		{"0 of 10", 0, 10, stats.Z95, stats.Interval{Low: 0, High: 0.277533}},
		// p = 1 mirrors 0 of 10: the lower bound is 1/(1 + z²/n) = 1/1.384146.
		{"10 of 10", 10, 10, stats.Z95, stats.Interval{Low: 0.722467, High: 1}},
		// One success in one trial: the lower bound is 1/(1 + z²) = 1/4.841459.
		{"1 of 1", 1, 1, stats.Z95, stats.Interval{Low: 0.206549, High: 1}},
		// p = 0.4, z²/n = 0.768292; center = 0.784146/1.768292 = 0.443449;
		// half = 1.959964/1.768292 · √(0.048 + 0.038415) = 1.108394 · 0.293963 = 0.325827.
		{"2 of 5", 2, 5, stats.Z95, stats.Interval{Low: 0.117621, High: 0.769276}},
		// p = 0.25, z²/n = 0.960365; center = 0.730182/1.960365 = 0.372473;
		// half = 1.959964/1.960365 · √(0.046875 + 0.060023) = 0.999795 · 0.326953 = 0.326886.
		{"1 of 4", 1, 4, stats.Z95, stats.Interval{Low: 0.045587, High: 0.699359}},
		// No data: every proportion is possible.
		{"0 of 0", 0, 0, stats.Z95, stats.Interval{Low: 0, High: 1}},
		{"negative n", 0, -3, stats.Z95, stats.Interval{Low: 0, High: 1}},
		// Out-of-range counts are clamped to 0 and n.
		{"more successes than trials", 12, 10, stats.Z95, stats.Interval{Low: 0.722467, High: 1}},
		{"negative successes", -1, 10, stats.Z95, stats.Interval{Low: 0, High: 0.277533}},
		// A negative z means the same as its magnitude; z = 0 is the point estimate.
		{"negative z", 8, 10, -stats.Z95, stats.Interval{Low: 0.490162, High: 0.943318}},
		{"zero z", 8, 10, 0, stats.Interval{Low: 0.8, High: 0.8}},
		{"NaN z", 8, 10, math.NaN(), stats.Interval{Low: 0, High: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := stats.Wilson(tc.successes, tc.n, tc.z)
			require.InDelta(t, tc.want.Low, got.Low, 1e-6)
			require.InDelta(t, tc.want.High, got.High, 1e-6)
		})
	}

	t.Run("ExactBoundsAtTheExtremes", func(t *testing.T) {
		t.Parallel()
		// Rounding leaves 0.9999999999999999 in the formula at 10/10.
		require.Equal(t, 1.0, stats.Wilson95(10, 10).High)
		require.Equal(t, 0.0, stats.Wilson95(0, 10).Low)
	})

	t.Run("Wilson95IsWilsonAtZ95", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, stats.Wilson(8, 10, stats.Z95), stats.Wilson95(8, 10))
	})
}

func TestBootstrap(t *testing.T) {
	t.Parallel()
	scores := []float64{0.2, 0.4, 0.4, 0.5, 0.6, 0.75, 0.8, 1, 1, 0, 0.3, 0.9}
	mean := meanOf(scores)

	t.Run("SameSeedSameInterval", func(t *testing.T) {
		t.Parallel()
		first := stats.Bootstrap(scores, 2000, 7)
		require.Equal(t, first, stats.Bootstrap(scores, 2000, 7))
		require.Less(t, first.Low, first.High)
	})

	t.Run("DifferentSeedCloseInterval", func(t *testing.T) {
		t.Parallel()
		a := stats.Bootstrap(scores, 2000, 7)
		b := stats.Bootstrap(scores, 2000, 8)
		require.NotEqual(t, a, b, "a different seed draws different resamples")
		require.InDelta(t, a.Low, b.Low, 0.03)
		require.InDelta(t, a.High, b.High, 0.03)
	})

	t.Run("ContainsTheMean", func(t *testing.T) {
		t.Parallel()
		for seed := range uint64(20) {
			ci := stats.Bootstrap(scores, 1000, seed)
			require.True(t, ci.Contains(mean), "seed %d: %v does not contain %v", seed, ci, mean)
		}
	})

	t.Run("OrderDoesNotMatter", func(t *testing.T) {
		t.Parallel()
		reversed := slices.Clone(scores)
		slices.Reverse(reversed)
		require.Equal(t, stats.Bootstrap(scores, 500, 3), stats.Bootstrap(reversed, 500, 3))
	})

	t.Run("InputNotModified", func(t *testing.T) {
		t.Parallel()
		in := []float64{3, 1, 2}
		stats.Bootstrap(in, 100, 1)
		require.Equal(t, []float64{3, 1, 2}, in)
	})

	t.Run("ByHand", func(t *testing.T) {
		t.Parallel()
		// Resampling {0, 1}: the mean is 0, 0.5 or 1 with probabilities ¼, ½, ¼,
		// so both tails hold far more than 2.5% of the resamples.
		require.Equal(t, stats.Interval{Low: 0, High: 1}, stats.Bootstrap([]float64{0, 1}, 2000, 1))
		// Resampling {0, 0, 0, 1}: P(mean = 0) = (¾)⁴ = 0.316 fills the lower tail;
		// P(mean = 1) = (¼)⁴ = 0.004 < 2.5% but P(mean ≥ 0.75) = 4·(¼)³·¾ + (¼)⁴
		// = 0.051 > 2.5%, so the 97.5th percentile is 0.75.
		require.Equal(t, stats.Interval{Low: 0, High: 0.75}, stats.Bootstrap([]float64{0, 0, 0, 1}, 2000, 1))
	})

	t.Run("CollapsesOnOneValue", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, stats.Interval{Low: 4, High: 4}, stats.Bootstrap([]float64{4}, 2000, 1))
		// Summing three 0.1s gives 0.30000000000000004; the interval must still be
		// exactly the value.
		require.Equal(t, stats.Interval{Low: 0.1, High: 0.1}, stats.Bootstrap([]float64{0.1, 0.1, 0.1}, 2000, 1))
	})

	t.Run("NonFiniteIgnored", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, stats.Interval{Low: 2, High: 2},
			stats.Bootstrap([]float64{math.NaN(), 2, math.Inf(1), 2, math.Inf(-1)}, 100, 1))
		require.Equal(t, stats.Interval{}, stats.Bootstrap([]float64{math.NaN()}, 100, 1))
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, stats.Interval{}, stats.Bootstrap(nil, 100, 1))
	})

	t.Run("NonPositiveResamplesMeansDefault", func(t *testing.T) {
		t.Parallel()
		want := stats.Bootstrap(scores, stats.DefaultResamples, 5)
		require.Equal(t, want, stats.Bootstrap(scores, 0, 5))
		require.Equal(t, want, stats.Bootstrap(scores, -1, 5))
	})

	t.Run("LargeSampleMatchesNormalApproximation", func(t *testing.T) {
		t.Parallel()
		// For a large sample the bootstrap distribution of the mean is close to
		// normal with the standard error sd/√n, so the percentile interval is
		// close to mean ± 1.96·sd/√n.
		rng := rand.New(rand.NewPCG(11, 12))
		values := make([]float64, 4000)
		for i := range values {
			values[i] = rng.Float64() * 5 // uniform on [0, 5): sd = 5/√12
		}
		m := meanOf(values)
		var squares float64
		for _, v := range values {
			squares += (v - m) * (v - m)
		}
		halfWidth := stats.Z95 * math.Sqrt(squares/float64(len(values)-1)) / math.Sqrt(float64(len(values)))
		require.InDelta(t, 0.0448, halfWidth, 0.001, "5/√12 · 1.96/√4000")

		ci := stats.Bootstrap(values, 2000, 1)
		require.InDelta(t, m-halfWidth, ci.Low, 0.1*halfWidth)
		require.InDelta(t, m+halfWidth, ci.High, 0.1*halfWidth)
	})
}

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		xs   []int
		want float64
	}{
		{"empty", nil, 0},
		{"one", []int{5}, 5},
		{"odd", []int{9, 1, 4}, 4},
		{"even", []int{4, 1, 3, 2}, 2.5},
		{"even with a tie", []int{7, 3, 3, 10}, 5},
		{"large values do not overflow", []int{math.MaxInt, math.MaxInt}, float64(math.MaxInt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, stats.Median(tc.xs))
		})
	}

	t.Run("InputNotModified", func(t *testing.T) {
		t.Parallel()
		xs := []int{3, 1, 2}
		stats.Median(xs)
		require.Equal(t, []int{3, 1, 2}, xs)
	})
}

func meanOf(values []float64) float64 {
	var sum float64
	for _, v := range values {
		sum += v
	}
	return sum / float64(len(values))
}
