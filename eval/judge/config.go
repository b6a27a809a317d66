// Package judge holds Proctor's LLM judges: a trajectory judge (binary success
// and a 1–5 score), a rubric judge (pass/fail per weighted rubric item, as
// Odysseys grades) and original WebArena's fuzzy_match, all on any OpenAI
// chat-completions endpoint; and, for agreement studies, Labels, which
// answers AgentRewardBench's labels with a chosen prompt version, with or
// without screenshots and accessibility text. Replies are structured JSON parsed strictly: a
// reply of any other shape is an error verdict, never a verdict guessed from
// prose. Prompts are versioned, embedded files; every Result records the
// prompt's version and SHA-256.
package judge

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"proctor/models"
)

// Defaults applied by New to Config fields left at zero.
const (
	DefaultTimeout          = 120 * time.Second
	DefaultMaxRetries       = 3
	DefaultConcurrency      = 4
	DefaultMaxImages        = 6
	DefaultTokenBudget      = 32000
	DefaultBaseBackoff      = time.Second
	DefaultMaxBackoff       = time.Minute
	DefaultMaxResponseBytes = 4 << 20
	// MinTokenBudget is the smallest budget New accepts: the instructions, the
	// first and last steps and the final answer must fit.
	MinTokenBudget = 2000
)

// ErrNotConfigured is what New returns when no base URL is configured: the
// platform then constructs no judge and shows attempts as "not judged".
var ErrNotConfigured = errors.New("judge: no judge endpoint is configured (the base URL is empty)")

// Config configures a Client. Zero values take the defaults above; a negative
// MaxRetries or MaxImages turns retries or screenshots off.
type Config struct {
	// BaseURL is the OpenAI-compatible API root, such as https://api.openai.com/v1
	// or http://localhost:8000/v1; requests go to BaseURL + "/chat/completions".
	// A URL that already ends in /chat/completions is used as it is.
	BaseURL string
	Model   string
	APIKey  string // sent as "Authorization: Bearer …" when set
	// Timeout bounds one HTTP request to the endpoint (not the wait for a
	// concurrency slot, nor the backoff between retries).
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a 408, 429, 5xx,
	// timeout or network error; 0 means DefaultMaxRetries, negative none.
	MaxRetries int
	// Concurrency caps the requests in flight on this Client across all judges.
	Concurrency int
	// Prices in money per million tokens, turning usage into cost.
	PriceInputPerMTok, PriceOutputPerMTok float64
	// MaxImages caps the screenshots sent per judgement; 0 means
	// DefaultMaxImages, negative none.
	MaxImages int
	// TokenBudget caps the estimated input tokens of one request (text at about
	// four characters a token, a fixed cost per image).
	TokenBudget int
	// Temperature is sent with every request (0 by default, for repeatable
	// verdicts). OmitTemperature leaves it out, for models that accept only
	// their default, such as OpenAI's reasoning models.
	Temperature     float64
	OmitTemperature bool
	// BaseBackoff is the first retry's wait, doubled on each retry up to
	// MaxBackoff, with jitter; a Retry-After longer than MaxBackoff ends retrying.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// MaxResponseBytes caps the endpoint's response body.
	MaxResponseBytes int64
	// HTTPClient sends the requests; nil uses a plain client. The endpoint is
	// configured by the operator, so it needs no SSRF guard. New uses a copy
	// that follows no redirects, whatever the given client's CheckRedirect:
	// a redirect could carry the API key to another address.
	HTTPClient *http.Client
}

// withDefaults validates cfg and fills its zero fields. EINVALID errors name
// the offending field; an empty BaseURL is ErrNotConfigured.
func (cfg Config) withDefaults() (Config, string, error) {
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		return cfg, "", ErrNotConfigured
	}
	u, err := url.Parse(base)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return cfg, "", models.FieldError("base_url", "%q is not an http or https URL", base)
	case u.RawQuery != "" || u.Fragment != "":
		return cfg, "", models.FieldError("base_url", "the base URL must not have a query or a fragment")
	}
	endpoint := strings.TrimRight(base, "/")
	if !strings.HasSuffix(endpoint, "/chat/completions") {
		endpoint += "/chat/completions"
	}
	cfg.Model = strings.TrimSpace(cfg.Model)
	positive := []struct {
		field string
		bad   bool
	}{
		{"timeout", cfg.Timeout < 0},
		{"concurrency", cfg.Concurrency < 0},
		{"price_input_per_mtok", cfg.PriceInputPerMTok < 0},
		{"price_output_per_mtok", cfg.PriceOutputPerMTok < 0},
		{"token_budget", cfg.TokenBudget < 0},
		{"base_backoff", cfg.BaseBackoff < 0},
		{"max_backoff", cfg.MaxBackoff < 0},
		{"max_response_bytes", cfg.MaxResponseBytes < 0},
	}
	switch {
	case cfg.Model == "":
		return cfg, "", models.FieldError("model", "a judge needs a model name")
	case strings.ContainsAny(cfg.APIKey, "\r\n"):
		return cfg, "", models.FieldError("api_key", "the API key must be one line")
	case cfg.Temperature < 0 || cfg.Temperature > 2:
		return cfg, "", models.FieldError("temperature", "must be between 0 and 2")
	}
	for _, p := range positive {
		if p.bad {
			return cfg, "", models.FieldError(p.field, "must not be negative")
		}
	}
	if cfg.TokenBudget != 0 && cfg.TokenBudget < MinTokenBudget {
		return cfg, "", models.FieldError("token_budget", "must be at least %d tokens", MinTokenBudget)
	}
	setDefault(&cfg.Timeout, DefaultTimeout)
	setDefault(&cfg.MaxRetries, DefaultMaxRetries)
	setDefault(&cfg.Concurrency, DefaultConcurrency)
	setDefault(&cfg.MaxImages, DefaultMaxImages)
	setDefault(&cfg.TokenBudget, DefaultTokenBudget)
	setDefault(&cfg.BaseBackoff, DefaultBaseBackoff)
	setDefault(&cfg.MaxBackoff, DefaultMaxBackoff)
	setDefault(&cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	cfg.MaxRetries = max(cfg.MaxRetries, 0)
	cfg.MaxImages = max(cfg.MaxImages, 0)
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.BaseBackoff)
	client := http.Client{}
	if cfg.HTTPClient != nil {
		client = *cfg.HTTPClient // the caller's client keeps its own redirect policy
	}
	client.CheckRedirect = refuseRedirect
	cfg.HTTPClient = &client
	return cfg, endpoint, nil
}

// refuseRedirect makes the client return a redirect as it is, for send to
// report, instead of following it: the endpoint is the only address that may
// see a request and its Authorization header.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// setDefault replaces a zero *v with def.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
