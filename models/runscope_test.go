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
