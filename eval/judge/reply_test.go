package judge

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTrajectoryReply(t *testing.T) {
	t.Parallel()
	good := `{"success": true, "score": 5, "rationale": "Step 3 shows the price."}`
	for _, tc := range []struct {
		name    string
		reply   string
		success bool
		score   int
		cause   string // a substring of the off-format cause; "" when accepted
	}{
		{name: "plain", reply: good, success: true, score: 5},
		{name: "failure", reply: `{"success": false, "score": 2, "rationale": "wrong item"}`, score: 2},
		{name: "whitespace", reply: "\n  " + good + "\n", success: true, score: 5},
		{name: "json fence", reply: "```json\n" + good + "\n```", success: true, score: 5},
		{name: "bare fence", reply: "```\n" + good + "\n```", success: true, score: 5},
		{name: "prose", reply: "The agent succeeded.", cause: "not a JSON object"},
		{name: "not incorrect", reply: "not incorrect", cause: `it starts with "not incorrect"`},
		{name: "not incorrect after JSON", reply: `{"success": false, "score": 1, "rationale": "x"} not incorrect`, cause: "text after its JSON object"},
		{name: "prose before JSON", reply: "Verdict: " + good, cause: "not a JSON object"},
		{name: "prose around fence", reply: "Here it is:\n```json\n" + good + "\n```", cause: "not a JSON object"},
		{name: "unclosed fence", reply: "```json\n" + good, cause: "does not close"},
		{name: "two fences", reply: "```json\n" + good + "\n```\n```json\n" + good + "\n```", cause: "more than one ``` fence"},
		{name: "two objects", reply: good + "\n" + good, cause: "more than one JSON object"},
		{name: "success as string", reply: `{"success": "yes", "score": 5, "rationale": "x"}`, cause: `"success" must be a JSON boolean, got the string "yes"`},
		{name: "success as number", reply: `{"success": 1, "score": 5, "rationale": "x"}`, cause: `"success" must be a JSON boolean, got the number 1`},
		{name: "score too high", reply: `{"success": true, "score": 7, "rationale": "x"}`, cause: `"score" must be an integer from 1 to 5, got 7`},
		{name: "score zero", reply: `{"success": false, "score": 0, "rationale": "x"}`, cause: "got 0"},
		{name: "score fraction", reply: `{"success": true, "score": 4.5, "rationale": "x"}`, cause: "got the number 4.5"},
		{name: "score as string", reply: `{"success": true, "score": "5", "rationale": "x"}`, cause: `got the string "5"`},
		{name: "missing rationale", reply: `{"success": true, "score": 5}`, cause: `lacks the required field "rationale"`},
		{name: "rationale not a string", reply: `{"success": true, "score": 5, "rationale": ["x"]}`, cause: `"rationale" must be a JSON string, got an array`},
		{name: "unknown field", reply: `{"success": true, "score": 5, "rationale": "x", "confidence": 0.9}`, cause: `unknown field "confidence"`},
		{name: "duplicate field", reply: `{"success": false, "score": 5, "rationale": "x", "success": true}`, cause: `the field "success" twice`},
		{name: "contradiction", reply: `{"success": true, "score": 2, "rationale": "x"}`, cause: "contradicts itself"},
		{name: "array", reply: `[` + good + `]`, cause: "not a JSON object"},
		{name: "broken JSON", reply: `{"success": true, "score": 5, "rationale": "x"`, cause: "not valid JSON"},
		{name: "empty", reply: "", cause: "not a JSON object"},
	} {
		v, err := parseTrajectoryReply(tc.reply)
		if tc.cause == "" {
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.success, v.success, tc.name)
			require.Equal(t, tc.score, v.score, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		require.Nil(t, v, tc.name)
		require.IsType(t, &offFormat{}, err, tc.name)
		require.Contains(t, err.Error(), tc.cause, tc.name)
	}
}

func TestParseRubricReply(t *testing.T) {
	t.Parallel()
	items := []rubricItem{{key: "R1"}, {key: "R2"}}
	steps := map[int]bool{1: true, 2: true, 3: true}
	for _, tc := range []struct {
		name  string
		reply string
		cause string
	}{
		{name: "good", reply: `{"items": [{"key": "R1", "passed": true, "rationale": "a", "steps": [1, 3]}, {"key": "R2", "passed": false, "rationale": "b", "steps": []}]}`},
		{name: "missing item", reply: `{"items": [{"key": "R1", "passed": true, "rationale": "a", "steps": [1]}]}`, cause: "lacks rubric items R2"},
		{name: "unknown item", reply: `{"items": [{"key": "R1", "passed": true, "rationale": "a", "steps": []}, {"key": "R2", "passed": true, "rationale": "b", "steps": []}, {"key": "R9", "passed": true, "rationale": "c", "steps": []}]}`, cause: `unknown rubric items "R9"`},
		{name: "missing and unknown", reply: `{"items": [{"key": "R1", "passed": true, "rationale": "a", "steps": []}, {"key": "R3", "passed": true, "rationale": "c", "steps": []}]}`, cause: `lacks rubric items R2; it names unknown rubric items "R3"`},
		{name: "repeated item", reply: `{"items": [{"key": "R1", "passed": true, "rationale": "a", "steps": []}, {"key": "R1", "passed": false, "rationale": "a", "steps": []}, {"key": "R2", "passed": true, "rationale": "b", "steps": []}]}`, cause: `"R1" more than once`},
		{name: "passed as string", reply: `{"items": [{"key": "R1", "passed": "true", "rationale": "a", "steps": []}, {"key": "R2", "passed": true, "rationale": "b", "steps": []}]}`, cause: `items[0]: field "passed" must be a JSON boolean`},
		{name: "step out of range", reply: `{"items": [{"key": "R1", "passed": true, "rationale": "a", "steps": [4]}, {"key": "R2", "passed": true, "rationale": "b", "steps": []}]}`, cause: "step 4 is not a step"},
		{name: "step as string", reply: `{"items": [{"key": "R1", "passed": true, "rationale": "a", "steps": ["1"]}, {"key": "R2", "passed": true, "rationale": "b", "steps": []}]}`, cause: "step numbers (integers)"},
		{name: "items not array", reply: `{"items": {"R1": true}}`, cause: `"items" must be a JSON array`},
		{name: "item not object", reply: `{"items": ["R1"]}`, cause: "items[0] must be a JSON object"},
		{name: "extra top-level field", reply: `{"items": [], "summary": "ok"}`, cause: `unknown field "summary"`},
		{name: "prose", reply: `All requirements pass.`, cause: "not a JSON object"},
	} {
		v, err := parseRubricReply(tc.reply, items, steps)
		if tc.cause == "" {
			require.NoError(t, err, tc.name)
			require.True(t, v["R1"].passed)
			require.Equal(t, []int{1, 3}, v["R1"].steps)
			require.False(t, v["R2"].passed)
			require.Equal(t, []int{}, v["R2"].steps)
			continue
		}
		require.Error(t, err, tc.name)
		require.Contains(t, err.Error(), tc.cause, tc.name)
	}
}
