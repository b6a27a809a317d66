package judge

import (
	"context"
	"errors"
	"proctor/internal/chat"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// maxFuzzyText caps the reference and the answer in a fuzzy-match prompt.
const maxFuzzyText = 4000

// FuzzyVerdict is the judge's decision on one fuzzy match, with what the
// platform records next to it.
type FuzzyVerdict struct {
	Equivalent    bool
	Rationale     string
	Usage         models.Usage
	Attempts      int
	PromptVersion string
	PromptSHA256  string
	RawReply      string
}

// FuzzyJudge asks whether answer means the same as reference for the task
// (original WebArena's fuzzy_match). An empty answer is not equivalent and
// costs no call. The error is an *Error (refused, off-format, timeout, …) or
// the context's error.
func (c *Client) FuzzyJudge(ctx context.Context, intent, reference, answer string) (*FuzzyVerdict, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := c.prompts[PromptFuzzyMatch]
	v := &FuzzyVerdict{PromptVersion: p.Version, PromptSHA256: p.SHA256}
	if strings.TrimSpace(answer) == "" {
		v.Rationale = "the answer is empty"
		return v, nil
	}
	system, user, err := p.render(&promptData{Intent: intent, Reference: truncate(reference, maxFuzzyText), Answer: truncate(answer, maxFuzzyText)})
	if err != nil {
		return nil, err
	}
	messages := []chat.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}
	ex, err := c.ask(ctx, messages, func(reply string) error {
		raw, err := extractObject(reply)
		if err != nil {
			return err
		}
		f, err := objectFields("the reply", raw)
		if err != nil {
			return err
		}
		if err := f.only("equivalent", "rationale"); err != nil {
			return err
		}
		if v.Equivalent, err = f.bool("equivalent"); err != nil {
			return err
		}
		v.Rationale, err = f.string("rationale")
		return err
	})
	v.Usage, v.Attempts, v.RawReply = ex.usage, ex.attempts, truncate(ex.raw, maxRawReply)
	if err != nil {
		// A reply read only in part decides nothing and explains nothing.
		v.Equivalent, v.Rationale = false, ""
		return v, err
	}
	return v, nil
}

// The LLM judge serves original WebArena's fuzzy_match.
var _ eval.FuzzyMatcher = (*Client)(nil)

// FuzzyMatch implements eval.FuzzyMatcher with FuzzyJudge: whether answer
// means the same as reference, and what asking cost. Any failure to get a
// verdict is an error (an *Error, or the context's error), never a guess.
func (c *Client) FuzzyMatch(ctx context.Context, intent, reference, answer string) (bool, models.Usage, error) {
	v, err := c.FuzzyJudge(ctx, intent, reference, answer)
	if err != nil {
		var usage models.Usage
		var jerr *Error
		if errors.As(err, &jerr) {
			usage = jerr.Usage
		}
		return false, usage, err
	}
	return v.Equivalent, v.Usage, nil
}
