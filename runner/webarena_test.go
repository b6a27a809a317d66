package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/judge"
	"proctor/eval/webarena"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/runner"
	"proctor/sandbox"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// webArenaShopSlug is the benchmark of original WebArena tasks whose
// "shopping" site is the sandbox shop (testdata/webarena-sandbox.json).
const webArenaShopSlug = "webarena-shop"

// amountPattern finds the first amount in a reference or an answer.
var amountPattern = regexp.MustCompile(`\d+(?:\.\d+)?`)

// The lines of the fuzzy-match prompt (eval/judge/prompts/fuzzy-match-v1.md)
// that carry what the judge compares.
var (
	fuzzyReferenceLine = regexp.MustCompile(`(?m)^Reference answer: (.*)$`)
	fuzzyAnswerLine    = regexp.MustCompile(`(?m)^Agent's answer: (.*)$`)
)

// amountJudge is an OpenAI-compatible chat-completions server. It answers
// fuzzy-match prompts by comparing the first amount of the reference with the
// first amount of the answer ("79 US dollars" means "$79.00", not "$24.99"),
// and passes every trajectory with a 4. It counts the fuzzy-match requests.
type amountJudge struct {
	fuzzy, trajectories atomic.Int64
}

func (j *amountJudge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	// Content is a string, or a list of parts with text and images.
	var prompt strings.Builder
	for _, m := range req.Messages {
		var text string
		var parts []struct {
			Text string `json:"text"`
		}
		switch {
		case json.Unmarshal(m.Content, &text) == nil:
			prompt.WriteString(text + "\n")
		case json.Unmarshal(m.Content, &parts) == nil:
			for _, p := range parts {
				prompt.WriteString(p.Text + "\n")
			}
		}
	}
	var reply string
	ref, ans := fuzzyReferenceLine.FindStringSubmatch(prompt.String()), fuzzyAnswerLine.FindStringSubmatch(prompt.String())
	if ref != nil && ans != nil {
		j.fuzzy.Add(1)
		equivalent := sameAmount(ref[1], ans[1])
		reply = `{"equivalent":` + strconv.FormatBool(equivalent) + `,"rationale":"Compared the amounts."}`
	} else {
		j.trajectories.Add(1)
		reply = `{"success":true,"score":4,"rationale":"The agent ended on a product page."}`
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "cmpl-1", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": reply}}},
		"usage":   map[string]any{"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320},
	})
}

// sameAmount reports whether the first number of each text is the same amount.
func sameAmount(reference, answer string) bool {
	a, b := amountPattern.FindString(reference), amountPattern.FindString(answer)
	x, errX := strconv.ParseFloat(a, 64)
	y, errY := strconv.ParseFloat(b, 64)
	return errX == nil && errY == nil && x == y
}

// shopperScript is a replay agent's configuration: search the shop for query,
// open the product, answer with text. One script serves every task of the
// benchmark, because each task is graded on a different trace of the same
// visit: the answer, the final URL or what the final page shows.
func shopperScript(t *testing.T, query, productID, answer string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"actions": []any{
		map[string]any{"type": "fill", "target": map[string]any{"selector": "#search"}, "text": query},
		map[string]any{"type": "click", "target": map[string]any{"selector": "#search-submit"}},
		map[string]any{"type": "click", "target": map[string]any{"selector": "#product-link-" + productID}},
		map[string]any{"type": "answer", "text": answer},
	}})
	require.NoError(t, err)
	return string(b)
}

// webArenaCheck is what the WebArena evaluator must report for one task: the
// evaluator class (named as WebArena's harness names it) and, per assertion,
// whether it passes for the agent that does the task right and for the one
// that does it wrong.
type webArenaCheck struct {
	evaluator  string
	assertions map[string][2]bool // name → {right, wrong}
	probes     int                // page probes the episode reads
}

// TestRunner_WebArenaOnSandbox runs original WebArena tasks (imported from
// WebArena's test.raw.json format, site "shopping" pointed at the sandbox shop)
// through the whole runner on SQLite and PostgreSQL, with a real browser and an
// LLM judge for fuzzy_match. One replay agent finds the Mechanical Keyboard and
// answers its price; the other opens the Wireless Mouse and answers its price.
// Every attempt of the first succeeds and every attempt of the second fails, on
// the assertion of the task's evaluation type: string_match (must_include and,
// through the judge, fuzzy_match), url_match on the final URL, and
// program_html on values read from the live pages before the browser closed,
// recorded as the attempt's page state.
func TestRunner_WebArenaOnSandbox(t *testing.T) {
	t.Parallel()
	tasks, err := os.ReadFile(filepath.Join("testdata", "webarena-sandbox.json"))
	require.NoError(t, err)
	checks := map[string]webArenaCheck{
		"1": {evaluator: webarena.StringEvaluator, assertions: map[string][2]bool{"must_include[0]": {true, false}}},
		"2": {evaluator: webarena.URLEvaluator, assertions: map[string][2]bool{"url_match.base_path": {true, false}}},
		"3": {evaluator: webarena.HTMLContentEvaluator, probes: 2, assertions: map[string][2]bool{
			"program_html[0].must_include[0]": {true, false},
			// The keyboard's own page, opened by the probe, shows its price
			// whatever the agent did.
			"program_html[1].exact_match": {true, true},
		}},
		"4": {evaluator: webarena.StringEvaluator, assertions: map[string][2]bool{"fuzzy_match[0]": {true, false}}},
	}

	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		fj := &amountJudge{}
		judgeSrv := httptest.NewServer(fj)
		t.Cleanup(judgeSrv.Close)
		factory := func(models.JudgeSettings) (runner.Judges, error) {
			return judge.New(judge.Config{BaseURL: judgeSrv.URL + "/v1", Model: "judge-model", Timeout: 10 * time.Second})
		}
		// Two episodes per run at once: the test runs beside the package's other
		// browser tests, on both databases, and a loaded machine's browsers
		// miss the episode's 5 s action timeout.
		b := setupRunWith(t, db, 4, factory)

		ds, err := importer.Parse(evaltest.Registry(), models.FormatWebArena, bytes.NewReader(tasks), nil)
		require.NoError(t, err)
		_, err = db.ImportBenchmark(b.system, webArenaShopSlug, ds, "webarena-sandbox.json", 0)
		require.NoError(t, err)
		// The sandbox shop, per-episode namespace token included, is WebArena's shopping site.
		var shopURL string
		sites, err := db.ListSites(b.system, sandbox.Slug, models.BenchmarkScopeFor(models.ActorFrom(b.system)))
		require.NoError(t, err)
		for _, s := range sites {
			if s.Name == "shop" {
				shopURL = s.URL
			}
		}
		require.Contains(t, shopURL, runner.EpisodeToken)
		_, err = db.UpdateSite(b.system, webArenaShopSlug, "shopping", shopURL, "", 0)
		require.NoError(t, err)

		right := &models.Agent{Name: "Keyboard Shopper", Kind: models.AgentReplay, Config: shopperScript(t, "keyboard", "mech-keyboard", "$79.00")}
		wrong := &models.Agent{Name: "Mouse Shopper", Kind: models.AgentReplay, Config: shopperScript(t, "mouse", "wireless-mouse", "$24.99")}
		require.NoError(t, servicetest.CreateAgent(db, b.member, "lab", right, nil))
		require.NoError(t, servicetest.CreateAgent(db, b.member, "lab", wrong, nil))

		type agentCase struct {
			agent   *models.Agent
			index   int // into webArenaCheck.assertions' pairs
			outcome string
			product string // the product page the agent ends on
			title   string // that product's name
			answer  string
		}
		cases := []agentCase{
			{right, 0, models.OutcomeSuccess, "mech-keyboard", "Mechanical Keyboard", "$79.00"},
			{wrong, 1, models.OutcomeFailure, "wireless-mouse", "Wireless Mouse", "$24.99"},
		}
		runIDs := make([]int64, len(cases))
		for i, c := range cases {
			run, err := runService(b.db, b.runner).QueueRun(b.member, models.RunRequest{TeamSlug: "lab", AgentSlug: c.agent.Slug, BenchmarkSlug: webArenaShopSlug, Parallelism: 2})
			require.NoError(t, err)
			runIDs[i] = run.ID
		}

		for i, c := range cases {
			got := b.waitRun(t, runIDs[i], 2*time.Minute)
			require.Equal(t, models.RunCompleted, got.Status, "run of %s", c.agent.Name)
			require.Equal(t, len(checks), got.TasksTotal)

			var attempts []models.Attempt
			require.NoError(t, db.Gorm().Preload("Task").Where("run_id = ?", got.ID).Order("id").Find(&attempts).Error)
			require.Len(t, attempts, len(checks))
			for _, a := range attempts {
				id := a.Task.ExternalID
				check, ok := checks[id]
				require.True(t, ok, "unexpected task %s", id)
				where := c.agent.Name + " on task " + id
				t.Logf("%s: %s in %d steps, %d ms", where, a.Outcome, a.Steps, a.DurationMS)
				require.Empty(t, a.ErrorClass, "%s: %s", where, a.ErrorMessage)
				require.Equal(t, c.outcome, a.Outcome, where)
				require.Equal(t, 4, a.Steps, where)

				// The live page as the episode left it: the active tab's URL in
				// this try's namespace, and the program_html values.
				require.NotEmpty(t, a.PageStateKey, where)
				rc, _, err := b.artifacts.Get(context.Background(), a.PageStateKey)
				require.NoError(t, err, where)
				raw, err := io.ReadAll(rc)
				require.NoError(t, rc.Close())
				require.NoError(t, err)
				var ps eval.PageState
				require.NoError(t, json.Unmarshal(raw, &ps), where)
				shop := strings.ReplaceAll(shopURL, runner.EpisodeToken, a.Namespace)
				require.Equal(t, shop+"/products/"+c.product, ps.FinalURL, where)
				require.Len(t, ps.Probes, check.probes, where)
				if check.probes > 0 {
					require.Equal(t, "last", ps.Probes[0].URL, where)
					require.Equal(t, "value:"+c.title, ps.Probes[0].Value, "%s: %s", where, ps.Probes[0].Error)
					require.Equal(t, shop+"/products/mech-keyboard", ps.Probes[1].URL, where)
					require.Equal(t, "value:$79.00", ps.Probes[1].Value, "%s: %s", where, ps.Probes[1].Error)
				}

				// The primary verdict is WebArena's, naming its evaluator class
				// and the assertions that decided.
				var primary models.Evaluation
				require.NoError(t, db.Gorm().Where("attempt_id = ? AND is_primary = ? AND is_current = ?", a.ID, true, true).Take(&primary).Error, where)
				require.Equal(t, models.EvaluationCheck, primary.Kind, where)
				require.Equal(t, models.EvaluatorWebArena, primary.Evaluator, where)
				require.Equal(t, webarena.Version, primary.EvaluatorVersion, where)
				require.Equal(t, c.outcome, primary.Verdict, "%s: %s", where, primary.Details)
				det, err := eval.ParseDetails(json.RawMessage(primary.Details))
				require.NoError(t, err, where)
				require.Equal(t, id, det.TaskID, where)
				require.Len(t, det.EvaluatorsResults, 1, "%s: %s", where, primary.Details)
				res := det.EvaluatorsResults[0]
				require.Equal(t, check.evaluator, res.EvaluatorName, where)
				require.Equal(t, c.outcome, res.Status, "%s: %s", where, primary.Details)
				require.Nil(t, res.ErrorMsg, where)
				passed := map[string]bool{}
				for _, as := range res.Assertions {
					passed[as.Name] = as.Passed
				}
				want := map[string]bool{}
				for name, pair := range check.assertions {
					want[name] = pair[c.index]
				}
				require.Equal(t, want, passed, "%s: %s", where, primary.Details)

				switch check.evaluator {
				case webarena.StringEvaluator:
					require.Contains(t, string(res.Actual), `"answer":"`+c.answer+`"`, where)
				case webarena.URLEvaluator:
					require.Contains(t, string(res.Actual), `"final_url":"`+ps.FinalURL+`"`, where)
				case webarena.HTMLContentEvaluator:
					require.Contains(t, string(res.Actual), `"value":"`+c.title+`"`, where)
				}
				if _, fuzzy := check.assertions["fuzzy_match[0]"]; fuzzy {
					require.EqualValues(t, 300, primary.TokensIn, "%s: the judge's fuzzy match is paid for on the check", where)
				} else {
					require.Zero(t, primary.TokensIn, where)
				}

				// The configured judge also scored the trajectory, beside the check.
				var kinds []string
				require.NoError(t, db.Gorm().Model(&models.Evaluation{}).Where("attempt_id = ? AND is_current = ?", a.ID, true).
					Order("kind").Pluck("kind", &kinds).Error)
				require.Equal(t, []string{models.EvaluationCheck, models.EvaluationJudge}, kinds, where)
			}
			wantSuccesses := 0
			if c.outcome == models.OutcomeSuccess {
				wantSuccesses = len(checks)
			}
			require.Equal(t, wantSuccesses, got.Successes, "run of %s", c.agent.Name)
		}
		require.EqualValues(t, 2, fj.fuzzy.Load(), "one fuzzy match per run, for task 4")
		require.EqualValues(t, 2*len(checks), fj.trajectories.Load(), "one trajectory judgment per attempt")
	})
}
