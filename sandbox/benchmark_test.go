package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/verified"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
)

// placeholders maps each site's URL placeholder to the site.
func placeholders() map[string]string {
	return map[string]string{"__SHOP__": siteShop, "__FORUM__": siteForum, "__DATA__": siteData}
}

func parseBenchmark(t *testing.T) *importer.Dataset {
	t.Helper()
	d, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(Benchmark()), nil)
	require.NoError(t, err)
	return d
}

// resolve does what the runner does before an episode: it replaces each site
// placeholder by the site's URL in the attempt's namespace.
func resolve(s, baseURL, ns string) string {
	for ph, site := range placeholders() {
		url := strings.ReplaceAll(SiteURLs(baseURL)[site], EpisodeToken, ns)
		s = strings.ReplaceAll(s, ph, url)
	}
	return s
}

func actionsOf(t *testing.T, task models.Task) []models.Action {
	t.Helper()
	var actions []models.Action
	require.NoError(t, json.Unmarshal([]byte(task.ReferenceActions), &actions), task.ExternalID)
	return actions
}

func TestBenchmark_Imports(t *testing.T) {
	t.Parallel()
	d := parseBenchmark(t)
	require.Equal(t, models.EvaluatorWebArenaVerified, d.Evaluator)
	require.Equal(t, "Proctor sandbox", d.Name)
	require.NotEmpty(t, d.Description)
	require.GreaterOrEqual(t, len(d.Tasks), 20)

	var siteNames []string
	for _, s := range d.Sites {
		siteNames = append(siteNames, s.Name)
		require.Contains(t, placeholders(), s.Placeholder)
	}
	require.Equal(t, []string{"data", "forum", "shop"}, siteNames)

	require.Len(t, d.Subsets, 1)
	hard := d.Subsets[0]
	require.Equal(t, "hard", hard.Name)
	require.GreaterOrEqual(t, len(hard.ExternalIDs), 4)

	count := func(f func(models.Task) string) map[string]int {
		m := map[string]int{}
		for _, task := range d.Tasks {
			m[f(task)]++
		}
		return m
	}
	types := count(func(t models.Task) string { return t.TaskType })
	diffs := count(func(t models.Task) string { return t.Difficulty })
	domains := count(func(t models.Task) string { return t.Domain })
	keys := count(func(t models.Task) string { return t.SiteKey })
	for _, k := range []string{models.TaskRetrieve, models.TaskMutate, models.TaskNavigate} {
		require.Positive(t, types[k], k)
	}
	for _, k := range []string{models.DifficultyEasy, models.DifficultyMedium, models.DifficultyHard} {
		require.Positive(t, diffs[k], k)
	}
	for _, k := range []string{"e-commerce", "community", "open-data"} {
		require.Positive(t, domains[k], k)
	}
	for _, k := range []string{siteShop, siteForum, siteData, models.MultiSite} {
		require.Positive(t, keys[k], k)
	}

	placeholder := regexp.MustCompile(`__[A-Z_]+__`)
	notFound := 0
	for _, task := range d.Tasks {
		id := task.ExternalID
		require.Equal(t, slices.Contains(hard.ExternalIDs, id), task.Difficulty == models.DifficultyHard, "%s: the hard subset holds exactly the hard tasks", id)
		require.GreaterOrEqual(t, len(task.RubricItems), 2, id)
		require.LessOrEqual(t, len(task.RubricItems), 4, id)
		require.NotEmpty(t, task.Attributes, id)
		require.Contains(t, task.Metadata, `"kind"`, id)
		for _, field := range []string{strings.Join(task.StartURLs, " "), task.EvalSpec, task.ReferenceActions} {
			for _, ph := range placeholder.FindAllString(field, -1) {
				require.Contains(t, placeholders(), ph, "%s uses an unknown placeholder", id)
			}
		}
		for _, u := range task.StartURLs {
			require.True(t, strings.HasPrefix(u, "__"), "%s: start URLs are placeholders", id)
		}
		if strings.Contains(task.EvalSpec, "NOT_FOUND_ERROR") {
			notFound++
		}

		actions := actionsOf(t, task)
		require.NotEmpty(t, actions, id)
		for i, a := range actions {
			require.NoError(t, a.Validate(), "%s: action %d", id, i)
			require.Equal(t, i == len(actions)-1, a.Final(), "%s: only the last action ends the episode", id)
			if a.Target != nil {
				require.Regexp(t, `^#[a-z0-9_-]+$`, a.Target.Selector, "%s: action %d uses a simple #id selector", id, i)
			}
		}
		if task.SiteKey == models.MultiSite {
			require.Equal(t, models.ActGoto, actions[0].Type, "%s: multi-site scripts start with an explicit goto", id)
		}
	}
	require.Positive(t, notFound)
}

// TestBenchmark_ReferenceScripts plays every task's reference script with the
// simulated driver in its own namespace, records the requests as a HAR, and
// grades the episode with the deterministic check: every task must pass. Then
// it checks the grading has teeth: without the recorded requests, or with a wrong
// answer, the task fails.
func TestBenchmark_ReferenceScripts(t *testing.T) {
	t.Parallel()
	d := parseBenchmark(t)
	srv := New(Options{})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	check := verified.New()

	for i, task := range d.Tasks {
		t.Run(task.ExternalID, func(t *testing.T) {
			t.Parallel()
			ns := fmt.Sprintf("ref-%d", i)
			resolved := task
			resolved.EvalSpec = resolve(task.EvalSpec, ts.URL, ns)
			resolved.StartURLs = nil
			for _, u := range task.StartURLs {
				resolved.StartURLs = append(resolved.StartURLs, resolve(u, ts.URL, ns))
			}
			var actions []models.Action
			require.NoError(t, json.Unmarshal([]byte(resolve(task.ReferenceActions, ts.URL, ns)), &actions))

			drv := newDriver(t)
			drv.navigate("GET", resolved.StartURLs[0], nil)
			for _, a := range actions {
				drv.do(a)
			}
			require.NotNil(t, drv.final)

			grade := func(final *models.Action, har []byte) *eval.Result {
				res, err := check.Evaluate(context.Background(), eval.Input{
					Task: &resolved, Final: final, HAR: bytes.NewReader(har), Steps: len(actions),
				})
				require.NoError(t, err)
				return res
			}
			res := grade(drv.final, drv.har())
			require.Equal(t, models.OutcomeSuccess, res.Verdict, string(res.Details))

			if strings.Contains(task.EvalSpec, verified.NetworkEventEvaluator) {
				res = grade(drv.final, []byte(`{"log":{"entries":[]}}`))
				require.Equal(t, models.OutcomeFailure, res.Verdict, "without the requests the task must fail")
			}
			if task.TaskType == models.TaskRetrieve {
				wrong := models.Action{Type: models.ActAnswer, Response: json.RawMessage(`{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["something else"]}`)}
				res = grade(&wrong, drv.har())
				require.Equal(t, models.OutcomeFailure, res.Verdict, "a wrong answer must fail")
			}
		})
	}
}

// TestBenchmark_AnswersFollowFromTheSeed recomputes each retrieve task's answer
// from the seed data and checks the evaluation spec agrees, so an edit of the
// seed that changes an answer cannot go unnoticed.
func TestBenchmark_AnswersFollowFromTheSeed(t *testing.T) {
	t.Parallel()
	shop, forum := seedShop(), seedForum()
	datasets := New(Options{}).datasets
	ds := func(slug string) *dataset {
		for _, d := range datasets {
			if d.Slug == slug {
				return d
			}
		}
		t.Fatalf("no dataset %s", slug)
		return nil
	}
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		return f
	}
	dollars := func(cents int) float64 { return float64(cents) / 100 }

	answers := map[string]any{}

	answers["shop-keyboard-price"] = []any{dollars(shop.product("mech-keyboard").Price)}

	var out []any
	for _, p := range shop.products {
		if p.Stock == 0 {
			out = append(out, p.Name)
		}
	}
	answers["shop-out-of-stock"] = out

	var best *product
	bestRating := -1.0
	for _, p := range shop.products {
		if r, _ := shop.rating(p.ID); p.Category == "kitchen" && r > bestRating {
			best, bestRating = p, r
		}
	}
	answers["shop-top-rated-kitchen"] = []any{map[string]any{"name": best.Name, "rating": math.Round(bestRating*10) / 10}}

	for _, r := range shop.productReviews("french-press") {
		if strings.Contains(r.Text, "cracked") {
			answers["shop-cracked-glass-reviewer"] = []any{r.Author}
		}
	}

	var last, biggest *order
	for _, o := range shop.orders {
		if o.Account == currentUser && (last == nil || o.ID > last.ID) {
			last = o
		}
		if biggest == nil || o.Total() > biggest.Total() {
			biggest = o
		}
	}
	answers["shop-last-order-total"] = []any{dollars(last.Total())}
	answers["shop-admin-biggest-order"] = []any{map[string]any{"customer": biggest.Customer, "total": dollars(biggest.Total())}}

	for _, p := range shop.products {
		require.NotContains(t, strings.ToLower(p.Name+p.Description), "espresso", "shop-espresso-not-found")
	}

	top := sortPosts(forum.posts, "top")
	answers["forum-top-post"] = []any{top[0].Title}
	require.Nil(t, forum.user("zoe"), "forum-zoe-not-found")

	aq := ds("air-quality")
	maxMonth, maxPM := "", -1.0
	for _, row := range aq.Rows {
		if v := num(row[aq.column("pm25")]); v > maxPM {
			maxMonth, maxPM = row[aq.column("month")], v
		}
	}
	answers["data-max-pm25"] = []any{maxMonth}

	loans := ds("library-loans")
	total := 0.0
	for _, row := range loans.Rows {
		if row[loans.column("year")] == "2023" {
			total += num(row[loans.column("loans")])
		}
	}
	answers["data-loans-2023"] = []any{total}

	bikes := ds("bike-trips")
	busy := 0
	byDistrict := map[string]float64{}
	for _, row := range bikes.Rows {
		trips := num(row[bikes.column("trips_2024")])
		if trips > 20000 {
			busy++
		}
		byDistrict[row[bikes.column("district")]] += trips
	}
	answers["data-download-stations"] = []any{busy}

	budget := ds("city-budget")
	answers["data-budget-metadata"] = []any{map[string]any{"publisher": budget.Publisher, "license": budget.License}}

	var complaint *forumPost
	for _, p := range forum.posts {
		if strings.Contains(p.Title, "cracked") {
			complaint = p
		}
	}
	var broken *product
	for _, p := range shop.products {
		if strings.Contains(complaint.Body, p.Name) {
			broken = p
		}
	}
	require.Equal(t, "kitchen", broken.Category)
	answers["multi-complaint-price"] = []any{dollars(broken.Price)}

	d := parseBenchmark(t)
	check := verified.New()
	checked := 0
	for _, task := range d.Tasks {
		want, ok := answers[task.ExternalID]
		if !ok {
			continue
		}
		checked++
		resp, err := json.Marshal(map[string]any{"task_type": "retrieve", "status": "SUCCESS", "retrieved_data": want})
		require.NoError(t, err)
		res, err := check.Evaluate(context.Background(), eval.Input{
			Task:  &task,
			Final: &models.Action{Type: models.ActAnswer, Response: resp},
		})
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict, "%s: the seed says %s; %s", task.ExternalID, resp, res.Details)
	}
	require.Equal(t, len(answers), checked, "every computed answer belongs to a task")

	// The mutate and navigate tasks name seed facts in their specs.
	spec := func(id string) string {
		for _, task := range d.Tasks {
			if task.ExternalID == id {
				return task.EvalSpec
			}
		}
		t.Fatalf("no task %s", id)
		return ""
	}
	newest := sortPosts(forum.posts, "new")[0]
	require.Contains(t, spec("forum-upvote-newest"), fmt.Sprintf("__FORUM__/posts/%d/vote", newest.ID))

	mostCommented := forum.posts[0]
	for _, p := range forum.posts {
		if len(p.Comments) > len(mostCommented.Comments) {
			mostCommented = p
		}
	}
	require.Contains(t, spec("forum-most-commented-author"), "__FORUM__/users/"+mostCommented.Author+`"`)

	var recommended *forumPost
	for _, p := range top {
		if p.Tag == "recommendation" {
			recommended = p
			break
		}
	}
	require.Contains(t, recommended.Body, shop.product("mech-keyboard").Name)
	require.Contains(t, spec("multi-recommended-to-cart"), `"product_id":"mech-keyboard"`)

	busiest := ""
	for district, trips := range byDistrict {
		if busiest == "" || trips > byDistrict[busiest] {
			busiest = district
		}
	}
	require.Contains(t, spec("multi-busiest-district-post"), fmt.Sprintf(`"body":%d`, int(byDistrict[busiest])))
	require.Contains(t, spec("multi-busiest-district-post"), `"title":"Busiest district: `+busiest+`"`)

	var outOfStock []string
	for _, p := range shop.products {
		if p.Stock == 0 {
			outOfStock = append(outOfStock, p.ID)
			require.Contains(t, spec("shop-restock"), fmt.Sprintf(`__SHOP__/admin/products/%s"`, p.ID))
		}
	}
	require.Equal(t, len(outOfStock), strings.Count(spec("shop-restock"), "NetworkEventEvaluator"))
}
