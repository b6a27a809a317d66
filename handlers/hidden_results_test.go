package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/internal/hiddenfixture"
	"proctor/models"
)

// hiddenFixture is the runs fixture with a graded hidden-tests run of the
// lab team (hiddenfixture), its images in the artifact store.
type hiddenFixture struct {
	*runsFixture
	seed *hiddenfixture.Seed
}

func newHiddenFixture(t *testing.T) *hiddenFixture {
	t.Helper()
	f := &hiddenFixture{runsFixture: newRunsFixture(t, runsOptions{})}
	g := f.b.db.Gorm()
	var team models.Team
	require.NoError(t, g.Where("slug = ?", "lab").Take(&team).Error)
	var agent models.Agent
	require.NoError(t, g.Where("team_id = ? AND slug = ?", team.ID, "walker").Take(&agent).Error)
	seed, err := hiddenfixture.Write(context.Background(), f.b.db, hiddenfixture.Options{
		TeamID: team.ID, AgentID: agent.ID, Files: f.store, Cost: 0.25, TokensIn: 40_000, TokensOut: 2_000, Turns: 30,
	})
	require.NoError(t, err)
	f.seed = seed
	return f
}

// set publishes the run or not and reveals the benchmark's tests or not.
func (f *hiddenFixture) set(t *testing.T, published, reveal bool) {
	t.Helper()
	require.NoError(t, f.b.db.Gorm().Model(&models.Run{}).Where("id = ?", f.seed.RunID).Update("published", published).Error)
	require.NoError(t, f.b.db.SetRevealReferences(f.sys, f.seed.BenchmarkSlug, reveal))
}

func (f *hiddenFixture) testsPath(task string) string {
	return fmt.Sprintf("/runs/%d/attempts/%d/tests", f.seed.RunID, f.seed.Attempts[task])
}

// TestAuthz_HiddenResults checks the run page's hidden-tests section, the
// test browser and a test's page for each kind of caller, on an unpublished
// and a published run, of a benchmark whose tests are hidden and of one that
// reveals them. Who may not see the run gets 404; who may see it but not the
// tests gets 401 (anonymous) or 403.
func TestAuthz_HiddenResults(t *testing.T) {
	t.Parallel()
	f := newHiddenFixture(t)
	clients := map[string]*client{"anonymous": f.b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": f.b.admin}
	const ok, bad, notFound, unauth, forbidden = http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden
	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "member": status, "outsider": status, "admin": status}
	}
	tests := f.testsPath(hiddenfixture.ShopA)
	test := tests + "/" + hiddenfixture.ImageTest
	otherRun := strings.Replace(tests, fmt.Sprintf("/runs/%d/", f.seed.RunID), "/runs/999999/", 1)
	apiRates := fmt.Sprintf("/api/v1/runs/%d/hidden-tests", f.seed.RunID)
	for _, tc := range []struct {
		path              string
		published, reveal bool
		want              map[string]int
	}{
		{tests, false, false, map[string]int{"anonymous": notFound, "member": forbidden, "outsider": notFound, "admin": ok}},
		{tests, true, false, map[string]int{"anonymous": unauth, "member": forbidden, "outsider": forbidden, "admin": ok}},
		{tests, false, true, map[string]int{"anonymous": notFound, "member": ok, "outsider": notFound, "admin": ok}},
		{tests, true, true, all(ok)},
		{test, false, false, map[string]int{"anonymous": notFound, "member": forbidden, "outsider": notFound, "admin": ok}},
		{test, true, false, map[string]int{"anonymous": unauth, "member": forbidden, "outsider": forbidden, "admin": ok}},
		{test, false, true, map[string]int{"anonymous": notFound, "member": ok, "outsider": notFound, "admin": ok}},
		{test, true, true, all(ok)},
		{tests + "/no-such-test", true, true, all(notFound)},
		{tests + "?level=two", true, true, all(bad)},
		{tests + "?result=maybe", true, true, all(bad)},
		{otherRun, true, true, all(notFound)},
		{f.testsPath(hiddenfixture.ForumB) + "/" + hiddenfixture.ImageTest, true, true, all(notFound)},
		// The API answers as the pages do; the run's rates are for whoever sees the run.
		{"/api/v1" + tests, false, false, map[string]int{"anonymous": notFound, "member": forbidden, "outsider": notFound, "admin": ok}},
		{"/api/v1" + tests, true, false, map[string]int{"anonymous": unauth, "member": forbidden, "outsider": forbidden, "admin": ok}},
		{"/api/v1" + tests, true, true, all(ok)},
		{"/api/v1" + test, false, true, map[string]int{"anonymous": notFound, "member": ok, "outsider": notFound, "admin": ok}},
		{"/api/v1" + test, true, false, map[string]int{"anonymous": unauth, "member": forbidden, "outsider": forbidden, "admin": ok}},
		{apiRates, false, false, map[string]int{"anonymous": notFound, "member": ok, "outsider": notFound, "admin": ok}},
		{apiRates, true, false, all(ok)},
	} {
		for _, actor := range []string{"anonymous", "member", "outsider", "admin"} {
			name := fmt.Sprintf("%s as %s (published %t, revealed %t)", tc.path, actor, tc.published, tc.reveal)
			t.Run(name, func(t *testing.T) {
				f.set(t, tc.published, tc.reveal)
				c := clients[actor]
				c.t = t
				res := c.get(tc.path)
				body := readBody(t, res)
				require.Equal(t, tc.want[actor], res.StatusCode, "%s: %s", name, body)
				if res.StatusCode != ok {
					require.NotContains(t, body, "The home page shows the header", "no test title outside the browser")
					require.NotContains(t, body, "product-grid")
				}
			})
		}
	}

	// The run page's section: the tallies for whoever sees the run, the
	// links to the tests only for who may open them.
	for _, tc := range []struct {
		actor             string
		published, reveal bool
		status            int
		browse            bool
	}{
		{"member", false, false, ok, false},
		{"admin", false, false, ok, true},
		{"outsider", false, false, notFound, false},
		{"anonymous", true, false, ok, false},
		{"anonymous", true, true, ok, true},
	} {
		t.Run(fmt.Sprintf("run page as %s (published %t, revealed %t)", tc.actor, tc.published, tc.reveal), func(t *testing.T) {
			f.set(t, tc.published, tc.reveal)
			c := clients[tc.actor]
			c.t = t
			res := c.get(runPath(f.seed.RunID))
			body := readBody(t, res)
			require.Equal(t, tc.status, res.StatusCode, body)
			if tc.status != ok {
				return
			}
			require.Contains(t, body, `data-testid="hidden-results"`)
			require.Contains(t, body, `93.0% <small class="muted">(40/43)</small>`, "shop-a's overall pass rate")
			require.Equal(t, tc.browse, strings.Contains(body, `data-testid="hidden-tests-link"`))
			require.NotContains(t, body, "The home page shows the header", "the run page never names the tests")

			// The attempt's own page has no agent steps: it shows the
			// tally, and the way to the tests for who may open them.
			res = c.get(fmt.Sprintf("/runs/%d/attempts/%d", f.seed.RunID, f.seed.Attempts[hiddenfixture.ShopA]))
			body = readBody(t, res)
			require.Equal(t, ok, res.StatusCode, body)
			require.Contains(t, body, `data-testid="timeline-hidden-tests"`)
			require.Contains(t, body, "93.0% (40/43)", "shop-a's overall pass rate")
			require.Equal(t, tc.browse, strings.Contains(body, `data-testid="timeline-hidden-tests-link"`))
			require.Equal(t, !tc.browse, strings.Contains(body, `data-testid="timeline-hidden-tests-withheld"`))
			require.NotContains(t, body, `data-testid="no-steps"`)
			require.NotContains(t, body, "The home page shows the header", "the attempt page never names the tests")
		})
	}
}

func runPath(id int64) string { return fmt.Sprintf("/runs/%d", id) }

var hiddenImagePattern = regexp.MustCompile(`<img src="([^"]+)" alt="[^"]*" loading="lazy" data-testid="(reference-image|candidate-image|ssim-map|step-screenshot)"`)

// TestHiddenResults_Pages: what the pages show to an administrator: the run
// page's per-task and per-website tables, the test browser filtered without
// JavaScript, a failed test's runs with its images through signed links that
// load, and the hidden-tests leaderboard's columns.
func TestHiddenResults_Pages(t *testing.T) {
	t.Parallel()
	f := newHiddenFixture(t)
	admin := f.b.admin
	admin.t = t

	t.Run("RunPage", func(t *testing.T) {
		body := readBody(t, admin.get(runPath(f.seed.RunID)))
		for _, want := range []string{
			`data-task="shop-a"`, `data-task="forum-b"`, "not tested", `95.3% <small class="muted">(41/43)</small>`, `0.0% <small class="muted">(0/8)</small>`,
			`data-site="shop"`, `data-site="forum"`, "67.4%", // overall: (40+41+35+0)/43/4
		} {
			require.Contains(t, body, want)
		}
	})

	t.Run("TestBrowser", func(t *testing.T) {
		body := readBody(t, admin.get(f.testsPath(hiddenfixture.ShopA)+"?result=failed"))
		rows := regexp.MustCompile(`data-testid="hidden-test" data-test="([^"]+)"`).FindAllStringSubmatch(body, -1)
		require.Len(t, rows, 2)
		require.Equal(t, []string{hiddenfixture.ImageTest, "b2-cart-read-back"}, []string{rows[0][1], rows[1][1]})
		require.Contains(t, body, `<option value="failed" selected>`)
		require.Contains(t, body, "2 of 43 tests match the filter.")
		require.Contains(t, body, "The home page shows the header and twenty product cards")

		body = readBody(t, admin.get(f.testsPath(hiddenfixture.ShopA)+"?group=browser&level=3&result=flaky"))
		rows = regexp.MustCompile(`data-testid="hidden-test" data-test="([^"]+)"`).FindAllStringSubmatch(body, -1)
		require.Len(t, rows, 1)
		require.Equal(t, hiddenfixture.FlakyTest, rows[0][1])
	})

	t.Run("TestPage", func(t *testing.T) {
		body := readBody(t, admin.get(f.testsPath(hiddenfixture.ShopA)+"/"+hiddenfixture.ImageTest))
		require.Equal(t, 2, strings.Count(body, `data-testid="hidden-run"`), "both runs")
		require.Contains(t, body, "is below the threshold 0.75")
		imgs := hiddenImagePattern.FindAllStringSubmatch(body, -1)
		kinds := map[string]int{}
		for _, m := range imgs {
			kinds[m[2]]++
			src := html.UnescapeString(m[1])
			require.True(t, strings.HasPrefix(src, "/artifacts/runs/"), src)
			res := f.b.anonymous(t).get(src)
			data := readBody(t, res)
			require.Equal(t, http.StatusOK, res.StatusCode, "a signed image link works for anyone holding it: %s", src)
			require.NotEmpty(t, data)
		}
		require.Equal(t, map[string]int{"reference-image": 2, "candidate-image": 2, "ssim-map": 2, "step-screenshot": 4}, kinds)
		unsigned := f.b.anonymous(t).get("/artifacts/" + f.seed.ImageKeys[0])
		readBody(t, unsigned)
		require.Equal(t, http.StatusForbidden, unsigned.StatusCode, "no image without its signature")
	})

	t.Run("Leaderboard", func(t *testing.T) {
		f.set(t, true, false)
		body := readBody(t, f.b.anonymous(t).get("/benchmarks/"+f.seed.BenchmarkSlug+"/leaderboard"))
		for _, want := range []string{
			`data-testid="sort-hidden_overall"`, `data-testid="sort-hidden_request"`, `data-testid="sort-hidden_browser"`,
			`data-testid="sort-hidden_system"`, `data-testid="sort-tokens_per_task"`, "Turns per task", `data-testid="hidden-legend"`,
			">67.4%<", ">73.1%<", ">71.6%<", ">46.9%<", // R (1+12/13+1)/4, B (20+21+22)/22/4, S (7/8+1)/4
			">42k<", // (40000+2000) tokens per task
		} {
			require.Contains(t, body, want)
		}
		require.NotContains(t, body, `data-testid="sort-judge_score"`)
		require.NotContains(t, body, `data-testid="sort-tokens"`)

		body = readBody(t, f.b.anonymous(t).get("/benchmarks/"+f.seed.BenchmarkSlug+"/leaderboard?sort=hidden_system&dir=asc"))
		require.Contains(t, body, "sorted by System tests (S), ascending")

		var export struct {
			Entries []struct {
				Overall *float64 `json:"hidden_overall"`
				Request *float64 `json:"hidden_request"`
				Browser *float64 `json:"hidden_browser"`
				System  *float64 `json:"hidden_system"`
			} `json:"entries"`
		}
		decodeJSON(t, f.b.anonymous(t).get("/api/v1/benchmarks/"+f.seed.BenchmarkSlug+"/leaderboard"), &export)
		require.Len(t, export.Entries, 1)
		e := export.Entries[0]
		require.InDelta(t, 116.0/172, *e.Overall, 1e-9)
		require.InDelta(t, (7.0/8+1)/4, *e.System, 1e-9)
		require.NotNil(t, e.Request)
		require.NotNil(t, e.Browser)
		csvBody := readBody(t, f.b.anonymous(t).get("/benchmarks/"+f.seed.BenchmarkSlug+"/leaderboard.csv"))
		require.Contains(t, strings.SplitN(csvBody, "\n", 2)[0], "hidden_overall,hidden_request,hidden_browser,hidden_system")
		require.Contains(t, csvBody, ",0.46875")

		body = readBody(t, f.b.anonymous(t).get("/benchmarks/mini/leaderboard"))
		require.NotContains(t, body, "sort-hidden_overall", "other boards keep their columns")
	})
}

// TestOpenAPI_HiddenResultsMatchDocument reads a graded hidden-tests run
// through the API as a member and an administrator, validates every answer
// against the document, and checks what each carries: the run's rates, the
// attempt's tests filtered, one test's runs with image links that load, and
// the refusals (tests hidden from the member, a bad filter, a missing test).
func TestOpenAPI_HiddenResultsMatchDocument(t *testing.T) {
	t.Parallel()
	f := newHiddenFixture(t)
	member, admin := withToken(t, f.b, f.member), withToken(t, f.b, f.b.admin)
	d := newDocChecker(t, f.b.anonymous(t))
	get := func(c *client, path string, want int, v any) {
		t.Helper()
		body := d.send(c, apiRequest{method: http.MethodGet, path: path}, want)
		if v != nil {
			require.NoError(t, json.Unmarshal(body, v), string(body))
		}
	}
	run := fmt.Sprintf("/api/v1/runs/%d/hidden-tests", f.seed.RunID)
	tests := "/api/v1" + f.testsPath(hiddenfixture.ShopA)

	var res struct {
		Mean struct {
			Overall *float64 `json:"overall"`
		} `json:"mean"`
		Tasks []struct {
			TaskID      string                `json:"task_id"`
			Summary     *models.HiddenSummary `json:"summary"`
			TestsAPIURL string                `json:"tests_api_url"`
		} `json:"tasks"`
		Sites        []struct{ Site string } `json:"sites"`
		TestsVisible bool                    `json:"tests_visible"`
	}
	get(member, run, http.StatusOK, &res)
	require.InDelta(t, 116.0/172, *res.Mean.Overall, 1e-9)
	require.Len(t, res.Tasks, 4)
	require.Equal(t, hiddenfixture.ShopA, res.Tasks[0].TaskID)
	require.Equal(t, 40, res.Tasks[0].Summary.Overall.Passed)
	require.Nil(t, res.Tasks[3].Summary, "forum-b was not tested")
	require.Len(t, res.Sites, 2)
	require.False(t, res.TestsVisible)
	require.Empty(t, res.Tasks[0].TestsAPIURL, "no link to tests the member may not open")
	get(admin, run, http.StatusOK, &res)
	require.True(t, res.TestsVisible)
	require.Equal(t, tests, res.Tasks[0].TestsAPIURL)
	get(f.b.anonymous(t), run, http.StatusNotFound, nil) // unpublished

	type test struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		Result string `json:"result"`
		APIURL string `json:"api_url"`
		Runs   []struct {
			Steps []struct {
				ScreenshotURL string `json:"screenshot_url"`
			} `json:"steps"`
			Checkpoints []struct {
				CandidateURL string `json:"candidate_url"`
				ReferenceURL string `json:"reference_url"`
				MapURL       string `json:"map_url"`
			} `json:"checkpoints"`
		} `json:"runs"`
	}
	var list struct {
		Total int    `json:"total"`
		Tests []test `json:"tests"`
	}
	get(admin, tests+"?result=failed", http.StatusOK, &list)
	require.Equal(t, 43, list.Total)
	require.Len(t, list.Tests, 2)
	require.Equal(t, hiddenfixture.ImageTest, list.Tests[0].ID)
	require.Equal(t, "The home page shows the header and twenty product cards", list.Tests[0].Title)
	require.Empty(t, list.Tests[0].Runs, "runs only in a test's own answer")
	get(member, tests, http.StatusForbidden, nil)
	get(admin, tests+"?level=two", http.StatusBadRequest, nil)

	var one test
	get(admin, list.Tests[0].APIURL, http.StatusOK, &one)
	require.Equal(t, models.HiddenFailed, one.Result)
	require.Len(t, one.Runs, 2, "the failed test was run again")
	var links []string
	for _, r := range one.Runs {
		for _, st := range r.Steps {
			if st.ScreenshotURL != "" {
				links = append(links, st.ScreenshotURL)
			}
		}
		for _, cp := range r.Checkpoints {
			links = append(links, cp.CandidateURL, cp.ReferenceURL, cp.MapURL)
		}
	}
	require.Len(t, links, 10, "four step screenshots and two checkpoints' three images")
	for _, u := range links {
		res := f.b.anonymous(t).get(u)
		require.NotEmpty(t, readBody(t, res))
		require.Equal(t, http.StatusOK, res.StatusCode, u)
	}
	get(member, list.Tests[0].APIURL, http.StatusForbidden, nil)
	get(admin, tests+"/no-such-test", http.StatusNotFound, nil)

	for _, id := range []string{"getRunHiddenTests", "listAttemptHiddenTests", "getAttemptHiddenTest"} {
		require.True(t, d.checked[id], "%s was not validated", id)
	}
}

// TestHiddenResults_LinksMatchTheTally: every count the run page and the
// test browser's tally give for a result links to a filter listing exactly
// that many tests, so that no test the tally counts is out of reach (an
// errored test is listed under "errored", not missing from "failed").
func TestHiddenResults_LinksMatchTheTally(t *testing.T) {
	t.Parallel()
	f := newHiddenFixture(t)
	admin := f.b.admin
	admin.t = t
	rows := regexp.MustCompile(`data-testid="hidden-test" data-test="[^"]+" data-result="([^"]+)"`)
	listed := func(href string) []string {
		t.Helper()
		var results []string
		for _, m := range rows.FindAllStringSubmatch(readBody(t, admin.get(html.UnescapeString(href))), -1) {
			results = append(results, m[1])
		}
		return results
	}

	body := readBody(t, admin.get(runPath(f.seed.RunID)))
	require.Contains(t, body, `data-testid="hidden-pass-rate"`)
	require.Contains(t, body, "89.9% (116 of 129 tests run)", "every tested task's tests together: (40+41+35)/(3×43)")
	links := regexp.MustCompile(`<a href="([^"]+\?result=(\w+))" data-testid="hidden-(\w+)-link">([a-z ]+) \((\d+)\)</a>`).FindAllStringSubmatch(body, -1)
	seen := map[string]bool{}
	for _, l := range links {
		href, result, count := l[1], l[2], l[5]
		require.Equal(t, result, l[3])
		require.NotEqual(t, "0", count, "no link to an empty list: %s", l[0])
		got := listed(href)
		require.Len(t, got, atoi(t, count), "%s lists as many tests as it says", l[0])
		for _, r := range got {
			require.Equal(t, result, r)
		}
		seen[l[0]] = true
	}
	shopA := f.testsPath(hiddenfixture.ShopA)
	require.True(t, seen[`<a href="`+shopA+`?result=failed" data-testid="hidden-failed-link">failed (2)</a>`], "%v", seen)
	require.True(t, seen[`<a href="`+shopA+`?result=errored" data-testid="hidden-errored-link">errored (1)</a>`], "the errored restart test has its own link: %v", seen)

	// The test browser's tally: each count links to a filter listing that many.
	tally := regexp.MustCompile(`<a href="([^"]+)" data-testid="quick-(\w+)" data-count="(\d+)">`).FindAllStringSubmatch(readBody(t, admin.get(shopA)), -1)
	require.Len(t, tally, len(models.HiddenResultFilters()))
	for _, q := range tally {
		require.Len(t, listed(q[1]), atoi(t, q[3]), "quick-%s", q[2])
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
