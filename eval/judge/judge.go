package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"proctor/internal/chat"

	"proctor/eval"
	"proctor/models"
)

// maxRawReply caps the judge's reply as recorded in Details.
const maxRawReply = 4000

// Details is the shape of Result.Details for the trajectory and rubric judges.
// Success and Score are null when the verdict is an error; Score is the 1–5
// score of the trajectory judge and null for the rubric judge.
type Details struct {
	Judge         string `json:"judge"` // the evaluator id, such as "llm-judge:gpt-4o:trajectory-v2"
	Model         string `json:"model"`
	PromptVersion string `json:"prompt_version"`
	PromptSHA256  string `json:"prompt_sha256"`
	Success       *bool  `json:"success"`
	Score         *int   `json:"score"`
	Rationale     string `json:"rationale,omitempty"`
	// RawReply is the judge's reply, truncated to a few thousand characters.
	RawReply string `json:"raw_reply,omitempty"`
	// What the judge was shown: screenshots sent and left out because they could
	// not be loaded, steps shown (in full or abbreviated) of all steps, and the
	// estimated input tokens of the request.
	ImagesSent           int `json:"images_sent"`
	ImagesFailed         int `json:"images_failed,omitempty"`
	StepsSent            int `json:"steps_sent"`
	StepsTotal           int `json:"steps_total"`
	EstimatedInputTokens int `json:"estimated_input_tokens"`
	// Attempts counts HTTP requests, retries and the repair request included.
	Attempts int `json:"attempts"`
	// RepairCause is why the first reply was off-format when the judge was asked
	// once to correct it; empty when the first reply was accepted.
	RepairCause string  `json:"repair_cause,omitempty"`
	ErrorKind   string  `json:"error_kind,omitempty"` // an Error kind when the verdict is an error
	ErrorMsg    *string `json:"error_msg,omitempty"`
	// Rubric judge only.
	RubricScore *float64     `json:"rubric_score,omitempty"`
	Perfect     *bool        `json:"perfect,omitempty"`
	Weights     string       `json:"weights,omitempty"` // "given" or "equal" (all weights were zero)
	Items       []ItemDetail `json:"items,omitempty"`
}

// ItemDetail is one rubric item's verdict in Details.
type ItemDetail struct {
	ItemID    int64   `json:"item_id"`
	Key       string  `json:"key"`
	Weight    float64 `json:"weight"` // the weight used, after equal weighting
	Passed    bool    `json:"passed"`
	Rationale string  `json:"rationale"`
	Steps     []int   `json:"steps"`
}

// exchange is one judgement's conversation: the accepted reply and its cost.
type exchange struct {
	raw         string
	attempts    int
	usage       models.Usage
	repairCause string
}

// ask sends the conversation and parses the reply with parse. An off-format
// reply gets one repair request (the reply and the cause, asking for the JSON
// object again); a second off-format reply is an Error of KindOffFormat.
// Refusals and transport failures are not repaired.
func (c *Client) ask(ctx context.Context, messages []chat.Message, parse func(reply string) error) (*exchange, error) {
	ex := &exchange{}
	for round := 1; ; round++ {
		done, err := c.complete(ctx, messages)
		if err != nil {
			var jerr *Error
			if errors.As(err, &jerr) {
				jerr.Attempts += ex.attempts
				jerr.Usage = addUsage(jerr.Usage, ex.usage)
				ex.attempts, ex.usage = jerr.Attempts, jerr.Usage
			}
			return ex, err
		}
		ex.attempts += done.attempts
		ex.usage = addUsage(ex.usage, done.usage)
		ex.raw = done.content
		perr := parse(done.content)
		if perr == nil {
			return ex, nil
		}
		cause := perr.Error()
		if done.finishReason == "length" {
			cause += " (the reply was cut off at the token limit)"
		}
		if round == 2 {
			return ex, &Error{Kind: KindOffFormat, Attempts: ex.attempts, Usage: ex.usage,
				Message: fmt.Sprintf("the judge's reply is off-format: %s (after one request to correct an earlier reply: %s)", cause, ex.repairCause)}
		}
		ex.repairCause = cause
		messages = append(messages[:len(messages):len(messages)],
			chat.Message{Role: "assistant", Content: done.content},
			chat.Message{Role: "user", Content: "Your reply could not be read: " + cause + ". Reply again with exactly the one JSON object described above, with no other text."})
	}
}

// addUsage sums two usages.
func addUsage(a, b models.Usage) models.Usage {
	return models.Usage{InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens, Cost: a.Cost + b.Cost}
}

// conversation is a rendered judgement request and what it shows.
type conversation struct {
	messages     []chat.Message
	summary      *summary
	imagesSent   int
	imagesFailed int
	axFailed     int // accessibility texts that could not be loaded
	tokens       int
}

// inputs is what a judgement shows of the trajectory besides its steps' text:
// up to images screenshots, and each shown step's accessibility text when
// accessibility is set.
type inputs struct {
	images        int
	accessibility bool
}

// defaultInputs is what the platform's own judges show: the configured
// number of screenshots and no accessibility text.
func (c *Client) defaultInputs() inputs { return inputs{images: c.cfg.MaxImages} }

// converse renders prompt p on data with the trajectory fitted into the token
// budget, the screenshots loaded and attached after the text.
func (c *Client) converse(ctx context.Context, p *prompt, data *promptData, in eval.Input, show inputs) (*conversation, error) {
	views := viewsOf(in.Trajectory)
	axFailed := 0
	if show.accessibility {
		var err error
		if axFailed, err = loadAccessibility(ctx, views); err != nil {
			return nil, err
		}
	}
	data.Ending = ending(in)
	data.StepsTotal, data.StepsShown, data.Shortened = len(views), len(views), true
	data.Images = show.images
	data.Accessibility = show.accessibility
	system, user, err := p.render(data)
	if err != nil {
		return nil, err
	}
	overhead := estimateTokens(system) + estimateTokens(user)
	sum := summarize(views, show.images, c.cfg.TokenBudget-overhead)
	shots, failed, err := loadImages(ctx, sum)
	if err != nil {
		return nil, err
	}
	data.Steps = sum.text()
	data.StepsShown = sum.shown()
	data.Shortened = sum.shortened()
	data.Images = len(shots)
	if system, user, err = p.render(data); err != nil {
		return nil, err
	}
	conv := &conversation{summary: sum, imagesSent: len(shots), imagesFailed: failed, axFailed: axFailed}
	conv.tokens = estimateTokens(system) + estimateTokens(user)
	var content any = user
	if len(shots) > 0 {
		parts := []chat.Part{{Type: "text", Text: user}}
		for _, s := range shots {
			parts = append(parts, chat.Part{Type: "text", Text: imageLabel(s.step)},
				chat.Part{Type: "image_url", ImageURL: &chat.ImageURL{URL: s.dataURL}})
			conv.tokens += ImageTokens
		}
		content = parts
	}
	conv.messages = []chat.Message{{Role: "system", Content: system}, {Role: "user", Content: content}}
	return conv, nil
}

// newDetails starts a judgement's Details.
func (c *Client) newDetails(id string, p *prompt) *Details {
	return &Details{Judge: id, Model: c.cfg.Model, PromptVersion: p.Version, PromptSHA256: p.SHA256}
}

// shown records in d what the conversation showed the judge.
func (d *Details) shown(conv *conversation) {
	d.ImagesSent, d.ImagesFailed = conv.imagesSent, conv.imagesFailed
	d.StepsSent, d.StepsTotal = conv.summary.shown(), len(conv.summary.views)
	d.EstimatedInputTokens = conv.tokens
}

// exchanged records in d the conversation's outcome.
func (d *Details) exchanged(ex *exchange) {
	if ex == nil {
		return
	}
	d.Attempts = ex.attempts
	d.RawReply = truncate(ex.raw, maxRawReply)
	d.RepairCause = ex.repairCause
}

// finish turns Details into a Result.
func finish(id, version, verdict string, score float64, d *Details, usage models.Usage) (*eval.Result, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode judge details: %w", err)
	}
	return &eval.Result{Evaluator: id, Version: version, Verdict: verdict, Score: score, Details: raw, Usage: usage}, nil
}

// failed turns a judgement that produced no verdict into an error Result. A
// canceled or expired parent context is returned as a Go error instead.
func failed(ctx context.Context, id, version string, d *Details, usage models.Usage, err error) (*eval.Result, error) {
	if ctx.Err() != nil {
		return nil, fmt.Errorf("judge: %w", ctx.Err())
	}
	msg := err.Error()
	var jerr *Error
	if errors.As(err, &jerr) {
		msg, d.ErrorKind = jerr.Message, jerr.Kind
		d.Attempts = jerr.Attempts
		usage = jerr.Usage
	}
	d.Success, d.Score = nil, nil
	d.ErrorMsg = &msg
	return finish(id, version, models.OutcomeError, 0, d, usage)
}

// errNoTask is Evaluate's answer to an Input without a task.
var errNoTask = errors.New("judge: no task given")

// started checks what makes Evaluate return a Go error rather than a Result.
func started(ctx context.Context, in eval.Input) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if in.Task == nil {
		return errNoTask
	}
	return nil
}
