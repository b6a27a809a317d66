package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/internal/testenv"
	"proctor/models"
)

// rubricInput is shopInput with three weighted rubric items, stored out of order.
func rubricInput(weights ...float64) eval.Input {
	in := shopInput()
	in.Task.RubricItems = []models.RubricItem{
		{ID: 13, Key: "R3", Position: 3, Requirement: "Say the price in dollars.", Weight: weights[2]},
		{ID: 11, Key: "R1", Position: 1, Requirement: "Open the blue mug's page.", Verification: "The mug's product page appears in the trajectory.", Weight: weights[0]},
		{ID: 12, Key: "R2", Position: 2, Requirement: "Do not add anything to the cart.", Weight: weights[1]},
	}
	return in
}

// rubricReply is a reply judging the keys in order with the given outcomes,
// citing steps of shopInput's three.
func rubricReply(passed map[string]bool, keys ...string) string {
	var items []map[string]any
	for i, k := range keys {
		items = append(items, map[string]any{"key": k, "passed": passed[k], "rationale": "because of step " + strconv.Itoa(i%3+1), "steps": []int{i%3 + 1}})
	}
	b, _ := json.Marshal(map[string]any{"items": items})
	return string(b)
}

func TestRubric_Verdicts(t *testing.T) {
	t.Parallel()

	t.Run("MixedWeighted", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, rubricReply(map[string]bool{"R1": true, "R2": false, "R3": true}, "R1", "R2", "R3"))
		c, _ := newTestClient(t, f, nil)
		j := c.Rubric()
		require.Equal(t, "llm-judge:judge-model:rubric-v2", j.ID())
		res, err := j.Evaluate(context.Background(), rubricInput(0.5, 0.3, 0.2))
		require.NoError(t, err)
		require.Equal(t, j.ID(), res.Evaluator)
		require.Equal(t, RubricVersion, res.Version)
		require.Equal(t, models.OutcomeFailure, res.Verdict, "not perfect")
		require.InDelta(t, 0.7, res.Score, 1e-9)
		require.Nil(t, res.JudgeScore)
		require.Equal(t, []eval.RubricVerdict{
			{ItemID: 11, Key: "R1", Passed: true, Rationale: "because of step 1", Steps: []int{1}},
			{ItemID: 12, Key: "R2", Passed: false, Rationale: "because of step 2", Steps: []int{2}},
			{ItemID: 13, Key: "R3", Passed: true, Rationale: "because of step 3", Steps: []int{3}},
		}, res.Rubric)
		require.EqualValues(t, fakePromptTokens, res.Usage.InputTokens)

		d := judgeDetails(t, res)
		require.Equal(t, RubricVersion, d.PromptVersion)
		require.Equal(t, c.prompts[PromptRubric].SHA256, d.PromptSHA256)
		require.InDelta(t, 0.7, *d.RubricScore, 1e-9)
		require.False(t, *d.Perfect)
		require.False(t, *d.Success)
		require.Nil(t, d.Score)
		require.Equal(t, "given", d.Weights)
		require.Len(t, d.Items, 3)
		require.Equal(t, ItemDetail{ItemID: 12, Key: "R2", Weight: 0.3, Passed: false, Rationale: "because of step 2", Steps: []int{2}}, d.Items[1])
		require.Equal(t, 1, d.Attempts)

		user := f.seen()[0].userText(t)
		require.Contains(t, user, "R1: Open the blue mug's page.\n    verification: The mug's product page appears in the trajectory.\nR2: Do not add anything to the cart.\nR3: Say the price in dollars.")
		require.Contains(t, user, "one entry for each of R1, R2, R3.")
		require.NotContains(t, user, "0.3", "weights are not shown to the judge")
	})

	t.Run("AllPassPerfect", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, rubricReply(map[string]bool{"R1": true, "R2": true, "R3": true}, "R3", "R1", "R2"))
		c, _ := newTestClient(t, f, nil)
		res, err := c.Rubric().Evaluate(context.Background(), rubricInput(0.5, 0.3, 0.2))
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		require.InDelta(t, 1.0, res.Score, 1e-9)
		d := judgeDetails(t, res)
		require.True(t, *d.Perfect)
		require.True(t, *d.Success)
		require.Equal(t, []string{"R1", "R2", "R3"}, []string{res.Rubric[0].Key, res.Rubric[1].Key, res.Rubric[2].Key}, "in rubric order, whatever the reply's order")
	})

	t.Run("ZeroWeightsCountEqually", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, rubricReply(map[string]bool{"R1": true, "R2": true}, "R1", "R2", "R3"))
		c, _ := newTestClient(t, f, nil)
		res, err := c.Rubric().Evaluate(context.Background(), rubricInput(0, 0, 0))
		require.NoError(t, err)
		require.InDelta(t, 2.0/3, res.Score, 1e-9)
		require.Equal(t, models.OutcomeFailure, res.Verdict)
		d := judgeDetails(t, res)
		require.Equal(t, "equal", d.Weights)
		require.InDelta(t, 1.0, d.Items[0].Weight, 0)
	})

	t.Run("KeysFallBackToPositions", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, rubricReply(map[string]bool{"R1": true, "R2": true, "R3": true}, "R1", "R2", "R3"))
		c, _ := newTestClient(t, f, nil)
		in := rubricInput(1, 1, 1)
		for i := range in.Task.RubricItems {
			in.Task.RubricItems[i].Key = "same"
		}
		res, err := c.Rubric().Evaluate(context.Background(), in)
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		require.Equal(t, int64(11), res.Rubric[0].ItemID)
		require.Equal(t, "R1", res.Rubric[0].Key)
	})
}

func TestRubric_Errors(t *testing.T) {
	t.Parallel()

	t.Run("MissingAndUnknownItems", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, rubricReply(map[string]bool{"R1": true}, "R1", "R9"))
		c, _ := newTestClient(t, f, nil)
		res, err := c.Rubric().Evaluate(context.Background(), rubricInput(1, 1, 1))
		require.NoError(t, err)
		require.Equal(t, models.OutcomeError, res.Verdict)
		require.Zero(t, res.Score)
		require.Nil(t, res.Rubric)
		d := judgeDetails(t, res)
		require.Equal(t, KindOffFormat, d.ErrorKind)
		require.Contains(t, errorMsg(d), `it lacks rubric items R2, R3; it names unknown rubric items "R9"`)
		require.Equal(t, 2, d.Attempts, "one repair request first")
		require.Len(t, f.seen(), 2)
	})

	t.Run("RepairedReply", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 1 {
				writeCompletion(w, rubricReply(map[string]bool{"R1": true}, "R1", "R2"))
				return
			}
			writeCompletion(w, rubricReply(map[string]bool{"R1": true, "R2": true, "R3": true}, "R1", "R2", "R3"))
		})
		c, _ := newTestClient(t, f, nil)
		res, err := c.Rubric().Evaluate(context.Background(), rubricInput(1, 1, 1))
		require.NoError(t, err)
		require.Equal(t, models.OutcomeSuccess, res.Verdict)
		d := judgeDetails(t, res)
		require.Contains(t, d.RepairCause, "lacks rubric items R3")
		require.Equal(t, 2, d.Attempts)
		require.Contains(t, string(f.seen()[1].body.Messages[3].Content), "lacks rubric items R3")
	})

	t.Run("NoItems", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, `{"items": []}`)
		c, _ := newTestClient(t, f, nil)
		res, err := c.Rubric().Evaluate(context.Background(), shopInput())
		require.NoError(t, err)
		require.Equal(t, models.OutcomeError, res.Verdict)
		require.Contains(t, errorMsg(judgeDetails(t, res)), "the task has no rubric items")
		require.Empty(t, f.seen(), "nothing to ask")
	})

	t.Run("NegativeWeight", func(t *testing.T) {
		t.Parallel()
		f := replyWith(t, `{"items": []}`)
		c, _ := newTestClient(t, f, nil)
		res, err := c.Rubric().Evaluate(context.Background(), rubricInput(1, -1, 1))
		require.NoError(t, err)
		require.Equal(t, models.OutcomeError, res.Verdict)
		require.Contains(t, errorMsg(judgeDetails(t, res)), "rubric item R2 has an invalid weight -1")
		require.Empty(t, f.seen())
	})

	t.Run("Refusal", func(t *testing.T) {
		t.Parallel()
		f := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeChoice(w, map[string]any{"role": "assistant", "content": nil, "refusal": "I won't grade this."}, "stop")
		})
		c, _ := newTestClient(t, f, nil)
		res, err := c.Rubric().Evaluate(context.Background(), rubricInput(1, 1, 1))
		require.NoError(t, err)
		require.Equal(t, models.OutcomeError, res.Verdict)
		require.Contains(t, errorMsg(judgeDetails(t, res)), "the judge refused: I won't grade this.")
	})
}

// TestRubric_Odysseys judges the rubrics of real Odysseys tasks, weighted and
// unweighted: every item passes but R1, so the score is 1 less R1's share.
func TestRubric_Odysseys(t *testing.T) {
	t.Parallel()
	dir := testenv.SharedDataDir(t)
	for _, file := range []string{"odysseys-weighted-sample.json", "odysseys-sample.json"} {
		data, err := os.ReadFile(filepath.Join(dir, "odysseys", file))
		require.NoError(t, err)
		var tasks []struct {
			TaskID  string `json:"task_id"`
			Task    string `json:"confirmed_task"`
			Rubrics map[string]struct {
				Requirement  string   `json:"requirement"`
				Verification string   `json:"verification"`
				Weight       *float64 `json:"weight"`
			} `json:"rubrics"`
		}
		require.NoError(t, json.Unmarshal(data, &tasks))
		require.NotEmpty(t, tasks)
		for _, task := range tasks {
			keys := make([]string, 0, len(task.Rubrics))
			for k := range task.Rubrics {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				a, _ := strconv.Atoi(strings.TrimPrefix(keys[i], "R"))
				b, _ := strconv.Atoi(strings.TrimPrefix(keys[j], "R"))
				return a < b
			})
			in := shopInput()
			in.Task.Intent = task.Task
			total, r1 := 0.0, 0.0
			for i, k := range keys {
				r := task.Rubrics[k]
				w := 0.0
				if r.Weight != nil {
					w = *r.Weight
				}
				total += w
				if k == "R1" {
					r1 = w
				}
				in.Task.RubricItems = append(in.Task.RubricItems, models.RubricItem{ID: int64(i + 1), Key: k, Position: i + 1, Requirement: r.Requirement, Verification: r.Verification, Weight: w})
			}
			want := 1 - r1/total
			if total == 0 {
				want = 1 - 1/float64(len(keys))
			}
			passed := map[string]bool{}
			for _, k := range keys[1:] {
				passed[k] = true
			}
			f := replyWith(t, rubricReply(passed, keys...))
			c, _ := newTestClient(t, f, nil)
			res, err := c.Rubric().Evaluate(context.Background(), in)
			require.NoError(t, err, task.TaskID)
			require.Equal(t, models.OutcomeFailure, res.Verdict, task.TaskID)
			require.InDelta(t, want, res.Score, 1e-9, "%s %s", file, task.TaskID)
			require.Len(t, res.Rubric, len(keys))
			user := f.seen()[0].userText(t)
			for _, k := range keys {
				require.Contains(t, user, fmt.Sprintf("%s: %s", k, strings.Join(strings.Fields(task.Rubrics[k].Requirement), " ")))
			}
		}
	}
}
