package handlers_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage/storagetest"
)

// updateBreakdownGoldens reports whether golden files are rewritten rather
// than compared: go test ./handlers -run Golden -update. The flag is shared
// with the package's other golden tests, whichever file defines it first.
var updateBreakdownGoldens = breakdownGoldenFlag()

func breakdownGoldenFlag() func() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files with the output of the tests")
	}
	return func() bool { return flag.Lookup("update").Value.String() == "true" }
}

// breakdownsFixture is a runs fixture whose mini benchmark (t1 easy, t2
// medium, t3 hard, t4 easy; smoke = t1 and t3) has graded runs:
//
//	walker (lab), full, published:    t1 ✓  t2 ✗  t3 ✓  t4 error  $0.10, 3 steps
//	rover (other), full, published:   t1 ✓  t2 ✓  t3 ✗  t4 ✓      $0.40, 6 steps
//	walker (lab), smoke, published:   t1 ✗  t3 ✓                  $0.05, 2 steps
//	secretive (lab), full, private:   every task ✓                $0.01, 1 step
//
// and a second, unpublished benchmark "hidden-bench" with no runs.
type breakdownsFixture struct {
	*runsFixture
	walker, rover, smoke, secret *models.Run
	attempts                     map[int64][]int64 // run id -> attempt ids in task order
}

func newBreakdownsFixture(t *testing.T) *breakdownsFixture {
	t.Helper()
	f := &breakdownsFixture{runsFixture: newRunsFixture(t, runsOptions{}), attempts: map[int64][]int64{}}
	db := f.b.db
	script := `{"actions":[{"type":"stop","reason":"fixture"}]}`
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.outsider), "other", &models.Agent{Name: "Rover", Kind: models.AgentReplay, Config: script}, nil))
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.member), "lab", &models.Agent{Name: "Secretive", Kind: models.AgentReplay, Config: script}, nil))
	const s, x, e = models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError
	f.walker = f.gradedRun(t, f.member, "lab", "walker", "", []string{s, x, s, e}, 0.10, 3)
	f.rover = f.gradedRun(t, f.outsider, "other", "rover", "", []string{s, s, x, s}, 0.40, 6)
	f.smoke = f.gradedRun(t, f.member, "lab", "walker", "smoke", []string{x, s}, 0.05, 2)
	f.secret = f.gradedRun(t, f.member, "lab", "secretive", "", []string{s, s, s, s}, 0.01, 1)
	for _, r := range []*models.Run{f.walker, f.rover, f.smoke} {
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", r.ID).Update("published", true).Error)
	}
	importBench(t, f.b, "hidden-bench")
	require.NoError(t, db.SetBenchmarkPublished(actorCtx(f.b.admin), "hidden-bench", false))
	return f
}

// gradedRun queues a run of an agent as a member of its team, finishes its
// attempts in task order with the verdicts given, each costing cost and
// taking steps steps, and computes its leaderboard entries.
func (f *breakdownsFixture) gradedRun(t *testing.T, member *client, team, agent, subset string, verdicts []string, cost float64, steps int) *models.Run {
	t.Helper()
	db := f.b.db
	run, err := servicetest.QueueRun(actorCtx(member), db, models.RunRequest{TeamSlug: team, AgentSlug: agent, BenchmarkSlug: "mini", Subset: subset})
	require.NoError(t, err)
	var ids []int64
	require.NoError(t, db.DispatchRun(f.sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	// Every attempt, queued or not: the test plays them itself.
	require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
	require.Len(t, ids, len(verdicts))
	f.attempts[run.ID] = ids
	for i, id := range ids {
		status, spec, err := db.ClaimAttempt(f.sys, id, storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.NoError(t, db.FinishEpisode(f.sys, id, spec.Try, models.EpisodeOutcome{Steps: steps, Cost: cost}, func(context.Context, *sql.Tx) error { return nil }, nil))
		score := 0.0
		_, err = db.RecordEvaluation(f.sys, id, &models.Evaluation{Evaluator: "webarena-verified", Verdict: verdicts[i], Score: &score})
		require.NoError(t, err)
	}
	require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(f.sys, run.ID))
	return run
}

// TestAuthz_Breakdowns checks the breakdowns pages for every kind of caller:
// public boards for everyone, an unpublished benchmark's only for admins,
// malformed parameters a 400 naming the parameter, and never a private run.
func TestAuthz_Breakdowns(t *testing.T) {
	t.Parallel()
	f := newBreakdownsFixture(t)
	b := f.b
	clients := map[string]*client{"anonymous": b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": b.admin}
	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "member": status, "outsider": status, "admin": status}
	}
	adminOnly := func(status int) map[string]int {
		return map[string]int{"anonymous": http.StatusNotFound, "member": http.StatusNotFound, "outsider": http.StatusNotFound, "admin": status}
	}
	const ok, bad, notFound = http.StatusOK, http.StatusBadRequest, http.StatusNotFound
	for _, tc := range []struct {
		path string
		want map[string]int
		// mentions is a text a 400 page must contain: the parameter's name.
		mentions string
	}{
		{path: "/benchmarks/mini/leaderboard/breakdowns", want: all(ok)},
		{path: "/benchmarks/mini/leaderboard/breakdowns?dim=difficulty&page=1", want: all(ok)},
		{path: "/benchmarks/mini/leaderboard/breakdowns?version=1", want: all(ok)},
		{path: "/benchmarks/mini/leaderboard/smoke/breakdowns", want: all(ok)},
		{path: "/benchmarks/mini/leaderboard/full/breakdowns?dim=task_type", want: all(ok)},
		{path: "/benchmarks/mini/leaderboard/nope/breakdowns", want: all(notFound)},
		{path: "/benchmarks/nope/leaderboard/breakdowns", want: all(notFound)},
		{path: "/benchmarks/nope/leaderboard/smoke/breakdowns", want: all(notFound)},
		{path: "/benchmarks/mini/leaderboard/breakdowns?version=2", want: all(notFound)},
		{path: "/benchmarks/mini/leaderboard/breakdowns?dim=colour", want: all(bad), mentions: "dim must be one of site, domain, difficulty, attribute, task_type"},
		{path: "/benchmarks/mini/leaderboard/breakdowns?dim=intent_template", want: all(bad), mentions: "dim must be"},
		{path: "/benchmarks/mini/leaderboard/smoke/breakdowns?dim=%3Cscript%3E", want: all(bad), mentions: "dim must be"},
		{path: "/benchmarks/mini/leaderboard/breakdowns?page=0", want: all(bad), mentions: "page must be"},
		{path: "/benchmarks/mini/leaderboard/breakdowns?page=two", want: all(bad), mentions: "page must be"},
		{path: "/benchmarks/mini/leaderboard/breakdowns?page=2", want: all(bad), mentions: "page 2 is past the last page"},
		{path: "/benchmarks/mini/leaderboard/breakdowns?version=latest", want: all(bad), mentions: "version must be"},
		{path: "/benchmarks/hidden-bench/leaderboard/breakdowns", want: adminOnly(ok)},
		{path: "/benchmarks/hidden-bench/leaderboard/smoke/breakdowns", want: adminOnly(ok)},
	} {
		for _, actor := range []string{"anonymous", "member", "outsider", "admin"} {
			t.Run(tc.path+" as "+actor, func(t *testing.T) {
				c := clients[actor]
				c.t = t
				res := c.get(tc.path)
				body := readBody(t, res)
				require.Equal(t, tc.want[actor], res.StatusCode, body)
				require.NotContains(t, body, "Secretive", "a private run never appears, not even to its team or admins")
				require.NotContains(t, body, fmt.Sprintf("/runs/%d", f.secret.ID))
				require.NotContains(t, body, "<script>")
				for _, secret := range benchSecrets {
					require.NotContains(t, body, secret)
				}
				if tc.mentions != "" {
					require.Contains(t, body, tc.mentions)
				}
				if res.StatusCode == ok && strings.Contains(tc.path, "hidden-bench") {
					require.Contains(t, body, `data-testid="unpublished-notice"`)
					require.Contains(t, body, `data-testid="no-entries"`)
				}
			})
		}
	}
}

func TestBreakdowns_Page(t *testing.T) {
	t.Parallel()
	f := newBreakdownsFixture(t)
	c := f.b.anonymous(t)
	get := func(t *testing.T, path string) string {
		c.t = t
		res := c.get(path)
		body := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		return body
	}

	t.Run("GroupsTable", func(t *testing.T) {
		body := get(t, "/benchmarks/mini/leaderboard/breakdowns")
		require.Equal(t, 2, strings.Count(body, `data-testid="breakdown-row"`), "the two published full runs")
		require.Less(t, strings.Index(body, ">Rover<"), strings.Index(body, ">Walker<"), "best success rate first")
		require.Contains(t, body, `<th scope="col" class="num">gitlab</th><th scope="col" class="num">multi-site</th><th scope="col" class="num">shopping</th>`)
		require.Contains(t, body, `<td class="num hm-8" title="75% (n=4, 95% CI 30–95%)">75%<span class="visually-hidden"> (n=4, 95% CI 30–95%)</span></td>`,
			"rover's overall rate: the number is shown, n and interval in the title and in hidden text")
		require.Contains(t, body, `title="50% (n=4, 95% CI 15–85%)"`, "walker's overall rate")
		require.Contains(t, body, `title="0% (n=1, 95% CI 0–79%)"`, "walker on gitlab (t2 failed)")
		require.Contains(t, body, `<a href="/benchmarks/mini/leaderboard/breakdowns?dim=domain#by-group" hx-get="/benchmarks/mini/leaderboard/breakdowns?dim=domain"`)
		require.Contains(t, body, `aria-current="page" data-testid="dim-site"`)
		require.Contains(t, body, `href="/benchmarks/mini/leaderboard"`, "back to the board")
	})
	t.Run("Dimension", func(t *testing.T) {
		body := get(t, "/benchmarks/mini/leaderboard/breakdowns?dim=difficulty")
		require.Contains(t, body, "Success rate by difficulty")
		require.Contains(t, body, `<th scope="col" class="num">easy</th><th scope="col" class="num">medium</th><th scope="col" class="num">hard</th>`, "easy to hard")
		require.Contains(t, body, `aria-current="page" data-testid="dim-difficulty"`)
		body = get(t, "/benchmarks/mini/leaderboard/breakdowns?dim=domain")
		require.Contains(t, body, `<th scope="col" class="num">no label</th>`, "t4 has no domain")
	})
	t.Run("SubsetBoard", func(t *testing.T) {
		body := get(t, "/benchmarks/mini/leaderboard/smoke/breakdowns")
		require.Equal(t, 3, strings.Count(body, `data-testid="breakdown-row"`), "two full runs restricted to smoke, and the smoke run")
		require.Equal(t, 2, strings.Count(body, `>restricted</span>`))
		require.Contains(t, body, `data-testid="breakdowns-subset">smoke<`)
		require.Contains(t, body, `href="/benchmarks/mini/leaderboard/smoke"`)
		require.Equal(t, 2, strings.Count(body, `data-testid="matrix-row"`), "only the subset's tasks")
	})
	t.Run("Charts", func(t *testing.T) {
		body := get(t, "/benchmarks/mini/leaderboard/breakdowns")
		for _, id := range []string{"chart-cost", "chart-steps", "chart-difficulty"} {
			require.Contains(t, body, `role="img" aria-labelledby="`+id+`-title `+id+`-desc"`)
			require.Contains(t, body, `<title id="`+id+`-title">`)
		}
		require.Contains(t, body, "On the Pareto frontier (no other entry is both cheaper and more successful): Walker (LAB), Rover (OTHER).")
		require.Contains(t, body, `<path class="chart-frontier"`)
		require.Contains(t, body, "<summary>Data table</summary>")
		require.Contains(t, body, `<td class="num">$0.4000</td>`)
		require.NotContains(t, body, `fill="#`, "colours come from the stylesheet, for dark mode")
	})
	t.Run("TaskMatrix", func(t *testing.T) {
		body := get(t, "/benchmarks/mini/leaderboard/breakdowns")
		rows := regexp.MustCompile(`data-testid="matrix-row"><th scope="row" class="bd-task-col"><a href="/benchmarks/mini/tasks/(t\d)"`).FindAllStringSubmatch(body, -1)
		require.Len(t, rows, 4)
		// Easy t1 (2 of 2 solved) and t4 (1 of 2), medium t2, hard t3.
		require.Equal(t, []string{"t1", "t4", "t2", "t3"}, []string{rows[0][1], rows[1][1], rows[2][1], rows[3][1]})
		require.Contains(t, body, fmt.Sprintf(`<td class="mx-e"><a href="/runs/%d/attempts/%d" aria-label="error">!</a></td>`, f.walker.ID, f.attempts[f.walker.ID][3]))
		require.Contains(t, body, fmt.Sprintf(`<td class="mx-s"><a href="/runs/%d/attempts/%d" aria-label="solved">✓</a></td>`, f.rover.ID, f.attempts[f.rover.ID][0]))
		require.NotContains(t, body, `data-testid="matrix-next"`, "one page")
	})
	t.Run("HTMXFragments", func(t *testing.T) {
		fragment := func(t *testing.T, path, target string) (string, http.Header) {
			req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
			require.NoError(t, err)
			req.Header.Set("HX-Request", "true")
			req.Header.Set("HX-Target", target)
			c.t = t
			res := c.do(req)
			body := readBody(t, res)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			return body, res.Header
		}
		body, h := fragment(t, "/benchmarks/mini/leaderboard/breakdowns?dim=task_type", "by-group")
		require.True(t, strings.HasPrefix(body, `<section id="by-group"`), "only the groups section")
		require.Contains(t, body, `<th scope="col" class="num">action</th>`)
		require.NotContains(t, body, "<html")
		require.NotContains(t, body, `data-testid="task-matrix"`)
		require.Contains(t, h.Values("Vary"), "HX-Request, HX-Target")

		body, _ = fragment(t, "/benchmarks/mini/leaderboard/breakdowns?dim=task_type", "task-matrix")
		require.True(t, strings.HasPrefix(body, `<section id="task-matrix"`))
		require.NotContains(t, body, `data-testid="breakdown-section"`)

		c.t = t
		req, err := http.NewRequest(http.MethodGet, c.base+"/benchmarks/mini/leaderboard/breakdowns?dim=bad", nil)
		require.NoError(t, err)
		req.Header.Set("HX-Request", "true")
		req.Header.Set("HX-Target", "by-group")
		res := c.do(req)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), "dim must be one of")
	})
	t.Run("NoRunsYet", func(t *testing.T) {
		body := readBody(t, f.b.admin.get("/benchmarks/hidden-bench/leaderboard/breakdowns"))
		require.Contains(t, body, `data-testid="no-entries"`)
		require.NotContains(t, body, `data-testid="task-matrix"`)
	})
}

// TestBreakdowns_Golden compares one breakdown table and one chart, as the
// page renders them, with files under testdata (regenerate with -update).
func TestBreakdowns_Golden(t *testing.T) {
	t.Parallel()
	f := newBreakdownsFixture(t)
	c := f.b.anonymous(t)
	res := c.get("/benchmarks/mini/leaderboard/breakdowns?dim=difficulty")
	body := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	ids := regexp.MustCompile(`/runs/\d+(/attempts/\d+)?`)
	for _, tc := range []struct {
		file    string
		section *regexp.Regexp
	}{
		{"breakdown_table.golden", regexp.MustCompile(`(?s)<section id="by-group".*?</section>`)},
		{"breakdown_chart_cost.golden", regexp.MustCompile(`(?s)<figure class="bd-figure" data-testid="chart-cost">.*?</figure>`)},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := tc.section.FindString(body)
			require.NotEmpty(t, got)
			// Ids depend on the database; one element per line keeps diffs readable.
			got = ids.ReplaceAllStringFunc(got, func(s string) string {
				if strings.Contains(s, "/attempts/") {
					return "/runs/ID/attempts/ID"
				}
				return "/runs/ID"
			})
			got = strings.ReplaceAll(got, "><", ">\n<") + "\n"
			path := filepath.Join("testdata", tc.file)
			if updateBreakdownGoldens() {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./handlers -run TestBreakdowns_Golden -update to create it")
			require.Equal(t, string(want), got)
		})
	}
}
