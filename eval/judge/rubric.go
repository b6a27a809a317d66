package judge

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// rubricJudge grades each rubric item of a task pass or fail over the whole
// trajectory, as Odysseys does.
type rubricJudge struct{ c *Client }

// Rubric returns the rubric judge: one pass/fail verdict with a rationale and
// evidencing steps per rubric item; Score is the weighted share of items passed
// (equal weights when all are zero), and the verdict is a success only when
// every item passes ("perfect").
func (c *Client) Rubric() eval.Evaluator { return &rubricJudge{c: c} }

// ID is "llm-judge:<model>:" + RubricVersion, such as "llm-judge:gpt-4o:rubric-v2".
func (j *rubricJudge) ID() string {
	return models.EvaluatorLLMJudge + ":" + j.c.cfg.Model + ":" + RubricVersion
}

// rubricItem is a task's rubric item with the key the prompt names it by and
// the weight it counts for.
type rubricItem struct {
	models.RubricItem
	key    string
	weight float64
}

// rubricItems orders the task's items by position, keys them (their own keys
// when present and distinct, R1, R2, … otherwise) and settles their weights.
func rubricItems(task *models.Task) (items []rubricItem, weights string, err error) {
	sorted := slices.Clone(task.RubricItems)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Position < sorted[j].Position })
	keys, ownKeys := map[string]bool{}, true
	for _, it := range sorted {
		k := strings.TrimSpace(it.Key)
		ownKeys = ownKeys && k != "" && !keys[k]
		keys[k] = true
	}
	total := 0.0
	for i, it := range sorted {
		key := strings.TrimSpace(it.Key)
		if !ownKeys {
			key = fmt.Sprintf("R%d", i+1)
		}
		if it.Weight < 0 || math.IsNaN(it.Weight) || math.IsInf(it.Weight, 0) {
			return nil, "", fmt.Errorf("rubric item %s has an invalid weight %v", key, it.Weight)
		}
		total += it.Weight
		items = append(items, rubricItem{RubricItem: it, key: key, weight: it.Weight})
	}
	weights = "given"
	if total == 0 {
		weights = "equal"
		for i := range items {
			items[i].weight = 1
		}
	}
	return items, weights, nil
}

// itemVerdict is the judge's verdict on one item.
type itemVerdict struct {
	passed    bool
	rationale string
	steps     []int
}

// parseRubricReply reads {"items": [{"key", "passed", "rationale", "steps"}]}
// with exactly one entry per item; a missing, unknown or repeated key, or a
// step that is not in the trajectory, is off-format.
func parseRubricReply(reply string, items []rubricItem, steps map[int]bool) (map[string]itemVerdict, error) {
	raw, err := extractObject(reply)
	if err != nil {
		return nil, err
	}
	f, err := objectFields("the reply", raw)
	if err != nil {
		return nil, err
	}
	if err := f.only("items"); err != nil {
		return nil, err
	}
	entries, err := f.array("items")
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, it := range items {
		known[it.key] = true
	}
	verdicts := map[string]itemVerdict{}
	seen := map[string]bool{}
	var unknown []string
	for i, entry := range entries {
		e, err := objectFields(fmt.Sprintf("items[%d]", i), entry)
		if err != nil {
			return nil, err
		}
		if err := e.only("key", "passed", "rationale", "steps"); err != nil {
			return nil, err
		}
		key, err := e.string("key")
		if err != nil {
			return nil, err
		}
		var v itemVerdict
		if v.passed, err = e.bool("passed"); err != nil {
			return nil, err
		}
		if v.rationale, err = e.string("rationale"); err != nil {
			return nil, err
		}
		if v.steps, err = stepNumbers(e, steps); err != nil {
			return nil, err
		}
		switch {
		case seen[key]:
			return nil, offf("the reply judges rubric item %s more than once", quoteShort(key))
		case !known[key]:
			unknown = append(unknown, key)
		}
		seen[key] = true
		verdicts[key] = v
	}
	var missing []string
	for _, it := range items {
		if _, ok := verdicts[it.key]; !ok {
			missing = append(missing, it.key)
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "it lacks rubric items "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		problems = append(problems, "it names unknown rubric items "+quoteList(unknown))
	}
	if len(problems) > 0 {
		return nil, offf("the reply does not judge the rubric's items: %s", strings.Join(problems, "; "))
	}
	return verdicts, nil
}

// maxQuotedKeys caps how many unknown keys a message quotes.
const maxQuotedKeys = 5

// quoteList quotes the first few of keys from a reply, each cut short.
func quoteList(keys []string) string {
	var short []string
	for _, k := range keys[:min(len(keys), maxQuotedKeys)] {
		short = append(short, quoteShort(k))
	}
	list := strings.Join(short, ", ")
	if more := len(keys) - maxQuotedKeys; more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return list
}

// stepNumbers reads an item's "steps": integers naming steps of the trajectory.
func stepNumbers(e *fields, steps map[int]bool) ([]int, error) {
	raws, err := e.array("steps")
	if err != nil {
		return nil, err
	}
	out := []int{}
	for _, r := range raws {
		n, ok := integer(r)
		if !ok {
			return nil, offf("%s: \"steps\" must hold step numbers (integers), got %s", e.where, kindOf(r))
		}
		if !steps[n] {
			return nil, offf("%s: step %d is not a step of this trajectory (it has %d)", e.where, n, len(steps))
		}
		out = append(out, n)
	}
	return out, nil
}

// Evaluate judges every rubric item of the task. A task without rubric items,
// a bad weight, a refusal, a timeout or an off-format reply is an error
// verdict; only a canceled context or a nil task is a Go error.
func (j *rubricJudge) Evaluate(ctx context.Context, in eval.Input) (*eval.Result, error) {
	if err := started(ctx, in); err != nil {
		return nil, err
	}
	return j.judge(ctx, in, j.c.defaultInputs())
}

// judge is Evaluate showing the trajectory as show says.
func (j *rubricJudge) judge(ctx context.Context, in eval.Input, show inputs) (*eval.Result, error) {
	p := j.c.prompts[PromptRubric]
	d := j.c.newDetails(j.ID(), p)
	items, weights, err := rubricItems(in.Task)
	if err == nil && len(items) == 0 {
		err = fmt.Errorf("the task has no rubric items to judge")
	}
	if err != nil {
		return failed(ctx, j.ID(), p.Version, d, models.Usage{}, err)
	}
	d.Weights = weights
	data := &promptData{Intent: in.Task.Intent}
	for _, it := range items {
		data.Items = append(data.Items, promptItem{Key: it.key, Requirement: oneLine(it.Requirement), Verification: oneLine(it.Verification)})
	}
	conv, err := j.c.converse(ctx, p, data, in, show)
	if err != nil {
		return failed(ctx, j.ID(), p.Version, d, models.Usage{}, err)
	}
	d.shown(conv)
	steps := map[int]bool{}
	for _, s := range in.Trajectory {
		steps[s.Index+1] = true
	}
	var verdicts map[string]itemVerdict
	ex, err := j.c.ask(ctx, conv.messages, func(reply string) (err error) {
		verdicts, err = parseRubricReply(reply, items, steps)
		return err
	})
	d.exchanged(ex)
	if err != nil {
		return failed(ctx, j.ID(), p.Version, d, ex.usage, err)
	}
	var passed, total float64
	perfect := true
	rubric := make([]eval.RubricVerdict, 0, len(items))
	for _, it := range items {
		v := verdicts[it.key]
		total += it.weight
		if v.passed {
			passed += it.weight
		}
		perfect = perfect && v.passed
		rubric = append(rubric, eval.RubricVerdict{ItemID: it.ID, Key: it.key, Passed: v.passed, Rationale: v.rationale, Steps: v.steps})
		d.Items = append(d.Items, ItemDetail{ItemID: it.ID, Key: it.key, Weight: it.weight, Passed: v.passed, Rationale: v.rationale, Steps: v.steps})
	}
	score := passed / total
	d.RubricScore, d.Perfect, d.Success = &score, &perfect, &perfect
	outcome := models.OutcomeFailure
	if perfect {
		outcome = models.OutcomeSuccess
	}
	res, err := finish(j.ID(), p.Version, outcome, score, d, ex.usage)
	if err != nil {
		return nil, err
	}
	res.Rubric = rubric
	return res, nil
}
