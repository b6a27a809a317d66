// Command benchreport reads the output of `go test -bench` (several rounds,
// from -count) and writes bench.json: every figure's median and samples, and
// each performance goal with its value and whether it is met. It prints the
// goals as a table, and with -medians writes one result line per benchmark
// holding the medians, for scripts/bench.sh's summary.
//
//	go run ./cmd/benchreport -o bench.json -medians medians.txt \
//	    -load-before "0.10 0.20 0.30" -load-after "…" bench.log
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"text/tabwriter"

	"proctor/internal/benchreport"
)

// goals are the performance targets `make bench` is held to.
func goals() []benchreport.Goal {
	return []benchreport.Goal{
		{What: "per step: Proctor's act + observe (+ any wait for persistence) / the floor of the same work", Benchmark: "BenchmarkStepOverhead", Unit: "x-floor", AtMost: true, Target: 1.2},
		{What: "5-step episodes/min, 2 vs 1 in parallel", Benchmark: "BenchmarkEpisodesParallel/parallel=2", Unit: "x-parallel=1", Target: 1.7, BoundUnit: "x-cpu-bound"},
		{What: "the same through the worker's real path, 2 vs 1", Benchmark: "BenchmarkRunParallel", Unit: "x-parallel=1", Target: 1.7, BoundUnit: "x-cpu-bound"},
		{What: "leaderboard page / static file of the same size", Benchmark: "BenchmarkLeaderboardPage", Unit: "x-static", AtMost: true, Target: 1.5},
		{What: "timeline of a 200-step attempt, HTML bytes", Benchmark: "BenchmarkTimeline200Steps", Unit: "html-bytes", AtMost: true, Target: 300 << 10},
		{What: "portal: ingest time / copy time", Benchmark: "BenchmarkIngest", Unit: "ingest-x-copy", AtMost: true, Target: 1.5},
		{What: "portal: (validate + ingest) time / copy time", Benchmark: "BenchmarkIngest", Unit: "total-x-copy", AtMost: true, Target: 3},
		{What: "WebArena-Verified grading, tasks/s on one core", Benchmark: "BenchmarkWebArenaVerifiedEval", Unit: "tasks/s", Target: 500},
		{What: "a step driven through the episode's MCP server / a step driven in the process", Benchmark: "BenchmarkMCPStep", Unit: "x-driven", AtMost: true, Target: 1.5},
		{What: "HAR read without bodies: peak heap, 256 MiB / 4 MiB HAR", Benchmark: "BenchmarkEntriesMemory/256MiB", Unit: "x-4MiB", AtMost: true, Target: 1.5},
	}
}

// report is bench.json.
type report struct {
	CPUs       int                      `json:"cpus"`
	LoadBefore string                   `json:"load_before"`
	LoadAfter  string                   `json:"load_after"`
	Goals      []benchreport.GoalResult `json:"goals"`
	Figures    []benchreport.Figure     `json:"figures"`
}

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	out := fs.String("o", "bench.json", "where to write the report")
	medians := fs.String("medians", "", "also write the medians as `go test -bench` result lines to this file")
	before := fs.String("load-before", "", "the load average before the run")
	after := fs.String("load-after", "", "the load average after the run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	in := stdin
	if fs.NArg() > 0 {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	all, err := benchreport.Parse(in)
	if err != nil {
		return err
	}
	rep := report{CPUs: runtime.NumCPU(), LoadBefore: *before, LoadAfter: *after,
		Goals: benchreport.Check(all, goals()), Figures: benchreport.Figures(all)}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if *medians != "" {
		f, err := os.Create(*medians)
		if err != nil {
			return err
		}
		if err := benchreport.WriteMedians(f, all); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return printGoals(stdout, rep.Goals)
}

// printGoals writes the goals as a table: value, target, and met or not.
func printGoals(w io.Writer, rs []benchreport.GoalResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "goal\tmedian\ttarget\tmet\tthis machine's bound")
	for _, r := range rs {
		op := "≥"
		if r.AtMost {
			op = "≤"
		}
		value, met := "not measured", "no"
		if r.Measured {
			value = fmt.Sprintf("%.6g", r.Value)
			if r.Met {
				met = "yes"
			}
		}
		bound := ""
		if r.Bound != nil {
			bound = fmt.Sprintf("%.3g", *r.Bound)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %.6g\t%s\t%s\n", r.What, value, op, r.Target, met, bound)
	}
	return tw.Flush()
}
