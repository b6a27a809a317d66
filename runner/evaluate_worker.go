package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"testing/iotest"
	"time"

	"github.com/riverqueue/river"

	"proctor/eval"
	"proctor/eval/verified"
	"proctor/eval/webarena"
	"proctor/models"
	"proctor/storage"
	"proctor/storage/artifact"
)

// evaluateWorker grades a finished episode (or re-grades a done attempt) with
// its benchmark's evaluators.
type evaluateWorker struct {
	river.WorkerDefaults[EvaluateArgs]
	r *Runner
}

// Timeout leaves room for LLM judges, which retry slow endpoints.
func (w *evaluateWorker) Timeout(*river.Job[EvaluateArgs]) time.Duration {
	return max(10*time.Minute, w.r.opts.RescueAfter)
}

// Work evaluates the attempt and records the verdicts, the run's totals and,
// for the last attempt, the run's completion; the run's metrics are
// recomputed by a job enqueued in the same transaction.
func (w *evaluateWorker) Work(ctx context.Context, job *river.Job[EvaluateArgs]) error {
	r := w.r
	ctx = models.WithActor(ctx, models.SystemActor())
	spec, err := r.db.EvaluationSpec(ctx, job.Args.AttemptID)
	if err != nil {
		return err
	}
	var since *time.Time
	if job.Args.RescoreSince != 0 {
		t := time.Unix(0, job.Args.RescoreSince)
		since = &t
		if spec.Attempt.Status != models.AttemptDone {
			return nil
		}
	} else if spec.Attempt.Status != models.AttemptEvaluating {
		return nil // evaluated already
	}
	batch, err := r.evaluate(ctx, spec)
	if err != nil {
		return err
	}
	batch.RescoreSince = since
	finished, err := r.db.RecordEvaluations(ctx, spec.Attempt.ID, batch, r.queue.insertMetricsRefresh)
	if err != nil {
		return err
	}
	if finished {
		r.log.Info("run completed", "run_id", spec.Run.ID)
	}
	return nil
}

// evaluate runs the evaluators an attempt's benchmark calls for: its primary
// evaluator (WebArena-Verified's or WebArena's checks, or the rubric judge),
// plus the LLM trajectory judge when one is configured. Without a judge,
// judge-graded benchmarks leave the attempt "not judged".
func (r *Runner) evaluate(ctx context.Context, spec *models.EpisodeSpec) (storage.EvaluationBatch, error) {
	var batch storage.EvaluationBatch
	judges, err := r.judgesFor(spec.Judge)
	if err != nil && !errors.Is(err, errNoJudge) {
		r.log.Warn("judge unavailable", "run_id", spec.Run.ID, "err", err)
	}
	in, sum, cleanup, err := r.evaluationInput(ctx, spec)
	if err != nil {
		return batch, err
	}
	defer cleanup()

	type planned struct {
		ev      eval.Evaluator
		kind    string
		primary bool
	}
	var plan []planned
	switch spec.Evaluator {
	case models.EvaluatorWebArenaVerified:
		plan = append(plan, planned{verified.New(), models.EvaluationCheck, true})
	case models.EvaluatorWebArena:
		var fuzzy eval.FuzzyMatcher
		if judges != nil {
			fuzzy = judges
		}
		plan = append(plan, planned{webarena.New(fuzzy), models.EvaluationCheck, true})
	case models.EvaluatorRubric:
		if judges != nil {
			plan = append(plan, planned{judges.Rubric(), models.EvaluationRubric, true})
		}
	case models.EvaluatorLLMJudge:
		if judges != nil {
			plan = append(plan, planned{judges.Trajectory(), models.EvaluationJudge, true})
		}
	}
	// Beside a deterministic check, a configured judge also scores the
	// trajectory 1–5 and judges the task's rubric items when it has any.
	if judges != nil && spec.Evaluator != models.EvaluatorLLMJudge {
		plan = append(plan, planned{judges.Trajectory(), models.EvaluationJudge, false})
	}
	if judges != nil && spec.Evaluator != models.EvaluatorRubric && len(spec.Task.RubricItems) > 0 {
		plan = append(plan, planned{judges.Rubric(), models.EvaluationRubric, false})
	}
	for _, p := range plan {
		if p.kind == models.EvaluationCheck {
			if err := in.rewindHAR(); err != nil {
				return batch, err
			}
		}
		res, err := p.ev.Evaluate(ctx, in.Input)
		if err != nil {
			return batch, fmt.Errorf("%s: %w", p.ev.ID(), err)
		}
		ev := evaluationRow(res, p.kind, sum)
		if p.primary {
			batch.Primary = ev
		} else {
			batch.Others = append(batch.Others, ev)
		}
	}
	return batch, nil
}

// evaluationRow turns an evaluator's result into the row that records it.
func evaluationRow(res *eval.Result, kind, inputsChecksum string) *models.Evaluation {
	score := res.Score
	ev := &models.Evaluation{
		Evaluator: res.Evaluator, EvaluatorVersion: res.Version, Kind: kind, Verdict: res.Verdict,
		Score: &score, JudgeScore: res.JudgeScore, Details: string(res.Details), InputsChecksum: inputsChecksum,
		TokensIn: res.Usage.InputTokens, TokensOut: res.Usage.OutputTokens, Cost: res.Usage.Cost,
	}
	for _, rv := range res.Rubric {
		ev.RubricJudgments = append(ev.RubricJudgments, models.RubricJudgment{
			RubricItemID: rv.ItemID, Passed: rv.Passed, Rationale: rv.Rationale, EvidenceSteps: models.JSONInts(rv.Steps),
		})
	}
	return ev
}

// evaluationInput is an eval.Input whose HAR can be read again by each
// deterministic evaluator.
type evaluationInput struct {
	eval.Input
	har []byte
}

// rewindHAR gives the next evaluator a fresh reader over the HAR.
func (in *evaluationInput) rewindHAR() error {
	if in.har != nil {
		in.HAR = bytes.NewReader(in.har)
	}
	return nil
}

// maxEvaluatedHAR bounds the HAR an evaluation reads into memory.
const maxEvaluatedHAR = 256 << 20

// evaluationInput gathers what the evaluators read: the task with its site
// placeholders resolved, the final answer, the HAR, the live-page state and
// the trajectory. It also returns the SHA-256 of those inputs, recorded with
// every verdict so that a re-scoring on the same inputs can be told apart
// from one on changed inputs.
func (r *Runner) evaluationInput(ctx context.Context, spec *models.EpisodeSpec) (*evaluationInput, string, func(), error) {
	sum := sha256.New()
	hashPart := func(h hash.Hash, name string, b []byte) {
		fmt.Fprintf(h, "%s:%d:", name, len(b))
		h.Write(b)
	}
	task := spec.Task
	if sites, err := resolveSites(spec.Sites, spec.Namespace); err == nil {
		task.EvalSpec = sites.resolve(task.EvalSpec)
		task.ReferenceAnswers = sites.resolve(task.ReferenceAnswers)
	}
	hashPart(sum, "eval_spec", []byte(task.EvalSpec))
	hashPart(sum, "reference_answers", []byte(task.ReferenceAnswers))
	for _, it := range task.RubricItems {
		hashPart(sum, "rubric", fmt.Appendf(nil, "%s|%s|%s|%g", it.Key, it.Requirement, it.Verification, it.Weight))
	}
	in := &evaluationInput{Input: eval.Input{
		Task: &task, Steps: spec.Attempt.Steps,
		ErrorClass: spec.Attempt.ErrorClass, ErrorMessage: spec.Attempt.ErrorMessage,
	}}
	hashPart(sum, "final", []byte(spec.Attempt.FinalAnswer))
	if spec.Attempt.FinalAnswer != "" {
		var final models.Action
		if err := json.Unmarshal([]byte(spec.Attempt.FinalAnswer), &final); err == nil {
			in.Final = &final
		}
	}
	har, err := r.readArtifact(ctx, spec.Attempt.HARKey, maxEvaluatedHAR)
	switch {
	case errors.Is(err, errArtifactTooLarge):
		// Graded, not retried: the evaluators see a HAR that cannot be read.
		in.HAR = iotest.ErrReader(err)
		hashPart(sum, "har", []byte(err.Error()))
	case err != nil:
		return nil, "", nil, err
	default:
		in.har = har
		hashPart(sum, "har", har)
	}
	state, err := r.readArtifact(ctx, spec.Attempt.PageStateKey, 64<<20)
	if err != nil && !errors.Is(err, errArtifactTooLarge) {
		return nil, "", nil, err
	}
	hashPart(sum, "page_state", state)
	if state != nil {
		var ps eval.PageState
		if err := json.Unmarshal(state, &ps); err == nil {
			in.PageState = &ps
		}
	}
	for _, s := range spec.Steps {
		hashPart(sum, "step", fmt.Appendf(nil, "%d|%s|%s|%s|%s", s.Index, s.URL, s.Action, s.Error, s.ScreenshotKey))
		ts := eval.TrajectoryStep{Index: s.Index, URL: s.URL, Title: s.Title, Action: json.RawMessage(s.Action), Thought: s.Thought, Error: s.Error}
		if !json.Valid(ts.Action) {
			ts.Action = nil
		}
		if key := s.ScreenshotKey; key != "" {
			ts.Screenshot = func(ctx context.Context) ([]byte, error) { return r.readArtifact(ctx, key, 32<<20) }
		}
		in.Trajectory = append(in.Trajectory, ts)
	}
	return in, hex.EncodeToString(sum.Sum(nil)), func() { in.har = nil }, nil
}

// errArtifactTooLarge is an artifact over the size an evaluation reads.
var errArtifactTooLarge = errors.New("artifact too large to evaluate")

// readArtifact reads a whole artifact, nil when key is empty or the artifact
// is missing; larger than limit is an error.
func (r *Runner) readArtifact(ctx context.Context, key string, limit int64) ([]byte, error) {
	if key == "" {
		return nil, nil
	}
	rc, _, err := r.artifacts.Get(ctx, key)
	switch {
	case errors.Is(err, artifact.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read artifact %s: %w", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read artifact %s: %w", key, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d MiB", errArtifactTooLarge, key, limit>>20)
	}
	return b, nil
}
