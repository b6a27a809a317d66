package runner

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/judge"
	"proctor/internal/evaltest"
	"proctor/models"
)

// slowJudges are judges that never answer before their context ends.
type slowJudges struct{}

type slowEvaluator struct{ id string }

func (e slowEvaluator) ID() string { return e.id }

func (e slowEvaluator) Evaluate(ctx context.Context, _ eval.Input) (*eval.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (slowJudges) Trajectory() eval.Evaluator { return slowEvaluator{"llm-judge:slow:trajectory"} }
func (slowJudges) Rubric() eval.Evaluator     { return slowEvaluator{"llm-judge:slow:rubric"} }
func (slowJudges) FuzzyMatch(ctx context.Context, _, _, _ string) (bool, models.Usage, error) {
	<-ctx.Done()
	return false, models.Usage{}, ctx.Err()
}
func (slowJudges) Labels(ctx context.Context, _ eval.Input, _ judge.LabelOptions) (*judge.LabelVerdict, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestPlan(t *testing.T) {
	t.Parallel()
	withRubric := models.Task{RubricItems: []models.RubricItem{{Key: "R1"}}}
	kinds := func(ps []planned) []string {
		var out []string
		for _, p := range ps {
			k := p.kind
			if p.primary {
				k += "*"
			}
			out = append(out, k)
		}
		return out
	}
	for _, tc := range []struct {
		evaluator string
		task      models.Task
		judges    Judges
		want      []string
	}{
		{models.EvaluatorWebArenaVerified, models.Task{}, nil, []string{"check*"}},
		{models.EvaluatorWebArenaVerified, withRubric, slowJudges{}, []string{"check*", "judge", "rubric"}},
		{models.EvaluatorWebArena, models.Task{}, slowJudges{}, []string{"check*", "judge"}},
		{models.EvaluatorRubric, withRubric, nil, nil},
		{models.EvaluatorRubric, withRubric, slowJudges{}, []string{"rubric*", "judge"}},
		{models.EvaluatorLLMJudge, withRubric, slowJudges{}, []string{"judge*", "rubric"}},
		{models.EvaluatorNone, models.Task{}, slowJudges{}, []string{"judge"}},
		{models.EvaluatorHiddenTests, models.Task{}, nil, nil},
		{"not-registered", models.Task{}, slowJudges{}, []string{"judge"}},
	} {
		spec := &models.EpisodeSpec{Evaluator: tc.evaluator, Task: tc.task}
		require.Equal(t, tc.want, kinds(plan(evaltest.Registry(), spec, tc.judges)), "%s, judges %v", tc.evaluator, tc.judges != nil)
	}
}

// TestRunEvaluator_JudgeTimeout: a judge that outlives its time limit gives an
// error verdict naming the limit, and the job goes on to record the others.
func TestRunEvaluator_JudgeTimeout(t *testing.T) {
	t.Parallel()
	r := &Runner{opts: Options{RescueAfter: 400 * time.Millisecond}, log: slog.New(slog.DiscardHandler)}
	in := &evaluationInput{Input: eval.Input{Task: &models.Task{}}}
	res, err := r.runEvaluator(context.Background(), planned{slowJudges{}.Trajectory(), models.EvaluationJudge, false}, in)
	require.NoError(t, err)
	require.Equal(t, models.OutcomeError, res.Verdict)
	var d map[string]string
	require.NoError(t, json.Unmarshal(res.Details, &d))
	require.Equal(t, "timeout", d["error_kind"])
	require.Contains(t, d["error_msg"], "did not finish within 100ms")

	// A canceled job is not a verdict: the job stops and is retried.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.runEvaluator(ctx, planned{slowJudges{}.Trajectory(), models.EvaluationJudge, false}, in)
	require.ErrorIs(t, err, context.Canceled)
}

func TestEvaluationTimeout(t *testing.T) {
	t.Parallel()
	require.Equal(t, 15*time.Minute, evaluationTimeout(20*time.Minute), "capped")
	require.Equal(t, 45*time.Second, evaluationTimeout(time.Minute), "always under the rescue delay")
	require.Equal(t, 15*time.Second, judgeTimeout(time.Minute))
}
