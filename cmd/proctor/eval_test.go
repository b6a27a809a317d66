package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/internal/testenv"
)

// evalFixture copies the WebArena-Verified demo outputs (tasks 107 and 108)
// into a scratch folder, since the command writes eval_result.json beside them.
func evalFixture(t *testing.T) (dataset, outputs, reference string) {
	t.Helper()
	data := testenv.SharedDataDir(t)
	base := filepath.Join(data, "webarena-verified")
	outputs = filepath.Join(t.TempDir(), "outputs")
	for _, id := range []string{"107", "108"} {
		src := filepath.Join(base, "demo-outputs", id)
		dst := filepath.Join(outputs, id)
		require.NoError(t, os.MkdirAll(dst, 0o755))
		entries, err := os.ReadDir(src)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name() == "eval_result.json" {
				continue // the reference result: the command must produce its own
			}
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
		}
	}
	return filepath.Join(base, "webarena-verified.json"), outputs, filepath.Join(base, "demo-outputs")
}

// resultFile is the part of eval_result.json the comparison reads.
type resultFile struct {
	TaskID            int     `json:"task_id"`
	Status            string  `json:"status"`
	Score             float64 `json:"score"`
	ErrorMsg          *string `json:"error_msg"`
	EvaluatorsResults []struct {
		EvaluatorName    string `json:"evaluator_name"`
		Status           string `json:"status"`
		Score            float64
		ActualNormalized any `json:"actual_normalized"`
		Assertions       []struct {
			AssertionName string   `json:"assertion_name"`
			Status        string   `json:"status"`
			AssertionMsgs []string `json:"assertion_msgs"`
		} `json:"assertions"`
	} `json:"evaluators_results"`
}

func readResult(t *testing.T, path string) resultFile {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r resultFile
	require.NoError(t, json.Unmarshal(b, &r), path)
	return r
}

func failedAssertions(r resultFile) []string {
	var names []string
	for _, er := range r.EvaluatorsResults {
		for _, a := range er.Assertions {
			if a.Status == "failure" {
				names = append(names, a.AssertionName)
			}
		}
	}
	sort.Strings(names)
	return names
}

func TestEval_WebArenaVerifiedDemoOutputs(t *testing.T) {
	t.Parallel()
	dataset, outputs, reference := evalFixture(t)
	// A folder that is not a task, and a stray file, are not tasks.
	require.NoError(t, os.MkdirAll(filepath.Join(outputs, "notes"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outputs, "README.txt"), []byte("x"), 0o644))
	jsonl := filepath.Join(t.TempDir(), "results.jsonl")

	env := testEnv{} // no database settings: the command must not need them
	code, stdout, stderr := env.run(t, "", "eval", "webarena-verified", "--dataset", dataset, "--outputs", outputs, "--out", jsonl)
	require.Equal(t, exitOK, code, stderr)

	for _, id := range []string{"107", "108"} {
		got := readResult(t, filepath.Join(outputs, id, "eval_result.json"))
		want := readResult(t, filepath.Join(reference, id, "eval_result.json"))
		require.Equal(t, want.TaskID, got.TaskID)
		require.Equal(t, want.Status, got.Status, "task %s", id)
		require.InDelta(t, want.Score, got.Score, 0, "task %s", id)
		require.Len(t, got.EvaluatorsResults, len(want.EvaluatorsResults))
		for i := range want.EvaluatorsResults {
			w, g := want.EvaluatorsResults[i], got.EvaluatorsResults[i]
			require.Equal(t, w.EvaluatorName, g.EvaluatorName)
			require.Equal(t, w.Status, g.Status, "task %s %s", id, w.EvaluatorName)
			require.Equal(t, w.ActualNormalized, g.ActualNormalized, "task %s: normalised answer", id)
		}
		require.Equal(t, failedAssertions(want), failedAssertions(got), "task %s", id)
	}
	r107 := readResult(t, filepath.Join(outputs, "107", "eval_result.json"))
	require.Equal(t, []string{"Expected retrieve, got navigate"}, r107.EvaluatorsResults[0].Assertions[0].AssertionMsgs)

	f, err := os.Open(jsonl)
	require.NoError(t, err)
	defer f.Close()
	var lines []resultFile
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r resultFile
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		lines = append(lines, r)
	}
	require.Len(t, lines, 2, "only the task folders present are evaluated")
	require.Equal(t, 107, lines[0].TaskID)
	require.Equal(t, 108, lines[1].TaskID)

	require.Regexp(t, `shopping_admin\s+2\s+1\s+1\s+0\s+50\.0%`, stdout)
	require.Regexp(t, `total\s+2\s+1\s+1\s+0\s+50\.0%`, stdout)
}

func TestEval_WebArenaVerifiedTaskIDs(t *testing.T) {
	t.Parallel()
	dataset, outputs, _ := evalFixture(t)
	env := testEnv{}

	t.Run("MissingOutputsAreErrors", func(t *testing.T) {
		jsonl := filepath.Join(t.TempDir(), "results.jsonl")
		code, stdout, stderr := env.run(t, "", "eval", "webarena-verified", "--dataset", dataset, "--outputs", outputs,
			"--task-ids", "108, 109", "--out", jsonl)
		require.Equal(t, exitOK, code, stderr)
		b, err := os.ReadFile(jsonl)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		require.Len(t, lines, 2)
		var missing resultFile
		require.NoError(t, json.Unmarshal([]byte(lines[1]), &missing))
		require.Equal(t, 109, missing.TaskID)
		require.Equal(t, "error", missing.Status)
		require.NotNil(t, missing.ErrorMsg)
		require.Contains(t, *missing.ErrorMsg, "no agent_response.json")
		require.Regexp(t, `total\s+2\s+1\s+0\s+1\s+50\.0%`, stdout)
	})
	t.Run("UnknownTaskID", func(t *testing.T) {
		code, _, stderr := env.run(t, "", "eval", "webarena-verified", "--dataset", dataset, "--outputs", outputs, "--task-ids", "108,99999")
		require.Equal(t, exitUsage, code)
		require.Contains(t, stderr, "99999")
	})
	t.Run("UnparseableAnswerIsAFailureWithItsCause", func(t *testing.T) {
		dir := filepath.Join(outputs, "108")
		copyDir := filepath.Join(t.TempDir(), "out")
		require.NoError(t, os.MkdirAll(filepath.Join(copyDir, "108"), 0o755))
		har, err := os.ReadFile(filepath.Join(dir, "network.har"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(copyDir, "108", "network.har"), har, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(copyDir, "108", "agent_response.json"), []byte("I could not finish the task."), 0o644))
		code, _, stderr := env.run(t, "", "eval", "webarena-verified", "--dataset", dataset, "--outputs", copyDir)
		require.Equal(t, exitOK, code, stderr)
		r := readResult(t, filepath.Join(copyDir, "108", "eval_result.json"))
		require.Equal(t, "failure", r.Status)
		require.Equal(t, []string{"agent_response_invalid_format"}, failedAssertions(r))
		require.Contains(t, strings.Join(r.EvaluatorsResults[0].Assertions[0].AssertionMsgs, " "), "plain text")
	})
	t.Run("UsageErrors", func(t *testing.T) {
		for _, args := range [][]string{
			{"eval"},
			{"eval", "webarena", "--dataset", dataset, "--outputs", outputs},
			{"eval", "webarena-verified", "--outputs", outputs},
			{"eval", "webarena-verified", "--dataset", dataset},
			{"eval", "webarena-verified", "--dataset", dataset, "--outputs", filepath.Join(outputs, "nope")},
			{"eval", "webarena-verified", "--dataset", dataset, "--outputs", outputs, "--task-ids", "x"},
			{"eval", "webarena-verified", "--dataset", dataset, "--outputs", outputs, "--site", "gitlab"},
		} {
			code, _, stderr := env.run(t, "", args...)
			require.Equal(t, exitUsage, code, "%v: %s", args, stderr)
			require.NotEmpty(t, stderr)
		}
	})
	t.Run("SitesFromConfig", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "config.json")
		require.NoError(t, os.WriteFile(cfg, []byte(`{"environments":{"__SHOPPING_ADMIN__":{"urls":["http://192.168.1.35:7780/admin"]}}}`), 0o644))
		code, _, stderr := env.run(t, "", "eval", "webarena-verified", "--dataset", dataset, "--outputs", outputs, "--task-ids", "108", "--config", cfg)
		require.Equal(t, exitOK, code, stderr)
		require.Equal(t, "success", readResult(t, filepath.Join(outputs, "108", "eval_result.json")).Status)
	})
}
