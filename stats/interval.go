// Package stats computes the metrics Proctor shows for a set of graded attempts:
// success and perfect rates with Wilson intervals, judge and rubric score means with
// bootstrap intervals, Odysseys trajectory efficiency, resource totals and
// breakdowns by task label. It is pure computation: no database, no I/O, and every
// result is deterministic for the same input, so precomputed leaderboard rows do not
// change when they are recomputed from unchanged evaluations.
//
// Rates and scores are fractions (0–1); pages multiply by 100 to show percentages.
// No function returns NaN or an infinity.
package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"proctor/models"
)

// Interval is a closed confidence interval [Low, High] (models.Interval).
type Interval = models.Interval

// Z95 is the two-sided 95% standard normal quantile, Φ⁻¹(0.975).
const Z95 = 1.959963984540054

// DefaultResamples is the number of bootstrap resamples Summarize draws: enough for
// stable 2.5% and 97.5% percentiles at the two decimals pages show, cheap enough to
// recompute every breakdown of an 812-task run on each evaluation.
const DefaultResamples = 2000

// DefaultSeed is the bootstrap seed Summarize uses, fixed so that the same attempts
// always give the same interval.
const DefaultSeed uint64 = 20240812

// pcgStream is the second PCG state word; any constant works, it only has to be the
// same on every call so that a seed alone fixes the stream.
const pcgStream uint64 = 0x9e3779b97f4a7c15

// Wilson is the Wilson score interval for a binomial proportion of successes out of
// n trials at the normal quantile z (Z95 for 95%). Unlike the normal-approximation
// interval it stays inside [0, 1] and does not collapse to a point at 0/n or n/n,
// which matters for small breakdown groups.
//
// With n ≤ 0 there is no data, and the honest interval is the whole range [0, 1].
// successes is clamped to [0, n] and a negative z is taken by its magnitude, so
// callers cannot make the interval leave [0, 1] or become NaN.
func Wilson(successes, n int, z float64) Interval {
	if n <= 0 {
		return Interval{Low: 0, High: 1}
	}
	successes = min(max(successes, 0), n)
	z = math.Abs(z)
	if math.IsNaN(z) || math.IsInf(z, 0) {
		return Interval{Low: 0, High: 1}
	}
	nf := float64(n)
	p := float64(successes) / nf
	z2 := z * z
	denominator := 1 + z2/nf
	center := (p + z2/(2*nf)) / denominator
	halfWidth := z / denominator * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	low := max(center-halfWidth, 0)
	high := min(center+halfWidth, 1)
	// The exact bounds at 0/n and n/n are 0 and 1; rounding can leave 1e-17 or
	// 0.9999999999999999, which would print as a confusing non-round number.
	if successes == 0 {
		low = 0
	}
	if successes == n {
		high = 1
	}
	return Interval{Low: low, High: high}
}

// Wilson95 is Wilson at 95% confidence.
func Wilson95(successes, n int) Interval { return Wilson(successes, n, Z95) }

// Bootstrap is the percentile bootstrap 95% interval for the mean of values: it
// draws resamples samples of len(values) with replacement, takes each one's mean,
// and returns the 2.5th and 97.5th percentiles of those means (linear interpolation
// between order statistics).
//
// The result depends only on the multiset of values, resamples and seed: values are
// sorted into a private copy before drawing, so callers need not keep a stable
// order. Non-finite values (NaN, ±Inf) are ignored. With no finite values the
// result is the zero Interval (there is no mean to bracket; Summarize reports nil
// instead). When every value is the same the interval is exactly that value.
// resamples < 1 means DefaultResamples.
//
// Cost: two allocations (the sorted copy and one buffer of resample means) and
// resamples × len(values) / 2 words from a PCG generator (math/rand/v2).
func Bootstrap(values []float64, resamples int, seed uint64) Interval {
	sample := finiteSorted(values)
	if len(sample) == 0 {
		return Interval{}
	}
	if sample[0] == sample[len(sample)-1] {
		return Interval{Low: sample[0], High: sample[0]}
	}
	if resamples < 1 {
		resamples = DefaultResamples
	}
	source := rand.NewPCG(seed, pcgStream)
	means := make([]float64, resamples)
	for r := range means {
		means[r] = resampleMean(sample, source)
	}
	slices.Sort(means)
	// Rounding in the sums can put a resample mean one ulp outside the data;
	// an interval for a mean never extends past the data.
	return Interval{
		Low:  max(percentile(means, 0.025), sample[0]),
		High: min(percentile(means, 0.975), sample[len(sample)-1]),
	}
}

// resampleMean is the mean of len(sample) values drawn from sample with
// replacement. It is the hot loop of Bootstrap, so it takes two indices from each
// 64-bit word (multiply-shift on each 32-bit half, which favours some indices by at
// most 1/2³² in probability: a relative bias of len/2³², under 0.03% for a million
// values and far below what a percentile can show) and sums into two accumulators
// so that consecutive additions do not wait on each other. Past 2³² values (32 GB
// of float64) the product would wrap; indices stay in range but lose uniformity.
func resampleMean(sample []float64, source *rand.PCG) float64 {
	n := uint64(len(sample))
	var even, odd float64
	for range n / 2 {
		word := source.Uint64()
		even += sample[(word&math.MaxUint32)*n>>32]
		odd += sample[(word>>32)*n>>32]
	}
	if n%2 == 1 {
		even += sample[(source.Uint64()&math.MaxUint32)*n>>32]
	}
	return (even + odd) / float64(n)
}

// finiteSorted returns a sorted copy of the finite values.
func finiteSorted(values []float64) []float64 {
	sample := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			sample = append(sample, v)
		}
	}
	slices.Sort(sample)
	return sample
}

// percentile is the q-quantile of sorted (non-empty) by linear interpolation
// between the order statistics at positions (len-1)·q, the common default
// (Hyndman & Fan type 7).
func percentile(sorted []float64, q float64) float64 {
	position := q * float64(len(sorted)-1)
	lower := int(math.Floor(position))
	upper := min(lower+1, len(sorted)-1)
	fraction := position - float64(lower)
	return sorted[lower] + fraction*(sorted[upper]-sorted[lower])
}

// Median is the median of xs: the middle value, or the mean of the two middle
// values when len(xs) is even; 0 for an empty slice. xs is not modified.
func Median[T int | int64 | float64](xs []T) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	middle := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return float64(sorted[middle])
	}
	// Convert before adding so two large step counts cannot overflow int.
	return (float64(sorted[middle-1]) + float64(sorted[middle])) / 2
}
