package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"proctor/eval"
	"proctor/har"
	"proctor/models"
	"proctor/storage/artifact"
)

// evaluateWorker grades a finished episode (or re-grades a done attempt) with
// its benchmark's evaluators.
type evaluateWorker struct {
	river.WorkerDefaults[EvaluateArgs]
	r *Runner
}

// Timeout leaves room for LLM judges, which retry slow endpoints, while
// staying under the rescue delay: River would otherwise take a job still
// running for a stuck one and run it twice (paying the judges twice).
func (w *evaluateWorker) Timeout(*river.Job[EvaluateArgs]) time.Duration {
	return evaluationTimeout(w.r.opts.RescueAfter)
}

// evaluationTimeout is an evaluation job's time limit for a rescue delay.
func evaluationTimeout(rescueAfter time.Duration) time.Duration {
	return min(15*time.Minute, rescueAfter*3/4)
}

// judgeTimeout bounds one judge's work on an attempt (retries included), so
// that a slow judge ends in an error verdict while the job still has time to
// record the other verdicts.
func judgeTimeout(rescueAfter time.Duration) time.Duration {
	return evaluationTimeout(rescueAfter) / 3
}

// Work evaluates the attempt and records the verdicts, the run's totals and,
// for the last attempt, the run's completion; the run's metrics are
// recomputed by a job enqueued in the same transaction. An attempt that cannot
// be graded after the job's last try gets an error verdict, so that its run
// still completes.
func (w *evaluateWorker) Work(ctx context.Context, job *river.Job[EvaluateArgs]) error {
	r := w.r
	ctx = models.WithActor(ctx, models.SystemActor())
	spec, err := r.db.EvaluationSpec(ctx, job.Args.AttemptID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return river.JobCancel(err) // the attempt is gone: nothing to grade
	}
	if err != nil {
		return err
	}
	want := models.AttemptEvaluating
	if job.Args.RescoreID != "" {
		want = models.AttemptDone
	}
	if spec.Attempt.Status != want {
		return nil // graded already, or not ours to re-grade
	}
	// An agent's secrets are redacted from its verdicts too (a judge quotes
	// the agent's words); an agent removed since has none left to leak.
	secrets, err := r.db.AgentSecrets(ctx, spec.Run.AgentID)
	if err != nil && models.ErrorCode(err) != models.ENOTFOUND {
		return fmt.Errorf("agent secrets: %w", err)
	}
	red := secretsRedactor(secrets, spec.Judge.APIKey)
	log := red.Logger(r.log)
	batch, err := r.evaluate(ctx, spec, log)
	if err != nil && ctx.Err() == nil && job.Attempt >= job.MaxAttempts {
		log.Error("evaluation failed on its last try", "attempt_id", spec.Attempt.ID, "error", err.Error())
		batch = models.EvaluationBatch{Primary: platformErrorEvaluation(spec, err)}
	} else if err != nil {
		return err
	}
	redactEvaluations(red, &batch)
	batch.RescoreID = job.Args.RescoreID
	finished, err := r.db.RecordEvaluations(ctx, spec.Attempt.ID, batch, r.queue.insertMetricsRefresh)
	if err != nil {
		return err
	}
	if finished {
		r.log.Info("run completed", "run_id", spec.Run.ID)
	}
	return nil
}

// platformErrorEvaluation is the verdict of an attempt the platform could not
// grade (its artifacts unreadable, say): an error, never charged as a failure.
func platformErrorEvaluation(spec *models.EpisodeSpec, err error) *models.Evaluation {
	details, _ := json.Marshal(map[string]string{"status": models.OutcomeError, "error_msg": "the platform could not grade this attempt: " + err.Error()})
	return &models.Evaluation{Evaluator: spec.Evaluator, EvaluatorVersion: "platform-error", Kind: models.EvaluationCheck,
		Verdict: models.OutcomeError, Details: string(details)}
}

// planned is one evaluator an attempt is graded by.
type planned struct {
	ev      eval.Evaluator
	kind    string
	primary bool
}

// plan lists the evaluators an attempt's benchmark calls for: its primary
// evaluator, built by its registry record (nil for one the registry does not
// know, or that builds none, as a judge does when none is configured), plus,
// when a judge is configured, the trajectory judge and (for tasks with rubric
// items) the rubric judge, unless the primary evaluator already is that judge.
// Without a judge, judge-graded benchmarks leave the attempt "not judged".
func plan(kinds *eval.Registry, spec *models.EpisodeSpec, judges Judges) []planned {
	var out []planned
	var tools eval.Tools
	if judges != nil {
		tools.Judges = judges
	}
	verdict := models.EvaluationCheck
	if kind, err := kinds.Kind(spec.Evaluator); err == nil {
		verdict = kind.Verdict
		if kind.New != nil {
			if ev := kind.New(tools); ev != nil {
				out = append(out, planned{ev, kind.Verdict, true})
			}
		}
	}
	if judges == nil {
		return out
	}
	if verdict != models.EvaluationJudge {
		out = append(out, planned{judges.Trajectory(), models.EvaluationJudge, false})
	}
	if verdict != models.EvaluationRubric && len(spec.Task.RubricItems) > 0 {
		out = append(out, planned{judges.Rubric(), models.EvaluationRubric, false})
	}
	return out
}

// evaluate runs the attempt's evaluators and gathers their verdicts. A Go
// error means the platform failed (an artifact it could not read) and the job
// is retried; every problem with the attempt itself is a verdict.
func (r *Runner) evaluate(ctx context.Context, spec *models.EpisodeSpec, log *slog.Logger) (models.EvaluationBatch, error) {
	var batch models.EvaluationBatch
	judges, err := r.judgesFor(spec.Judge)
	if err != nil && !errors.Is(err, errNoJudge) {
		log.Warn("judge unavailable", "run_id", spec.Run.ID, "err", err)
	}
	in, err := r.evaluationInput(ctx, spec)
	if err != nil {
		return batch, err
	}
	var rows []*models.Evaluation
	for _, p := range plan(r.evaluators, spec, judges) {
		res, err := r.runEvaluator(ctx, p, in)
		if err != nil {
			return batch, err
		}
		ev := evaluationRow(res, p.kind)
		rows = append(rows, ev)
		if p.primary {
			batch.Primary = ev
		} else {
			batch.Others = append(batch.Others, ev)
		}
	}
	// The checksum covers the HAR, which the checks read as a stream.
	sum, err := in.checksum(ctx)
	if err != nil {
		return batch, err
	}
	for _, ev := range rows {
		ev.InputsChecksum = sum
	}
	return batch, nil
}

// runEvaluator runs one evaluator. Checks read the HAR as a stream; judges
// run under their own time limit, and one that runs out gets an error verdict
// rather than failing the job.
func (r *Runner) runEvaluator(ctx context.Context, p planned, in *evaluationInput) (*eval.Result, error) {
	if p.kind == models.EvaluationCheck {
		har, done, err := in.openHAR(ctx)
		if err != nil {
			return nil, err
		}
		defer done()
		input := in.Input
		input.HAR = har
		return p.ev.Evaluate(ctx, input)
	}
	limit := judgeTimeout(r.opts.RescueAfter)
	jctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := p.ev.Evaluate(jctx, in.Input)
	if err != nil && ctx.Err() == nil && jctx.Err() != nil {
		details, _ := json.Marshal(map[string]string{"error_kind": "timeout", "error_msg": fmt.Sprintf("the judge did not finish within %s", limit)})
		return &eval.Result{Evaluator: p.ev.ID(), Verdict: models.OutcomeError, Details: details}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ev.ID(), err)
	}
	return res, nil
}

// evaluationRow turns an evaluator's result into the row that records it.
func evaluationRow(res *eval.Result, kind string) *models.Evaluation {
	score := res.Score
	ev := &models.Evaluation{
		Evaluator: res.Evaluator, EvaluatorVersion: res.Version, Kind: kind, Verdict: res.Verdict,
		Score: &score, JudgeScore: res.JudgeScore, Details: string(res.Details),
		TokensIn: res.Usage.InputTokens, TokensOut: res.Usage.OutputTokens, Cost: res.Usage.Cost,
	}
	for _, rv := range res.Rubric {
		ev.RubricJudgments = append(ev.RubricJudgments, models.RubricJudgment{
			RubricItemID: rv.ItemID, Passed: rv.Passed, Rationale: rv.Rationale, EvidenceSteps: models.JSONInts(rv.Steps),
		})
	}
	return ev
}

// evaluationInput is what the evaluators read. The HAR stays in the artifact
// store and is streamed to each check that reads it, hashed on the way.
type evaluationInput struct {
	eval.Input
	r      *Runner
	harKey string
	sum    hash.Hash // the inputs other than the HAR
	harSum []byte    // SHA-256 of the HAR, once read to its end
}

// evaluationInput gathers the evaluators' inputs: the task with its site
// placeholders resolved, the final answer, the live-page state and the
// trajectory (its screenshots loaded on demand), and starts the SHA-256 of
// them recorded with every verdict, so that a re-scoring on the same inputs
// can be told apart from one on changed inputs.
func (r *Runner) evaluationInput(ctx context.Context, spec *models.EpisodeSpec) (*evaluationInput, error) {
	sum := sha256.New()
	hashPart(sum, "eval_spec", []byte(spec.Task.EvalSpec))
	task := spec.Task
	if sites, err := models.ResolveSites(spec.Sites, spec.Namespace); err == nil {
		task.EvalSpec = sites.Resolve(task.EvalSpec)
		task.ReferenceAnswers = sites.Resolve(task.ReferenceAnswers)
	}
	hashPart(sum, "resolved_eval_spec", []byte(task.EvalSpec))
	hashPart(sum, "reference_answers", []byte(task.ReferenceAnswers))
	for _, it := range task.RubricItems {
		hashPart(sum, "rubric", fmt.Appendf(nil, "%s|%s|%s|%g", it.Key, it.Requirement, it.Verification, it.Weight))
	}
	in := &evaluationInput{r: r, harKey: spec.Attempt.HARKey, sum: sum, Input: eval.Input{
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
	state, err := r.readArtifact(ctx, spec.Attempt.PageStateKey, 64<<20)
	if err != nil && !errors.Is(err, errArtifactTooLarge) {
		return nil, err
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
		if key := s.AXTreeKey; key != "" {
			ts.Accessibility = func(ctx context.Context) (string, error) { return r.readArtifactText(ctx, key, maxAccessibilityText) }
		}
		in.Trajectory = append(in.Trajectory, ts)
	}
	return in, nil
}

// hashPart adds a named, length-prefixed part to an inputs checksum.
func hashPart(h hash.Hash, name string, b []byte) {
	fmt.Fprintf(h, "%s:%d:", name, len(b))
	h.Write(b)
}

// openHAR opens the HAR for one check: a stream hashed as it is read (the
// rest is hashed when the check is done), nil when the episode stored none.
// A HAR over the size limit reads as an error the check grades.
func (in *evaluationInput) openHAR(ctx context.Context) (io.Reader, func(), error) {
	if in.harKey == "" {
		return nil, func() {}, nil
	}
	rc, _, err := in.r.artifacts.Get(ctx, in.harKey)
	switch {
	case errors.Is(err, artifact.ErrNotFound):
		return nil, func() {}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("read HAR %s: %w", in.harKey, err)
	}
	h := sha256.New()
	// Over the limit, the HAR is graded as unreadable rather than retried.
	limited := har.LimitReader(io.TeeReader(rc, h), har.MaxBytes)
	done := func() {
		_, err := io.Copy(io.Discard, limited)
		switch {
		case in.harSum != nil:
		case err != nil:
			in.harSum = []byte("unreadable: " + err.Error())
		default:
			in.harSum = h.Sum(nil)
		}
		rc.Close()
	}
	return limited, done, nil
}

// checksum finishes the inputs checksum: the parts gathered so far and the
// HAR's own SHA-256 (streamed now if no check read it).
func (in *evaluationInput) checksum(ctx context.Context) (string, error) {
	if in.harSum == nil {
		_, done, err := in.openHAR(ctx)
		if err != nil {
			return "", err
		}
		done()
	}
	hashPart(in.sum, "har", in.harSum)
	return hex.EncodeToString(in.sum.Sum(nil)), nil
}

// maxAccessibilityText is how much of a step's accessibility text a judge
// may be given: far more than any token budget holds, so that the judge, not
// the read, decides what is trimmed.
const maxAccessibilityText = 1 << 20

// readArtifactText reads the start of a text artifact, at most limit bytes
// (cut at a character boundary and marked as cut); "" when key is empty or
// the artifact is missing.
func (r *Runner) readArtifactText(ctx context.Context, key string, limit int64) (string, error) {
	text, truncated, err := artifact.ReadText(ctx, r.artifacts, key, limit)
	switch {
	case errors.Is(err, artifact.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read artifact %s: %w", key, err)
	case truncated:
		return text + fmt.Sprintf("\n… (cut at %d KiB)", limit>>10), nil
	}
	return text, nil
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
