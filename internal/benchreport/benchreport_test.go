package benchreport

import (
	"bytes"
	"strings"
	"testing"

	"proctor/stats"
)

// output is real `go test -bench -count 3` output in shape: a header, log
// lines, three rounds of two benchmarks (one with sub-benchmarks) and the
// closing lines.
const output = `goos: linux
goarch: amd64
pkg: proctor/runner
cpu: Intel(R) Xeon(R)
BenchmarkStepOverhead-2        	      20	 318000000 ns/op	       130.0 raw-ms/step	         1.32 x-raw
    bench_test.go:88: BenchmarkStepOverhead warmed up
BenchmarkStepOverhead-2        	      20	 320000000 ns/op	       128.0 raw-ms/step	         1.50 x-raw
BenchmarkStepOverhead-2        	      20	 310000000 ns/op	       131.0 raw-ms/step	         1.10 x-raw
BenchmarkEntriesMemory/256MiB-2	       1	 900000000 ns/op	  300.5 MB/s	         1.02 x-4MiB
BenchmarkEntriesMemory/256MiB-2	       1	 910000000 ns/op	  290.5 MB/s	         0.98 x-4MiB
PASS
ok  	proctor/runner	42.1s
`

func TestParse_MediansOverRounds(t *testing.T) {
	all, err := Parse(strings.NewReader(output))
	if err != nil {
		t.Fatal(err)
	}
	if got := all["BenchmarkStepOverhead"]["x-raw"]; len(got) != 3 {
		t.Fatalf("x-raw samples = %v, want three rounds", got)
	}
	if m := stats.Median(all["BenchmarkStepOverhead"]["x-raw"]); m != 1.32 {
		t.Errorf("median x-raw = %v, want 1.32", m)
	}
	if m := stats.Median(all["BenchmarkEntriesMemory/256MiB"]["x-4MiB"]); m != 1.0 {
		t.Errorf("median of an even count = %v, want the mean of the middle two, 1.0", m)
	}
	if _, ok := all["BenchmarkStepOverhead warmed up"]; ok {
		t.Error("a log line was read as a result")
	}
}

func TestParse_RefusesABrokenResultLine(t *testing.T) {
	_, err := Parse(strings.NewReader("BenchmarkX-2\t10\tabc ns/op\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "ns/op") {
		t.Fatalf("err = %v, want one naming the line and the unit", err)
	}
	_, err = Parse(strings.NewReader("BenchmarkX-2\t10\t5 ns/op\t7\n"))
	if err == nil || !strings.Contains(err.Error(), "without a unit") {
		t.Fatalf("err = %v, want a value without a unit", err)
	}
}

func TestCheck(t *testing.T) {
	all, err := Parse(strings.NewReader(output))
	if err != nil {
		t.Fatal(err)
	}
	rs := Check(all, []Goal{
		{What: "step", Benchmark: "BenchmarkStepOverhead", Unit: "x-raw", AtMost: true, Target: 1.2},
		{What: "flat", Benchmark: "BenchmarkEntriesMemory/256MiB", Unit: "x-4MiB", AtMost: true, Target: 1.5},
		{What: "fast", Benchmark: "BenchmarkEntriesMemory/256MiB", Unit: "MB/s", Target: 500},
		{What: "absent", Benchmark: "BenchmarkIngest", Unit: "ingest-x-copy", AtMost: true, Target: 1.5},
	})
	want := []struct{ measured, met bool }{{true, false}, {true, true}, {true, false}, {false, false}}
	for i, w := range want {
		if rs[i].Measured != w.measured || rs[i].Met != w.met {
			t.Errorf("%s: measured %v met %v, want %v %v", rs[i].What, rs[i].Measured, rs[i].Met, w.measured, w.met)
		}
		if rs[i].Bound != nil {
			t.Errorf("%s: a bound %v without a bound unit", rs[i].What, *rs[i].Bound)
		}
	}
}

func TestCheck_Bound(t *testing.T) {
	all, err := Parse(strings.NewReader(output))
	if err != nil {
		t.Fatal(err)
	}
	rs := Check(all, []Goal{
		{What: "bounded", Benchmark: "BenchmarkEntriesMemory/256MiB", Unit: "x-4MiB", Target: 1.7, BoundUnit: "x-4MiB"},
		{What: "bound not measured", Benchmark: "BenchmarkEntriesMemory/256MiB", Unit: "x-4MiB", Target: 1.7, BoundUnit: "x-cpu-bound"},
	})
	if rs[0].Bound == nil || *rs[0].Bound != 1 || rs[0].Met {
		t.Errorf("bounded: %+v, want the bound 1 (the median of 1.02 and 0.98) and the goal unmet", rs[0])
	}
	if rs[1].Bound != nil {
		t.Errorf("bound not measured: bound %v", *rs[1].Bound)
	}
}

func TestWriteMedians_ReadsBackAsOneRound(t *testing.T) {
	all, err := Parse(strings.NewReader(output))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteMedians(&b, all); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := again["BenchmarkStepOverhead"]["x-raw"]; len(got) != 1 || got[0] != 1.32 {
		t.Errorf("medians read back = %v, want [1.32]", got)
	}
	if got := again["BenchmarkEntriesMemory/256MiB"]["MB/s"]; len(got) != 1 || got[0] != 295.5 {
		t.Errorf("medians read back = %v, want [295.5]", got)
	}
}
