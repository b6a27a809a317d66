package hidden

import "context"

// Decide runs a test and judges it over its runs: a run that did not pass is
// run once more and both runs are kept; the second run's result is the
// test's, and a pass on the second run marks the test Flaky. Errored runs are
// rerun too: a step that timed out on a busy worker says as little about the
// candidate as a flaky failure does. (A hung candidate so holds a test for
// twice its timeout, which the job's time limit allows for.) A test not run
// here is not run again: nothing about it can change.
func Decide(ctx context.Context, testID string, run func(context.Context) Outcome) Verdict {
	first := run(ctx)
	v := Verdict{TestID: testID, Result: first.Result, Runs: []Outcome{first}}
	if first.Result == Passed || first.Result == NotRun || ctx.Err() != nil {
		return v
	}
	second := run(ctx)
	v.Runs = append(v.Runs, second)
	v.Result = second.Result
	v.Flaky = second.Result == Passed
	return v
}
