package handlers_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/service"
	"proctor/web"
)

// TestBlindAnnotator_EveryReadPath visits every page and API route that
// answers GET, as an annotator of an open blind study over a published run
// (with a session, and with an API token for the API), and fails on any trace
// of the run's verdicts in an answer that is not a refusal: an evaluator's
// name or details, the hidden answer, an attempt's outcome or a link to one,
// the run's success, failure or error counts. Every route parameter is
// filled from the fixture; a route with a parameter the test does not know
// fails, so a new read path cannot be forgotten. Leaderboard rows' aggregate
// columns are public figures and allowed (docs/agreement.md).
func TestBlindAnnotator_EveryReadPath(t *testing.T) {
	t.Parallel()
	f := newStudyFixture(t, true)
	require.NoError(t, service.NewMetrics(f.b.db).RefreshRunMetrics(f.sys, f.runID))
	token := withToken(t, f.b, f.ann)
	var subsets []string
	require.NoError(t, f.b.db.Gorm().Table("subsets").Distinct("name").Pluck("name", &subsets).Error)
	var tasks []string
	require.NoError(t, f.b.db.Gorm().Table("tasks").Limit(1).Pluck("external_id", &tasks).Error)

	run := strconv.FormatInt(f.runID, 10)
	attempts := make([]string, len(f.attempts))
	for i, id := range f.attempts {
		attempts[i] = strconv.FormatInt(id, 10)
	}
	// values lists what each parameter is visited with, by the route's path.
	values := func(path, param string) []string {
		switch param {
		case "id":
			switch {
			case strings.Contains(path, "/runs/"):
				return []string{run}
			case strings.Contains(path, "/studies/"):
				return []string{strconv.FormatInt(f.study.ID, 10)}
			case strings.Contains(path, "/submissions/"):
				return []string{"1"}
			}
		case "attemptID", "episode":
			return attempts
		case "itemID":
			return []string{strconv.FormatInt(f.mine[0], 10), strconv.FormatInt(f.theirs[0], 10)}
		case "n":
			return []string{"1"}
		case "slug":
			if strings.HasPrefix(path, "/teams/") || strings.HasPrefix(path, "/api/v1/teams/") {
				return []string{"lab"}
			}
			return []string{"mini"}
		case "subset":
			return subsets
		case "taskID":
			return tasks
		case "agent":
			return []string{"walker"}
		case "test", "token":
			return []string{"x"}
		case "name":
			return []string{"evaluation", "agreement"}
		case "file":
			return web.StudyExportFiles()
		}
		t.Fatalf("%s: the test does not know what to visit parameter :%s with; add it", path, param)
		return nil
	}
	var paths []string
	for _, r := range f.b.app.Routes() {
		if r.Method != http.MethodGet || strings.HasPrefix(r.Path, "/static/") || strings.HasSuffix(r.Path, "/*") {
			continue
		}
		expanded := []string{r.Path}
		for _, part := range strings.Split(r.Path, "/") {
			if !strings.HasPrefix(part, ":") {
				continue
			}
			var next []string
			for _, p := range expanded {
				for _, v := range values(r.Path, part[1:]) {
					next = append(next, strings.Replace(p, part, v, 1))
				}
			}
			expanded = next
		}
		paths = append(paths, expanded...)
	}
	paths = append(paths, "/compare?runs="+run, "/api/v1/compare?runs="+run, "/runs?team=lab", "/api/v1/runs?team=lab")
	slices.Sort(paths)
	paths = slices.Compact(paths)

	traces := []string{
		"sandbox-check@1", "SECRET-ANSWER-42", // the evaluations' evaluator and hidden answer
		`data-testid="attempt-outcome"`, `data-testid="evaluations"`, "evaluation-verdict", `data-testid="timeline-verdicts"`,
		`data-testid="run-successes"`, `data-testid="run-failures"`, `data-testid="run-errors"`, `data-testid="metric-success"`,
		`"outcome":"success"`, `"outcome":"failure"`, `"outcome":"error"`, `"verdict":"`,
		`href="/runs/` + run + `/attempts/`, // a link to one of the run's attempts: a matrix cell, a list row
	}
	visited := 0
	for _, path := range paths {
		clients := []*client{f.ann}
		if strings.HasPrefix(path, "/api/") {
			clients = append(clients, token)
		}
		for _, c := range clients {
			res := c.get(path)
			body := readBody(t, res)
			if res.StatusCode >= 300 {
				continue // a refusal, a redirect or nothing there
			}
			visited++
			for _, trace := range traces {
				require.NotContains(t, body, trace, "GET %s as the blind annotator (%d)", path, res.StatusCode)
			}
		}
	}
	t.Logf("%d paths answered the blind annotator; none showed a verdict", visited)
	require.Greater(t, visited, 50)

	// The same pages show the verdicts to a visitor who annotates nothing,
	// so the traces are the right ones to look for.
	seen := map[string]bool{}
	for _, path := range []string{"/runs/" + run, attemptURL(f.runID, f.attempts[0]), "/api/v1/runs/" + run + "/attempts", "/benchmarks/mini/leaderboard/breakdowns"} {
		body := readBody(t, f.outsider.get(path))
		for _, trace := range traces {
			if strings.Contains(body, trace) {
				seen[trace] = true
			}
		}
	}
	for _, trace := range []string{"sandbox-check@1", `data-testid="run-successes"`, `href="/runs/` + run + `/attempts/`, `"outcome":"failure"`} {
		require.True(t, seen[trace], "an outsider sees %s", trace)
	}
}
