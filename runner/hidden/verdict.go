package hidden

import "context"

// Decide runs a test and judges it over its runs: a Failed run is run once
// more and both runs are kept; the second run's result is the test's, and a
// pass on the second run marks the test Flaky. Only Failed is rerun: a failure
// may be the candidate's flakiness, while an Errored run (unreachable, hung,
// no restart hook, not runnable here) would most likely error again and, for
// a hung candidate, hold the worker for a second full timeout.
func Decide(ctx context.Context, testID string, run func(context.Context) Outcome) Verdict {
	first := run(ctx)
	v := Verdict{TestID: testID, Result: first.Result, Runs: []Outcome{first}}
	if first.Result != Failed || ctx.Err() != nil {
		return v
	}
	second := run(ctx)
	v.Runs = append(v.Runs, second)
	v.Result = second.Result
	v.Flaky = second.Result == Passed
	return v
}
