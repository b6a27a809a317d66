package judge

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestNew_Config(t *testing.T) {
	t.Parallel()

	t.Run("ErrNotConfigured", func(t *testing.T) {
		t.Parallel()
		for _, base := range []string{"", "   "} {
			c, err := New(Config{BaseURL: base, Model: "m"})
			require.ErrorIs(t, err, ErrNotConfigured)
			require.Nil(t, c)
		}
	})

	t.Run("Endpoint", func(t *testing.T) {
		t.Parallel()
		for base, want := range map[string]string{
			"http://judge.test/v1":                       "http://judge.test/v1/chat/completions",
			"http://judge.test/v1/":                      "http://judge.test/v1/chat/completions",
			"https://judge.test/v1//":                    "https://judge.test/v1/chat/completions",
			"https://judge.test":                         "https://judge.test/chat/completions",
			"https://judge.test/openai/v1beta":           "https://judge.test/openai/v1beta/chat/completions",
			"http://judge.test:8000/v1/chat/completions": "http://judge.test:8000/v1/chat/completions",
		} {
			c, err := New(Config{BaseURL: base, Model: "m"})
			require.NoError(t, err, base)
			require.Equal(t, want, c.Endpoint(), base)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		ok := Config{BaseURL: "http://judge.test/v1", Model: "m"}
		for _, tc := range []struct {
			name   string
			adjust func(*Config)
			field  string
		}{
			{"ftp", func(c *Config) { c.BaseURL = "ftp://judge.test/v1" }, "base_url"},
			{"no scheme", func(c *Config) { c.BaseURL = "judge.test/v1" }, "base_url"},
			{"no host", func(c *Config) { c.BaseURL = "http:///v1" }, "base_url"},
			{"query", func(c *Config) { c.BaseURL = "http://judge.test/v1?key=1" }, "base_url"},
			{"no model", func(c *Config) { c.Model = " " }, "model"},
			{"two-line key", func(c *Config) { c.APIKey = "a\nb" }, "api_key"},
			{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "timeout"},
			{"negative concurrency", func(c *Config) { c.Concurrency = -1 }, "concurrency"},
			{"negative price", func(c *Config) { c.PriceInputPerMTok = -1 }, "price_input_per_mtok"},
			{"negative output price", func(c *Config) { c.PriceOutputPerMTok = -1 }, "price_output_per_mtok"},
			{"tiny budget", func(c *Config) { c.TokenBudget = 100 }, "token_budget"},
			{"temperature", func(c *Config) { c.Temperature = 3 }, "temperature"},
			{"negative backoff", func(c *Config) { c.BaseBackoff = -1 }, "base_backoff"},
			{"negative response cap", func(c *Config) { c.MaxResponseBytes = -1 }, "max_response_bytes"},
		} {
			cfg := ok
			tc.adjust(&cfg)
			_, err := New(cfg)
			var merr *models.Error
			require.True(t, errors.As(err, &merr), "%s: %v", tc.name, err)
			require.Equal(t, models.EINVALID, merr.Code, tc.name)
			require.Equal(t, tc.field, merr.Field, tc.name)
			require.NotErrorIs(t, err, ErrNotConfigured)
		}
	})

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		c, err := New(Config{BaseURL: "http://judge.test/v1", Model: " m "})
		require.NoError(t, err)
		require.Equal(t, "m", c.Model())
		require.Equal(t, DefaultTimeout, c.cfg.Timeout)
		require.Equal(t, DefaultMaxRetries, c.cfg.MaxRetries)
		require.Equal(t, DefaultConcurrency, c.cfg.Concurrency)
		require.Equal(t, DefaultConcurrency, cap(c.slots))
		require.Equal(t, DefaultMaxImages, c.cfg.MaxImages)
		require.Equal(t, DefaultTokenBudget, c.cfg.TokenBudget)
		require.Equal(t, DefaultBaseBackoff, c.cfg.BaseBackoff)
		require.Equal(t, DefaultMaxBackoff, c.cfg.MaxBackoff)
		require.EqualValues(t, DefaultMaxResponseBytes, c.cfg.MaxResponseBytes)
		require.NotNil(t, c.cfg.HTTPClient)

		off, err := New(Config{BaseURL: "http://judge.test/v1", Model: "m", MaxRetries: -1, MaxImages: -1})
		require.NoError(t, err)
		require.Zero(t, off.cfg.MaxRetries)
		require.Zero(t, off.cfg.MaxImages)
	})
}

func TestClient_Backoff(t *testing.T) {
	t.Parallel()
	c, err := New(Config{BaseURL: "http://judge.test/v1", Model: "m", BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	require.NoError(t, err)
	for range 50 {
		for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 9: time.Second} {
			d := c.backoff(n)
			require.GreaterOrEqual(t, d, want/2, "retry %d", n)
			require.LessOrEqual(t, d, want, "retry %d", n)
		}
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.Equal(t, 7*time.Second, retryAfter("7", now))
	require.Equal(t, 30*time.Second, retryAfter(now.Add(30*time.Second).Format(http.TimeFormat), now))
	require.Zero(t, retryAfter("", now))
	require.Zero(t, retryAfter("soon", now))
	require.Zero(t, retryAfter(now.Add(-time.Minute).Format(http.TimeFormat), now))
}
