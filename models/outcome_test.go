package models

import "testing"

func TestAttemptOutcome(t *testing.T) {
	for _, tc := range []struct {
		verdict, class, want string
	}{
		{OutcomeSuccess, "", OutcomeSuccess},
		{OutcomeFailure, "", OutcomeFailure},
		{OutcomeError, "", OutcomeError},
		{OutcomeFailure, ErrorClassBudget, OutcomeFailure},  // out of steps: failed, not an error
		{OutcomeFailure, ErrorClassTimeout, OutcomeFailure}, // out of time: failed
		{OutcomeSuccess, ErrorClassBudget, OutcomeSuccess},  // the state was right when the budget ran out
		{OutcomeError, ErrorClassBudget, OutcomeError},      // the evaluator could not grade it
		{OutcomeFailure, ErrorClassAgent, OutcomeError},
		{OutcomeFailure, ErrorClassEnvironment, OutcomeError},
		{OutcomeFailure, ErrorClassPlatform, OutcomeError},
		{OutcomeSuccess, ErrorClassAgent, OutcomeSuccess},
	} {
		if got := AttemptOutcome(tc.verdict, tc.class); got != tc.want {
			t.Errorf("AttemptOutcome(%q, %q) = %q, want %q", tc.verdict, tc.class, got, tc.want)
		}
	}
}

// TestBundleCoverage_PercentText: the warning and the coverage table write
// the same number (2 of WebArena-Verified's 812 tasks is 0.2%, not "0%").
func TestBundleCoverage_PercentText(t *testing.T) {
	for fraction, want := range map[float64]string{2.0 / 812: "0.2%", 0: "0.0%", 0.5: "50.0%", 1: "100.0%", 258.0 / 812: "31.8%"} {
		if got := (BundleCoverage{Fraction: fraction}).PercentText(); got != want {
			t.Errorf("PercentText(%v) = %q, want %q", fraction, got, want)
		}
	}
}
