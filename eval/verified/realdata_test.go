package verified_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
