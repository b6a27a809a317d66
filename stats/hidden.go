package stats

import "proctor/models"

// HiddenPassRate is the overall pass rate of hidden-tests tasks, what their
// boards rank a run by: the tests passed of the tests that ran, every
// task's tests together, with the Wilson 95% interval over those counts.
// Tests not run are left out, and a task without results (nil) adds
// nothing; with no test run the rate is nil and the interval [0, 1].
func HiddenPassRate(tasks []*models.HiddenSummary) models.HiddenPassRate {
	var out models.HiddenPassRate
	for _, s := range tasks {
		if s != nil {
			out.Tests.Merge(s.Overall)
		}
	}
	out.Rate = out.Tests.Rate()
	ci := Wilson95(out.Tests.Passed, out.Tests.Ran())
	out.Low, out.High = ci.Low, ci.High
	return out
}
