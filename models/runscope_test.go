package models

import "testing"

func TestRunScopeFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		a        Actor
		want     RunScope
		signedIn bool
	}{
		{"Anonymous", Actor{}, RunScope{}, false},
		{"User", Actor{UserID: 1}, RunScope{UserID: 1}, true},
		{"Admin", Actor{UserID: 2, IsAdmin: true}, RunScope{All: true, UserID: 2}, true},
		{"System", SystemActor(), RunScope{All: true}, true},
	} {
		got := RunScopeFor(tc.a)
		if got != tc.want {
			t.Errorf("%s: RunScopeFor = %+v, want %+v", tc.name, got, tc.want)
		}
		if got.SignedIn() != tc.signedIn || got.SignedIn() != tc.a.SignedIn() {
			t.Errorf("%s: SignedIn = %v, want %v", tc.name, got.SignedIn(), tc.signedIn)
		}
	}
}

func TestRunScope_HiddenTests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		a                Actor
		hidden, revealed bool
		refusal          string
	}{
		{"Anonymous", Actor{}, false, true, EUNAUTHORIZED},
		{"User", Actor{UserID: 1}, false, true, EFORBIDDEN},
		{"Admin", Actor{UserID: 2, IsAdmin: true}, true, true, EFORBIDDEN},
		{"System", SystemActor(), true, true, EFORBIDDEN},
	} {
		s := RunScopeFor(tc.a)
		if got := s.SeesHiddenTests(false); got != tc.hidden {
			t.Errorf("%s: SeesHiddenTests(hidden) = %v, want %v", tc.name, got, tc.hidden)
		}
		if got := s.SeesHiddenTests(true); got != tc.revealed {
			t.Errorf("%s: SeesHiddenTests(revealed) = %v, want %v", tc.name, got, tc.revealed)
		}
		if got := ErrorCode(s.HiddenTestsRefused()); got != tc.refusal {
			t.Errorf("%s: HiddenTestsRefused = %s, want %s", tc.name, got, tc.refusal)
		}
	}
}
