package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"proctor/internal/chat"
	"strconv"
	"strings"
	"time"

	"proctor/models"
)

// Client judges through one chat-completions endpoint. Its judges share one
// concurrency cap; it is safe for concurrent use.
type Client struct {
	cfg      Config
	endpoint string
	slots    chan struct{}      // a token per request in flight
	prompts  map[string]*prompt // the platform's judges' prompts, by name
	// studyPrompts are the prompts a study judge configuration may choose,
	// by version (models.StudyPrompts).
	studyPrompts map[string]*prompt
	// sleep waits between retries; tests replace it to observe the waits.
	sleep func(ctx context.Context, d time.Duration) error
}

// New validates cfg and returns a Client. It returns ErrNotConfigured when
// cfg.BaseURL is empty, and an EINVALID models.Error naming the field otherwise.
func New(cfg Config) (*Client, error) {
	cfg, endpoint, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	prompts, studyPrompts, err := loadPrompts()
	if err != nil {
		return nil, err
	}
	return &Client{
		cfg:          cfg,
		endpoint:     endpoint,
		slots:        make(chan struct{}, cfg.Concurrency),
		prompts:      prompts,
		studyPrompts: studyPrompts,
		sleep:        sleepContext,
	}, nil
}

// Model is the judge model's name.
func (c *Client) Model() string { return c.cfg.Model }

// Endpoint is the chat-completions URL requests go to.
func (c *Client) Endpoint() string { return c.endpoint }

// Kinds of Error: why a judge call produced no verdict.
const (
	KindRefused     = "refused"      // the model declined, was filtered, or said nothing
	KindOffFormat   = "off_format"   // the reply is not the JSON object the prompt asks for
	KindTimeout     = "timeout"      // no reply within Config.Timeout, after the retries
	KindUnavailable = "unavailable"  // network errors, 408, 429 or 5xx, after the retries
	KindRejected    = "rejected"     // the endpoint refused the request (another 4xx)
	KindBadResponse = "bad_response" // the endpoint's answer is not a chat completion, or too large
)

// Error says why a judge call produced no verdict. Message is safe to show:
// it never holds the API key.
type Error struct {
	Kind     string
	Message  string
	Attempts int          // HTTP requests made
	Usage    models.Usage // what the requests that were answered cost
	Err      error
}

// Error returns the message and the internal cause.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// completion is one answered request: the reply text and what it cost.
type completion struct {
	content      string
	finishReason string
	usage        models.Usage
	attempts     int
}

// retryable is a failed request worth repeating, with the wait the server
// asked for (Retry-After), if any.
type retryable struct {
	err        *Error
	retryAfter time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }

// complete sends messages and returns the model's reply. It retries timeouts,
// network errors, 408, 429 and 5xx with exponential backoff and jitter,
// honouring Retry-After. The returned error is an *Error, or the parent
// context's error when ctx ends.
func (c *Client) complete(ctx context.Context, messages []chat.Message) (*completion, error) {
	req := chat.Request{Model: c.cfg.Model, Messages: messages, ResponseFormat: &chat.ResponseFormat{Type: "json_object"}}
	if !c.cfg.OmitTemperature {
		req.Temperature = &c.cfg.Temperature
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode chat request: %w", err)
	}
	for attempt := 1; ; attempt++ {
		done, err := c.send(ctx, body)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("judge request: %w", ctx.Err())
		}
		if err == nil {
			done.attempts = attempt
			return done, nil
		}
		var retry *retryable
		if !errors.As(err, &retry) {
			var jerr *Error
			if errors.As(err, &jerr) {
				jerr.Attempts = attempt
			}
			return nil, err
		}
		retry.err.Attempts = attempt
		if attempt > c.cfg.MaxRetries {
			if retry.err.Kind == KindTimeout {
				retry.err.Message = fmt.Sprintf("the judge timed out: no reply within %s (%d attempts)", c.cfg.Timeout, attempt)
			} else {
				retry.err.Message += fmt.Sprintf(" (%d attempts)", attempt)
			}
			return nil, retry.err
		}
		wait := c.backoff(attempt)
		if retry.retryAfter > c.cfg.MaxBackoff {
			retry.err.Message += fmt.Sprintf(" and asked to retry after %s, longer than the judge waits (%s)", retry.retryAfter, c.cfg.MaxBackoff)
			return nil, retry.err
		}
		wait = max(wait, retry.retryAfter)
		if err := c.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("judge request: %w", err)
		}
	}
}

// send makes one HTTP request within a concurrency slot and Config.Timeout.
func (c *Client) send(ctx context.Context, body []byte) (*completion, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.slots }()
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()

	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Kind: KindRejected, Message: "the judge request could not be built", Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "Proctor-judge/1")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, c.transportError(actx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, c.transportError(actx, err)
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return nil, &Error{Kind: KindBadResponse, Message: fmt.Sprintf("the judge endpoint's answer is larger than %d bytes", c.cfg.MaxResponseBytes)}
	}
	switch code := resp.StatusCode; {
	case code >= 300 && code <= 399:
		return nil, c.redirected(code, resp.Header.Get("Location"))
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return nil, &retryable{
			err:        &Error{Kind: KindUnavailable, Message: fmt.Sprintf("the judge endpoint answered HTTP %d%s", code, c.snippet(data))},
			retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
		}
	case code < 200 || code > 299:
		return nil, &Error{Kind: KindRejected, Message: fmt.Sprintf("the judge endpoint rejected the request: HTTP %d%s", code, c.snippet(data))}
	}
	return c.parseCompletion(data)
}

// redirected is the error for a redirect, which is never followed (see
// refuseRedirect) nor retried: a moved endpoint is a configuration to fix.
func (c *Client) redirected(code int, location string) error {
	if location = strings.TrimSpace(location); location == "" {
		return &Error{Kind: KindUnavailable, Message: fmt.Sprintf("the judge endpoint answered HTTP %d, a redirect without a location; redirects are not followed", code)}
	}
	return &Error{Kind: KindUnavailable, Message: fmt.Sprintf("the judge endpoint redirected to %s (HTTP %d); redirects are not followed", truncate(c.redact(oneLine(location)), 300), code)}
}

// transportError classifies a failed round trip: a timeout of this attempt or
// a network error, both retried. The parent context's end is checked by the caller.
func (c *Client) transportError(actx context.Context, err error) error {
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return &retryable{err: &Error{Kind: KindTimeout, Message: fmt.Sprintf("the judge timed out: no reply within %s", c.cfg.Timeout), Err: err}}
	}
	return &retryable{err: &Error{Kind: KindUnavailable, Message: "the judge endpoint could not be reached: " + c.redact(err.Error())}}
}

// parseCompletion reads the chat completion: its text, or why there is none.
func (c *Client) parseCompletion(data []byte) (*completion, error) {
	var chat chat.Response
	if err := json.Unmarshal(data, &chat); err != nil {
		return nil, &Error{Kind: KindBadResponse, Message: "the judge endpoint's answer is not a chat completion" + c.snippet(data), Err: err}
	}
	done := &completion{}
	if chat.Usage != nil {
		done.usage = c.price(max(chat.Usage.PromptTokens, 0), max(chat.Usage.CompletionTokens, 0))
	}
	if len(chat.Choices) == 0 {
		return nil, &Error{Kind: KindBadResponse, Message: "the judge's chat completion has no choices", Usage: done.usage}
	}
	choice := chat.Choices[0]
	done.finishReason = choice.FinishReason
	content, err := messageText(choice.Message.Content)
	if err != nil {
		return nil, &Error{Kind: KindBadResponse, Message: "the judge's message content is neither text nor a list of parts", Usage: done.usage, Err: err}
	}
	done.content = content
	switch {
	case choice.Message.Refusal != nil && strings.TrimSpace(*choice.Message.Refusal) != "":
		return nil, &Error{Kind: KindRefused, Message: "the judge refused: " + truncate(strings.TrimSpace(*choice.Message.Refusal), 500), Usage: done.usage}
	case choice.FinishReason == "content_filter":
		return nil, &Error{Kind: KindRefused, Message: "the judge refused: its reply was stopped by the content filter", Usage: done.usage}
	case strings.TrimSpace(content) == "" && choice.FinishReason == "length":
		return nil, &Error{Kind: KindOffFormat, Message: "the judge's reply is off-format: it was cut off at the token limit before any text", Usage: done.usage}
	case strings.TrimSpace(content) == "":
		return nil, &Error{Kind: KindRefused, Message: "the judge refused: its reply is empty", Usage: done.usage}
	}
	return done, nil
}

// price turns token counts into Usage at the configured prices.
func (c *Client) price(in, out int64) models.Usage {
	return models.Usage{
		InputTokens:  in,
		OutputTokens: out,
		Cost:         float64(in)*c.cfg.PriceInputPerMTok/1e6 + float64(out)*c.cfg.PriceOutputPerMTok/1e6,
	}
}

// backoff is the wait before retry n (from 1): BaseBackoff doubled per retry
// up to MaxBackoff, of which a random half is jitter, so that judges failing
// together do not come back together.
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.BaseBackoff
	for i := 1; i < n && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	half := d / 2
	return half + rand.N(d-half+1)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; 0 when
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// snippet quotes the start of an error body for messages, API key removed.
func (c *Client) snippet(data []byte) string {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return ""
	}
	return ": " + truncate(c.redact(s), 300)
}

// redact removes the API key from text that may echo the request.
func (c *Client) redact(s string) string {
	if c.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.APIKey, "[redacted]")
}

// messageText returns a message's content, which servers send as a string, as
// a list of parts, or as null.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []chat.Part
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// sleepContext waits d or until ctx ends.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
