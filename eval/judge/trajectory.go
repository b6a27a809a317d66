package judge

import (
	"context"

	"proctor/eval"
	"proctor/models"
)

// trajectoryJudge grades a whole trajectory: success or failure, and a 1–5 score.
type trajectoryJudge struct{ c *Client }

// Trajectory returns the trajectory judge: a binary success verdict (Score 1
// or 0) with a 1–5 JudgeScore and a rationale, from the task's intent, the
// steps, their screenshots and how the episode ended.
func (c *Client) Trajectory() eval.Evaluator { return &trajectoryJudge{c: c} }

// ID is "llm-judge:<model>:" + TrajectoryVersion, such as "llm-judge:gpt-4o:trajectory-v2".
func (j *trajectoryJudge) ID() string {
	return models.EvaluatorLLMJudge + ":" + j.c.cfg.Model + ":" + TrajectoryVersion
}

// trajectoryVerdict is the judge's parsed reply.
type trajectoryVerdict struct {
	success   bool
	score     int
	rationale string
}

// parseTrajectoryReply reads {"success": bool, "score": 1..5, "rationale":
// string} and nothing else; success must agree with the score (4 or 5).
func parseTrajectoryReply(reply string) (*trajectoryVerdict, error) {
	raw, err := extractObject(reply)
	if err != nil {
		return nil, err
	}
	f, err := objectFields("the reply", raw)
	if err != nil {
		return nil, err
	}
	if err := f.only("success", "score", "rationale"); err != nil {
		return nil, err
	}
	var v trajectoryVerdict
	if v.success, err = f.bool("success"); err != nil {
		return nil, err
	}
	if v.score, err = f.int("score", 1, 5); err != nil {
		return nil, err
	}
	if v.rationale, err = f.string("rationale"); err != nil {
		return nil, err
	}
	if v.success != (v.score >= 4) {
		return nil, offf("the reply contradicts itself: success is %t but the score is %d (success means a score of 4 or 5)", v.success, v.score)
	}
	return &v, nil
}

// Evaluate judges the attempt. Every outcome of the judge call is a Result
// (an error verdict when the judge refused, timed out or replied off-format);
// only a canceled context or a nil task is a Go error.
func (j *trajectoryJudge) Evaluate(ctx context.Context, in eval.Input) (*eval.Result, error) {
	if err := started(ctx, in); err != nil {
		return nil, err
	}
	p := j.c.prompts[PromptTrajectory]
	d := j.c.newDetails(j.ID(), p)
	conv, err := j.c.converse(ctx, p, &promptData{Intent: in.Task.Intent}, in, j.c.defaultInputs())
	if err != nil {
		return failed(ctx, j.ID(), p.Version, d, models.Usage{}, err)
	}
	d.shown(conv)
	var verdict *trajectoryVerdict
	ex, err := j.c.ask(ctx, conv.messages, func(reply string) (err error) {
		verdict, err = parseTrajectoryReply(reply)
		return err
	})
	d.exchanged(ex)
	if err != nil {
		return failed(ctx, j.ID(), p.Version, d, ex.usage, err)
	}
	d.Success, d.Score, d.Rationale = &verdict.success, &verdict.score, verdict.rationale
	outcome, score := models.OutcomeFailure, 0.0
	if verdict.success {
		outcome, score = models.OutcomeSuccess, 1
	}
	res, err := finish(j.ID(), p.Version, outcome, score, d, ex.usage)
	if err != nil {
		return nil, err
	}
	res.JudgeScore = &verdict.score
	return res, nil
}
