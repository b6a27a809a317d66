package handlers_test

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/stats"
)

// updateGolden reports whether golden files are rewritten rather than
// compared: go test ./handlers -run Golden -update. The flag is shared with
// any other golden test of the package, whichever file defines it first.
var updateGolden = goldenFlag()

func goldenFlag() func() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files with the output of the tests")
	}
	return func() bool { return flag.Lookup("update").Value.String() == "true" }
}

// boardFixture is a runs fixture with a board on "mini": four published runs
// of four agents over two teams (one uploaded, one reproduced, one a full run
// on the smoke board too) and a private run, with fixed finish dates.
type boardFixture struct {
	*runsFixture
	runs    map[string]*models.Run // by agent slug
	private *models.Run
}

// boardAgent is one agent of the board fixture and its run's numbers.
type boardAgent struct {
	team, name, model string
	openSource        bool
	origin            string
	successes, tasks  int
	judge, rubric     *float64
	cost              float64
	steps             float64
	tokens            int64
	finished          time.Time
}

func f64(v float64) *float64 { return &v }

func newBoardFixture(t *testing.T) *boardFixture {
	t.Helper()
	return newBoardFixtureOn(t, runsOptions{})
}

// newBoardFixtureOn is the board fixture with the runs fixture's options.
func newBoardFixtureOn(t *testing.T, opts runsOptions) *boardFixture {
	t.Helper()
	f := &boardFixture{runsFixture: newRunsFixture(t, opts), runs: map[string]*models.Run{}}
	day := func(d int) time.Time { return time.Date(2026, 3, d, 14, 30, 0, 0, time.UTC) }
	agents := []boardAgent{
		{team: "lab", name: "Navigator", model: "gpt-4o", origin: models.OriginExecuted, successes: 160, tasks: 200, judge: f64(4.21), rubric: f64(0.812), cost: 0.0231, steps: 11.5, tokens: 2_450_000, finished: day(2)},
		{team: "lab", name: "Scout", model: "gpt-4o-mini", origin: models.OriginUploaded, successes: 150, tasks: 200, judge: f64(3.9), cost: 0.004, steps: 14.25, tokens: 910_000, finished: day(5)},
		{team: "other", name: "Open Walker", model: "Qwen2.5-VL-72B", openSource: true, origin: models.OriginReproduced, successes: 145, tasks: 200, rubric: f64(0.7), cost: 0.0112, steps: 9, tokens: 3_200, finished: day(9)},
		{team: "other", name: "Slowpoke", model: "llama-3.1-8b", openSource: true, origin: models.OriginExecuted, successes: 40, tasks: 200, cost: 0.0009, steps: 29.75, tokens: 12_345, finished: day(12)},
	}
	for _, a := range agents {
		run := f.boardRun(t, a, true)
		f.runs[models.RunAgentSnapshot(run).Slug] = run
	}
	f.private = f.boardRun(t, boardAgent{team: "lab", name: "Secret Sprinter", model: "private-model-x", origin: models.OriginExecuted, successes: 199, tasks: 200, finished: day(20)}, false)
	// Navigator's full run on the smoke subset's tasks.
	f.entry(t, f.runs["navigator"], "smoke", true, boardAgent{successes: 90, tasks: 100, cost: 0.02, steps: 10})
	return f
}

// boardRun registers an agent in its team, queues a run of it on mini,
// finishes it at a.finished, sets its origin and publication, and writes its
// leaderboard entry as the metrics job would.
func (f *boardFixture) boardRun(t *testing.T, a boardAgent, published bool) *models.Run {
	t.Helper()
	db := f.b.db
	owner := f.member
	if a.team == "other" {
		owner = f.outsider
	}
	agent := &models.Agent{Name: a.name, Kind: models.AgentReplay, Model: a.model, OpenSource: a.openSource,
		Config: `{"actions":[{"type":"stop","reason":"fixture"}]}`}
	require.NoError(t, servicetest.CreateAgent(db, actorCtx(owner), a.team, agent, nil))
	run, err := servicetest.QueueRun(actorCtx(owner), db, models.RunRequest{TeamSlug: a.team, AgentSlug: agent.Slug, BenchmarkSlug: "mini"})
	require.NoError(t, err)
	require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Updates(map[string]any{
		"status": models.RunCompleted, "origin": a.origin, "published": published, "finished_at": a.finished,
	}).Error)
	f.entry(t, run, models.SubsetFull, false, a)
	return run
}

// entry writes a run's leaderboard row on a subset.
func (f *boardFixture) entry(t *testing.T, run *models.Run, subset string, restricted bool, a boardAgent) {
	t.Helper()
	var benchmarkID int64
	require.NoError(t, f.b.db.Gorm().Model(&models.BenchmarkVersion{}).Where("id = ?", run.VersionID).Pluck("benchmark_id", &benchmarkID).Error)
	ci := stats.Wilson95(a.successes, a.tasks)
	e := &models.LeaderboardEntry{
		RunID: run.ID, BenchmarkID: benchmarkID, VersionID: run.VersionID, SubsetName: subset, Restricted: restricted,
		Tasks: a.tasks, Successes: a.successes, SuccessRate: float64(a.successes) / float64(a.tasks), CILow: ci.Low, CIHigh: ci.High,
		JudgeScore: a.judge, RubricScore: a.rubric, MeanSteps: a.steps, CostPerTask: a.cost, Tokens: a.tokens,
		Metrics: storedReport(t, subset, restricted, a.successes, a.tasks), ComputedAt: time.Now().UTC(),
	}
	if a.judge != nil {
		e.Judged = a.tasks
	}
	if a.rubric != nil {
		e.PerfectRate = f64(*a.rubric / 2)
		e.Efficiency = f64(*a.rubric / a.steps)
	}
	require.NoError(t, f.b.db.Gorm().Create(e).Error)
}

// storedReport is the metrics JSON an entry carries, with the overall numbers
// only (no attempts, so no breakdowns), as the metrics job would store it.
func storedReport(t *testing.T, subset string, restricted bool, successes, tasks int) string {
	t.Helper()
	raw, err := json.Marshal(stats.Report{Subset: subset, Restricted: restricted, Breakdowns: map[stats.Dimension][]stats.Group{}, Metrics: stats.Metrics{
		N: tasks, Tasks: tasks, Graded: tasks, Successes: successes, Failures: tasks - successes,
		SuccessRate: float64(successes) / float64(tasks), SuccessCI: stats.Wilson95(successes, tasks), ErrorClasses: map[string]int{},
	}})
	require.NoError(t, err)
	return string(raw)
}

// rowRuns lists the run ids of a board page's rows in order.
func rowRuns(t *testing.T, body string) []string {
	t.Helper()
	var ids []string
	for _, m := range regexp.MustCompile(`data-testid="leaderboard-row" data-run="(\d+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func (f *boardFixture) ids(slugs ...string) []string {
	var out []string
	for _, s := range slugs {
		out = append(out, strconv.FormatInt(f.runs[s].ID, 10))
	}
	return out
}

// TestAuthz_Leaderboard checks every board route for each kind of caller:
// boards are public, an unpublished benchmark's boards exist only for admins,
// and a private run appears on none, not even for its own team.
func TestAuthz_Leaderboard(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	b := f.b
	importBench(t, b, "hidden")
	require.NoError(t, b.db.SetBenchmarkPublished(f.sys, "hidden", false))
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
	adminOnly := map[string]int{"anonymous": notFound, "member": notFound, "outsider": notFound, "admin": ok}
	for _, tc := range []authzCase{
		{method: "GET", path: "/benchmarks/mini/leaderboard", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/leaderboard?sort=cost_per_task&dir=asc&origin=executed&best=1", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/leaderboard/smoke", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/leaderboard/full", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/leaderboard.json", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/leaderboard.csv", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/leaderboard/smoke.json", want: all(ok)},
		{method: "GET", path: "/benchmarks/mini/leaderboard/smoke.csv", want: all(ok)},
		{method: "GET", path: "/api/v1/benchmarks/mini/leaderboard", want: all(ok)},
		{method: "GET", path: "/api/v1/benchmarks/mini/leaderboard?subset=smoke", want: all(ok)},
		{method: "GET", path: "/benchmarks/hidden/leaderboard", want: adminOnly},
		{method: "GET", path: "/benchmarks/hidden/leaderboard.json", want: adminOnly},
		{method: "GET", path: "/benchmarks/hidden/leaderboard.csv", want: adminOnly},
		{method: "GET", path: "/benchmarks/hidden/leaderboard/smoke", want: adminOnly},
		{method: "GET", path: "/api/v1/benchmarks/hidden/leaderboard", want: adminOnly},
		{method: "GET", path: "/benchmarks/nope/leaderboard", want: all(notFound)},
		{method: "GET", path: "/benchmarks/mini/leaderboard/nope", want: all(notFound)},
		{method: "GET", path: "/benchmarks/mini/leaderboard/nope.csv", want: all(notFound)},
		{method: "GET", path: "/api/v1/benchmarks/mini/leaderboard?subset=nope", want: all(notFound)},
		{method: "GET", path: "/benchmarks/mini/leaderboard?sort=password_hash", want: all(bad)},
		{method: "GET", path: "/benchmarks/mini/leaderboard.json?from=tomorrow", want: all(bad)},
		{method: "GET", path: "/api/v1/benchmarks/mini/leaderboard?dir=sideways", want: all(bad)},
	} {
		for _, actor := range []string{"anonymous", "member", "outsider", "admin"} {
			c := clients[actor]
			if strings.HasPrefix(tc.path, "/api/") {
				c = apiClients[actor]
			}
			res := c.send(tc, actor)
			body := readBody(t, res)
			require.Equal(t, tc.want[actor], res.StatusCode, "%s %s as %s: %s", tc.method, tc.path, actor, body)
			for _, leak := range []string{"Secret Sprinter", "private-model-x", "/runs/" + strconv.FormatInt(f.private.ID, 10) + `"`} {
				require.NotContains(t, body, leak, "%s %s as %s shows the private run", tc.method, tc.path, actor)
			}
		}
	}
}

func TestLeaderboard_Page(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	anon := f.b.anonymous(t)

	t.Run("RowsRanksAndColumns", func(t *testing.T) {
		res := anon.get("/benchmarks/mini/leaderboard")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, "<html")
		require.Equal(t, f.ids("navigator", "scout", "open-walker", "slowpoke"), rowRuns(t, body))
		text := strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body, " ")), " ")
		require.Contains(t, text, "80.0% (95% CI 73.9–85.0%) 160 of 200 tasks", "the rate with its interval as text")
		require.Contains(t, body, `>1–3</th>`, "the top three overlap: any of them could be first")
		require.Contains(t, body, `>4</th>`)
		require.Contains(t, body, "executed by Proctor")
		require.Contains(t, body, "reproduced by admins")
		require.Contains(t, body, `data-testid="sort-judge_score"`, "judge scores exist: the column shows")
		require.Contains(t, body, "0.812")
		require.Contains(t, body, `href="/runs/`+f.ids("navigator")[0]+`"`, "each row links to its run")
		require.Contains(t, body, `aria-sort="descending"`, "sorted by success rate, best first")
		require.Contains(t, body, `data-testid="subset-tab-smoke"`)
		for _, link := range []string{"/benchmarks/mini/leaderboard/breakdowns", "/benchmarks/mini/leaderboard/changes"} {
			require.Contains(t, body, `href="`+link+`"`)
			require.Equal(t, http.StatusOK, anon.get(link).StatusCode, link)
		}
		body = readBody(t, anon.get("/benchmarks/mini/leaderboard/smoke"))
		for _, link := range []string{"/benchmarks/mini/leaderboard/smoke/breakdowns", "/benchmarks/mini/leaderboard/changes?subset=smoke"} {
			require.Contains(t, body, `href="`+strings.ReplaceAll(link, "&", "&amp;")+`"`)
			require.Equal(t, http.StatusOK, anon.get(link).StatusCode, link)
		}
	})

	t.Run("SortAndFilter", func(t *testing.T) {
		body := readBody(t, anon.get("/benchmarks/mini/leaderboard?sort=cost_per_task&dir=asc"))
		require.Equal(t, f.ids("slowpoke", "scout", "open-walker", "navigator"), rowRuns(t, body))
		require.Contains(t, body, `aria-sort="ascending"`)
		require.Contains(t, body, `href="/benchmarks/mini/leaderboard.csv?dir=asc&amp;sort=cost_per_task"`, "exports keep the sort")

		body = readBody(t, anon.get("/benchmarks/mini/leaderboard?open_source=yes&sort=agent&dir=desc"))
		require.Equal(t, f.ids("slowpoke", "open-walker"), rowRuns(t, body))
		require.Contains(t, body, "Showing 2 of 4 published runs.")

		body = readBody(t, anon.get("/benchmarks/mini/leaderboard?model=gpt-4o&model_match=exact"))
		require.Equal(t, f.ids("navigator"), rowRuns(t, body))
		body = readBody(t, anon.get("/benchmarks/mini/leaderboard?model=GPT-4O"))
		require.Equal(t, f.ids("navigator", "scout"), rowRuns(t, body))
		body = readBody(t, anon.get("/benchmarks/mini/leaderboard?from=2026-03-05&to=2026-03-09"))
		require.Equal(t, f.ids("scout", "open-walker"), rowRuns(t, body))
		body = readBody(t, anon.get("/benchmarks/mini/leaderboard?origin=uploaded"))
		require.Equal(t, f.ids("scout"), rowRuns(t, body))
		require.Contains(t, body, `<option value="uploaded" selected>`, "the form shows the filter")
	})

	t.Run("BestPerAgent", func(t *testing.T) {
		second := f.boardRun(t, boardAgent{team: "lab", name: "Navigator 2", model: "gpt-4o", origin: models.OriginExecuted, successes: 10, tasks: 200, finished: time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)}, true)
		// The same agent again, worse: move the run to Navigator.
		require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", second.ID).Update("agent_id", f.runs["navigator"].AgentID).Error)
		body := readBody(t, anon.get("/benchmarks/mini/leaderboard"))
		require.Len(t, rowRuns(t, body), 5)
		body = readBody(t, anon.get("/benchmarks/mini/leaderboard?best=1"))
		require.Equal(t, f.ids("navigator", "scout", "open-walker", "slowpoke"), rowRuns(t, body))
		require.Contains(t, body, "(each agent&#39;s best)")
		require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", second.ID).Update("published", false).Error)
	})

	t.Run("SubsetBoardMarksRestrictedRows", func(t *testing.T) {
		body := readBody(t, anon.get("/benchmarks/mini/leaderboard/smoke"))
		require.Equal(t, f.ids("navigator"), rowRuns(t, body))
		require.Contains(t, body, `data-testid="restricted"`)
		require.Contains(t, body, "restricted to this subset's tasks")
		require.NotContains(t, body, `data-testid="sort-judge_score"`, "no run on this board is judged: the column is hidden")
	})

	t.Run("Fragment", func(t *testing.T) {
		// As the filter form sends it: every field, empty ones too.
		req, err := http.NewRequest(http.MethodGet, anon.base+"/benchmarks/mini/leaderboard?origin=&open_source=&model=&model_match=contains&from=&to=&sort=tokens&dir=asc", nil)
		require.NoError(t, err)
		req.Header.Set("HX-Request", "true")
		res := anon.do(req)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, res.Header.Values("Vary"), "HX-Request")
		require.Equal(t, "/benchmarks/mini/leaderboard?dir=asc&sort=tokens", res.Header.Get("HX-Push-Url"), "the address bar shows the permalink")
		body := readBody(t, res)
		require.NotContains(t, body, "<html", "htmx gets only the table")
		require.True(t, strings.HasPrefix(body, `<div id="leaderboard-board"`), body[:min(len(body), 200)])
		require.Equal(t, f.ids("open-walker", "slowpoke", "scout", "navigator"), rowRuns(t, body))
	})

	t.Run("BadParameters", func(t *testing.T) {
		for param, value := range map[string]string{
			"sort": "password_hash", "dir": "up", "origin": "imported", "open_source": "perhaps", "model_match": "regex",
			"from": "2026-02-30", "to": "03/04/2026", "best": "maybe", "version": "x",
		} {
			res := anon.get("/benchmarks/mini/leaderboard?" + param + "=" + value)
			body := readBody(t, res)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, param)
			require.Contains(t, body, param+": ", "the page names %s", param)

			res = anon.get("/benchmarks/mini/leaderboard.json?" + param + "=" + value)
			require.Equal(t, http.StatusBadRequest, res.StatusCode)
			var out struct{ Error struct{ Code, Field string } }
			decodeJSON(t, res, &out)
			require.Equal(t, param, out.Error.Field, "the JSON export names the parameter")

			res = anon.get("/api/v1/benchmarks/mini/leaderboard?" + param + "=" + value)
			require.Equal(t, http.StatusBadRequest, res.StatusCode)
			decodeJSON(t, res, &out)
			require.Equal(t, models.EINVALID, out.Error.Code)
			require.Equal(t, param, out.Error.Field)
		}
	})
}

// apiBoard is the JSON export as a client reads it.
type apiBoard struct {
	Benchmark     string            `json:"benchmark"`
	Subset        string            `json:"subset"`
	Sort          string            `json:"sort"`
	Dir           string            `json:"dir"`
	Filters       map[string]string `json:"filters"`
	PublishedRuns int               `json:"published_runs"`
	URL           string            `json:"url"`
	Entries       []struct {
		Rank       int      `json:"rank"`
		RankRange  string   `json:"rank_range"`
		RunID      int64    `json:"run_id"`
		URL        string   `json:"url"`
		Agent      string   `json:"agent"`
		Team       string   `json:"team"`
		Model      string   `json:"model"`
		OpenSource bool     `json:"open_source"`
		Origin     string   `json:"origin"`
		Restricted bool     `json:"restricted"`
		Tasks      int      `json:"tasks"`
		Successes  int      `json:"successes"`
		Rate       float64  `json:"success_rate"`
		Low        float64  `json:"ci95_low"`
		High       float64  `json:"ci95_high"`
		Judge      *float64 `json:"judge_score"`
		FinishedAt string   `json:"finished_at"`
	} `json:"entries"`
}

func TestLeaderboard_Exports(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	anon := f.b.anonymous(t)

	t.Run("JSON", func(t *testing.T) {
		for _, path := range []string{
			"/benchmarks/mini/leaderboard.json?origin=reproduced",
			"/api/v1/benchmarks/mini/leaderboard?origin=reproduced",
		} {
			res := anon.get(path)
			require.Equal(t, http.StatusOK, res.StatusCode, path)
			require.Contains(t, res.Header.Get("Content-Type"), "application/json")
			var lb apiBoard
			decodeJSON(t, res, &lb)
			require.Equal(t, "mini", lb.Benchmark)
			require.Equal(t, "full", lb.Subset)
			require.Equal(t, map[string]string{"origin": "reproduced"}, lb.Filters)
			require.Equal(t, 4, lb.PublishedRuns)
			require.Equal(t, anon.base+"/benchmarks/mini/leaderboard?origin=reproduced", lb.URL, "the page's permalink")
			require.Len(t, lb.Entries, 1)
			e := lb.Entries[0]
			require.Equal(t, f.runs["open-walker"].ID, e.RunID)
			require.Equal(t, anon.base+"/runs/"+strconv.FormatInt(e.RunID, 10), e.URL)
			require.Equal(t, "Open Walker", e.Agent)
			require.Equal(t, "OTHER", e.Team)
			require.Equal(t, "Qwen2.5-VL-72B", e.Model)
			require.True(t, e.OpenSource)
			require.Equal(t, models.OriginReproduced, e.Origin)
			require.Equal(t, 145, e.Successes)
			require.Equal(t, 200, e.Tasks)
			require.InDelta(t, 0.725, e.Rate, 1e-9)
			ci := stats.Wilson95(145, 200)
			require.InDelta(t, ci.Low, e.Low, 1e-12)
			require.InDelta(t, ci.High, e.High, 1e-12)
			require.Nil(t, e.Judge)
			require.Equal(t, "2026-03-09T14:30:00Z", e.FinishedAt)
			require.Equal(t, "1", e.RankRange)
		}
		var smoke apiBoard
		decodeJSON(t, anon.get("/api/v1/benchmarks/mini/leaderboard?subset=smoke"), &smoke)
		require.Equal(t, "smoke", smoke.Subset)
		require.Len(t, smoke.Entries, 1)
		require.True(t, smoke.Entries[0].Restricted)
	})

	t.Run("CSV", func(t *testing.T) {
		require.NoError(t, f.b.db.Gorm().Model(&models.Team{}).Where("slug = ?", "other").Update("name", `=HYPERLINK("http://evil.example")`).Error)
		res := anon.get("/benchmarks/mini/leaderboard.csv?sort=date")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "text/csv; charset=utf-8", res.Header.Get("Content-Type"))
		require.Equal(t, `attachment; filename="mini-full-leaderboard.csv"`, res.Header.Get("Content-Disposition"))
		records, err := csv.NewReader(res.Body).ReadAll()
		require.NoError(t, err)
		require.Len(t, records, 5)
		header := records[0]
		col := func(rec []string, name string) string {
			for i, h := range header {
				if h == name {
					return rec[i]
				}
			}
			t.Fatalf("no column %s in %v", name, header)
			return ""
		}
		newest := records[1]
		require.Equal(t, strconv.FormatInt(f.runs["slowpoke"].ID, 10), col(newest, "run_id"), "newest first")
		require.Equal(t, "'"+`=HYPERLINK("http://evil.example")`, col(newest, "team"), "no formula reaches a spreadsheet")
		require.Equal(t, "4", col(newest, "rank"))
		require.Equal(t, "40", col(newest, "successes"))
		require.Equal(t, "0.2", col(newest, "success_rate"))
		require.Equal(t, "", col(newest, "judge_score"), "missing metrics are empty")
		require.Equal(t, anon.base+"/runs/"+col(newest, "run_id"), col(newest, "url"))
		top := records[4]
		require.Equal(t, "1", col(top, "rank_best"))
		require.Equal(t, "3", col(top, "rank_worst"))
		require.Equal(t, "4.21", col(top, "judge_score"))
		require.Equal(t, "executed", col(top, "origin"))
	})
}

// TestLeaderboard_GoldenTable compares the table fragment of a fixed board with
// testdata/leaderboard_table.golden; -update rewrites it after a deliberate change.
func TestLeaderboard_GoldenTable(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	anon := f.b.anonymous(t)
	req, err := http.NewRequest(http.MethodGet, anon.base+"/benchmarks/mini/leaderboard", nil)
	require.NoError(t, err)
	req.Header.Set("HX-Request", "true")
	res := anon.do(req)
	require.Equal(t, http.StatusOK, res.StatusCode)
	body := readBody(t, res)
	// Run ids depend on nothing but the fixture's order; dates and tokens do.
	goldenDates := regexp.MustCompile(`\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}Z)?`)
	goldenCSRF := regexp.MustCompile(`(name="_csrf" value=")[^"]+`)
	got := goldenCSRF.ReplaceAllString(goldenDates.ReplaceAllString(body, "YYYY-MM-DD"), "${1}CSRF")
	got = strings.ReplaceAll(got, "><", ">\n<") + "\n"
	path := filepath.Join("testdata", "leaderboard_table.golden")
	if updateGolden() {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./handlers -run GoldenTable -update")
	require.Equal(t, string(want), got, "the table changed: if on purpose, run go test ./handlers -run GoldenTable -update and review the diff")
}
