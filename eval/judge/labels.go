package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// LabelOptions is a study judge configuration's choice of prompt and of what
// the judge is shown. The model is the Client's (Config.Model).
type LabelOptions struct {
	// Prompt is a models.StudyPrompt* version: LabelsVersion answers every
	// label; the trajectory versions answer success and the score.
	Prompt string
	// Screenshots sends up to Config.MaxImages screenshots; off sends none.
	Screenshots bool
	// Accessibility adds each shown step's accessibility text, trimmed to fit
	// the token budget.
	Accessibility bool
	// Labels are the models.StudyLabel* names wanted; the verdict holds only
	// those, and the prompt is not asked when it answers none of them.
	// models.StudyLabelRubric has the rubric judge (RubricVersion) judge the
	// task's rubric items, each under models.RubricLabelKey as pass or fail
	// (a task without rubric items adds nothing). Empty means every label
	// the prompt answers, without rubric items.
	Labels []string
}

// PromptAnswers lists the labels a study prompt answers (models.StudyLabel*
// names), nil for an unknown prompt.
func PromptAnswers(version string) []string {
	switch version {
	case LabelsVersion:
		return []string{models.StudyLabelSuccess, models.StudyLabelScore, models.StudyLabelSideEffect, models.StudyLabelLooping, models.StudyLabelOptimality}
	case PromptTrajectory + "-v1", PromptTrajectory + "-v2":
		return []string{models.StudyLabelSuccess, models.StudyLabelScore}
	}
	return nil
}

// LabelVerdict is a study judgement: canonical label values (the spellings
// agreement.Spec.Parse returns) or, when the judge gave none, why.
type LabelVerdict struct {
	Model         string
	PromptVersion string // the main prompt, such as "labels-v1"
	PromptSHA256  string
	// RubricPromptVersion and RubricPromptSHA256 name the rubric judge's
	// prompt when rubric items were judged.
	RubricPromptVersion string
	RubricPromptSHA256  string
	// Labels maps models.StudyLabel* names, and RubricLabelKey keys, to
	// canonical values: success "successful" or "unsuccessful", side_effect
	// "yes", "no" or "unsure", looping "yes" or "no", optimality "1" to "4",
	// score "1" to "5", rubric items "pass" or "fail". Nil on error.
	Labels    map[string]string
	Rationale string
	// Usage is what every request of the judgement cost, failed ones included.
	Usage models.Usage
	// What the judge was shown, over all requests.
	ImagesSent        int
	AccessibilitySent int // steps shown with their accessibility text
	// ErrorKind (an Error kind) and Error say why there is no verdict: the
	// judge refused, timed out, replied off-format, or the rubric judge did.
	ErrorKind string
	Error     string
}

// Labels judges an attempt as a study judge configuration asks. Every
// outcome of a judge call is a LabelVerdict (with Error set when the judge
// gave no verdict); a Go error means a canceled context, a nil task, or an
// unknown prompt (EINVALID naming the known ones).
func (c *Client) Labels(ctx context.Context, in eval.Input, opts LabelOptions) (*LabelVerdict, error) {
	if err := started(ctx, in); err != nil {
		return nil, err
	}
	p, ok := c.studyPrompts[opts.Prompt]
	if !ok {
		known := make([]string, 0, len(c.studyPrompts))
		for v := range c.studyPrompts {
			known = append(known, v)
		}
		sort.Strings(known)
		return nil, models.FieldError("prompt", "unknown judge prompt %q (known: %s)", opts.Prompt, strings.Join(known, ", "))
	}
	answers := PromptAnswers(p.Version)
	wanted, rubric := map[string]bool{}, false
	for _, l := range opts.Labels {
		wanted[l] = true
		rubric = rubric || l == models.StudyLabelRubric
	}
	asked := len(opts.Labels) == 0
	for _, l := range answers {
		asked = asked || wanted[l]
	}
	if !asked && !rubric {
		return nil, models.FieldError("prompt", "the prompt %s answers %s, none of which is asked (asked: %s)", p.Version, strings.Join(answers, ", "), strings.Join(opts.Labels, ", "))
	}
	show := inputs{accessibility: opts.Accessibility}
	if opts.Screenshots {
		show.images = c.cfg.MaxImages
	}
	v := &LabelVerdict{Model: c.cfg.Model, PromptVersion: p.Version, PromptSHA256: p.SHA256, Labels: map[string]string{}}
	if asked {
		if err := c.promptLabels(ctx, in, p, show, v); err != nil {
			return nil, err
		}
		if v.Error != "" {
			return v, nil
		}
		for l := range v.Labels {
			if len(opts.Labels) > 0 && !wanted[l] {
				delete(v.Labels, l)
			}
		}
	}
	if rubric && len(in.Task.RubricItems) > 0 {
		if err := c.rubricLabels(ctx, in, show, v); err != nil {
			return nil, err
		}
		if !asked {
			// Only the rubric prompt was asked: it is the one the verdict cites.
			v.PromptVersion, v.PromptSHA256 = v.RubricPromptVersion, v.RubricPromptSHA256
		}
	}
	return v, nil
}

// promptLabels asks prompt p and sets v's labels and rationale, or turns v
// into an error verdict. The error is the context's end.
func (c *Client) promptLabels(ctx context.Context, in eval.Input, p *prompt, show inputs, v *LabelVerdict) error {
	conv, err := c.converse(ctx, p, &promptData{Intent: in.Task.Intent}, in, show)
	if err != nil {
		return v.failed(ctx, err)
	}
	v.shown(conv)
	parse := parseTrajectoryLabels
	if p.Name == PromptLabels {
		parse = parseLabelsReply
	}
	var labels map[string]string
	var rationale string
	ex, err := c.ask(ctx, conv.messages, func(reply string) (err error) {
		labels, rationale, err = parse(reply)
		return err
	})
	v.Usage = ex.usage
	if err != nil {
		return v.failed(ctx, err)
	}
	v.Labels, v.Rationale = labels, rationale
	return nil
}

// rubricLabels adds the rubric judge's pass or fail per rubric item to v, or
// turns v into an error verdict when the rubric judge gave none: a study
// verdict has every label it asks for or none.
func (c *Client) rubricLabels(ctx context.Context, in eval.Input, show inputs, v *LabelVerdict) error {
	p := c.prompts[PromptRubric]
	v.RubricPromptVersion, v.RubricPromptSHA256 = p.Version, p.SHA256
	res, err := (&rubricJudge{c: c}).judge(ctx, in, show)
	if err != nil {
		return err
	}
	v.Usage = addUsage(v.Usage, res.Usage)
	var d Details
	if err := json.Unmarshal(res.Details, &d); err != nil {
		return fmt.Errorf("read rubric judge details: %w", err)
	}
	v.ImagesSent += d.ImagesSent
	if res.Verdict == models.OutcomeError {
		msg := "the rubric judge gave no verdict"
		if d.ErrorMsg != nil {
			msg = "the rubric judge gave no verdict: " + *d.ErrorMsg
		}
		v.Labels, v.Rationale, v.ErrorKind, v.Error = nil, "", d.ErrorKind, msg
		return nil
	}
	for _, rv := range res.Rubric {
		answer := models.RubricFail
		if rv.Passed {
			answer = models.RubricPass
		}
		v.Labels[models.RubricLabelKey(rv.ItemID)] = answer
	}
	return nil
}

// shown records what the conversation showed the judge.
func (v *LabelVerdict) shown(conv *conversation) {
	v.ImagesSent += conv.imagesSent
	for i, view := range conv.summary.views {
		if view.ax != "" && conv.summary.level[i] < levelTerse {
			v.AccessibilitySent++
		}
	}
}

// failed turns v into an error verdict for a judgement that produced none;
// a canceled or expired parent context is returned as an error instead.
func (v *LabelVerdict) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("judge: %w", ctx.Err())
	}
	v.Labels, v.Rationale, v.Error = nil, "", err.Error()
	var jerr *Error
	if errors.As(err, &jerr) {
		v.ErrorKind, v.Error = jerr.Kind, jerr.Message
		v.Usage = jerr.Usage
	}
	return nil
}

// Canonical label values, as agreement.Spec.Parse spells them.
const (
	successful   = "successful"
	unsuccessful = "unsuccessful"
	yes, no      = "yes", "no"
	unsure       = "unsure"
)

// parseTrajectoryLabels reads a trajectory prompt's reply as study labels:
// success and the score.
func parseTrajectoryLabels(reply string) (map[string]string, string, error) {
	v, err := parseTrajectoryReply(reply)
	if err != nil {
		return nil, "", err
	}
	return map[string]string{
		models.StudyLabelSuccess: successValue(v.success),
		models.StudyLabelScore:   strconv.Itoa(v.score),
	}, v.rationale, nil
}

// parseLabelsReply reads the labels prompt's reply: {"success": bool,
// "side_effect": "yes" | "no" | "unsure", "looping": bool, "optimality":
// 1..4, "score": 1..5, "rationale": string} and nothing else, every field
// required and of its exact JSON type. Two answers that contradict each other
// are off-format, as the prompt defines them: success must agree with the
// score (4 or 5, as in the trajectory prompts), and a successful trajectory
// is never a complete failure (optimality 1). Side effects, looping and the
// other optimality levels are independent of success: an agent may reach the
// goal and also order the wrong item, or fail without looping.
func parseLabelsReply(reply string) (map[string]string, string, error) {
	raw, err := extractObject(reply)
	if err != nil {
		return nil, "", err
	}
	f, err := objectFields("the reply", raw)
	if err != nil {
		return nil, "", err
	}
	if err := f.only("success", "side_effect", "looping", "optimality", "score", "rationale"); err != nil {
		return nil, "", err
	}
	success, err := f.bool("success")
	if err != nil {
		return nil, "", err
	}
	sideEffect, err := f.oneOf("side_effect", yes, no, unsure)
	if err != nil {
		return nil, "", err
	}
	looping, err := f.bool("looping")
	if err != nil {
		return nil, "", err
	}
	optimality, err := f.int("optimality", 1, 4)
	if err != nil {
		return nil, "", err
	}
	score, err := f.int("score", 1, 5)
	if err != nil {
		return nil, "", err
	}
	rationale, err := f.string("rationale")
	if err != nil {
		return nil, "", err
	}
	switch {
	case success != (score >= 4):
		return nil, "", offf("the reply contradicts itself: success is %t but the score is %d (success means a score of 4 or 5)", success, score)
	case success && optimality == 1:
		return nil, "", offf("the reply contradicts itself: success is true but optimality is 1, a complete failure (a successful trajectory has optimality 2 to 4)")
	}
	loopingValue := no
	if looping {
		loopingValue = yes
	}
	return map[string]string{
		models.StudyLabelSuccess:    successValue(success),
		models.StudyLabelSideEffect: sideEffect,
		models.StudyLabelLooping:    loopingValue,
		models.StudyLabelOptimality: strconv.Itoa(optimality),
		models.StudyLabelScore:      strconv.Itoa(score),
	}, rationale, nil
}

// successValue spells a success verdict as the success label does.
func successValue(success bool) string {
	if success {
		return successful
	}
	return unsuccessful
}

// oneOf reads a member that must be a JSON string spelled exactly as one of
// values.
func (f *fields) oneOf(name string, values ...string) (string, error) {
	v, err := f.get(name)
	if err != nil {
		return "", err
	}
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		for _, allowed := range values {
			if s == allowed {
				return s, nil
			}
		}
	}
	return "", offf("%s: field %q must be one of the strings %s, got %s", f.where, name, strings.Join(quoteAll(values), ", "), kindOf(v))
}
