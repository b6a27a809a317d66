package verified_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/verified"
	"proctor/internal/testenv"
	"proctor/models"
)

// benchOutput is one synthetic agent output: the answer, and (for tasks with
// network checks) a HAR made of the demo recording's entries followed by the
// requests the spec expects.
type benchOutput struct {
	task    *models.Task
	answer  *models.Action
	harTail []byte // the expected requests, as HAR entries after a comma; nil without network checks
}

// BenchmarkWebArenaVerifiedEval grades 812 synthetic outputs built from the
// real dataset's specs (each task's expected answer; for the 663 tasks with
// network checks a HAR the size of the demo recording holding the expected
// requests) on one core, and reports tasks per second. As a same-run
// baseline it also times only JSON-decoding the same answers and HARs into
// generic values, and reports the ratio (x-baseline above 1 means grading is
// faster than merely decoding the inputs). It also grades them by the lenient
// reading (version 1's) and reports official speed / lenient speed
// (x-lenient): what parity with the official evaluator costs.
//
// On a busy machine the wall-clock figures move with the load; the cpu-
// figures count the process's CPU time instead (getrusage), which the load
// moves much less: cpu-tasks/s is tasks per CPU-second of grading, and
// cpu-x-baseline the same ratio as x-baseline in CPU time.
func BenchmarkWebArenaVerifiedEval(b *testing.B) {
	data := testenv.SharedDataDir(b)
	tasks := loadDataset(b)
	demo, err := os.ReadFile(filepath.Join(data, "webarena-verified", "demo-outputs", "108", "network.har"))
	require.NoError(b, err)
	var har struct {
		Log struct {
			Version string            `json:"version"`
			Creator json.RawMessage   `json:"creator"`
			Entries []json.RawMessage `json:"entries"`
		} `json:"log"`
	}
	require.NoError(b, json.Unmarshal(demo, &har))
	entries := make([][]byte, len(har.Log.Entries))
	for i, e := range har.Log.Entries {
		entries[i] = e
	}
	prefix := []byte(`{"log":{"version":"1.2","creator":` + string(har.Log.Creator) + `,"entries":[` + string(bytes.Join(entries, []byte(","))))
	suffix := []byte(`]}}`)

	sites := demoSites()
	outputs := make([]benchOutput, 0, len(tasks))
	withHAR := 0
	for _, d := range tasks {
		out, err := synthesize(d, sites)
		require.NoError(b, err)
		o := benchOutput{task: d.task(), answer: out.answer}
		if hasNetworkChecks(d) {
			withHAR++
			o.harTail = []byte{}
			for _, en := range out.entries {
				line, err := json.Marshal(en)
				require.NoError(b, err)
				o.harTail = append(append(o.harTail, ','), line...)
			}
		}
		outputs = append(outputs, o)
	}
	harOf := func(o benchOutput) io.Reader {
		if o.harTail == nil {
			return nil
		}
		return io.MultiReader(bytes.NewReader(prefix), bytes.NewReader(o.harTail), bytes.NewReader(suffix))
	}
	b.Logf("%d tasks, %d with a %d KiB HAR", len(outputs), withHAR, (len(prefix)+len(suffix))>>10)

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ev := verified.New().WithSites(sites)
	lenient := verified.NewLenient().WithSites(sites)
	ctx := context.Background()
	var graded, gradedLeniently, decoded, gradedCPU, decodedCPU time.Duration
	successes := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, startCPU := time.Now(), cpuTime(b)
		successes = 0
		for _, o := range outputs {
			res, err := ev.Evaluate(ctx, eval.Input{Task: o.task, Final: o.answer, HAR: harOf(o)})
			if err != nil {
				b.Fatal(err)
			}
			if res.Verdict == models.OutcomeSuccess {
				successes++
			}
		}
		graded += time.Since(start)
		gradedCPU += cpuTime(b) - startCPU

		start = time.Now()
		for _, o := range outputs {
			if _, err := lenient.Evaluate(ctx, eval.Input{Task: o.task, Final: o.answer, HAR: harOf(o)}); err != nil {
				b.Fatal(err)
			}
		}
		gradedLeniently += time.Since(start)

		start, startCPU = time.Now(), cpuTime(b)
		for _, o := range outputs {
			var answer any
			if err := json.Unmarshal(o.answer.Response, &answer); err != nil {
				b.Fatal(err)
			}
			if r := harOf(o); r != nil {
				var v any
				if err := json.NewDecoder(r).Decode(&v); err != nil {
					b.Fatal(err)
				}
			}
		}
		decoded += time.Since(start)
		decodedCPU += cpuTime(b) - startCPU
	}
	b.StopTimer()
	n := float64(len(outputs) * b.N)
	b.ReportMetric(n/graded.Seconds(), "tasks/s")
	b.ReportMetric(n/decoded.Seconds(), "baseline-tasks/s")
	b.ReportMetric(decoded.Seconds()/graded.Seconds(), "x-baseline")
	b.ReportMetric(n/gradedCPU.Seconds(), "cpu-tasks/s")
	b.ReportMetric(decodedCPU.Seconds()/gradedCPU.Seconds(), "cpu-x-baseline")
	// The lenient reading is version 1's: the ratio is what grading as the
	// official evaluator does costs (below 1) or saves (above 1).
	b.ReportMetric(n/gradedLeniently.Seconds(), "lenient-tasks/s")
	b.ReportMetric(gradedLeniently.Seconds()/graded.Seconds(), "x-lenient")
	b.ReportMetric(float64(successes), "passed")
	if successes < len(outputs)-len(upstreamDefects()) {
		b.Fatalf("only %d of %d synthetic outputs passed", successes, len(outputs))
	}
}

func hasNetworkChecks(d datasetTask) bool {
	for _, raw := range d.Eval {
		var e struct {
			Evaluator string `json:"evaluator"`
		}
		_ = json.Unmarshal(raw, &e)
		if e.Evaluator == verified.NetworkEventEvaluator {
			return true
		}
	}
	return false
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
