package stats

import (
	"slices"
)

// AlphaMetric is the difference function Krippendorff's alpha weighs
// disagreements with.
type AlphaMetric string

// The metrics KrippendorffAlpha supports.
const (
	// AlphaNominal counts every disagreement alike: δ² = 1 when c ≠ k.
	AlphaNominal AlphaMetric = "nominal"
	// AlphaOrdinal weighs a disagreement by how many values lie between the two
	// ranks, as observed: δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², with n_g
	// the number of pairable values equal to g.
	AlphaOrdinal AlphaMetric = "ordinal"
	// AlphaInterval weighs a disagreement by the squared difference of the
	// values: δ²(c, k) = (c − k)².
	AlphaInterval AlphaMetric = "interval"
)

// KrippendorffAlpha is Krippendorff's alpha reliability coefficient for any
// number of coders, missing values allowed:
//
//	α = 1 − Dₒ / Dₑ = 1 − (n − 1) · Σ_{c,k} o_ck·δ²_ck / Σ_{c,k} n_c·n_k·δ²_ck
//
// units[u] holds the values the coders gave unit u (an item), in any order; a
// coder who did not rate the unit is simply absent. Values are ordered
// category codes (an ordinal label's rank, a score). o is the coincidence
// matrix: each unit with m ≥ 2 values adds 1/(m − 1) to o_ck for every ordered
// pair of its values (c, k) taken from two different coders; n_c = Σ_k o_ck and
// n = Σ_c n_c, the number of pairable values. Units with fewer than two values
// cannot be paired and are left out, as Krippendorff prescribes.
//
// α is 1 for perfect agreement, 0 when agreement is what chance would give,
// and negative below it. Undefined (ok false) when there are fewer than two
// pairable values, when every pairable value is the same (Dₑ = 0: the
// single-category case of Cohen's kappa), and for an unknown metric. units is
// not modified.
func KrippendorffAlpha(units [][]int, metric AlphaMetric) (float64, bool) {
	if metric != AlphaNominal && metric != AlphaOrdinal && metric != AlphaInterval {
		return 0, false
	}
	var values []int
	for _, u := range units {
		if len(u) >= 2 {
			values = append(values, u...)
		}
	}
	slices.Sort(values)
	values = slices.Compact(values)
	if len(values) < 1 {
		return 0, false
	}
	index := make(map[int]int, len(values))
	for i, v := range values {
		index[v] = i
	}

	v := len(values)
	coincidence := make([]float64, v*v)
	counts := make([]float64, v)
	for _, u := range units {
		m := len(u)
		if m < 2 {
			continue
		}
		clear(counts)
		for _, x := range u {
			counts[index[x]]++
		}
		weight := 1 / float64(m-1)
		for c := range v {
			if counts[c] == 0 {
				continue
			}
			for k := range v {
				pairs := counts[c] * counts[k]
				if c == k {
					pairs = counts[c] * (counts[c] - 1)
				}
				coincidence[c*v+k] += pairs * weight
			}
		}
	}
	marginals := make([]float64, v)
	var n float64
	for c := range v {
		for k := range v {
			marginals[c] += coincidence[c*v+k]
		}
		n += marginals[c]
	}

	delta := alphaDistance(metric, values, marginals)
	var observed, expected float64
	for c := range v {
		for k := range v {
			if c == k {
				continue
			}
			d := delta(c, k)
			observed += coincidence[c*v+k] * d
			expected += marginals[c] * marginals[k] * d
		}
	}
	if n < 2 || expected == 0 {
		return 0, false
	}
	return 1 - (n-1)*observed/expected, true
}

// alphaDistance returns δ² between the values at two indices of the sorted
// distinct values.
func alphaDistance(metric AlphaMetric, values []int, marginals []float64) func(c, k int) float64 {
	switch metric {
	case AlphaInterval:
		return func(c, k int) float64 {
			d := float64(values[c] - values[k])
			return d * d
		}
	case AlphaOrdinal:
		// Values never observed have n_g = 0 and add nothing to the sum, so
		// summing over the observed values between c and k is the same as
		// summing over every rank between them.
		return func(c, k int) float64 {
			if c > k {
				c, k = k, c
			}
			var sum float64
			for g := c; g <= k; g++ {
				sum += marginals[g]
			}
			d := sum - (marginals[c]+marginals[k])/2
			return d * d
		}
	default:
		return func(c, k int) float64 {
			if c == k {
				return 0
			}
			return 1
		}
	}
}
