// Package testenv tells tests which external suites they may rely on and where
// the shared real benchmark data is. CI sets PROCTOR_TEST_REQUIRE so that a
// missing service or data folder fails the run instead of skipping suites.
package testenv

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Required reports whether PROCTOR_TEST_REQUIRE (a comma list such as
// "postgres,s3,browser,shared-data") demands the named suite.
func Required(suite string) bool {
	return slices.Contains(strings.Split(os.Getenv("PROCTOR_TEST_REQUIRE"), ","), suite)
}

// SkipUnlessAvailable skips a test whose service is unavailable, or fails it when
// PROCTOR_TEST_REQUIRE names the suite.
func SkipUnlessAvailable(t testing.TB, suite string, available bool, why string) {
	t.Helper()
	if available {
		return
	}
	if Required(suite) {
		t.Fatalf("%s suite required by PROCTOR_TEST_REQUIRE but unavailable: %s", suite, why)
	}
	t.Skip(why)
}

// SharedDataDir returns ../shared/data beside the repository root (the folder
// holding go.mod): the real public benchmark files that tests read but the
// repository does not copy. Tests skip without it, or fail under
// PROCTOR_TEST_REQUIRE=shared-data.
func SharedDataDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			SkipUnlessAvailable(t, "shared-data", false, "repository root not found: real-data tests need ../shared/data")
			return ""
		}
		dir = parent
	}
	data := filepath.Join(dir, "..", "shared", "data")
	st, err := os.Stat(data)
	SkipUnlessAvailable(t, "shared-data", err == nil && st.IsDir(), "../shared/data is absent: real-data tests need it")
	return data
}

// SlowdownVariable names the factor by which tests stretch their time limits
// on a slow or busy machine (CI sets it; 1 when unset).
const SlowdownVariable = "PROCTOR_TEST_SLOWDOWN"

// Slowdown is PROCTOR_TEST_SLOWDOWN: a number of at least 1 by which every
// browser test's time limit is multiplied. Tests wait for events; the limits
// only bound how long a wait may take before the test fails. Unset means 1;
// a value that is not a number of at least 1 fails the test, naming it.
func Slowdown(t testing.TB) float64 {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(SlowdownVariable))
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 || math.IsInf(f, 0) {
		t.Fatalf("%s=%q: want a number of at least 1 (the factor for tests' time limits)", SlowdownVariable, v)
	}
	return f
}

// Scaled is d stretched by Slowdown.
func Scaled(t testing.TB, d time.Duration) time.Duration {
	t.Helper()
	return time.Duration(float64(d) * Slowdown(t))
}
