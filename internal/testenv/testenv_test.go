package testenv

import (
	"os"
	"strings"
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

func TestParseCPUTimes(t *testing.T) {
	start, err := parseCPUTimes([]byte("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\ncpu1 50 0 25 400 25 0 0 0 0 0\nintr 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if start.Cores != 2 || start.Busy != 150 || start.Total != 1000 {
		t.Fatalf("parsed %+v, want 2 cores, 150 busy of 1000", start)
	}
	// 300 more busy ticks and 100 idle ones: three quarters of 2 cores.
	now := CPUTimes{Busy: 450, Total: 1400, Cores: 2}
	if got := start.BusyCoresSince(now); got != 1.5 {
		t.Errorf("BusyCoresSince = %v, want 1.5", got)
	}
	if _, err := parseCPUTimes([]byte("cpu  1 2 x 4 5 6 7 8\n")); err == nil || !strings.Contains(err.Error(), "cpu field 3") {
		t.Errorf("a bad field: err = %v, want it named", err)
	}
	if _, err := parseCPUTimes([]byte("intr 1\n")); err == nil {
		t.Error("no cpu line: no error")
	}
}

func TestReadCPUTimes(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat here")
	}
	c, err := ReadCPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	if c.Cores < 1 || c.Busy == 0 || c.Total < c.Busy {
		t.Errorf("ReadCPUTimes = %+v", c)
	}
}

// TestMeasureBusyCores: work that keeps a core busy until the clock has
// moved on by several of the kernel's ticks shows up as busy cores.
func TestMeasureBusyCores(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat here")
	}
	const spin = 100 * time.Millisecond
	elapsed, cores := MeasureBusyCores(func() {
		for start := time.Now(); time.Since(start) < spin; {
		}
	})
	if elapsed < spin {
		t.Errorf("elapsed %v, less than the %v spent", elapsed, spin)
	}
	if cores <= 0 {
		t.Errorf("busy cores %v while one was spinning", cores)
	}
}
