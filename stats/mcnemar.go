package stats

import "math"

// McNemarExact is the two-sided exact McNemar test for paired binary outcomes:
// given b pairs where only the first of two runs succeeded and c pairs where
// only the second did (the discordant pairs; concordant ones carry no
// information about the difference), it returns the p-value of the null
// hypothesis that either kind of discordance is equally likely,
//
//	p = min(1, 2 · Σ_{i ≤ min(b,c)} C(b+c, i) / 2^(b+c)),
//
// the two-sided binomial test of min(b, c) successes in b+c trials at ½. With no
// discordant pair there is no evidence either way and p is 1. Negative counts
// are taken as 0.
//
// It is computed in log space, so it stays finite and accurate for b+c in the
// millions, where 2^(b+c) and C(b+c, i) overflow a float64: the terms are
// summed relative to the largest one, C(n, k) with k = min(b, c), whose
// logarithm comes from math.Lgamma, and the smaller terms follow from it by the
// ratio C(n, i−1) / C(n, i) = i / (n−i+1).
func McNemarExact(b, c int) float64 {
	b, c = max(b, 0), max(c, 0)
	n := b + c
	k := min(b, c)
	if n == 0 || 2*k >= n {
		// b == c: the observed split is the most likely one and the two tails
		// together cover everything.
		return 1
	}
	// sum is Σ_{i≤k} C(n, i) / C(n, k): 1 for i = k, then the ratios down to i = 0.
	sum, term := 1.0, 1.0
	for i := k; i > 0; i-- {
		term *= float64(i) / float64(n-i+1)
		sum += term
		if term < sum*1e-17 {
			break // the remaining terms shrink at least as fast and cannot change sum
		}
	}
	logTail := logChoose(n, k) - float64(n)*math.Ln2 + math.Log(sum)
	return min(1, 2*math.Exp(logTail))
}

// logChoose is ln C(n, k) for 0 ≤ k ≤ n.
func logChoose(n, k int) float64 {
	lg := func(x int) float64 {
		v, _ := math.Lgamma(float64(x) + 1)
		return v
	}
	return lg(n) - lg(k) - lg(n-k)
}
