// Package config reads Proctor's settings from the environment (flags may
// override them) and validates them once at start, reporting every bad value.
// Each setting is declared once, in the option table of options.go, with its
// default, parser, check and description; docs/configuration.md is rendered
// from that table.
package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"proctor/bundle"
	"proctor/vault"
)

// Environment variable names.
const (
	EnvAddr            = "PROCTOR_ADDR"
	EnvBaseURL         = "PROCTOR_BASE_URL"
	EnvDataDir         = "PROCTOR_DATA_DIR"
	EnvDatabaseURL     = "PROCTOR_DATABASE_URL"
	EnvArtifactsURL    = "PROCTOR_ARTIFACTS_URL"
	EnvS3Endpoint      = "PROCTOR_S3_ENDPOINT"
	EnvS3AccessKey     = "PROCTOR_S3_ACCESS_KEY"
	EnvS3SecretKey     = "PROCTOR_S3_SECRET_KEY"
	EnvS3Region        = "PROCTOR_S3_REGION"
	EnvS3UseSSL        = "PROCTOR_S3_USE_SSL"
	EnvSecretKey       = "PROCTOR_SECRET_KEY"
	EnvAgentAllowHosts = "PROCTOR_AGENT_ALLOW_HOSTS"
	EnvTrustedProxies  = "PROCTOR_TRUSTED_PROXIES"
	EnvEpisodes        = "PROCTOR_EPISODES"
	EnvRunQuota        = "PROCTOR_RUN_QUOTA"
	EnvRescueAfter     = "PROCTOR_RESCUE_AFTER"
	EnvWorkerLease     = "PROCTOR_WORKER_LEASE"
	EnvEpisodeLease    = "PROCTOR_EPISODE_LEASE"
	EnvWorkerAddr      = "PROCTOR_WORKER_ADDR"
	EnvWorkerURL       = "PROCTOR_WORKER_URL"
	EnvTeamEpisodes    = "PROCTOR_TEAM_EPISODES"
	EnvTeamHiddenJobs  = "PROCTOR_TEAM_HIDDEN_JOBS"
	EnvEnvRetries      = "PROCTOR_ENVIRONMENT_RETRIES"
	EnvJudgeBaseURL    = "PROCTOR_JUDGE_BASE_URL"
	EnvJudgeModel      = "PROCTOR_JUDGE_MODEL"
	EnvJudgeAPIKey     = "PROCTOR_JUDGE_API_KEY"
	EnvJudgeTimeout    = "PROCTOR_JUDGE_TIMEOUT"
	EnvJudgeConcurrent = "PROCTOR_JUDGE_CONCURRENCY"
	EnvJudgeInputPrice = "PROCTOR_JUDGE_INPUT_PRICE"
	EnvJudgeOutPrice   = "PROCTOR_JUDGE_OUTPUT_PRICE"
	EnvLogLevel        = "PROCTOR_LOG_LEVEL"
	EnvLogFormat       = "PROCTOR_LOG_FORMAT"

	EnvArtifactsMinFree       = "PROCTOR_ARTIFACTS_MIN_FREE"
	EnvSubmissionQuota        = "PROCTOR_SUBMISSION_QUOTA"
	EnvSubmissionMaxBytes     = "PROCTOR_SUBMISSION_MAX_BYTES"
	EnvSubmissionPartBytes    = "PROCTOR_SUBMISSION_PART_BYTES"
	EnvSubmissionMaxFiles     = "PROCTOR_SUBMISSION_MAX_FILES"
	EnvSubmissionMaxFileBytes = "PROCTOR_SUBMISSION_MAX_FILE_BYTES"
	EnvSubmissionMaxRatio     = "PROCTOR_SUBMISSION_MAX_RATIO"
)

// DefaultArtifactsMinFree is the free space a local artifact store needs to
// report itself ready: an episode writes screenshots and a HAR of a few
// megabytes each, and a bundle is spooled whole.
const DefaultArtifactsMinFree = 1 << 30

// S3 holds the S3-compatible endpoint's settings.
type S3 struct {
	Endpoint  string
	AccessKey string
	SecretKey string
	Region    string
	UseSSL    bool
}

// Config is Proctor's validated configuration.
type Config struct {
	Addr            string
	BaseURL         string
	DataDir         string
	Database        DatabaseLocation
	Artifacts       ArtifactsLocation
	S3              S3
	SecretKey       string
	SecretKeyFile   string // where a generated key lives when PROCTOR_SECRET_KEY is unset
	AgentAllowHosts []string
	// TrustedProxies are the networks whose X-Forwarded-For header is believed
	// when working out a client's address; empty means only the direct peer counts.
	TrustedProxies []*net.IPNet
	LogLevel       slog.Level
	LogFormat      string // text or json

	// Episodes is how many episodes this process runs at once (serve's embedded
	// worker; `proctor worker --browsers N` overrides it).
	Episodes int
	// RunQuota caps the runs a team may queue per 24 hours; 0 = unlimited.
	RunQuota int
	// RescueAfter is how long a job may run before River rescues it as stuck
	// (a worker that hangs while its process lives).
	RescueAfter time.Duration
	// WorkerLease is how long a worker process's lease lasts unrenewed before
	// the other processes take its episodes and jobs over (a killed worker).
	WorkerLease time.Duration
	// EpisodeLease is how long a connecting agent's claim on an episode
	// lasts without a heartbeat or call.
	EpisodeLease time.Duration
	// WorkerAddr is where a worker process serves the connecting agents'
	// episodes it runs, to the serve processes that forward their calls;
	// WorkerURL is the address they reach it at ("" : http:// and the
	// address listened on).
	WorkerAddr, WorkerURL string
	// TeamEpisodes and TeamHiddenJobs are each team's fair share of the
	// deployment while another team's work waits (0: half of the live
	// workers' slots).
	TeamEpisodes, TeamHiddenJobs int
	// EnvironmentRetries is how often an attempt whose sites failed is retried.
	EnvironmentRetries int
	// Judge is the server's LLM judge; BaseURL is empty when none is configured
	// (attempts then say "not judged").
	Judge Judge
	// Submission limits the submission portal's uploads.
	Submission Submission
}

// Submission limits the submission portal's uploads.
type Submission struct {
	Quota     int   // submissions a team may start in 24 hours; 0 = unlimited
	MaxBytes  int64 // the largest bundle
	PartBytes int64 // every part of a resumable upload but the last
	// Limits cap what a bundle holds: MaxBundleBytes is MaxBytes, and the
	// file count, per-file size and compression ratio come from the
	// environment; the rest are the bundle reader's defaults (HARs no
	// larger than a file, the whole no smaller than MaxBytes).
	Limits bundle.Limits
}

// Submission portal bounds.
const (
	// MinPartBytes is S3's smallest part but the last.
	MinPartBytes = 5 << 20
	// maxPartBytes is S3's largest part.
	maxPartBytes = 5 << 30
)

// Judge configures an OpenAI-compatible chat-completions endpoint used as the
// LLM judge.
type Judge struct {
	BaseURL     string // e.g. https://api.openai.com/v1
	Model       string
	APIKey      string
	Timeout     time.Duration // per request
	Concurrency int           // requests in flight at once, per process
	// Prices in US dollars per million tokens, for the cost of each judgment.
	InputPrice  float64
	OutputPrice float64
}

// Error is one bad setting: the variable, its value and what is wrong with it.
type Error struct {
	Name  string // the environment variable
	Value string // as given, passwords redacted; "" when unset or a secret
	// Problem says what the value must be, or what else it needs.
	Problem string
}

func (e *Error) Error() string {
	if e.Value == "" {
		return e.Name + ": " + e.Problem
	}
	return fmt.Sprintf("%s: %q %s", e.Name, e.Value, e.Problem)
}

// Load reads the configuration from getenv, with overrides (keyed by environment
// variable name, e.g. from flags) taking precedence and each option's default
// filling what neither sets. Every bad value is reported, one *Error per line
// (errors.Join). The secret key is not generated here; call EnsureSecretKey.
func Load(getenv func(string) string, overrides map[string]string) (*Config, error) {
	c := &Config{Submission: Submission{Limits: bundle.DefaultLimits()}}
	texts := make(map[string]string)
	unreadable := make(map[string]bool)
	var errs []error
	for _, o := range options() {
		text := overrides[o.name]
		if text == "" {
			text = strings.TrimSpace(getenv(o.name))
		}
		if text == "" {
			text = o.defaultText(texts)
		}
		texts[o.name] = text
		if text == "" {
			continue
		}
		if err := o.parse(c, text); err != nil {
			errs = append(errs, o.fault(text, err, true))
			unreadable[o.name] = true
		}
	}
	c.deriveLimits()
	errs = append(errs, c.check(texts, unreadable)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// Validate checks the values c holds against each option's bounds and the
// settings it needs (an S3 store its credentials, a judge its model), and
// reports every bad one, one *Error per line (errors.Join). The text forms
// (addresses, URLs, lists) are checked as Load reads them.
func (c *Config) Validate() error {
	return errors.Join(c.check(nil, nil)...)
}

// check runs every option's check but those of skip. A bad value is written
// as texts holds it (as given to Load), else as c holds it.
func (c *Config) check(texts map[string]string, skip map[string]bool) []error {
	var errs []error
	for _, o := range options() {
		if o.check == nil || skip[o.name] {
			continue
		}
		if err := o.check(c); err != nil {
			text, ok := texts[o.name]
			if !ok && o.show != nil {
				text = o.show(c)
			}
			errs = append(errs, o.fault(text, err, false))
		}
	}
	return errs
}

// deriveLimits sets the bundle limits that follow from the settings:
// screenshots and logs may be as large as any file, and the bundle as a
// whole as large as its ratio allows.
func (c *Config) deriveLimits() {
	l := &c.Submission.Limits
	l.MaxBundleBytes = c.Submission.MaxBytes
	l.MaxHARBytes = min(l.MaxHARBytes, l.MaxFileBytes)
	l.MaxTotalBytes = max(l.MaxTotalBytes, c.Submission.MaxBytes)
}

// Flag is a command-line flag that overrides an environment variable.
type Flag struct {
	Name  string // without dashes, e.g. "database-url"
	Env   string // the variable it overrides, the key of Load's overrides
	Usage string // one line for the flag package's help
}

// Flags lists the settings every verb accepts as flags over the environment.
func Flags() []Flag {
	var flags []Flag
	for _, o := range options() {
		if o.flag == "" {
			continue
		}
		usage := fmt.Sprintf("%s (%s", o.doc, o.name)
		if o.def != "" {
			usage += ", default " + o.def
		}
		flags = append(flags, Flag{Name: o.flag, Env: o.name, Usage: usage + ")"})
	}
	return flags
}

// EnsureSecretKey fills SecretKey: from the environment when set, else from the
// key file in the data folder, generating that file (mode 0600) on first start.
func (c *Config) EnsureSecretKey() error {
	if c.SecretKey != "" {
		return nil
	}
	b, err := os.ReadFile(c.SecretKeyFile)
	switch {
	case err == nil:
		key := strings.TrimSpace(string(b))
		if len(key) < vault.MinSecretLength {
			return fmt.Errorf("%s: the key file holds %d characters, at least %d are needed", c.SecretKeyFile, len(key), vault.MinSecretLength)
		}
		c.SecretKey = key
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read secret key %s: %w", c.SecretKeyFile, err)
	}
	raw := make([]byte, 48)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("generate secret key: %w", err)
	}
	key := base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(c.SecretKeyFile), 0o700); err != nil {
		return fmt.Errorf("create data folder: %w", err)
	}
	f, err := os.OpenFile(c.SecretKeyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return c.EnsureSecretKey() // another process won the race; read its key
	}
	if err != nil {
		return fmt.Errorf("write secret key %s: %w", c.SecretKeyFile, err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("write secret key %s: %w", c.SecretKeyFile, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write secret key %s: %w", c.SecretKeyFile, err)
	}
	c.SecretKey = key
	return nil
}
