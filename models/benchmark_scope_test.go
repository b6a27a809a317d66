package models

import "testing"

func TestBenchmarkScopeFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a    Actor
		want BenchmarkScope
	}{
		{"Anonymous", Actor{}, BenchmarkScope{}},
		{"User", Actor{UserID: 1}, BenchmarkScope{}},
		{"Admin", Actor{UserID: 2, IsAdmin: true}, BenchmarkScope{Unpublished: true, Secrets: true}},
		{"System", SystemActor(), BenchmarkScope{Unpublished: true, Secrets: true}},
	} {
		if got := BenchmarkScopeFor(tc.a); got != tc.want {
			t.Errorf("%s: BenchmarkScopeFor = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
