// Package study draws the samples of agreement studies and gives their items
// to annotators. Both are pure functions of their inputs and a seed, so the
// same study request draws the same sample and the same annotators get the
// same queues on every database and every Go release: the generator is
// math/rand/v2's PCG, whose output is specified, and the bounded draws and
// shuffles are written here rather than borrowed from a Rand whose methods
// may change.
package study

import (
	"cmp"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Streams of the generator, so that the sample and the assignment of one
// seed are independent draws.
const (
	sampleStream = 0x5a4d_504c_4531 // "SAMPLE"
	assignStream = 0x4153_5347_4e31 // "ASSGN1"
)

// rng is a seeded generator with the bounded draws the package needs.
type rng struct{ src *rand.PCG }

func newRNG(seed int64, stream uint64) *rng {
	return &rng{src: rand.NewPCG(uint64(seed), stream)}
}

// intn draws uniformly from [0, n) without modulo bias (Lemire's method:
// multiply, and redraw the rare values that would favour low results).
func (r *rng) intn(n int) int {
	bound := uint64(n)
	hi, lo := bits.Mul64(r.src.Uint64(), bound)
	if lo < bound {
		threshold := -bound % bound
		for lo < threshold {
			hi, lo = bits.Mul64(r.src.Uint64(), bound)
		}
	}
	return int(hi)
}

// shuffle puts s in a uniformly random order (Fisher–Yates).
func shuffle[T any](r *rng, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// Candidate is an attempt a sample may take, with its stratum (the value of
// the attribute a stratified sample is drawn by; ignored by random samples).
type Candidate struct {
	AttemptID int64
	Stratum   string
}

// Sample draws up to n candidates in sample order. Random samples shuffle
// the candidates and take the first n. Stratified samples allocate n to the
// strata in proportion to their sizes (Allocate), take a random part of each
// stratum and shuffle the result, so that sample order does not follow the
// strata. When n covers every candidate, all are taken (still shuffled). The
// order candidates come in does not matter: they are sorted by attempt id
// first, and a candidate listed twice counts once.
func Sample(cands []Candidate, n int, seed int64, stratified bool) []Candidate {
	pool := slices.Clone(cands)
	slices.SortFunc(pool, func(a, b Candidate) int { return cmp.Compare(a.AttemptID, b.AttemptID) })
	pool = slices.CompactFunc(pool, func(a, b Candidate) bool { return a.AttemptID == b.AttemptID })
	if n <= 0 || len(pool) == 0 {
		return nil
	}
	r := newRNG(seed, sampleStream)
	if !stratified {
		shuffle(r, pool)
		return pool[:min(n, len(pool))]
	}
	byStratum := map[string][]Candidate{}
	for _, c := range pool {
		byStratum[c.Stratum] = append(byStratum[c.Stratum], c)
	}
	names := make([]string, 0, len(byStratum))
	for name := range byStratum {
		names = append(names, name)
	}
	slices.Sort(names)
	sizes := make([]int, len(names))
	for i, name := range names {
		sizes[i] = len(byStratum[name])
	}
	alloc := Allocate(sizes, n)
	var out []Candidate
	for i, name := range names {
		group := byStratum[name]
		shuffle(r, group)
		out = append(out, group[:alloc[i]]...)
	}
	shuffle(r, out)
	return out
}

// Allocate divides n among strata of the given sizes in proportion to their
// sizes, by largest remainder: each stratum gets the whole part of its exact
// share, and the units left go to the largest fractional parts (ties to the
// larger stratum, then the earlier one). When n is at least the number of
// non-empty strata, every non-empty stratum gets at least one, taken from the
// stratum furthest above its exact share. n at or above the total takes
// every stratum whole. The result never exceeds a stratum's size.
func Allocate(sizes []int, n int) []int {
	alloc := make([]int, len(sizes))
	total := 0
	for _, s := range sizes {
		total += max(s, 0)
	}
	if n <= 0 || total == 0 {
		return alloc
	}
	if n >= total {
		for i, s := range sizes {
			alloc[i] = max(s, 0)
		}
		return alloc
	}
	exact := make([]float64, len(sizes))
	given := 0
	for i, s := range sizes {
		if s <= 0 {
			continue
		}
		exact[i] = float64(n) * float64(s) / float64(total)
		alloc[i] = int(math.Floor(exact[i]))
		given += alloc[i]
	}
	order := make([]int, 0, len(sizes))
	for i, s := range sizes {
		if s > 0 {
			order = append(order, i)
		}
	}
	byRemainder := slices.Clone(order)
	slices.SortStableFunc(byRemainder, func(a, b int) int {
		ra, rb := exact[a]-float64(alloc[a]), exact[b]-float64(alloc[b])
		if ra != rb {
			return cmp.Compare(rb, ra)
		}
		return cmp.Compare(sizes[b], sizes[a])
	})
	for _, i := range byRemainder {
		if given == n {
			break
		}
		if alloc[i] < sizes[i] {
			alloc[i]++
			given++
		}
	}
	if n < len(order) {
		return alloc
	}
	// Every stratum gets one: a stratum too small for a whole unit takes it
	// from the stratum that received the most above its exact share.
	for _, i := range order {
		if alloc[i] > 0 {
			continue
		}
		donor := -1
		for _, j := range order {
			if alloc[j] < 2 {
				continue
			}
			if donor < 0 || float64(alloc[j])-exact[j] > float64(alloc[donor])-exact[donor] {
				donor = j
			}
		}
		if donor < 0 {
			break // cannot happen when n >= strata: some stratum holds two
		}
		alloc[donor]--
		alloc[i] = 1
	}
	return alloc
}

// Assign gives items to annotators and returns each annotator's queue in
// order. round(fraction × items) items, chosen at random, go to overlap
// annotators each (for human-vs-human agreement), the rest to one. Each item
// goes to the annotators with the fewest items so far (ties broken at
// random), so loads differ by at most one; each queue is then shuffled, so
// annotators do not all start on the same item. The input order of items and
// annotators does not matter, and the same inputs give the same queues.
// overlap is capped at the number of annotators; no annotators, no queues.
func Assign(items, annotators []int64, fraction float64, overlap int, seed int64) map[int64][]int64 {
	queues := map[int64][]int64{}
	people := slices.Clone(annotators)
	slices.Sort(people)
	people = slices.Compact(people)
	if len(people) == 0 || len(items) == 0 {
		return queues
	}
	order := slices.Clone(items)
	slices.Sort(order)
	order = slices.Compact(order)
	r := newRNG(seed, assignStream)
	shuffle(r, order)
	overlapped := 0
	if fraction > 0 && !math.IsNaN(fraction) {
		overlapped = min(int(math.Round(min(fraction, 1)*float64(len(order)))), len(order))
	}
	overlap = min(max(overlap, 1), len(people))
	load := make(map[int64]int, len(people))
	for i, item := range order {
		k := 1
		if i < overlapped {
			k = overlap
		}
		candidates := slices.Clone(people)
		shuffle(r, candidates)
		slices.SortStableFunc(candidates, func(a, b int64) int { return cmp.Compare(load[a], load[b]) })
		for _, who := range candidates[:k] {
			queues[who] = append(queues[who], item)
			load[who]++
		}
	}
	for _, who := range people {
		shuffle(r, queues[who])
	}
	return queues
}
