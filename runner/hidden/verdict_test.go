package hidden

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		runs   []string // the results the test gives, run after run
		result string
		flaky  bool
		ran    int
	}{
		{name: "a pass is run once", runs: []string{Passed}, result: Passed, ran: 1},
		{name: "fail then pass is a flaky pass", runs: []string{Failed, Passed}, result: Passed, flaky: true, ran: 2},
		{name: "fail twice is a failure", runs: []string{Failed, Failed}, result: Failed, ran: 2},
		{name: "fail then error is an error", runs: []string{Failed, Errored}, result: Errored, ran: 2},
		{name: "error then pass is a flaky pass", runs: []string{Errored, Passed}, result: Passed, flaky: true, ran: 2},
		{name: "error twice is an error", runs: []string{Errored, Errored}, result: Errored, ran: 2},
		{name: "a test not run here is not run again", runs: []string{NotRun}, result: NotRun, ran: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := 0
			v := Decide(t.Context(), "t1", func(context.Context) Outcome {
				o := Outcome{TestID: "t1", Result: tc.runs[n], Reason: tc.runs[n] + " run"}
				n++
				return o
			})
			require.Equal(t, tc.ran, n)
			require.Equal(t, "t1", v.TestID)
			require.Equal(t, tc.result, v.Result)
			require.Equal(t, tc.flaky, v.Flaky)
			require.Len(t, v.Runs, tc.ran)
			for i, run := range v.Runs {
				require.Equal(t, tc.runs[i], run.Result, "both runs are kept, in order")
			}
		})
	}

	t.Run("a canceled context is not rerun", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		v := Decide(ctx, "t1", func(context.Context) Outcome {
			n++
			cancel()
			return Outcome{Result: Failed}
		})
		require.Equal(t, 1, n)
		require.Equal(t, Failed, v.Result)
		require.Len(t, v.Runs, 1)
	})
}

// The job stores a verdict's result as it is: each result is the models'
// value of the same name.
func TestResults_AreTheModels(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{models.HiddenPassed, models.HiddenFailed, models.HiddenErrored, models.HiddenNotRun},
		[]string{Passed, Failed, Errored, NotRun})
}
