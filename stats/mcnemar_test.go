package stats_test

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/stats"
)

// The expected p-values are worked by hand from p = 2 · Σ_{i≤k} C(n,i) / 2ⁿ
// with n = b + c and k = min(b, c), capped at 1.
func TestMcNemarExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		b, c int
		want float64
	}{
		{"no discordant pair", 0, 0, 1},
		// n = 6, k = 1: 2 · (1 + 6) / 64 = 14/64.
		{"1 against 5", 1, 5, 0.21875},
		// n = 10, k = 0: 2 · 1 / 1024.
		{"0 against 10", 0, 10, 0.001953125},
		// n = 5, k = 0: 2 / 32.
		{"0 against 5", 0, 5, 0.0625},
		// n = 5, k = 1: 2 · (1 + 5) / 32.
		{"1 against 4", 1, 4, 0.375},
		// n = 12, k = 2: 2 · (1 + 12 + 66) / 4096 = 158/4096.
		{"2 against 10", 2, 10, 0.03857421875},
		// n = 5, k = 2: 2 · (1 + 5 + 10) / 32 = 1 exactly.
		{"2 against 3", 2, 3, 1},
		// n = 1: 2 · 1/2 = 1.
		{"one discordant pair", 0, 1, 1},
		{"a tie", 7, 7, 1},
		{"negative counts are zero", -3, 5, 0.0625},
		{"both negative", -1, -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.InDelta(t, tc.want, stats.McNemarExact(tc.b, tc.c), 1e-12)
			require.InDelta(t, tc.want, stats.McNemarExact(tc.c, tc.b), 1e-12, "symmetric")
		})
	}
}

// exactMcNemar is the same p-value in exact rational arithmetic, slow but
// free of rounding, to check the log-space computation at sizes where the
// plain formula overflows a float64.
func exactMcNemar(b, c int) float64 {
	n, k := b+c, min(b, c)
	sum, term := new(big.Int), big.NewInt(1) // term is C(n, i)
	for i := 0; i <= k; i++ {
		sum.Add(sum, term)
		term.Mul(term, big.NewInt(int64(n-i)))
		term.Quo(term, big.NewInt(int64(i+1)))
	}
	p := new(big.Rat).SetFrac(new(big.Int).Lsh(sum, 1), new(big.Int).Lsh(big.NewInt(1), uint(n)))
	f, _ := p.Float64()
	return min(f, 1)
}

func TestMcNemarExact_Large(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ b, c int }{
		{40, 60}, {480, 520}, {1000, 1100}, {1400, 1600}, {2900, 3100}, {100, 400}, {3, 2500},
	} {
		got := stats.McNemarExact(tc.b, tc.c)
		want := exactMcNemar(tc.b, tc.c)
		require.False(t, math.IsNaN(got) || math.IsInf(got, 0), "b=%d c=%d", tc.b, tc.c)
		require.GreaterOrEqual(t, got, 0.0)
		require.LessOrEqual(t, got, 1.0)
		if want == 0 {
			require.Less(t, got, 1e-300, "b=%d c=%d", tc.b, tc.c)
			continue
		}
		require.InEpsilon(t, want, got, 1e-9, "b=%d c=%d", tc.b, tc.c)
	}
	// Far past where 2^n overflows, ties and near-ties stay at or near 1 and a
	// lopsided split is vanishingly unlikely, never NaN.
	require.Equal(t, 1.0, stats.McNemarExact(500_000, 500_000))
	near := stats.McNemarExact(499_900, 500_100)
	require.Greater(t, near, 0.8)
	require.Less(t, near, 1.0)
	require.Equal(t, 0.0, stats.McNemarExact(0, 1_000_000))
}
