package study_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/study"
)

// candidates makes n candidates per stratum, ids numbered from 1 in the
// order given.
func candidates(strata map[string]int, order ...string) []study.Candidate {
	var out []study.Candidate
	id := int64(1)
	for _, name := range order {
		for range strata[name] {
			out = append(out, study.Candidate{AttemptID: id, Stratum: name})
			id++
		}
	}
	return out
}

func ids(cs []study.Candidate) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.AttemptID
	}
	return out
}

func countStrata(cs []study.Candidate) map[string]int {
	out := map[string]int{}
	for _, c := range cs {
		out[c.Stratum]++
	}
	return out
}

func TestAllocate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		sizes []int
		n     int
		want  []int
	}{
		"Proportional":             {[]int{50, 30, 20}, 10, []int{5, 3, 2}},
		"LargestRemainder":         {[]int{6, 3, 1}, 5, []int{3, 1, 1}},  // exact 3, 1.5, 0.5: the tie goes to the larger stratum, then the small one gets its one
		"RemainderToLargestPart":   {[]int{7, 7, 6}, 10, []int{4, 3, 3}}, // exact 3.5, 3.5, 3: the first of the tied
		"AtLeastOnePerStratum":     {[]int{97, 2, 1}, 5, []int{3, 1, 1}},
		"FewerThanStrata":          {[]int{97, 2, 1}, 2, []int{2, 0, 0}},
		"AllWhenNCoversTotal":      {[]int{4, 2}, 10, []int{4, 2}},
		"ExactlyTotal":             {[]int{4, 2}, 6, []int{4, 2}},
		"EmptyStratumGetsNothing":  {[]int{5, 0, 5}, 4, []int{2, 0, 2}},
		"Zero":                     {[]int{5, 5}, 0, []int{0, 0}},
		"OneEachWhenNEqualsStrata": {[]int{90, 5, 5}, 3, []int{1, 1, 1}},
	} {
		t.Run(name, func(t *testing.T) {
			got := study.Allocate(tc.sizes, tc.n)
			require.Equal(t, tc.want, got)
			sum := 0
			for i, a := range got {
				require.LessOrEqual(t, a, max(tc.sizes[i], 0))
				sum += a
			}
			total := 0
			for _, s := range tc.sizes {
				total += s
			}
			require.Equal(t, min(tc.n, total), sum)
		})
	}
}

func TestSample(t *testing.T) {
	t.Parallel()
	pool := candidates(map[string]int{"success": 60, "failure": 30, "error": 10}, "success", "failure", "error")

	t.Run("RandomIsDeterministic", func(t *testing.T) {
		a := study.Sample(pool, 20, 42, false)
		require.Len(t, a, 20)
		reversed := slices.Clone(pool)
		slices.Reverse(reversed)
		require.Equal(t, ids(a), ids(study.Sample(reversed, 20, 42, false)), "input order does not matter")
		require.NotEqual(t, ids(a), ids(study.Sample(pool, 20, 43, false)), "another seed draws another sample")
		require.Len(t, slices.Compact(slices.Sorted(slices.Values(ids(a)))), 20, "no attempt twice")
	})
	t.Run("RandomTakesAllWhenShort", func(t *testing.T) {
		got := study.Sample(pool, 500, 1, false)
		require.Len(t, got, 100)
		require.NotEqual(t, ids(pool), ids(got), "still shuffled")
	})
	t.Run("DuplicatesCountOnce", func(t *testing.T) {
		twice := append(slices.Clone(pool[:5]), pool[:5]...)
		require.Len(t, study.Sample(twice, 10, 1, false), 5)
	})
	t.Run("Stratified", func(t *testing.T) {
		got := study.Sample(pool, 10, 7, true)
		require.Equal(t, map[string]int{"success": 6, "failure": 3, "error": 1}, countStrata(got))
		require.Equal(t, ids(got), ids(study.Sample(pool, 10, 7, true)))
		got = study.Sample(pool, 3, 7, true)
		require.Equal(t, map[string]int{"success": 1, "failure": 1, "error": 1}, countStrata(got), "one per stratum when size allows")
	})
	t.Run("StratifiedOrderIsMixed", func(t *testing.T) {
		got := study.Sample(pool, 50, 3, true)
		first := countStrata(got[:10])
		require.Greater(t, len(first), 1, "the first items are not all one stratum: %v", first)
	})
	t.Run("Empty", func(t *testing.T) {
		require.Empty(t, study.Sample(nil, 5, 1, true))
		require.Empty(t, study.Sample(pool, 0, 1, false))
	})
}

func TestAssign(t *testing.T) {
	t.Parallel()
	items := make([]int64, 20)
	for i := range items {
		items[i] = int64(100 + i)
	}
	people := []int64{7, 3, 5}

	loads := func(q map[int64][]int64) (perItem map[int64]int, perPerson []int) {
		perItem = map[int64]int{}
		for _, who := range []int64{3, 5, 7} {
			perPerson = append(perPerson, len(q[who]))
			for _, it := range q[who] {
				perItem[it]++
			}
		}
		return perItem, perPerson
	}

	for name, tc := range map[string]struct {
		fraction   float64
		overlap    int
		overlapped int
	}{
		"NoOverlap":      {0, 2, 0},
		"QuarterByTwo":   {0.25, 2, 5},
		"HalfByThree":    {0.5, 3, 10},
		"AllByTwo":       {1, 2, 20},
		"OverlapCapped":  {0.1, 9, 2}, // only three annotators
		"RoundsToNearer": {0.33, 2, 7},
	} {
		t.Run(name, func(t *testing.T) {
			q := study.Assign(items, people, tc.fraction, tc.overlap, 11)
			perItem, perPerson := loads(q)
			require.Len(t, perItem, len(items), "every item is assigned")
			k := min(tc.overlap, len(people))
			multi := 0
			for _, n := range perItem {
				if n > 1 {
					require.Equal(t, k, n)
					multi++
				}
			}
			if k > 1 {
				require.Equal(t, tc.overlapped, multi)
			}
			require.LessOrEqual(t, slices.Max(perPerson)-slices.Min(perPerson), 1, "balanced: %v", perPerson)
			for who, queue := range q {
				require.Len(t, slices.Compact(slices.Sorted(slices.Values(queue))), len(queue), "annotator %d gets an item once", who)
			}
		})
	}
	t.Run("Deterministic", func(t *testing.T) {
		a := study.Assign(items, people, 0.3, 2, 5)
		shuffled := slices.Clone(items)
		slices.Reverse(shuffled)
		require.Equal(t, a, study.Assign(shuffled, []int64{5, 7, 3}, 0.3, 2, 5))
		require.NotEqual(t, fmt.Sprint(a), fmt.Sprint(study.Assign(items, people, 0.3, 2, 6)))
	})
	t.Run("QueuesStartApart", func(t *testing.T) {
		q := study.Assign(items, people, 1, 3, 5)
		require.False(t, q[3][0] == q[5][0] && q[5][0] == q[7][0], "every annotator has every item, but not in the same order")
	})
	t.Run("NoAnnotators", func(t *testing.T) {
		require.Empty(t, study.Assign(items, nil, 0.5, 2, 1))
	})
}
