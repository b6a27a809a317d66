package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// ItemStatistics computes statistics on one bootstrap resample. sample holds
// item indices drawn with replacement (an index can repeat); the function sets
// values[s] for each statistic s and defined[s] to whether it exists on the
// resample (a kappa on a resample where every item has one category does not).
// Both slices arrive with defined all false.
type ItemStatistics func(sample []int, values []float64, defined []bool)

// BootstrapItems is the percentile bootstrap 95% interval of several statistics
// over items: it draws resamples samples of n item indices with replacement,
// computes every statistic on each, and returns for each statistic the 2.5th
// and 97.5th percentiles of its values (linear interpolation between order
// statistics, as Bootstrap does). Resampling items, not ratings, keeps each
// item's ratings together, which is what the statistics' sampling error is
// about.
//
// Resamples on which a statistic is undefined are left out of its percentiles;
// a statistic undefined on every resample gets nil. The draws depend only on
// n, resamples and seed (the PCG stream Bootstrap uses), so the same items in
// the same order always give the same intervals, and every statistic computed
// in one call sees the same resamples. n < 1 gives nil for every statistic;
// resamples < 1 means DefaultResamples.
func BootstrapItems(n, statistics, resamples int, seed uint64, compute ItemStatistics) []*Interval {
	out := make([]*Interval, max(statistics, 0))
	if n < 1 || statistics < 1 {
		return out
	}
	if resamples < 1 {
		resamples = DefaultResamples
	}
	source := rand.NewPCG(seed, pcgStream)
	sample := make([]int, n)
	values := make([]float64, statistics)
	defined := make([]bool, statistics)
	draws := make([][]float64, statistics)
	for s := range draws {
		draws[s] = make([]float64, 0, resamples)
	}
	for range resamples {
		drawIndices(sample, source)
		clear(values)
		clear(defined)
		compute(sample, values, defined)
		for s := range statistics {
			if defined[s] && !math.IsNaN(values[s]) && !math.IsInf(values[s], 0) {
				draws[s] = append(draws[s], values[s])
			}
		}
	}
	for s, d := range draws {
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		out[s] = &Interval{Low: percentile(d, 0.025), High: percentile(d, 0.975)}
	}
	return out
}

// drawIndices fills sample with indices in [0, len(sample)) drawn uniformly with
// replacement, two from each 64-bit word by multiply-shift, as resampleMean does.
func drawIndices(sample []int, source *rand.PCG) {
	n := uint64(len(sample))
	i := 0
	for ; i+1 < len(sample); i += 2 {
		word := source.Uint64()
		sample[i] = int((word & math.MaxUint32) * n >> 32)
		sample[i+1] = int((word >> 32) * n >> 32)
	}
	if i < len(sample) {
		sample[i] = int((source.Uint64() & math.MaxUint32) * n >> 32)
	}
}

// ConfusionStatistic is a statistic of a confusion table, such as
// Confusion.CohenKappa; ok false means undefined on the table.
type ConfusionStatistic func(Confusion) (value float64, ok bool)

// BootstrapConfusion is BootstrapItems over paired ratings: each resample draws
// len(pairs) pairs with replacement into a k×k table and evaluates every
// statistic on it. Pairs outside the table count in the resample size but not
// in the table, as NewConfusion leaves them out.
func BootstrapConfusion(k int, pairs []Pair, resamples int, seed uint64, statistics ...ConfusionStatistic) []*Interval {
	table := emptyConfusion(k)
	return BootstrapItems(len(pairs), len(statistics), resamples, seed, func(sample []int, values []float64, defined []bool) {
		table.reset()
		for _, i := range sample {
			p := pairs[i]
			if p.First >= 0 && p.First < k && p.Second >= 0 && p.Second < k {
				table.Counts[p.First][p.Second]++
			}
		}
		for s, statistic := range statistics {
			values[s], defined[s] = statistic(table)
		}
	})
}
