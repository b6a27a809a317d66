package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"proctor/eval"
	"proctor/eval/judge"
	"proctor/models"
)

// Judges are the LLM judges of one endpoint and model: a trajectory judge
// (success and a 1–5 score), a rubric judge, the fuzzy matcher original
// WebArena's fuzzy_match asks, and the labels an agreement study's judge
// configuration asks for. Implemented by *judge.Client.
type Judges interface {
	Trajectory() eval.Evaluator
	Rubric() eval.Evaluator
	eval.FuzzyMatcher
	Labels(ctx context.Context, in eval.Input, opts judge.LabelOptions) (*judge.LabelVerdict, error)
}

// JudgeFactory builds the judges of an endpoint. Settings with an empty
// BaseURL name the server's judge: with its model, or with Model when set (a
// study's judge configuration choosing another model on the server's
// endpoint).
type JudgeFactory func(models.JudgeSettings) (Judges, error)

// errNoJudge means no judge is configured: attempts stay "not judged".
var errNoJudge = errors.New("no LLM judge is configured")

// judgeCache keeps one judge client per endpoint, so that each endpoint's
// concurrency cap holds across all evaluations of this process.
type judgeCache struct {
	factory JudgeFactory
	mu      sync.Mutex
	byKey   map[models.JudgeSettings]Judges
}

// judgesFor returns the judges for a benchmark's settings: its own endpoint
// when it names one, else the server's. Nil and errNoJudge when there is none.
func (r *Runner) judgesFor(s models.JudgeSettings) (Judges, error) {
	c := &r.judges
	if c.factory == nil {
		return nil, errNoJudge
	}
	if s.KeyError != "" {
		return nil, fmt.Errorf("the benchmark's judge key cannot be opened, so its judge is not used: %s", s.KeyError)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := c.byKey[s]; ok {
		return j, nil
	}
	j, err := c.factory(s)
	if err != nil {
		return nil, fmt.Errorf("judge %s: %w", s.BaseURL, err)
	}
	if j == nil {
		return nil, errNoJudge
	}
	if c.byKey == nil {
		c.byKey = map[models.JudgeSettings]Judges{}
	}
	c.byKey[s] = j
	return j, nil
}
