package models

// RunScope is which runs a read of runs includes beyond the published ones,
// and for whom it acts. The run services set it from the caller
// (RunScopeFor); storage applies what it is told and never reads the caller.
type RunScope struct {
	// All runs are visible and every team is acted for: administrators and
	// the system. Their evaluation details and error details are unredacted.
	All bool
	// UserID is the signed-in user whose teams' runs are visible and acted
	// for; 0 for anonymous visitors (and the system).
	UserID int64
}

// RunScopeFor is the rule of who sees and acts on which runs: administrators
// and the system every run, a signed-in user the runs of their teams, and
// everyone the published runs.
func RunScopeFor(a Actor) RunScope {
	return RunScope{All: a.Privileged(), UserID: a.UserID}
}

// SignedIn reports whether the scope is a signed-in caller's (or the
// system's), as Actor.SignedIn.
func (s RunScope) SignedIn() bool { return s.All || s.UserID != 0 }

// SeesHiddenTests is the rule of who browses the tests of a hidden-tests
// benchmark's runs they see: everyone once the benchmark reveals its
// references, administrators and the system always.
func (s RunScope) SeesHiddenTests(revealed bool) bool { return revealed || s.All }

// HiddenTestsRefused is the error for a caller who sees a run but not its
// tests: EUNAUTHORIZED when signing in could help, EFORBIDDEN otherwise.
func (s RunScope) HiddenTestsRefused() error {
	if !s.SignedIn() {
		return Errorf(EUNAUTHORIZED, "Sign in as an administrator to see this benchmark's hidden tests.")
	}
	return Errorf(EFORBIDDEN, "This benchmark's tests are hidden: only administrators see them; the run's page shows the pass rates.")
}
