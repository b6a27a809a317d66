package stats

// Agreement between two raters on categorical labels: raw agreement, Cohen's
// kappa and quadratic-weighted kappa, all computed from a confusion matrix.
//
// Categories are indices 0..k-1 into an ordered list the caller keeps (for a
// 1–5 score, index 0 is score 1). The order matters only to the weighted kappa,
// which counts a disagreement by how many categories apart the two ratings are.
//
// Every statistic is computed from integer counts and divided once, so a
// statistic that is exactly 0, 1 or undefined comes out exactly so. A statistic
// that is undefined on its table (a denominator of zero) is reported with
// ok == false; callers show it as null, never as a number.

// Pair is one item rated twice: the categories the first and the second rater
// chose. When one rating is a reference (the human majority) and the other a
// prediction (a judge), First is the reference.
type Pair struct {
	First  int `json:"first"`
	Second int `json:"second"`
}

// Confusion is a k×k table of paired ratings: Counts[i][j] is the number of
// items the first rater put in category i and the second in category j. Rows
// are the first rater, columns the second.
type Confusion struct {
	Counts [][]int `json:"counts"`
}

// NewConfusion counts pairs into a k×k table. A pair naming a category outside
// 0..k-1 is not counted; k < 1 gives an empty table.
func NewConfusion(k int, pairs []Pair) Confusion {
	c := emptyConfusion(k)
	c.add(pairs)
	return c
}

func emptyConfusion(k int) Confusion {
	k = max(k, 0)
	cells := make([]int, k*k)
	counts := make([][]int, k)
	for i := range counts {
		counts[i] = cells[i*k : (i+1)*k : (i+1)*k]
	}
	return Confusion{Counts: counts}
}

func (c Confusion) add(pairs []Pair) {
	k := len(c.Counts)
	for _, p := range pairs {
		if p.First >= 0 && p.First < k && p.Second >= 0 && p.Second < k {
			c.Counts[p.First][p.Second]++
		}
	}
}

func (c Confusion) reset() {
	for _, row := range c.Counts {
		clear(row)
	}
}

// K is the number of categories.
func (c Confusion) K() int { return len(c.Counts) }

// N is the number of pairs counted.
func (c Confusion) N() int {
	n := 0
	for _, row := range c.Counts {
		for _, v := range row {
			n += v
		}
	}
	return n
}

// marginals are the row sums (the first rater's category counts) and the
// column sums (the second rater's).
func (c Confusion) marginals() (rows, cols []int64) {
	k := len(c.Counts)
	rows, cols = make([]int64, k), make([]int64, k)
	for i, row := range c.Counts {
		for j, v := range row {
			rows[i] += int64(v)
			cols[j] += int64(v)
		}
	}
	return rows, cols
}

// Agreement is the share of pairs on the diagonal: both raters chose the same
// category. Undefined for an empty table.
func (c Confusion) Agreement() (float64, bool) {
	n, diagonal := 0, 0
	for i, row := range c.Counts {
		for j, v := range row {
			n += v
			if i == j {
				diagonal += v
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	return float64(diagonal) / float64(n), true
}

// CohenKappa is Cohen's kappa, agreement corrected for the agreement expected
// by chance from each rater's own category frequencies:
//
//	κ = (pₒ − pₑ) / (1 − pₑ),   pₒ = Σᵢ nᵢᵢ / n,   pₑ = Σᵢ rᵢ·cᵢ / n²
//
// with rᵢ and cᵢ the row and column sums, computed as (n·Σnᵢᵢ − Σrᵢcᵢ) /
// (n² − Σrᵢcᵢ) in integers. It is 1 for perfect agreement, 0 for agreement no
// better than chance and negative below it.
//
// Undefined (ok false) for an empty table and when pₑ = 1: both raters put
// every item in one and the same category, so pₒ is 1 too and κ is 0/0. There
// is no variation for agreement beyond chance to be measured on; reporting 1
// would claim a skill the data cannot show, and 0 would claim its absence.
func (c Confusion) CohenKappa() (float64, bool) {
	rows, cols := c.marginals()
	var n, diagonal, chance int64
	for i := range rows {
		n += rows[i]
		diagonal += int64(c.Counts[i][i])
		chance += rows[i] * cols[i]
	}
	denominator := n*n - chance
	if n == 0 || denominator == 0 {
		return 0, false
	}
	return float64(n*diagonal-chance) / float64(denominator), true
}

// QuadraticKappa is Cohen's weighted kappa with quadratic disagreement weights
// wᵢⱼ = (i − j)², for ordered categories:
//
//	κw = 1 − n·Σᵢⱼ wᵢⱼ·nᵢⱼ / Σᵢⱼ wᵢⱼ·rᵢ·cⱼ
//
// (observed over chance-expected weighted disagreement; the usual normalisation
// of the weights by (k − 1)² cancels). A rating one category off costs a
// quarter of one two categories off. With two categories it equals CohenKappa.
//
// Undefined (ok false) for an empty table and when the expected weighted
// disagreement is 0, which happens exactly when both raters used one and the
// same category throughout: the single-category case of CohenKappa.
func (c Confusion) QuadraticKappa() (float64, bool) {
	rows, cols := c.marginals()
	var n, observed, expected int64
	for i := range rows {
		n += rows[i]
		for j := range cols {
			w := int64((i - j) * (i - j))
			observed += w * int64(c.Counts[i][j])
			expected += w * rows[i] * cols[j]
		}
	}
	if n == 0 || expected == 0 {
		return 0, false
	}
	return 1 - float64(n*observed)/float64(expected), true
}

// Binary collapses the table to positive (category positive) against every
// other category, with the first rater as the truth and the second as the
// prediction, and computes the binary classification metrics. A positive
// outside 0..k-1 counts every item as negative.
func (c Confusion) Binary(positive int) BinaryMetrics {
	var tp, fp, fn, tn int
	for i, row := range c.Counts {
		for j, v := range row {
			switch {
			case i == positive && j == positive:
				tp += v
			case i == positive:
				fn += v
			case j == positive:
				fp += v
			default:
				tn += v
			}
		}
	}
	return Binary(tp, fp, fn, tn)
}
