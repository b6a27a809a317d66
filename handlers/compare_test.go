package handlers_test

import (
	"context"
	"database/sql"
	"html"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
)

// compareFixture is the runs fixture with runs to compare, all on mini unless
// said otherwise:
//
//	first, second lab, published, outcomes differing on t2 and t3
//	private  lab, unpublished
//	theirs   other team, unpublished
//	hidden   lab, published, then hidden by administrators
//	elsewhere lab, published, on benchmark mini2
type compareFixture struct {
	*runsFixture
	first, second, private, theirs, hidden, elsewhere int64
	attempts                                          map[int64][]int64 // attempt ids of each run in task order
}

func newCompareFixture(t *testing.T) *compareFixture {
	t.Helper()
	f := &compareFixture{runsFixture: newRunsFixture(t, runsOptions{}), attempts: map[int64][]int64{}}
	db := f.b.db
	importBench(t, f.b, "mini2")
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(f.outsider), "other", &models.Agent{Name: "Theirs", Kind: models.AgentReplay, Config: `{"actions":[{"type":"stop","reason":"fixture"}]}`}, nil))
	queue := func(who *client, team, agent, bench string, published bool, verdicts ...string) int64 {
		run, err := servicetest.QueueRun(actorCtx(who), db, models.RunRequest{TeamSlug: team, AgentSlug: agent, BenchmarkSlug: bench})
		require.NoError(t, err)
		var ids []int64
		require.NoError(t, db.DispatchRun(f.sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
		// Every attempt, queued or not: the test plays them itself.
		require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
		for i, v := range verdicts {
			f.play(t, ids[i], v, "")
		}
		if published {
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
		}
		f.attempts[run.ID] = ids
		return run.ID
	}
	s, fl := models.OutcomeSuccess, models.OutcomeFailure
	f.first = queue(f.member, "lab", "walker", "mini", true, s, fl, s, fl)
	f.second = queue(f.member, "lab", "walker", "mini", true, s, s, fl, fl)
	f.private = queue(f.member, "lab", "walker", "mini", false, s, s, s, s)
	f.theirs = queue(f.outsider, "other", "theirs", "mini", false, fl, fl, fl, fl)
	f.hidden = queue(f.member, "lab", "walker", "mini", true, s, s, s, fl)
	_, err := servicetest.Moderation(db).HideRun(actorCtx(f.b.admin), f.hidden, "Trained on the test tasks.")
	require.NoError(t, err)
	f.elsewhere = queue(f.member, "lab", "walker", "mini2", true)
	return f
}

// path fills {a}, {b}, {private}, {theirs}, {hidden} and {elsewhere} with run ids.
func (f *compareFixture) path(p string) string {
	for name, id := range map[string]int64{"a": f.first, "b": f.second, "private": f.private, "theirs": f.theirs, "hidden": f.hidden, "elsewhere": f.elsewhere} {
		p = strings.ReplaceAll(p, "{"+name+"}", strconv.FormatInt(id, 10))
	}
	return p
}

// TestAuthz_Compare checks the compare page and API for each kind of caller:
// anonymous, a member of lab, a member of another team only, an admin.
func TestAuthz_Compare(t *testing.T) {
	t.Parallel()
	f := newCompareFixture(t)
	b := f.b
	clients := map[string]*client{"anonymous": b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": b.admin}
	apiClients := map[string]*client{"anonymous": clients["anonymous"]}
	for name, c := range clients {
		if name != "anonymous" {
			apiClients[name] = withToken(t, b, c)
		}
	}
	const ok, bad, notFound = http.StatusOK, http.StatusBadRequest, http.StatusNotFound
	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "member": status, "outsider": status, "admin": status}
	}
	who := func(anon, member, outsider, admin int) map[string]int {
		return map[string]int{"anonymous": anon, "member": member, "outsider": outsider, "admin": admin}
	}
	rows := []authzCase{
		{method: "GET", path: "/compare", want: all(ok)},
		{method: "GET", path: "/compare?runs={a},{b}", want: all(ok)},
		// Other spellings of a list lead to its permalink.
		{method: "GET", path: "/compare?runs={b}%2C{a}", want: all(http.StatusSeeOther)},
		{method: "GET", path: "/compare?runs={a}&runs={b}", want: all(http.StatusSeeOther)},
		// Private runs: their team and admins only, wherever they are in the list.
		{method: "GET", path: "/compare?runs={a},{private}", want: who(notFound, ok, notFound, ok)},
		{method: "GET", path: "/compare?runs={private},{a},{b}", want: who(notFound, ok, notFound, ok)},
		{method: "GET", path: "/compare?runs={a},{theirs}", want: who(notFound, notFound, ok, ok)},
		{method: "GET", path: "/compare?runs={a},999999", want: all(notFound)},
		// A hidden run's attempts stay with its team and admins.
		{method: "GET", path: "/compare?runs={hidden},{a}", want: who(notFound, ok, notFound, ok)},
		// Bad lists name the runs parameter.
		{method: "GET", path: "/compare?runs=", want: all(bad)},
		{method: "GET", path: "/compare?runs={a}", want: all(bad)},
		{method: "GET", path: "/compare?runs={a},{a}", want: all(bad)},
		{method: "GET", path: "/compare?runs={a},twelve", want: all(bad)},
		{method: "GET", path: "/compare?runs={a},-3", want: all(bad)},
		{method: "GET", path: "/compare?runs=1,2,3,4,5", want: all(bad)},
		// Runs of different benchmarks cannot be compared; a private run is
		// not found first, so nobody learns what benchmark it is on.
		{method: "GET", path: "/compare?runs={a},{elsewhere}", want: all(bad)},
		{method: "GET", path: "/compare?runs={private},{elsewhere}", want: who(notFound, bad, notFound, bad)},
		// The JSON API says the same.
		{method: "GET", path: "/api/v1/compare?runs={a},{b}", want: all(ok)},
		{method: "GET", path: "/api/v1/compare?runs={a},{private}", want: who(notFound, ok, notFound, ok)},
		{method: "GET", path: "/api/v1/compare?runs={theirs},{a}", want: who(notFound, notFound, ok, ok)},
		{method: "GET", path: "/api/v1/compare?runs={a},999999", want: all(notFound)},
		{method: "GET", path: "/api/v1/compare?runs={a},{hidden}", want: who(notFound, ok, notFound, ok)},
		{method: "GET", path: "/api/v1/compare", want: all(bad)},
		{method: "GET", path: "/api/v1/compare?runs={a},{a}", want: all(bad)},
		{method: "GET", path: "/api/v1/compare?runs={a},x", want: all(bad)},
		{method: "GET", path: "/api/v1/compare?runs={a},{elsewhere}", want: all(bad)},
	}
	for _, tc := range rows {
		for _, actor := range []string{"anonymous", "member", "outsider", "admin"} {
			want := tc.want[actor]
			t.Run(tc.method+" "+tc.path+" as "+actor, func(t *testing.T) {
				row := tc
				row.path = f.path(tc.path)
				c := clients[actor]
				if strings.HasPrefix(row.path, "/api/") {
					c = apiClients[actor]
				}
				c.t = t
				res := c.send(row, "")
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s as %s: %s", row.path, actor, body)
				switch {
				case want == bad && strings.HasPrefix(row.path, "/api/"):
					require.Contains(t, body, `"field":"runs"`)
				case want == bad:
					require.Contains(t, body, `data-testid="compare-error"`)
					require.Contains(t, body, `aria-invalid="true"`)
				case want == notFound:
					// Nothing about the runs leaks: not their agents, not their benchmark.
					require.NotContains(t, body, "Walker")
					require.NotContains(t, body, "Theirs")
					require.NotContains(t, body, "Mini bench")
				}
				for _, secret := range benchSecrets {
					require.NotContains(t, body, secret)
				}
			})
		}
	}
}

func TestCompare_TwoRuns(t *testing.T) {
	t.Parallel()
	f := newCompareFixture(t)
	anon := f.b.anonymous(t)
	a, b := f.attempts[f.first], f.attempts[f.second]

	t.Run("Page", func(t *testing.T) {
		res := anon.get(f.path("/compare?runs={a},{b}"))
		body := readBody(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		require.Contains(t, body, f.path(`value="{a},{b}"`), "the form holds the runs")
		require.Contains(t, body, f.path(`href="/compare?runs={a},{b}"`), "a permalink")
		require.Contains(t, body, f.path(`href="/api/v1/compare?runs={a},{b}"`))
		require.Contains(t, body, `data-testid="compare-runs"`)
		require.Contains(t, body, "<caption>Compared runs; A is the baseline")
		require.Contains(t, body, `<th scope="col">Metric</th>`)

		// Each group counts its tasks; differing ones link to both timelines.
		groups := map[string]string{models.GroupFirstOnly: "t3", models.GroupSecondOnly: "t2", models.GroupBoth: "t1", models.GroupNeither: "t4"}
		for group, task := range groups {
			section := compareSection(t, body, `data-testid="group-`+group+`"`, "</details>")
			require.Contains(t, section, `data-testid="group-count">1 task<`, group)
			require.Contains(t, section, `data-testid="diff-task-`+task+`"`, group)
		}
		require.NotContains(t, body, `data-testid="group-ungraded"`, "every task has a verdict")
		require.Contains(t, body, `data-testid="group-first_only" open>`, "groups that differ are open")
		require.Contains(t, body, `data-testid="group-both">`, "groups that agree are closed")
		// Tasks both runs agree on are a compact list, still linking to both timelines.
		for i, task := range []string{"t1", "t2", "t3", "t4"} {
			end := "</tr>"
			if task == "t1" || task == "t4" {
				end = "</li>"
			}
			row := compareSection(t, body, `data-testid="diff-task-`+task+`"`, end)
			require.Contains(t, row, `href="`+f.path("/runs/{a}/attempts/")+strconv.FormatInt(a[i], 10)+`"`, task)
			require.Contains(t, row, `href="`+f.path("/runs/{b}/attempts/")+strconv.FormatInt(b[i], 10)+`"`, task)
		}
		require.Contains(t, compareSection(t, body, `data-testid="diff-task-t3"`, "</tr>"), "✓ solved")
		require.Contains(t, compareSection(t, body, `data-testid="diff-task-t3"`, "</tr>"), "✗ failed")

		// Both solved 2 of 4: no difference, a p-value of 1 on 2 discordant tasks.
		success := compareSection(t, body, `data-testid="metric-row-success_rate"`, "</tr>")
		require.Contains(t, success, "50.0% [15.0%, 85.0%]")
		require.Contains(t, success, "2/4")
		require.Contains(t, success, `data-testid="delta-success_rate-1" data-change="same"`)
		require.Contains(t, success, "±0.0 pp")
		require.NotContains(t, success, "delta-success_rate-0", "the baseline has no delta")
		paired := compareSection(t, body, f.path(`data-testid="paired-{b}"`), "</tr>")
		require.Contains(t, paired, `data-testid="paired-discordant">2<`)
		require.Contains(t, paired, `data-testid="paired-p">1<`)

		// Breakdown deltas: on the hard task (t3) B is 100 points worse.
		difficulty := compareSection(t, body, `data-testid="compare-breakdown-difficulty"`, "</details>")
		hard := compareSection(t, difficulty, `<th scope="row">hard</th>`, "</tr>")
		require.Contains(t, hard, `data-change="worse"`)
		require.Contains(t, hard, "−100.0 pp")
		require.Contains(t, hard, "worse than the baseline", "the change is in words too")
		medium := compareSection(t, difficulty, `<th scope="row">medium</th>`, "</tr>")
		require.Contains(t, medium, "+100.0 pp")
		require.Contains(t, medium, `data-change="better"`)
	})

	t.Run("OneAddressPerComparison", func(t *testing.T) {
		for _, spelling := range []string{"/compare?runs={a}+,+{b}", "/compare?runs={a}%2C{b}", "/compare?runs={a}&runs={b}", "/compare?runs={a},{b}&x=1"} {
			res := anon.get(f.path(spelling))
			require.Equal(t, http.StatusSeeOther, res.StatusCode, spelling)
			require.Equal(t, f.path("/compare?runs={a},{b}"), res.Header.Get("Location"), spelling)
		}
		// Invalid lists are not redirected: the form says what is wrong.
		res := anon.get("/compare?runs=7%2C7")
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
	})

	t.Run("BadRunsKeepTheForm", func(t *testing.T) {
		res := anon.get(f.path("/compare?runs={a},{elsewhere}"))
		body := html.UnescapeString(readBody(t, res))
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, body, f.path("run {a} is on Mini bench (mini) and run {elsewhere} on Mini bench (mini2): only runs of the same benchmark can be compared"))
		require.Contains(t, body, f.path(`value="{a},{elsewhere}"`))
		res = anon.get("/compare?runs=7")
		body = html.UnescapeString(readBody(t, res))
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, body, "choose 2 to 4 runs to compare")
	})

	t.Run("JSON", func(t *testing.T) {
		res := anon.get(f.path("/api/v1/compare?runs={b},{a}"))
		require.Equal(t, http.StatusOK, res.StatusCode)
		var got struct {
			Benchmark struct{ Slug string } `json:"benchmark"`
			Runs      []struct {
				ID       int64  `json:"id"`
				Label    string `json:"label"`
				Baseline bool   `json:"baseline"`
				Agent    string `json:"agent"`
				Subset   string `json:"metrics_subset"`
			} `json:"runs"`
			Metrics []struct {
				Key    string `json:"key"`
				Values []struct {
					Value *float64 `json:"value"`
					Delta *float64 `json:"delta"`
					K     int      `json:"k"`
					N     int      `json:"n"`
				} `json:"values"`
			} `json:"metrics"`
			Breakdowns     []struct{ Dimension string } `json:"breakdowns"`
			SharedTasks    int                          `json:"shared_tasks"`
			DifferingTasks int                          `json:"differing_tasks"`
			Tasks          []struct {
				ID      string `json:"task_id"`
				Differs bool   `json:"differs"`
				Group   string `json:"group"`
				Runs    []struct {
					RunID       int64  `json:"run_id"`
					AttemptID   int64  `json:"attempt_id"`
					Outcome     string `json:"outcome"`
					TimelineURL string `json:"timeline_url"`
				} `json:"runs"`
			} `json:"tasks"`
			PairedTests []models.PairedTest `json:"paired_tests"`
			URL         string              `json:"url"`
		}
		decodeJSON(t, res, &got)
		require.Equal(t, "mini", got.Benchmark.Slug)
		require.Len(t, got.Runs, 2)
		require.Equal(t, []any{f.second, "A", true, "walker", "full"}, []any{got.Runs[0].ID, got.Runs[0].Label, got.Runs[0].Baseline, got.Runs[0].Agent, got.Runs[0].Subset})
		require.Equal(t, []any{f.first, "B", false}, []any{got.Runs[1].ID, got.Runs[1].Label, got.Runs[1].Baseline})
		require.Equal(t, f.path("/compare?runs={b},{a}"), got.URL)
		require.Equal(t, "success_rate", got.Metrics[0].Key)
		require.Equal(t, 2, got.Metrics[0].Values[0].K)
		require.Equal(t, 4, got.Metrics[0].Values[0].N)
		require.Nil(t, got.Metrics[0].Values[0].Delta)
		require.InDelta(t, 0, *got.Metrics[0].Values[1].Delta, 1e-9)
		require.NotEmpty(t, got.Breakdowns)
		require.Equal(t, 4, got.SharedTasks)
		require.Equal(t, 2, got.DifferingTasks)
		require.Equal(t, "t2", got.Tasks[1].ID)
		require.True(t, got.Tasks[1].Differs)
		require.Equal(t, models.GroupFirstOnly, got.Tasks[1].Group, "b, the baseline here, solved t2")
		require.Equal(t, f.path("/runs/{b}/attempts/")+strconv.FormatInt(b[1], 10), got.Tasks[1].Runs[0].TimelineURL)
		require.Equal(t, f.path("/runs/{a}/attempts/")+strconv.FormatInt(a[1], 10), got.Tasks[1].Runs[1].TimelineURL)
		require.Equal(t, models.OutcomeFailure, got.Tasks[1].Runs[1].Outcome)
		require.Equal(t, []models.PairedTest{{RunID: f.first, Tasks: 4, Both: 1, BaselineOnly: 1, RunOnly: 1, Neither: 1, Discordant: 2, PValue: 1}}, got.PairedTests)
	})
}

// TestCompare_Matrix: three or four runs list only the tasks whose outcomes
// differ, as a matrix of tasks × runs.
func TestCompare_Matrix(t *testing.T) {
	t.Parallel()
	f := newCompareFixture(t)
	res := f.member.get(f.path("/compare?runs={a},{b},{private}"))
	body := readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Contains(t, body, "4 tasks attempted by every run; 3 tasks with different outcomes are listed")
	require.NotContains(t, body, `data-testid="diff-task-t1"`, "solved by all three")
	for _, task := range []string{"t2", "t3", "t4"} {
		row := compareSection(t, body, `data-testid="diff-task-`+task+`"`, "</tr>")
		for _, letter := range []string{"A", "B", "C"} {
			require.Contains(t, row, `data-testid="timeline-`+letter+`-`+task+`"`)
		}
	}
	require.Contains(t, body, f.path(`data-testid="paired-{b}"`))
	require.Contains(t, body, f.path(`data-testid="paired-{private}"`))
	// C solved everything: t2 and t4 against A's failures.
	paired := compareSection(t, body, f.path(`data-testid="paired-{private}"`), "</tr>")
	require.Contains(t, paired, `data-testid="paired-discordant">2<`)
	require.Contains(t, paired, `data-testid="paired-p">0.500<`)
}

// compareSection returns the text of s from the first start up to the next end after it.
func compareSection(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	require.GreaterOrEqual(t, i, 0, "no %q in the page", start)
	j := strings.Index(s[i:], end)
	require.GreaterOrEqual(t, j, 0, "no %q after %q", end, start)
	return s[i : i+j]
}
