package stats

import (
	"math"
	"slices"

	"proctor/models"
)

// CostPoint is one entry as the cost–success trade-off sees it: what a task
// costs it on average and how often it succeeds.
type CostPoint struct {
	Cost    float64
	Success float64
}

// ParetoFrontier returns the indexes of the points no other point dominates
// (cheaper or equally cheap and more or equally successful, better in one),
// ordered by cost and then by index. Points that tie exactly are all on the
// frontier: neither is better than the other. Points with a NaN or infinite
// coordinate are left out, as they cannot be placed on a chart.
func ParetoFrontier(points []CostPoint) []int {
	idx := make([]int, 0, len(points))
	for i, p := range points {
		if finiteFloat(p.Cost) && finiteFloat(p.Success) {
			idx = append(idx, i)
		}
	}
	// Sorted by cost, most successful first within a cost: a point is then on
	// the frontier exactly when it beats every cheaper point and is the best
	// of its own cost.
	slices.SortStableFunc(idx, func(a, b int) int {
		pa, pb := points[a], points[b]
		switch {
		case pa.Cost < pb.Cost:
			return -1
		case pa.Cost > pb.Cost:
			return 1
		case pa.Success > pb.Success:
			return -1
		case pa.Success < pb.Success:
			return 1
		}
		return a - b
	})
	var frontier []int
	bestCheaper := math.Inf(-1)
	for start := 0; start < len(idx); {
		cost := points[idx[start]].Cost
		end := start
		for end < len(idx) && points[idx[end]].Cost == cost {
			end++
		}
		bestHere := points[idx[start]].Success
		if bestHere > bestCheaper {
			for _, i := range idx[start:end] {
				if points[i].Success == bestHere {
					frontier = append(frontier, i)
				}
			}
			bestCheaper = bestHere
		}
		start = end
	}
	return frontier
}

func finiteFloat(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// CostFrontier returns the indexes of the entries on the cost–success Pareto
// frontier, cheapest first (as ParetoFrontier orders them). Entries whose
// cost is unknown (an upload did not state it) cannot be placed and are left
// out.
func CostFrontier(entries []models.BreakdownEntry) []int {
	var known []int
	var points []CostPoint
	for i, e := range entries {
		if !e.Unknown.Cost {
			known = append(known, i)
			points = append(points, CostPoint{Cost: e.CostPerTask, Success: e.Success.Rate})
		}
	}
	frontier := ParetoFrontier(points)
	for j, p := range frontier {
		frontier[j] = known[p]
	}
	return frontier
}
