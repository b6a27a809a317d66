package webarena_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/webarena"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
)

// realTasks imports the original WebArena test.raw.json and resolves its site
// placeholders to made-up URLs, as the runner does with configured sites.
func realTasks(t *testing.T) []models.Task {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.SharedDataDir(t), "webarena", "test.raw.json"))
	require.NoError(t, err)
	d, err := importer.Parse(evaltest.Registry(), models.FormatWebArena, bytes.NewReader(raw), nil)
	require.NoError(t, err)
	require.Len(t, d.Tasks, 812)

	placeholders := map[string]string{}
	for _, site := range []string{"shopping", "shopping_admin", "gitlab", "reddit", "map", "wikipedia"} {
		placeholders[models.PlaceholderFor(site)] = "http://" + strings.ReplaceAll(site, "_", "-") + ".test:8080"
	}
	keys := make([]string, 0, len(placeholders))
	for k := range placeholders {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	resolve := func(s string) string {
		for _, k := range keys {
			s = strings.ReplaceAll(s, k, placeholders[k])
		}
		return s
	}
	unresolved := regexp.MustCompile(`__[A-Z_]+__`)
	for i := range d.Tasks {
		tk := &d.Tasks[i]
		tk.EvalSpec = resolve(tk.EvalSpec)
		tk.ReferenceAnswers = resolve(tk.ReferenceAnswers)
		for j := range tk.StartURLs {
			tk.StartURLs[j] = resolve(tk.StartURLs[j])
		}
		require.False(t, unresolved.MatchString(tk.EvalSpec), "task %s keeps a placeholder: %s", tk.ExternalID, tk.EvalSpec)
	}
	return d.Tasks
}

// rawSpec is the part of WebArena's eval object the test builds inputs from.
type rawSpec struct {
	EvalTypes        []string          `json:"eval_types"`
	ReferenceAnswers map[string]any    `json:"reference_answers"`
	ReferenceURL     string            `json:"reference_url"`
	ProgramHTML      []json.RawMessage `json:"program_html"`
}

type rawEntry struct {
	RequiredContents struct {
		ExactMatch  *string  `json:"exact_match"`
		MustInclude []string `json:"must_include"`
	} `json:"required_contents"`
}

// entryIndex reads which program_html entry a probe is for.
var entryIndex = regexp.MustCompile(`^/\* WebArena program_html\[(\d+)\] \*/`)

// goldInput is what an agent that did everything right leaves behind: the
// reference answer, the first reference URL, and page values holding every
// required content.
func goldInput(t *testing.T, tk *models.Task, s rawSpec, probes []eval.PageProbe) eval.Input {
	t.Helper()
	in := eval.Input{Task: tk, PageState: &eval.PageState{FinalURL: "http://shopping.test:8080/"}}
	if len(s.ReferenceAnswers) > 0 {
		var parts []string
		if exact, ok := s.ReferenceAnswers["exact_match"].(string); ok {
			parts = append(parts, exact)
		}
		for _, kind := range []string{"must_include", "fuzzy_match"} {
			switch v := s.ReferenceAnswers[kind].(type) {
			case string:
				parts = append(parts, v)
			case []any:
				for _, p := range v {
					parts = append(parts, p.(string))
				}
			}
		}
		in.Final = answer(strings.Join(parts, " ; "))
	}
	if s.ReferenceURL != "" {
		in.PageState.FinalURL = strings.Split(s.ReferenceURL, " |OR| ")[0]
	}
	for _, p := range probes {
		m := entryIndex.FindStringSubmatch(p.Locator)
		require.NotNil(t, m, "probe locators name their entry")
		i, _ := strconv.Atoi(m[1])
		var e rawEntry
		require.NoError(t, json.Unmarshal(s.ProgramHTML[i], &e))
		value := ""
		if e.RequiredContents.ExactMatch != nil {
			value = *e.RequiredContents.ExactMatch
		}
		for _, c := range e.RequiredContents.MustInclude {
			value += " " + strings.Split(c, " |OR| ")[0]
		}
		in.PageState.Probes = append(in.PageState.Probes, eval.ProbeResult{PageProbe: p, Value: "value:" + value})
	}
	return in
}

func TestRealData_WebArena(t *testing.T) {
	t.Parallel()
	tasks := realTasks(t)
	ev := webarena.New(&judge{})
	ctx := context.Background()

	evaluators := map[string]int{}
	probeCount, tasksWithProbes := 0, 0
	var unsupported []string
	for i := range tasks {
		tk := &tasks[i]
		var s rawSpec
		require.NoError(t, json.Unmarshal([]byte(tk.EvalSpec), &s), "task %s", tk.ExternalID)
		probes, err := webarena.Probes(tk)
		require.NoError(t, err, "task %s", tk.ExternalID)
		probeCount += len(probes)
		if len(probes) > 0 {
			tasksWithProbes++
		}

		gold := goldInput(t, tk, s, probes)
		res, err := ev.Evaluate(ctx, gold)
		require.NoError(t, err)
		d, err := eval.ParseDetails(res.Details)
		require.NoError(t, err)
		require.Nil(t, d.ErrorMsg, "task %s: the spec parses", tk.ExternalID)
		require.Len(t, d.EvaluatorsResults, len(s.EvalTypes), "task %s", tk.ExternalID)
		for _, r := range d.EvaluatorsResults {
			evaluators[r.EvaluatorName]++
		}
		if res.Verdict == models.OutcomeError {
			// The only error a right answer can get is an unsupported helper.
			msg := errorMsg(d)
			require.Contains(t, msg, "is not supported: WebArena reads the product's reviews through the shop's REST API", "task %s", tk.ExternalID)
			unsupported = append(unsupported, tk.ExternalID)
		} else {
			require.Equal(t, models.OutcomeSuccess, res.Verdict, "task %s: the reference answers pass: %s", tk.ExternalID, res.Details)
		}

		// Near misses: no answer, another final page, empty page values.
		miss := eval.Input{Task: tk, PageState: &eval.PageState{FinalURL: "http://elsewhere.test/nowhere"}}
		for _, p := range probes {
			miss.PageState.Probes = append(miss.PageState.Probes, eval.ProbeResult{PageProbe: p, Value: "thrown:no such element"})
		}
		res, err = ev.Evaluate(ctx, miss)
		require.NoError(t, err)
		if res.Verdict != models.OutcomeError {
			require.Equal(t, models.OutcomeFailure, res.Verdict, "task %s: an empty attempt fails: %s", tk.ExternalID, res.Details)
		}
	}
	require.Equal(t, map[string]int{"StringEvaluator": 335, "URLEvaluator": 205, "HTMLContentEvaluator": 411}, evaluators)
	// 651 program_html entries in 411 tasks; the 10 review helpers of tasks
	// 585–589 cannot be read from a browser.
	require.Equal(t, 641, probeCount)
	require.Equal(t, 406, tasksWithProbes)
	require.Equal(t, []string{"585", "586", "587", "588", "589"}, unsupported)
}
