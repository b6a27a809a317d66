package stats_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/stats"
)

// krippendorff2011 is the reliability data of Krippendorff's "Computing
// Krippendorff's Alpha-Reliability" (2011): four observers, twelve units,
// values 1–5, missing values left out. Unit 12 has one value and cannot be
// paired.
//
//	unit      1  2  3  4  5  6  7  8  9 10 11 12
//	A         1  2  3  3  2  1  4  1  2  .  .  .
//	B         1  2  3  3  2  2  4  1  2  5  .  3
//	C         .  3  3  3  2  3  4  2  2  5  1  .
//	D         1  2  3  3  2  4  4  1  2  5  1  .
var krippendorff2011 = [][]int{
	{1, 1, 1}, {2, 2, 3, 2}, {3, 3, 3, 3}, {3, 3, 3, 3}, {2, 2, 2, 2}, {1, 2, 3, 4},
	{4, 4, 4, 4}, {1, 1, 2, 1}, {2, 2, 2, 2}, {5, 5, 5}, {1, 1}, {3},
}

// The coincidence matrix of krippendorff2011, by hand (a unit with m values
// adds 1/(m−1) per ordered pair of values from different observers):
//
//	unit 1 (1,1,1)      o11 += 3·2/2 = 3
//	unit 2 (2,2,3,2)    o22 += 3·2/3 = 2, o23 = o32 += 3·1/3 = 1
//	units 3, 4 (3×4)    o33 += 4 each
//	units 5, 9 (2×4)    o22 += 4 each
//	unit 6 (1,2,3,4)    every off-diagonal oₖₗ with k,l ≤ 4 += 1/3
//	unit 7 (4×4)        o44 += 4
//	unit 8 (1,1,2,1)    o11 += 2, o12 = o21 += 1
//	unit 10 (5,5,5)     o55 += 3
//	unit 11 (1,1)       o11 += 2
//
//	      1     2     3     4    5 | n_c
//	1     7    4/3   1/3   1/3   0 |  9
//	2    4/3   10    4/3   1/3   0 | 13
//	3    1/3   4/3    8    1/3   0 | 10
//	4    1/3   1/3   1/3    4    0 |  5
//	5     0     0     0     0    3 |  3      n = 40
//
// Nominal: off-diagonal o sums to 40 − 32 = 8; Σ_{c≠k} n_c·n_k = 40² −
// (81 + 169 + 100 + 25 + 9) = 1216; α = 1 − 39·8/1216 = 0.743421.
//
// Interval: Σ o·(c−k)² = 2·(4/3·1 + 1/3·4 + 1/3·9 + 4/3·1 + 1/3·4 + 1/3·1) =
// 52/3; Σ n_c·n_k·(c−k)² = 2·(117 + 360 + 405 + 432 + 130 + 260 + 351 + 50 +
// 120 + 15) = 4480; α = 1 − 39·(52/3)/4480 = 1 − 676/4480 = 0.849107.
//
// Ordinal: δ²(c,k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²: (1,2) 11² = 121,
// (1,3) 22.5² = 506.25, (1,4) 30² = 900, (1,5) 34² = 1156, (2,3) 11.5² =
// 132.25, (2,4) 19² = 361, (2,5) 23² = 529, (3,4) 7.5² = 56.25, (3,5) 11.5² =
// 132.25, (4,5) 4² = 16. Observed 2·(4/3·121 + 1/3·506.25 + 1/3·900 +
// 4/3·132.25 + 1/3·361 + 1/3·56.25) = 1891; expected 2·(117·121 + 90·506.25 +
// 45·900 + 27·1156 + 130·132.25 + 65·361 + 39·529 + 50·56.25 + 30·132.25 +
// 15·16) = 399480; α = 1 − 39·1891/399480 = 0.815388.
//
// The paper reports 0.743 (nominal), 0.815 (ordinal) and 0.849 (interval).
func TestKrippendorffAlpha(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		units  [][]int
		metric stats.AlphaMetric
		want   float64
	}{
		{"Krippendorff 2011 nominal", krippendorff2011, stats.AlphaNominal, 0.743421},
		{"Krippendorff 2011 ordinal", krippendorff2011, stats.AlphaOrdinal, 0.815388},
		{"Krippendorff 2011 interval", krippendorff2011, stats.AlphaInterval, 0.849107},
		// Two coders, three units {0,0}, {1,1}, {0,1}: o00 = o11 = 2, o01 = o10 =
		// 1, n0 = n1 = 3, n = 6: α = 1 − 5·2/(2·3·3) = 1 − 10/18 = 0.444444.
		{"two coders", [][]int{{0, 0}, {1, 1}, {0, 1}}, stats.AlphaNominal, 0.444444},
		// Always disagreeing: o01 = o10 = 2, n0 = n1 = 2, n = 4:
		// α = 1 − 3·4/(2·2·2) = −0.5.
		{"total disagreement", [][]int{{0, 1}, {1, 0}}, stats.AlphaNominal, -0.5},
		// Perfect agreement with several values and unequal coder counts.
		{"perfect agreement", [][]int{{1, 1, 1}, {2, 2}, {3, 3, 3, 3}, {1}}, stats.AlphaInterval, 1},
		// Units with one value carry no pairing and change nothing.
		{"single values ignored", [][]int{{0, 0}, {1, 1}, {0, 1}, {1}, {0}, nil}, stats.AlphaNominal, 0.444444},
		// With two values the three metrics agree: every disagreement is one
		// step apart. Ordinal: δ² = (n0 + n1 − (n0 + n1)/2)² is the same constant
		// for every off-diagonal pair and cancels.
		{"binary interval", [][]int{{0, 0}, {1, 1}, {0, 1}}, stats.AlphaInterval, 0.444444},
		{"binary ordinal", [][]int{{0, 0}, {1, 1}, {0, 1}}, stats.AlphaOrdinal, 0.444444},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := stats.KrippendorffAlpha(tc.units, tc.metric)
			requireValue(t, tc.want, got, ok, string(tc.metric))
		})
	}

	t.Run("Undefined", func(t *testing.T) {
		t.Parallel()
		for name, units := range map[string][][]int{
			"no units":                     nil,
			"no pairable unit":             {{1}, {2}, {3}},
			"one value throughout":         {{4, 4}, {4, 4, 4}, {2}},
			"empty units":                  {{}, {}},
			"one pairable unit, one value": {{0, 0}},
		} {
			for _, m := range []stats.AlphaMetric{stats.AlphaNominal, stats.AlphaOrdinal, stats.AlphaInterval} {
				got, ok := stats.KrippendorffAlpha(units, m)
				requireUndefined(t, got, ok, name+" "+string(m))
			}
		}
		got, ok := stats.KrippendorffAlpha([][]int{{0, 1}, {1, 1}}, "ratio")
		requireUndefined(t, got, ok, "unknown metric")
	})

	t.Run("InputNotModified", func(t *testing.T) {
		t.Parallel()
		units := [][]int{{3, 1, 2}, {2, 2}}
		stats.KrippendorffAlpha(units, stats.AlphaOrdinal)
		require.Equal(t, [][]int{{3, 1, 2}, {2, 2}}, units)
	})

	t.Run("OrderOfCodersDoesNotMatter", func(t *testing.T) {
		t.Parallel()
		reordered := [][]int{
			{1, 1, 1}, {3, 2, 2, 2}, {3, 3, 3, 3}, {3, 3, 3, 3}, {2, 2, 2, 2}, {4, 3, 2, 1},
			{4, 4, 4, 4}, {2, 1, 1, 1}, {2, 2, 2, 2}, {5, 5, 5}, {1, 1}, {3},
		}
		for _, m := range []stats.AlphaMetric{stats.AlphaNominal, stats.AlphaOrdinal, stats.AlphaInterval} {
			want, _ := stats.KrippendorffAlpha(krippendorff2011, m)
			got, _ := stats.KrippendorffAlpha(reordered, m)
			require.InDelta(t, want, got, 1e-12, string(m))
		}
	})
}
