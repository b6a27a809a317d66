package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/riverqueue/river"

	"proctor/eval"
	"proctor/eval/verified"
	"proctor/models"
	"proctor/storage/artifact"
)

// evaluateWorker grades a finished episode with its benchmark's evaluator.
type evaluateWorker struct {
	river.WorkerDefaults[EvaluateArgs]
	r *Runner
}

// Work evaluates the attempt and records the verdict, the run's totals and,
// for the last attempt, the run's completion.
func (w *evaluateWorker) Work(ctx context.Context, job *river.Job[EvaluateArgs]) error {
	r := w.r
	ctx = models.WithActor(ctx, models.SystemActor())
	spec, err := r.db.EvaluationSpec(ctx, job.Args.AttemptID)
	if err != nil {
		return err
	}
	if spec.Attempt.Status != models.AttemptEvaluating {
		return nil // evaluated already
	}
	ev, err := r.evaluate(ctx, spec)
	if err != nil {
		return err
	}
	finished, err := r.db.RecordEvaluation(ctx, spec.Attempt.ID, ev)
	if err != nil {
		return err
	}
	if finished {
		r.log.Info("run completed", "run_id", spec.Run.ID)
	}
	return nil
}

// evaluate runs the benchmark's evaluator on the attempt. Benchmarks whose
// evaluator is not available yet get an error verdict that says so.
func (r *Runner) evaluate(ctx context.Context, spec *models.EpisodeSpec) (*models.Evaluation, error) {
	var ev eval.Evaluator
	switch spec.Evaluator {
	case models.EvaluatorWebArenaVerified:
		ev = verified.New()
	default:
		details, _ := json.Marshal(map[string]string{"error_msg": fmt.Sprintf("no automatic evaluator for %q benchmarks is available yet", spec.Evaluator)})
		return &models.Evaluation{Evaluator: spec.Evaluator, EvaluatorVersion: "unavailable", Verdict: models.OutcomeError, Details: string(details)}, nil
	}
	task := spec.Task
	if sites, err := resolveSites(spec.Sites, spec.Namespace); err == nil {
		task.EvalSpec = sites.resolve(task.EvalSpec)
		task.ReferenceAnswers = sites.resolve(task.ReferenceAnswers)
	}
	in := eval.Input{Task: &task, Steps: spec.Attempt.Steps}
	if spec.Attempt.FinalAnswer != "" {
		var final models.Action
		if err := json.Unmarshal([]byte(spec.Attempt.FinalAnswer), &final); err == nil {
			in.Final = &final
		}
	}
	if spec.Attempt.HARKey != "" {
		rc, _, err := r.artifacts.Get(ctx, spec.Attempt.HARKey)
		switch {
		case errors.Is(err, artifact.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("read HAR %s: %w", spec.Attempt.HARKey, err)
		default:
			defer rc.Close()
			in.HAR = io.LimitReader(rc, 512<<20)
		}
	}
	res, err := ev.Evaluate(ctx, in)
	if err != nil {
		return nil, err
	}
	score := res.Score
	return &models.Evaluation{
		Evaluator: res.Evaluator, EvaluatorVersion: res.Version, Verdict: res.Verdict,
		Score: &score, Details: string(res.Details), InputsChecksum: "",
	}, nil
}
