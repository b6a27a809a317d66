// Package benchreport turns `go test -bench` output into the figures `make
// bench` reports: the median of every metric over the rounds run (-count),
// and each of the project's performance goals with whether it is met.
package benchreport

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"proctor/stats"
)

// Samples are the values of one benchmark's metrics, one per round, by
// unit ("ns/op", "x-raw" …).
type Samples map[string][]float64

// Parse reads `go test -bench` output and returns every benchmark's samples
// by name, without the -GOMAXPROCS suffix. Lines that are not result lines
// (logs, PASS, ok …) are skipped; a result line whose values do not parse is
// an error naming its line.
func Parse(r io.Reader) (map[string]Samples, error) {
	out := map[string]Samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a log line that starts with a benchmark's name
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: a result line has a value without a unit: %q", n, sc.Text())
		}
		name := trimProcs(f[0])
		s := out[name]
		if s == nil {
			s = Samples{}
			out[name] = s
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s of %s is not a number: %q", n, f[i+1], name, f[i])
			}
			s[f[i+1]] = append(s[f[i+1]], v)
		}
	}
	return out, sc.Err()
}

// trimProcs drops the "-8" GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// Figure is one metric of one benchmark: its median and the rounds it is
// the median of.
type Figure struct {
	Benchmark string    `json:"benchmark"`
	Unit      string    `json:"unit"`
	Median    float64   `json:"median"`
	Samples   []float64 `json:"samples"`
}

// Figures lists every metric's median, by benchmark then unit.
func Figures(all map[string]Samples) []Figure {
	var out []Figure
	for name, s := range all {
		for unit, xs := range s {
			out = append(out, Figure{Benchmark: name, Unit: unit, Median: stats.Median(xs), Samples: xs})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Benchmark != out[j].Benchmark {
			return out[i].Benchmark < out[j].Benchmark
		}
		return out[i].Unit < out[j].Unit
	})
	return out
}

// Goal is a performance target on one figure: at most (or at least) Target.
type Goal struct {
	What      string  `json:"what"`
	Benchmark string  `json:"benchmark"`
	Unit      string  `json:"unit"`
	AtMost    bool    `json:"at_most"`
	Target    float64 `json:"target"`
	// BoundUnit, if set, is the benchmark's metric holding the best value
	// this machine allows (a CPU-bound ratio, say), reported beside the
	// figure so that a goal out of the machine's reach reads as such.
	BoundUnit string `json:"bound_unit,omitempty"`
}

// GoalResult is a goal with the figure measured for it. Measured is false
// when the run did not produce the figure (the benchmark was not run or
// skipped); such a goal is not met.
type GoalResult struct {
	Goal
	Measured bool    `json:"measured"`
	Value    float64 `json:"value"`
	Met      bool    `json:"met"`
	// Bound is the median of BoundUnit's figure, when measured.
	Bound *float64 `json:"bound,omitempty"`
}

// Check compares each goal with its figure's median.
func Check(all map[string]Samples, goals []Goal) []GoalResult {
	out := make([]GoalResult, 0, len(goals))
	for _, g := range goals {
		r := GoalResult{Goal: g}
		if xs := all[g.Benchmark][g.Unit]; len(xs) > 0 {
			r.Measured, r.Value = true, stats.Median(xs)
			r.Met = r.Value >= g.Target
			if g.AtMost {
				r.Met = r.Value <= g.Target
			}
		}
		if xs := all[g.Benchmark][g.BoundUnit]; g.BoundUnit != "" && len(xs) > 0 {
			bound := stats.Median(xs)
			r.Bound = &bound
		}
		out = append(out, r)
	}
	return out
}

// WriteMedians writes one result line per benchmark with the median of
// each of its metrics, in `go test -bench` format (iterations shown as 1),
// so that a reader of single-round output reads the medians.
func WriteMedians(w io.Writer, all map[string]Samples) error {
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		units := make([]string, 0, len(all[name]))
		for u := range all[name] {
			units = append(units, u)
		}
		sort.Strings(units)
		var b strings.Builder
		fmt.Fprintf(&b, "%s\t1", name)
		for _, u := range units {
			fmt.Fprintf(&b, "\t%s %s", strconv.FormatFloat(stats.Median(all[name][u]), 'g', -1, 64), u)
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}
