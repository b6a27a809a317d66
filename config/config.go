// Package config reads Proctor's settings from the environment (flags may
// override them) and validates them once at start, reporting every bad value.
package config

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"proctor/bundle"
	"proctor/storage"
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

// Artifact store kinds.
const (
	ArtifactsLocal = "local"
	ArtifactsS3    = "s3"
)

// ArtifactsLocation is a parsed PROCTOR_ARTIFACTS_URL.
type ArtifactsLocation struct {
	Kind   string // ArtifactsLocal or ArtifactsS3
	Dir    string // local folder
	Bucket string // S3 bucket
	Prefix string // S3 key prefix, without a trailing slash
	// MinFreeBytes is the free space below which a local store reports
	// itself not ready on /readyz (0: never).
	MinFreeBytes int64
}

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
	Database        storage.DatabaseLocation
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
	// environment; the rest are the bundle reader's defaults.
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

// Load reads the configuration from getenv, with overrides (keyed by environment
// variable name, e.g. from flags) taking precedence. Every bad value is reported,
// one per line. The secret key is not generated here; call EnsureSecretKey.
func Load(getenv func(string) string, overrides map[string]string) (*Config, error) {
	get := func(name string) string {
		if v, ok := overrides[name]; ok && v != "" {
			return v
		}
		return strings.TrimSpace(getenv(name))
	}
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
	}
	c := &Config{
		Addr:      orDefault(get(EnvAddr), "127.0.0.1:8080"),
		DataDir:   orDefault(get(EnvDataDir), "data"),
		SecretKey: get(EnvSecretKey),
		LogFormat: orDefault(get(EnvLogFormat), "text"),
	}
	if host, port, err := net.SplitHostPort(c.Addr); err != nil {
		bad(EnvAddr, "%q is not host:port: %v", c.Addr, err)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		bad(EnvAddr, "%q has an invalid port", c.Addr)
	} else {
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		c.BaseURL = "http://" + net.JoinHostPort(host, port)
	}
	if v := get(EnvBaseURL); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			bad(EnvBaseURL, "%q must be an http(s) origin such as https://proctor.example.org", v)
		} else {
			c.BaseURL = strings.TrimRight(v, "/")
		}
	}
	c.SecretKeyFile = filepath.Join(c.DataDir, "secret.key")

	dbURL := orDefault(get(EnvDatabaseURL), "sqlite:"+filepath.Join(c.DataDir, "proctor.db"))
	if loc, err := storage.ParseDatabaseURL(dbURL); err != nil {
		bad(EnvDatabaseURL, "%v", err)
	} else {
		c.Database = loc
	}

	artURL := orDefault(get(EnvArtifactsURL), "file:"+filepath.Join(c.DataDir, "artifacts"))
	if loc, err := ParseArtifactsURL(artURL); err != nil {
		bad(EnvArtifactsURL, "%v", err)
	} else {
		c.Artifacts = loc
	}
	c.S3 = S3{
		Endpoint:  get(EnvS3Endpoint),
		AccessKey: get(EnvS3AccessKey),
		SecretKey: get(EnvS3SecretKey),
		Region:    orDefault(get(EnvS3Region), "us-east-1"),
	}
	if v := get(EnvS3UseSSL); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad(EnvS3UseSSL, "%q is not a boolean (true or false)", v)
		}
		c.S3.UseSSL = b
	} else {
		c.S3.UseSSL = true
	}
	if c.Artifacts.Kind == ArtifactsS3 {
		if c.S3.Endpoint == "" {
			bad(EnvS3Endpoint, "required when %s is an s3:// URL", EnvArtifactsURL)
		} else if strings.Contains(c.S3.Endpoint, "://") || strings.Contains(c.S3.Endpoint, "/") {
			bad(EnvS3Endpoint, "%q must be host[:port] without a scheme or path (use %s for TLS)", c.S3.Endpoint, EnvS3UseSSL)
		}
		if c.S3.AccessKey == "" {
			bad(EnvS3AccessKey, "required when %s is an s3:// URL", EnvArtifactsURL)
		}
		if c.S3.SecretKey == "" {
			bad(EnvS3SecretKey, "required when %s is an s3:// URL", EnvArtifactsURL)
		}
	}

	if c.SecretKey != "" && len(c.SecretKey) < vault.MinSecretLength {
		bad(EnvSecretKey, "must be at least %d characters, got %d", vault.MinSecretLength, len(c.SecretKey))
	}

	for _, h := range strings.Split(get(EnvAgentAllowHosts), ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/:@ ") && net.ParseIP(h) == nil {
			bad(EnvAgentAllowHosts, "%q must be a host name or IP address, without scheme or port", h)
			continue
		}
		c.AgentAllowHosts = append(c.AgentAllowHosts, h)
	}

	for _, p := range strings.Split(get(EnvTrustedProxies), ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.Contains(p, "/") {
			if ip := net.ParseIP(p); ip != nil && ip.To4() != nil {
				p += "/32"
			} else {
				p += "/128"
			}
		}
		_, ipnet, err := net.ParseCIDR(p)
		if err != nil {
			bad(EnvTrustedProxies, "%q is not an IP address or CIDR range", p)
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, ipnet)
	}

	intVar := func(name string, def, min, max int) int {
		v := get(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min || n > max {
			bad(name, "%q must be a whole number from %d to %d", v, min, max)
			return def
		}
		return n
	}
	c.Episodes = intVar(EnvEpisodes, 2, 0, 64)
	c.RunQuota = intVar(EnvRunQuota, 20, 0, 1_000_000)
	c.EnvironmentRetries = intVar(EnvEnvRetries, 2, 0, 10)
	c.TeamEpisodes = intVar(EnvTeamEpisodes, 0, 0, 100_000)
	c.TeamHiddenJobs = intVar(EnvTeamHiddenJobs, 0, 0, 100_000)
	durationVar := func(name string, def, least time.Duration, example string) time.Duration {
		v := get(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < least {
			bad(name, "%q must be a duration of at least %s, such as %s", v, least, example)
			return def
		}
		return d
	}
	c.RescueAfter = durationVar(EnvRescueAfter, 20*time.Minute, 5*time.Second, "20m")
	c.WorkerLease = durationVar(EnvWorkerLease, 45*time.Second, 2*time.Second, "45s")

	c.Judge = Judge{BaseURL: strings.TrimRight(get(EnvJudgeBaseURL), "/"), Model: get(EnvJudgeModel), APIKey: get(EnvJudgeAPIKey),
		Timeout: 2 * time.Minute, Concurrency: intVar(EnvJudgeConcurrent, 4, 1, 256)}
	if c.Judge.BaseURL != "" {
		if u, err := url.Parse(c.Judge.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(EnvJudgeBaseURL, "%q must be an http(s) URL such as https://api.openai.com/v1", c.Judge.BaseURL)
		} else if u.User != nil {
			bad(EnvJudgeBaseURL, "must not carry credentials in the URL; set %s", EnvJudgeAPIKey)
		}
		if c.Judge.Model == "" {
			bad(EnvJudgeModel, "required when %s is set", EnvJudgeBaseURL)
		}
	}
	if v := get(EnvJudgeTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			bad(EnvJudgeTimeout, "%q must be a duration of at least 1s, such as 2m", v)
		} else {
			c.Judge.Timeout = d
		}
	}
	priceVar := func(name string) float64 {
		v := get(name)
		if v == "" {
			return 0
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			bad(name, "%q must be a price in US dollars per million tokens, such as 2.50", v)
			return 0
		}
		return f
	}
	c.Judge.InputPrice, c.Judge.OutputPrice = priceVar(EnvJudgeInputPrice), priceVar(EnvJudgeOutPrice)

	bytesVar := func(name string, def, min, max int64) int64 {
		v := get(name)
		if v == "" {
			return def
		}
		n, err := ParseBytes(v)
		if err != nil || n < min || n > max {
			bad(name, "%q must be a size from %s to %s, such as 8GiB or 16MiB", v, FormatBytes(min), FormatBytes(max))
			return def
		}
		return n
	}
	c.Artifacts.MinFreeBytes = bytesVar(EnvArtifactsMinFree, DefaultArtifactsMinFree, 0, 1<<50)
	limits := bundle.DefaultLimits()
	c.Submission = Submission{Quota: intVar(EnvSubmissionQuota, 10, 0, 1_000_000)}
	c.Submission.MaxBytes = bytesVar(EnvSubmissionMaxBytes, limits.MaxBundleBytes, 1<<20, 5<<40)
	c.Submission.PartBytes = bytesVar(EnvSubmissionPartBytes, 16<<20, MinPartBytes, maxPartBytes)
	limits.MaxBundleBytes = c.Submission.MaxBytes
	limits.MaxFiles = intVar(EnvSubmissionMaxFiles, limits.MaxFiles, 1, 100_000_000)
	limits.MaxFileBytes = bytesVar(EnvSubmissionMaxFileBytes, limits.MaxFileBytes, 1<<10, 1<<40)
	if v := get(EnvSubmissionMaxRatio); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 || math.IsInf(f, 0) || math.IsNaN(f) {
			bad(EnvSubmissionMaxRatio, "%q must be a compression ratio of at least 1, such as 100", v)
		} else {
			limits.MaxRatio = f
		}
	}
	// Screenshots and logs may be as large as any file, and the bundle as a
	// whole as large as its ratio allows.
	limits.MaxHARBytes = min(limits.MaxHARBytes, limits.MaxFileBytes)
	limits.MaxTotalBytes = max(limits.MaxTotalBytes, c.Submission.MaxBytes)
	c.Submission.Limits = limits

	switch lvl := strings.ToLower(orDefault(get(EnvLogLevel), "info")); lvl {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "info":
		c.LogLevel = slog.LevelInfo
	case "warn", "warning":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		bad(EnvLogLevel, "%q must be debug, info, warn or error", lvl)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad(EnvLogFormat, "%q must be text or json", c.LogFormat)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// ParseArtifactsURL accepts file:///absolute/dir, file:relative/dir and
// s3://BUCKET/PREFIX.
func ParseArtifactsURL(raw string) (ArtifactsLocation, error) {
	switch {
	case strings.HasPrefix(raw, "file://"):
		u, err := url.Parse(raw)
		if err != nil || u.Host != "" || u.Path == "" {
			return ArtifactsLocation{}, fmt.Errorf("%q: use file:///absolute/dir (three slashes) or file:relative/dir", raw)
		}
		return ArtifactsLocation{Kind: ArtifactsLocal, Dir: u.Path}, nil
	case strings.HasPrefix(raw, "file:"):
		p := strings.TrimPrefix(raw, "file:")
		if p == "" {
			return ArtifactsLocation{}, fmt.Errorf("%q names no folder", raw)
		}
		return ArtifactsLocation{Kind: ArtifactsLocal, Dir: filepath.Clean(p)}, nil
	case strings.HasPrefix(raw, "s3://"):
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return ArtifactsLocation{}, fmt.Errorf("%q: expected s3://BUCKET/PREFIX", raw)
		}
		if !validBucket(u.Host) {
			return ArtifactsLocation{}, fmt.Errorf("%q: %q is not a valid bucket name (3–63 lower-case letters, digits, dots, hyphens)", raw, u.Host)
		}
		prefix := strings.Trim(u.Path, "/")
		if strings.Contains(prefix, "//") || strings.Contains("/"+prefix+"/", "/../") {
			return ArtifactsLocation{}, fmt.Errorf("%q: the prefix %q is not a clean path", raw, prefix)
		}
		return ArtifactsLocation{Kind: ArtifactsS3, Bucket: u.Host, Prefix: prefix}, nil
	}
	return ArtifactsLocation{}, fmt.Errorf("%q: expected file:DIR, file:///ABSOLUTE/DIR or s3://BUCKET/PREFIX", raw)
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return b[0] != '-' && b[0] != '.' && b[len(b)-1] != '-' && b[len(b)-1] != '.'
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

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// byteUnits are the suffixes ParseBytes knows, longest first.
func byteUnits() []struct {
	suffix string
	factor int64
} {
	return []struct {
		suffix string
		factor int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
	}
}

// ParseBytes reads a size: a number of bytes, or a number with a unit such as
// 16MiB, 8 GiB, 500MB or 2g (k, m, g, t are binary units).
func ParseBytes(s string) (int64, error) {
	text := strings.ToLower(strings.TrimSpace(s))
	factor := int64(1)
	for _, u := range byteUnits() {
		if strings.HasSuffix(text, u.suffix) {
			text, factor = strings.TrimSpace(strings.TrimSuffix(text, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n < 0 || math.IsNaN(n) || n*float64(factor) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return int64(n * float64(factor)), nil
}

// FormatBytes writes a size in the largest binary unit that divides it.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name   string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.factor && n%u.factor == 0 {
			return fmt.Sprintf("%d%s", n/u.factor, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
