package verified_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/verified"
	"proctor/internal/testenv"
	"proctor/models"
)

// datasetTask is the part of a webarena-verified.json task the tests read.
type datasetTask struct {
	TaskID int               `json:"task_id"`
	Sites  []string          `json:"sites"`
	Eval   []json.RawMessage `json:"eval"`
}

func loadDataset(t testing.TB) []datasetTask {
	t.Helper()
	data := testenv.SharedDataDir(t)
	raw, err := os.ReadFile(filepath.Join(data, "webarena-verified", "webarena-verified.json"))
	require.NoError(t, err)
	var tasks []datasetTask
	require.NoError(t, json.Unmarshal(raw, &tasks))
	return tasks
}

func (d datasetTask) task() *models.Task {
	spec, _ := json.Marshal(d.Eval)
	return &models.Task{ExternalID: strconv.Itoa(d.TaskID), Sites: d.Sites, EvalSpec: string(spec)}
}

// demoSites are the site URLs of the demo outputs' recordings.
func demoSites() verified.Sites {
	return verified.Sites{
		"shopping": {"http://192.168.1.35:7770"}, "shopping_admin": {"http://192.168.1.35:7780/admin"},
		"gitlab": {"http://192.168.1.35:8023"}, "reddit": {"http://192.168.1.35:9999"},
		"map": {"http://192.168.1.35:3000"}, "wikipedia": {"http://192.168.1.35:8888"}, "homepage": {"http://192.168.1.35:4399"},
	}
}

// TestRealDataset_EverySpecIsSupported evaluates every one of the 812 tasks
// with an empty answer and an empty HAR: no evaluator may report an error,
// which proves each spec parses and every value type, schema keyword, option
// and pattern it uses is implemented (unknown ones are error verdicts).
func TestRealDataset_EverySpecIsSupported(t *testing.T) {
	t.Parallel()
	tasks := loadDataset(t)
	require.Len(t, tasks, 812)
	ev := verified.New().WithSites(demoSites())
	formats := map[string]bool{}
	for _, d := range tasks {
		collectFormats(d.Eval, formats)
		res, err := ev.Evaluate(context.Background(), eval.Input{
			Task:  d.task(),
			Final: &models.Action{Type: models.ActAnswer, Text: "{}"},
			HAR:   jsonReader(`{"log":{"entries":[]}}`),
		})
		require.NoError(t, err)
		det, err := eval.ParseDetails(res.Details)
		require.NoError(t, err)
		require.Nil(t, det.ErrorMsg, "task %d", d.TaskID)
		require.Equal(t, models.OutcomeFailure, res.Verdict, "task %d: an empty answer must fail: %s", d.TaskID, res.Details)
		for _, r := range det.EvaluatorsResults {
			require.NotEqual(t, models.OutcomeError, r.Status, "task %d %s: %v", d.TaskID, r.EvaluatorName, r.ErrorMsg)
		}
	}
	options := map[string]bool{}
	for _, d := range tasks {
		for _, raw := range d.Eval {
			var e map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(raw, &e))
			var name string
			require.NoError(t, json.Unmarshal(e["evaluator"], &name))
			for k := range e {
				options[name+" "+k] = true
			}
			var exp map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(e["expected"], &exp))
			for k := range exp {
				options[name+".expected "+k] = true
			}
		}
	}
	supported := verified.SpecOptions()
	for o := range options {
		where, key, _ := strings.Cut(o, " ")
		require.Contains(t, supported[where], key, "option %q used by the dataset", o)
	}
	var used []string
	for f := range formats {
		used = append(used, f)
	}
	sort.Strings(used)
	t.Logf("value types used by the dataset: %v", used)
	for _, f := range used {
		require.Contains(t, verified.ValueTypes(), f, "value type %q used by the dataset", f)
	}
}

// collectFormats gathers every type/format named in the tasks' schemas.
func collectFormats(evals []json.RawMessage, into map[string]bool) {
	var walk func(v any)
	walk = func(v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		switch {
		case m["format"] != nil:
			into[m["format"].(string)] = true
		case m["type"] != nil && m["type"] != "array" && m["type"] != "object":
			into[m["type"].(string)] = true
		}
		walk(m["items"])
		if props, ok := m["properties"].(map[string]any); ok {
			for _, p := range props {
				walk(p)
			}
		}
	}
	for _, raw := range evals {
		var e map[string]any
		_ = json.Unmarshal(raw, &e)
		for _, k := range []string{"results_schema", "post_data_schema", "query_params_schema"} {
			walk(e[k])
		}
	}
}

// TestRealDataset_ExpectedOutputsPass answers every task with its own expected
// response and, for network checks, a HAR holding the requests its spec
// describes: every task must pass. Then it checks the grading has teeth: with
// an empty HAR every task with a network check fails.
func TestRealDataset_ExpectedOutputsPass(t *testing.T) {
	t.Parallel()
	tasks := loadDataset(t)
	ev := verified.New().WithSites(demoSites())
	failed := 0
	var conflicting []int
	for _, d := range tasks {
		out, err := synthesize(d, demoSites())
		require.NoError(t, err)
		res, err := ev.Evaluate(context.Background(), eval.Input{Task: d.task(), Final: out.answer, HAR: harOf(t, out.entries...)})
		require.NoError(t, err)
		if conflictingChecks(d) {
			// Two checks of the same request, each comparing only the last
			// one: no output passes both (as with WebArena-Verified's own
			// evaluator), so the synthetic one must fail.
			conflicting = append(conflicting, d.TaskID)
			require.Equal(t, models.OutcomeFailure, res.Verdict, "task %d", d.TaskID)
			continue
		}
		if res.Verdict != models.OutcomeSuccess {
			failed++
			t.Errorf("task %d: %s", d.TaskID, res.Details)
			continue
		}
		if len(out.entries) > 0 && !onlyAbsenceChecks(d) {
			res, err = ev.Evaluate(context.Background(), eval.Input{Task: d.task(), Final: out.answer, HAR: harOf(t)})
			require.NoError(t, err)
			require.Equal(t, models.OutcomeFailure, res.Verdict, "task %d without its requests", d.TaskID)
		}
	}
	require.Zero(t, failed)
	t.Logf("tasks whose checks conflict: %v", conflicting)
	require.Len(t, conflicting, 8)
}

// conflictingChecks reports a task with two network checks of the same method
// and URL that both compare only the last matching request.
func conflictingChecks(d datasetTask) bool {
	seen := map[string]bool{}
	for _, raw := range d.Eval {
		var e struct {
			Evaluator      string          `json:"evaluator"`
			ShouldNotExist bool            `json:"should_not_exist"`
			LastEventOnly  *bool           `json:"last_event_only"`
			Expected       json.RawMessage `json:"expected"`
		}
		_ = json.Unmarshal(raw, &e)
		if e.Evaluator != verified.NetworkEventEvaluator || e.ShouldNotExist || e.LastEventOnly != nil && !*e.LastEventOnly {
			continue
		}
		var exp struct {
			URL    json.RawMessage `json:"url"`
			Method string          `json:"http_method"`
		}
		_ = json.Unmarshal(e.Expected, &exp)
		key := exp.Method + " " + string(exp.URL)
		if seen[key] {
			return true
		}
		seen[key] = true
	}
	return false
}

// onlyAbsenceChecks reports a task whose network checks all use should_not_exist.
func onlyAbsenceChecks(d datasetTask) bool {
	for _, raw := range d.Eval {
		var e struct {
			Evaluator      string `json:"evaluator"`
			ShouldNotExist bool   `json:"should_not_exist"`
		}
		_ = json.Unmarshal(raw, &e)
		if e.Evaluator == verified.NetworkEventEvaluator && !e.ShouldNotExist {
			return false
		}
	}
	return true
}
