package runner_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval/judge"
	"proctor/eval/verified"
	"proctor/models"
	"proctor/runner"
	"proctor/sandbox"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// fakeJudge is an OpenAI-compatible chat-completions server that passes every
// trajectory with a 4 and every rubric item it is shown, counting requests.
type fakeJudge struct {
	trajectories, rubrics atomic.Int64
	images                atomic.Int64 // screenshots shown in trajectory requests
}

var rubricKey = regexp.MustCompile(`\bR\d+\b`)

func (f *fakeJudge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
			Type string `json:"type"`
			Text string `json:"text"`
		}
		switch {
		case json.Unmarshal(m.Content, &text) == nil:
			prompt.WriteString(text)
		case json.Unmarshal(m.Content, &parts) == nil:
			for _, p := range parts {
				prompt.WriteString(p.Text)
				if p.Type == "image_url" {
					f.images.Add(1)
				}
			}
		}
	}
	var reply string
	if strings.Contains(prompt.String(), `{"items": [`) {
		f.rubrics.Add(1)
		keys := rubricKey.FindAllString(prompt.String(), -1)
		slices.Sort(keys)
		var items []string
		for _, k := range slices.Compact(keys) {
			items = append(items, fmt.Sprintf(`{"key":%q,"passed":true,"rationale":"Shown on the final page.","steps":[1]}`, k))
		}
		reply = `{"items":[` + strings.Join(items, ",") + `]}`
	} else {
		f.trajectories.Add(1)
		reply = `{"success":true,"score":4,"rationale":"The agent found the answer and reported it."}`
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "cmpl-1", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": reply}}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
	})
}

// TestRunner_SandboxJudged runs the sandbox's hard subset with an LLM judge
// configured: beside the deterministic check, every attempt gets a 1–5 judge
// score and a rubric judgment, with token usage and cost, and the run's
// metrics carry them. Without a judge the same run says "not judged".
func TestRunner_SandboxJudged(t *testing.T) {
	t.Parallel()
	fj := &fakeJudge{}
	srv := httptest.NewServer(fj)
	t.Cleanup(srv.Close)
	factory := func(s models.JudgeSettings) (runner.Judges, error) {
		return judge.New(judge.Config{BaseURL: srv.URL + "/v1", Model: "judge-model", Timeout: 10 * time.Second,
			PriceInputPerMTok: 2, PriceOutputPerMTok: 8})
	}
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		b := setupRunWith(t, db, 3, factory)
		run, err := runService(b.db, b.runner).QueueRun(b.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "replayer", BenchmarkSlug: sandbox.Slug, Subset: "hard", Parallelism: 3})
		require.NoError(t, err)
		got := b.waitRun(t, run.ID, 5*time.Minute)
		require.Equal(t, models.RunCompleted, got.Status)
		require.Equal(t, got.TasksTotal, got.Successes, "the check still decides the outcome")

		var evs []models.Evaluation
		require.NoError(t, db.Gorm().Preload("RubricJudgments").Joins("JOIN attempts a ON a.id = evaluations.attempt_id").
			Where("a.run_id = ?", run.ID).Find(&evs).Error)
		byKind := map[string]int{}
		for _, ev := range evs {
			byKind[ev.Kind]++
			require.NotEmpty(t, ev.InputsChecksum, "%s records its inputs' checksum", ev.Evaluator)
			switch ev.Kind {
			case models.EvaluationCheck:
				require.True(t, ev.IsPrimary)
				require.Equal(t, verified.Version, ev.EvaluatorVersion)
			case models.EvaluationJudge:
				require.False(t, ev.IsPrimary)
				require.Equal(t, 4, *ev.JudgeScore)
				require.Equal(t, "llm-judge:judge-model:trajectory-v2", ev.Evaluator)
				require.EqualValues(t, 1000, ev.TokensIn)
				require.InDelta(t, (1000*2+50*8)/1e6, ev.Cost, 1e-12)
			case models.EvaluationRubric:
				require.Equal(t, models.OutcomeSuccess, ev.Verdict, "%s", ev.Details)
				require.NotEmpty(t, ev.RubricJudgments)
				require.InDelta(t, 1, *ev.Score, 1e-9)
			}
		}
		require.Equal(t, map[string]int{models.EvaluationCheck: got.TasksTotal, models.EvaluationJudge: got.TasksTotal, models.EvaluationRubric: got.TasksTotal}, byKind)
		require.GreaterOrEqual(t, fj.trajectories.Load(), int64(got.TasksTotal))

		// The metrics job has run: the run's metrics carry the judge's scores.
		require.Eventually(t, func() bool {
			var e models.LeaderboardEntry
			err := db.Gorm().Where("run_id = ? AND subset_name = ?", run.ID, "hard").Take(&e).Error
			return err == nil && e.Judged == got.TasksTotal
		}, 30*time.Second, 100*time.Millisecond)
		reports, err := servicetest.Runs(db, 0).RunMetrics(b.member, run.ID)
		require.NoError(t, err)
		m := reports[0].Metrics
		require.InDelta(t, 4, m.JudgeScore.Mean, 1e-9)
		require.InDelta(t, 1, m.RubricScore.Mean, 1e-9)
		require.InDelta(t, 1, *m.PerfectRate, 1e-9)

		// Re-scoring adds a new verdict of each kind and keeps the old ones.
		n, err := runService(b.db, b.runner).Rescore(b.system, models.RescoreScope{RunID: run.ID})
		require.NoError(t, err)
		require.Equal(t, got.TasksTotal, n)
		require.Eventually(t, func() bool {
			var count int64
			require.NoError(t, db.Gorm().Model(&models.Evaluation{}).Joins("JOIN attempts a ON a.id = evaluations.attempt_id").
				Where("a.run_id = ? AND evaluations.rescore = ?", run.ID, true).Count(&count).Error)
			return count == int64(3*got.TasksTotal)
		}, time.Minute, 100*time.Millisecond)
		var rescored models.Run
		require.NoError(t, db.Gorm().First(&rescored, run.ID).Error)
		require.NotNil(t, rescored.RescoredAt)
		require.Contains(t, rescored.RescoredWith, verified.Version)
		require.Equal(t, got.TasksTotal, rescored.Successes)
		var current int64
		require.NoError(t, db.Gorm().Model(&models.Evaluation{}).Joins("JOIN attempts a ON a.id = evaluations.attempt_id").
			Where("a.run_id = ? AND evaluations.is_current = ?", run.ID, true).Count(&current).Error)
		require.EqualValues(t, 3*got.TasksTotal, current, "one current verdict per kind")
	})
}
