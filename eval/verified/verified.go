// Package verified is the WebArena-Verified evaluator: the AgentResponseEvaluator
// (task type, status and type-normalised retrieved data of the final answer)
// and the NetworkEventEvaluator (requests in the episode's HAR), written from
// the benchmark's documented semantics. A task scores 1 only when every
// evaluator does; a spec, answer or HAR that cannot be evaluated is an error
// verdict with a message naming the cause, never a silent pass.
package verified

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"proctor/eval"
	"proctor/har"
	"proctor/models"
)

// Version is recorded with every verdict of the official reading; bump it
// when the rules change so re-scored attempts can be told apart. Version 2
// reproduces the official webarena-verified 1.2.3 evaluator (the parity
// corpus test); version 1 read answers and values more leniently.
const Version = "webarena-verified@2"

// LenientVersion is recorded with every verdict of the lenient reading.
const LenientVersion = "webarena-verified-lenient@1"

// Evaluator grades attempts of WebArena-Verified-style benchmarks. The zero
// configuration (New) expects specs whose site placeholders are already
// resolved, as the runner does; WithSites lets it resolve them itself.
type Evaluator struct {
	sites   Sites
	maxHAR  int64
	re      *regexCache
	lenient bool
}

// New returns the evaluator that grades as the official webarena-verified
// package does.
func New() *Evaluator { return &Evaluator{maxHAR: har.MaxBytes, re: newRegexCache()} }

// NewLenient returns the lenient evaluator, which an administrator may choose
// for a benchmark instead of the official reading: it also accepts answers
// wrapped in prose, keys in any case, a currency sign on a number, hemisphere
// letters on coordinates, a one-item nested list, and so on
// (docs/evaluation.md lists every difference). Its verdicts are not the
// benchmark's official scores.
func NewLenient() *Evaluator {
	e := New()
	e.lenient = true
	return e
}

// WithSites returns a copy that knows the sites' URLs: placeholders in specs
// render to them, and recorded URLs and answers that use them compare as the
// placeholder (as WebArena-Verified's environment config does).
func (e *Evaluator) WithSites(s Sites) *Evaluator {
	c := *e
	c.sites = s
	return &c
}

// WithMaxHARBytes returns a copy that refuses HARs larger than n bytes.
func (e *Evaluator) WithMaxHARBytes(n int64) *Evaluator {
	c := *e
	c.maxHAR = n
	return &c
}

// ID names the evaluator: the benchmark evaluator kind it grades.
func (e *Evaluator) ID() string {
	if e.lenient {
		return models.EvaluatorWebArenaVerifiedLenient
	}
	return models.EvaluatorWebArenaVerified
}

// version is recorded with each verdict.
func (e *Evaluator) version() string {
	if e.lenient {
		return LenientVersion
	}
	return Version
}

// run is one evaluation.
type run struct {
	ev       *Evaluator
	sites    *siteMap
	taskType string
}

func (r *run) normalizer(strict bool, o urlOptions) *normalizer {
	return &normalizer{sites: r.sites, re: r.ev.re, url: o, strict: strict, lenient: r.ev.lenient}
}

// result is one evaluator's outcome before it becomes an eval.EvaluatorResult.
type result struct {
	actual         json.RawMessage
	actualNorm     any
	expected       any
	assertions     []assertion
	err            string
	shouldNotExist *bool
}

func errorResult(msg string) result { return result{err: msg} }

// Evaluate grades one attempt. Problems with the spec, the answer or the HAR
// give a Result with the verdict failure or error; only a canceled context or
// a missing task is a Go error.
func (e *Evaluator) Evaluate(ctx context.Context, in eval.Input) (*eval.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Task == nil {
		return nil, errors.New("evaluate: no task given")
	}
	if e.re == nil {
		fresh := New()
		fresh.lenient = e.lenient
		e = fresh.WithSites(e.sites)
	}
	det := &eval.Details{TaskID: in.Task.ExternalID, EvaluatorsResults: []eval.EvaluatorResult{}}
	specs, err := parseSpec(in.Task.EvalSpec, e.re)
	if err != nil {
		msg := err.Error()
		det.ErrorMsg = &msg
		return eval.Finish(e.ID(), e.version(), det)
	}
	r := &run{ev: e, sites: newSiteMap(e.sites, in.Task.Sites)}
	// Bodies are read only when a spec compares them: the rest of the HAR
	// streams past without them.
	needHAR, read := false, har.Options{MaxBytes: e.maxHAR}
	for _, s := range specs {
		if s.agent != nil {
			r.taskType = s.agent.taskType
		}
		if s.network != nil {
			needHAR = true
			read.RequestBodies = read.RequestBodies || s.network.postData != nil
			read.ResponseBodies = read.ResponseBodies || s.network.responseContent != nil
		}
	}
	var events []harEvent
	harErr := ""
	if needHAR {
		switch {
		case in.HAR == nil:
			harErr = "the episode recorded no HAR (network log), which the network checks need"
		default:
			events, err = readEvents(ctxReader{ctx, in.HAR}, read)
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			if err != nil {
				harErr = err.Error()
			}
		}
	}
	for _, s := range specs {
		var res result
		switch {
		case s.err != nil:
			res = errorResult(s.err.Error())
		case s.agent != nil:
			res = r.checkAgentResponse(s.agent, e.answerFromAction(in.Final))
		case harErr != "":
			res = errorResult(harErr)
		default:
			res = r.checkNetwork(s.network, events)
		}
		det.EvaluatorsResults = append(det.EvaluatorsResults, res.toEval(s))
	}
	return eval.Finish(e.ID(), e.version(), det)
}

// toEval renders the outcome in the eval_result.json shape. Assertions list
// what failed, plus notes on how a sloppy answer was read.
func (res result) toEval(s evaluatorSpec) eval.EvaluatorResult {
	out := eval.EvaluatorResult{
		EvaluatorName:    s.name,
		Status:           models.OutcomeSuccess,
		Score:            1,
		Actual:           rawOrNull(res.actual),
		ActualNormalized: mustJSON(showValue(res.actualNorm)),
		Expected:         mustJSON(showValue(res.expected)),
		Assertions:       []eval.Assertion{},
		ShouldNotExist:   res.shouldNotExist,
	}
	if res.expected == nil {
		out.Expected = rawOrNull(s.expected)
	}
	if res.err != "" {
		msg := res.err
		out.Status, out.Score, out.ErrorMsg = models.OutcomeError, 0, &msg
		return out
	}
	for _, a := range res.assertions {
		out.Assertions = append(out.Assertions, eval.Assertion{Name: a.name, Passed: a.passed, Message: strings.Join(a.msgs, "\n")})
		if !a.passed {
			out.Status, out.Score = models.OutcomeFailure, 0
		}
	}
	return out
}

func rawOrNull(raw json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// mustJSON encodes v, which holds only plain values; a failure is reported in
// place of the value.
func mustJSON(v any) json.RawMessage {
	return json.RawMessage(compactJSON(v))
}

// ctxReader stops reading a HAR when the evaluation is canceled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("read HAR: %w", err)
	}
	return c.r.Read(p)
}
