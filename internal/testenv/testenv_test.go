package testenv

import (
	"testing"
	"time"
)

func TestSlowdown(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  float64
	}{{"", 1}, {"1", 1}, {"2.5", 2.5}, {" 3 ", 3}} {
		t.Setenv(SlowdownVariable, tc.value)
		if got := Slowdown(t); got != tc.want {
			t.Errorf("%s=%q: Slowdown = %v, want %v", SlowdownVariable, tc.value, got, tc.want)
		}
	}
	t.Setenv(SlowdownVariable, "2")
	if got := Scaled(t, 1500*time.Millisecond); got != 3*time.Second {
		t.Errorf("Scaled(1.5s) = %v, want 3s", got)
	}
}

func TestSlowdown_RefusesABadFactor(t *testing.T) {
	for _, v := range []string{"0.5", "fast", "-2", "Inf"} {
		t.Setenv(SlowdownVariable, v)
		ft := &fatalRecorder{TB: t}
		func() {
			defer func() { _ = recover() }()
			Slowdown(ft)
		}()
		if !ft.failed {
			t.Errorf("%s=%q was accepted", SlowdownVariable, v)
		}
	}
}

// fatalRecorder records a Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
