package runner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/hiddentest"
	"proctor/models"
	"proctor/netguard"
	"proctor/runner/hidden"
)

// parseSuite parses a suite of the given tests (JSON objects).
func parseSuite(t *testing.T, parallelism int, tests ...string) *hiddentest.Suite {
	t.Helper()
	par := ""
	if parallelism > 0 {
		par = fmt.Sprintf(`"parallelism": %d,`, parallelism)
	}
	s, err := hiddentest.Parse(strings.NewReader(`{"version": 1, "site": "shop", ` + par + ` "tests": [` + strings.Join(tests, ",") + `]}`))
	require.NoError(t, err)
	return s
}

func requestTest(id string, timeoutMS int) string {
	return fmt.Sprintf(`{"id": %q, "group": "request", "title": "t", "timeout_ms": %d, "request": {"path": "/", "expect": {"status": 200}}}`, id, timeoutMS)
}

func systemTest(id, kind string, timeoutMS int) string {
	return fmt.Sprintf(`{"id": %q, "group": "system", "title": "t", "timeout_ms": %d, "system": {"kind": %q}}`, id, timeoutMS, kind)
}

const restartJourney = `{"id": "b3-restart", "group": "browser", "level": 3, "title": "t", "timeout_ms": 100000, "journey": {"steps": [
	{"action": "goto", "url": "/"}, {"action": "restart"}, {"action": "expect", "expect": {"kind": "url", "contains": "/"}}]}}`

const plainJourney = `{"id": "b1-home", "group": "browser", "level": 1, "title": "t", "timeout_ms": 30000, "journey": {"steps": [
	{"action": "goto", "url": "/"}]}}`

func TestPlanHiddenTests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		suite       *hiddentest.Suite
		shared      []int
		alone       []int
		parallelism int
		budget      time.Duration
	}{
		{
			name:   "tests that restart the candidate run alone",
			suite:  parseSuite(t, 2, requestTest("r1", 10_000), restartJourney, systemTest("s-restart", "restart", 20_000), plainJourney, systemTest("s-health", "health", 5_000), systemTest("s-build", "offline_build", 60_000)),
			shared: []int{0, 3, 4}, alone: []int{1, 2, 5}, parallelism: 2,
			// Alone: 2×(100+20+60) s; shared: 2×(10+30+5) s over 2 slots, plus the longest (60 s).
			budget: 360*time.Second + 45*time.Second + 60*time.Second,
		},
		{
			name:   "four at a time without a parallelism",
			suite:  parseSuite(t, 0, requestTest("r1", 10_000), requestTest("r2", 10_000), requestTest("r3", 10_000), requestTest("r4", 10_000)),
			shared: []int{0, 1, 2, 3}, parallelism: 4,
			budget: 20*time.Second + 20*time.Second,
		},
		{
			name:  "capped however large the suite",
			suite: parseSuite(t, 1, systemTest("b1", "offline_build", 1_800_000), systemTest("b2", "offline_build", 1_800_000), systemTest("b3", "offline_build", 1_800_000)),
			alone: []int{0, 1, 2}, parallelism: 1,
			budget: hiddenTestsCap,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planHiddenTests(tc.suite)
			require.Equal(t, tc.shared, p.shared)
			require.Equal(t, tc.alone, p.alone)
			require.Equal(t, tc.parallelism, p.parallelism)
			require.Equal(t, tc.budget, p.budget)
			require.Equal(t, tc.budget+hiddenJobMargin, p.jobTimeout())
		})
	}
}

// TestHiddenExecution_Budget: a suite whose budget runs out (the job's
// deadline close) ends the test in flight errored, saying so, and the tests
// never started errored as not run; the candidate hanging never holds the
// worker past the budget.
func TestHiddenExecution_Budget(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	guard := netguard.New([]string{"127.0.0.1"}, nil)
	e := &hiddenExecution{
		r:         &Runner{guard: guard},
		suite:     parseSuite(t, 1, requestTest("first", 60_000), requestTest("second", 60_000), requestTest("third", 60_000)),
		candidate: hidden.Candidate{BaseURL: hang.URL},
		client:    hidden.NewClient(guard),
		prefix:    "runs/1/attempts/1/try-1",
	}
	// The job has a second for its tests before it must keep hiddenSaveMargin to record them.
	ctx, cancel := context.WithTimeout(t.Context(), hiddenSaveMargin+time.Second)
	defer cancel()
	start := time.Now()
	results, err := e.run(ctx)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Len(t, results, 3)
	require.Equal(t, models.HiddenErrored, results[0].Result)
	require.Contains(t, results[0].Reason, "(the task's time budget for hidden tests ran out)")
	for i, id := range []string{"second", "third"} {
		r := results[i+1]
		require.Equal(t, id, r.TestID)
		require.Equal(t, i+1, r.Position)
		require.Equal(t, models.HiddenErrored, r.Result)
		require.True(t, strings.HasPrefix(r.Reason, "did not start: the task's time budget for hidden tests ran out"), r.Reason)
		require.Equal(t, "[]", r.Runs)
	}
	require.EqualValues(t, 1, calls.Load(), "only the first test reached the candidate")
}

func TestRestartsCandidate(t *testing.T) {
	t.Parallel()
	s := parseSuite(t, 0, requestTest("r", 0), restartJourney, plainJourney,
		systemTest("restart", "restart", 0), systemTest("build", "offline_build", 0), systemTest("health", "health", 0))
	var got []string
	for i := range s.Tests {
		if s.Tests[i].RestartsCandidate() {
			got = append(got, s.Tests[i].ID)
		}
	}
	require.Equal(t, []string{"b3-restart", "restart", "build"}, got)
}
