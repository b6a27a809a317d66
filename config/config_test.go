package config_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/bundle"
	"proctor/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoad(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		c, err := config.Load(env(nil), nil)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:8080", c.Addr)
		require.Equal(t, "http://127.0.0.1:8080", c.BaseURL)
		require.Equal(t, "sqlite", c.Database.Dialect)
		require.Equal(t, filepath.Join("data", "proctor.db"), c.Database.Path)
		require.Equal(t, config.ArtifactsLocation{Kind: "local", Dir: filepath.Join("data", "artifacts"), MinFreeBytes: 1 << 30}, c.Artifacts)
	})
	t.Run("ArtifactsMinFree", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{config.EnvArtifactsMinFree: "512MiB"}), nil)
		require.NoError(t, err)
		require.EqualValues(t, 512<<20, c.Artifacts.MinFreeBytes)
		c, err = config.Load(env(map[string]string{config.EnvArtifactsMinFree: "0"}), nil)
		require.NoError(t, err)
		require.Zero(t, c.Artifacts.MinFreeBytes, "0 turns the check off")
		_, err = config.Load(env(map[string]string{config.EnvArtifactsMinFree: "lots"}), nil)
		require.ErrorContains(t, err, config.EnvArtifactsMinFree)
	})
	t.Run("OverridesWin", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{config.EnvAddr: "127.0.0.1:1"}), map[string]string{config.EnvAddr: "127.0.0.1:2"})
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:2", c.Addr)
	})
	t.Run("S3", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{
			config.EnvArtifactsURL: "s3://proctor-artifacts/runs/",
			config.EnvS3Endpoint:   "127.0.0.1:9000",
			config.EnvS3AccessKey:  "k",
			config.EnvS3SecretKey:  "s",
			config.EnvS3UseSSL:     "false",
		}), nil)
		require.NoError(t, err)
		require.Equal(t, config.ArtifactsLocation{Kind: "s3", Bucket: "proctor-artifacts", Prefix: "runs", MinFreeBytes: 1 << 30}, c.Artifacts)
		require.False(t, c.S3.UseSSL)
	})
	t.Run("EveryBadValueReported", func(t *testing.T) {
		_, err := config.Load(env(map[string]string{
			config.EnvAddr:            "nonsense",
			config.EnvBaseURL:         "ftp://x",
			config.EnvDatabaseURL:     "mysql://x",
			config.EnvArtifactsURL:    "s3://UPPER",
			config.EnvS3UseSSL:        "maybe",
			config.EnvSecretKey:       "short",
			config.EnvLogLevel:        "loud",
			config.EnvTrustedProxies:  "10.0.0.0/8, not-an-ip",
			config.EnvJudgeBaseURL:    "ftp://judge",
			config.EnvJudgeTimeout:    "soon",
			config.EnvJudgeInputPrice: "-1",
			config.EnvJudgeOutPrice:   "free",
		}), nil)
		require.Error(t, err)
		lines := strings.Split(err.Error(), "\n")
		for _, name := range []string{config.EnvAddr, config.EnvBaseURL, config.EnvDatabaseURL, config.EnvArtifactsURL, config.EnvS3UseSSL, config.EnvSecretKey, config.EnvLogLevel, config.EnvTrustedProxies,
			config.EnvJudgeBaseURL, config.EnvJudgeModel, config.EnvJudgeTimeout, config.EnvJudgeInputPrice, config.EnvJudgeOutPrice} {
			found := false
			for _, l := range lines {
				found = found || strings.HasPrefix(l, name+": ")
			}
			require.True(t, found, "no error line for %s in %q", name, err)
		}
	})
	t.Run("Judge", func(t *testing.T) {
		c, err := config.Load(env(nil), nil)
		require.NoError(t, err)
		require.Empty(t, c.Judge.BaseURL, "no judge unless configured")
		c, err = config.Load(env(map[string]string{config.EnvJudgeBaseURL: "http://judge.internal/v1/", config.EnvJudgeModel: "gpt-4o",
			config.EnvJudgeTimeout: "30s", config.EnvJudgeConcurrent: "3", config.EnvJudgeInputPrice: "2.5", config.EnvJudgeOutPrice: "10"}), nil)
		require.NoError(t, err)
		require.Equal(t, config.Judge{BaseURL: "http://judge.internal/v1", Model: "gpt-4o", Timeout: 30 * time.Second, Concurrency: 3,
			InputPrice: 2.5, OutputPrice: 10}, c.Judge)
		_, err = config.Load(env(map[string]string{config.EnvJudgeBaseURL: "https://user:secret@judge.internal/v1", config.EnvJudgeModel: "m"}), nil)
		require.ErrorContains(t, err, config.EnvJudgeBaseURL+`: "https://user:xxxxx@judge.internal/v1" must not carry credentials`)
		require.NotContains(t, err.Error(), "secret", "the error never repeats the credentials")
	})
	t.Run("Submission", func(t *testing.T) {
		c, err := config.Load(env(nil), nil)
		require.NoError(t, err)
		require.Equal(t, 10, c.Submission.Quota)
		require.Equal(t, int64(8<<30), c.Submission.MaxBytes)
		require.Equal(t, int64(16<<20), c.Submission.PartBytes)
		def := bundle.DefaultLimits()
		require.Equal(t, def, c.Submission.Limits, "the bundle reader's defaults")

		c, err = config.Load(env(map[string]string{
			config.EnvSubmissionQuota: "0", config.EnvSubmissionMaxBytes: "500MB", config.EnvSubmissionPartBytes: "5MiB",
			config.EnvSubmissionMaxFiles: "1000", config.EnvSubmissionMaxFileBytes: "64 MiB", config.EnvSubmissionMaxRatio: "50",
		}), nil)
		require.NoError(t, err)
		require.Equal(t, 0, c.Submission.Quota, "0 is unlimited")
		require.Equal(t, int64(500_000_000), c.Submission.MaxBytes)
		require.Equal(t, int64(5<<20), c.Submission.PartBytes)
		lim := c.Submission.Limits
		require.Equal(t, int64(500_000_000), lim.MaxBundleBytes)
		require.Equal(t, 1000, lim.MaxFiles)
		require.Equal(t, int64(64<<20), lim.MaxFileBytes)
		require.Equal(t, int64(64<<20), lim.MaxHARBytes, "no HAR is larger than a file may be")
		require.Equal(t, 50.0, lim.MaxRatio)
		require.Equal(t, def.MaxJSONBytes, lim.MaxJSONBytes)

		_, err = config.Load(env(map[string]string{
			config.EnvSubmissionQuota: "-1", config.EnvSubmissionMaxBytes: "lots", config.EnvSubmissionPartBytes: "1MiB",
			config.EnvSubmissionMaxFiles: "0", config.EnvSubmissionMaxFileBytes: "-5", config.EnvSubmissionMaxRatio: "0.5",
		}), nil)
		require.Error(t, err)
		for _, name := range []string{config.EnvSubmissionQuota, config.EnvSubmissionMaxBytes, config.EnvSubmissionMaxFiles,
			config.EnvSubmissionMaxFileBytes, config.EnvSubmissionMaxRatio} {
			require.ErrorContains(t, err, name+": ")
		}
		require.ErrorContains(t, err, config.EnvSubmissionPartBytes+`: "1MiB" must be a size from 5MiB to 5GiB`, "S3 takes no smaller part")
	})
	t.Run("S3NeedsCredentials", func(t *testing.T) {
		_, err := config.Load(env(map[string]string{config.EnvArtifactsURL: "s3://bucket"}), nil)
		require.ErrorContains(t, err, config.EnvS3Endpoint+": required")
		require.ErrorContains(t, err, config.EnvS3AccessKey+": required")
	})
	t.Run("DatabaseURL", func(t *testing.T) {
		for raw, want := range map[string]config.DatabaseLocation{
			"sqlite:///var/lib/proctor.db":           {Dialect: "sqlite", Path: "/var/lib/proctor.db"},
			"sqlite:data/proctor.db":                 {Dialect: "sqlite", Path: "data/proctor.db"},
			"sqlite:./x/../proctor.db":               {Dialect: "sqlite", Path: "proctor.db"},
			"postgres://u@h:5432/db":                 {Dialect: "postgres", DSN: "postgres://u@h:5432/db"},
			"postgresql://u:p@h/db?sslmode=disable":  {Dialect: "postgres", DSN: "postgresql://u:p@h/db?sslmode=disable"},
			"  sqlite:/srv/proctor/proctor.db \t\n ": {Dialect: "sqlite", Path: "/srv/proctor/proctor.db"},
		} {
			c, err := config.Load(env(map[string]string{config.EnvDatabaseURL: raw}), nil)
			require.NoError(t, err, raw)
			require.Equal(t, want, c.Database, raw)
		}
		for raw, says := range map[string]string{
			"mysql://x":                          `"mysql://x" must be sqlite:relative/path.db, sqlite:///absolute/path.db or postgres://…`,
			"sqlite://host/x.db":                 "three slashes",
			"sqlite:":                            "names no database file",
			"sqlite:///":                         "names no database file",
			"sqlite:x.db?mode=ro":                "no query",
			"postgres://u:hunter2@h:notaport/db": `"postgres://xxxxx@h:notaport/db" must be`,
			"postgres://u:hun/ter2@h/db":         `"postgres://xxxxx@h/db" must be`,
		} {
			_, err := config.Load(env(map[string]string{config.EnvDatabaseURL: raw}), nil)
			require.ErrorContains(t, err, config.EnvDatabaseURL+": ", raw)
			require.ErrorContains(t, err, says, raw)
			require.NotContains(t, err.Error(), "hunter2", "a password never reaches the message")
			require.NotContains(t, err.Error(), "ter2", "a password never reaches the message")
		}
	})
	t.Run("DataDirPlacesTheDefaults", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{config.EnvDataDir: "/srv/proctor/"}), nil)
		require.NoError(t, err)
		require.Equal(t, config.DatabaseLocation{Dialect: "sqlite", Path: "/srv/proctor/proctor.db"}, c.Database)
		require.Equal(t, "/srv/proctor/artifacts", c.Artifacts.Dir)
		require.Equal(t, "/srv/proctor/secret.key", c.SecretKeyFile)
		c, err = config.Load(env(map[string]string{config.EnvDataDir: "//srv//proctor"}), nil)
		require.NoError(t, err, "a doubled slash never turns the folder into a URL host")
		require.Equal(t, "/srv/proctor/proctor.db", c.Database.Path)
	})
	t.Run("BaseURLFromAddr", func(t *testing.T) {
		for addr, want := range map[string]string{":9000": "http://localhost:9000", "0.0.0.0:80": "http://localhost:80", "[::]:80": "http://localhost:80",
			"[::1]:8080": "http://[::1]:8080", "proctor.internal:8080": "http://proctor.internal:8080"} {
			c, err := config.Load(env(map[string]string{config.EnvAddr: addr}), nil)
			require.NoError(t, err, addr)
			require.Equal(t, want, c.BaseURL, addr)
		}
		c, err := config.Load(env(map[string]string{config.EnvAddr: ":9000", config.EnvBaseURL: "https://proctor.example.org/"}), nil)
		require.NoError(t, err)
		require.Equal(t, "https://proctor.example.org", c.BaseURL, "an explicit base URL wins, without its trailing slash")
	})
	t.Run("Lists", func(t *testing.T) {
		c, err := config.Load(env(map[string]string{config.EnvAgentAllowHosts: " Agent.Internal, ,10.0.0.7,", config.EnvTrustedProxies: "10.0.0.1, fd00::/8"}), nil)
		require.NoError(t, err)
		require.Equal(t, []string{"agent.internal", "10.0.0.7"}, c.AgentAllowHosts)
		require.Len(t, c.TrustedProxies, 2)
		require.Equal(t, "10.0.0.1/32", c.TrustedProxies[0].String())
		require.Equal(t, "fd00::/8", c.TrustedProxies[1].String())
		_, err = config.Load(env(map[string]string{config.EnvAgentAllowHosts: "ok.internal, http://a, b:80"}), nil)
		require.EqualError(t, err, config.EnvAgentAllowHosts+`: "ok.internal, http://a, b:80" must be a comma list of host names or IP addresses, without scheme or port ("http://a", "b:80" are not)`)
	})
}

// TestLoad_ReportsEveryBadValue sets a bad value of every kind at once and
// expects one error per variable, each naming the variable, the value (unless
// it is a secret) and what the value must be.
func TestLoad_ReportsEveryBadValue(t *testing.T) {
	t.Parallel()
	_, err := config.Load(env(map[string]string{
		config.EnvAddr:                   "localhost",
		config.EnvBaseURL:                "https://proctor.example.org/app",
		config.EnvDatabaseURL:            "postgres://proctor:hunter2@db:port/proctor",
		config.EnvArtifactsURL:           "s3://proctor-artifacts/a//b",
		config.EnvArtifactsMinFree:       "2 parsecs",
		config.EnvS3UseSSL:               "yes please",
		config.EnvSecretKey:              "hunter2",
		config.EnvAgentAllowHosts:        "user@agent.internal",
		config.EnvTrustedProxies:         "10.0.0.0/33",
		config.EnvLogLevel:               "LOUD",
		config.EnvLogFormat:              "xml",
		config.EnvEpisodes:               "65",
		config.EnvRunQuota:               "many",
		config.EnvSubmissionQuota:        "-1",
		config.EnvSubmissionMaxBytes:     "6TiB",
		config.EnvSubmissionPartBytes:    "4MiB",
		config.EnvSubmissionMaxFiles:     "0",
		config.EnvSubmissionMaxFileBytes: "1b",
		config.EnvSubmissionMaxRatio:     "NaN",
		config.EnvWorkerLease:            "1s",
		config.EnvRescueAfter:            "20",
		config.EnvTeamEpisodes:           "1e3",
		config.EnvTeamHiddenJobs:         "100001",
		config.EnvEnvRetries:             "11",
		config.EnvJudgeBaseURL:           "https://key:sk-live-123@judge.internal/v1",
		config.EnvJudgeAPIKey:            "sk-live-456",
		config.EnvJudgeTimeout:           "500ms",
		config.EnvJudgeConcurrent:        "0",
		config.EnvJudgeInputPrice:        "+Inf",
		config.EnvJudgeOutPrice:          "-0.01",
	}), nil)
	require.Error(t, err)
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "errors.Join of one error per bad value")

	want := map[string]string{
		config.EnvAddr:                   `"localhost" must be host:port, such as 127.0.0.1:8080 or :8080 (address localhost: missing port in address)`,
		config.EnvBaseURL:                `"https://proctor.example.org/app" must be an http(s) origin such as https://proctor.example.org`,
		config.EnvDatabaseURL:            `"postgres://xxxxx@db:port/proctor" must be sqlite:relative/path.db, sqlite:///absolute/path.db or postgres://… (not a valid PostgreSQL URL: `,
		config.EnvArtifactsURL:           `"s3://proctor-artifacts/a//b" must be file:relative/dir, file:///absolute/dir or s3://BUCKET/PREFIX (the prefix "a//b" is not a clean path)`,
		config.EnvArtifactsMinFree:       `"2 parsecs" must be a size from 0 bytes to 1024TiB, such as 8GiB or 16MiB`,
		config.EnvS3UseSSL:               `"yes please" must be true or false`,
		config.EnvSecretKey:              `must be at least 32 characters, got 7`,
		config.EnvAgentAllowHosts:        `"user@agent.internal" must be a comma list of host names or IP addresses, without scheme or port ("user@agent.internal" is not)`,
		config.EnvTrustedProxies:         `"10.0.0.0/33" must be a comma list of IP addresses or CIDR ranges ("10.0.0.0/33" is not)`,
		config.EnvLogLevel:               `"LOUD" must be debug, info, warn or error`,
		config.EnvLogFormat:              `"xml" must be text or json`,
		config.EnvEpisodes:               `"65" must be a whole number from 0 to 64`,
		config.EnvRunQuota:               `"many" must be a whole number from 0 to 1000000`,
		config.EnvSubmissionQuota:        `"-1" must be a whole number from 0 to 1000000`,
		config.EnvSubmissionMaxBytes:     `"6TiB" must be a size from 1MiB to 5TiB, such as 8GiB or 16MiB`,
		config.EnvSubmissionPartBytes:    `"4MiB" must be a size from 5MiB to 5GiB, such as 8GiB or 16MiB`,
		config.EnvSubmissionMaxFiles:     `"0" must be a whole number from 1 to 100000000`,
		config.EnvSubmissionMaxFileBytes: `"1b" must be a size from 1KiB to 1TiB, such as 8GiB or 16MiB`,
		config.EnvSubmissionMaxRatio:     `"NaN" must be a compression ratio of at least 1, such as 100`,
		config.EnvWorkerLease:            `"1s" must be a duration of at least 2s, such as 45s`,
		config.EnvRescueAfter:            `"20" must be a duration of at least 5s, such as 20m`,
		config.EnvTeamEpisodes:           `"1e3" must be a whole number from 0 to 100000`,
		config.EnvTeamHiddenJobs:         `"100001" must be a whole number from 0 to 100000`,
		config.EnvEnvRetries:             `"11" must be a whole number from 0 to 10`,
		config.EnvJudgeBaseURL:           `"https://key:xxxxx@judge.internal/v1" must not carry credentials in the URL; set PROCTOR_JUDGE_API_KEY`,
		config.EnvJudgeModel:             `required when PROCTOR_JUDGE_BASE_URL is set`,
		config.EnvJudgeTimeout:           `"500ms" must be a duration of at least 1s, such as 2m`,
		config.EnvJudgeConcurrent:        `"0" must be a whole number from 1 to 256`,
		config.EnvJudgeInputPrice:        `"+Inf" must be a price in US dollars per million tokens, such as 2.50`,
		config.EnvJudgeOutPrice:          `"-0.01" must be a price in US dollars per million tokens, such as 2.50`,
	}
	got := make(map[string]string)
	for _, e := range joined.Unwrap() {
		var ce *config.Error
		require.ErrorAs(t, e, &ce)
		_, twice := got[ce.Name]
		require.False(t, twice, "one error for %s, got a second: %v", ce.Name, e)
		got[ce.Name] = strings.TrimPrefix(e.Error(), ce.Name+": ")
		require.Equal(t, ce.Name+": ", e.Error()[:len(ce.Name)+2], "each line starts with its variable")
	}
	require.Len(t, got, len(want), "exactly the bad variables: %v", err)
	for name, says := range want {
		require.Contains(t, got, name, "no error for %s in %v", name, err)
		require.True(t, strings.HasPrefix(got[name], says), "%s: got %q, want it to start with %q", name, got[name], says)
	}
	for _, secret := range []string{"hunter2", "sk-live-123", "sk-live-456"} {
		require.NotContains(t, err.Error(), secret, "secrets are never repeated")
	}
	require.Len(t, strings.Split(err.Error(), "\n"), len(want), "one line each")
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil), nil)
	require.NoError(t, err)
	require.NoError(t, c.Validate(), "the defaults are valid")

	c.Episodes = 65
	c.Judge.Concurrency = 0
	c.Judge.Timeout = 10 * time.Millisecond
	c.Submission.PartBytes = 1 << 20
	c.Judge.OutputPrice = math.NaN()
	c.LogFormat = "xml"
	c.SecretKey = "too-short-to-be-a-key"
	c.Artifacts.Kind = config.ArtifactsS3
	c.S3.Endpoint = "https://s3.internal"
	err = c.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.ElementsMatch(t, []string{
		config.EnvEpisodes + `: "65" must be a whole number from 0 to 64`,
		config.EnvJudgeConcurrent + `: "0" must be a whole number from 1 to 256`,
		config.EnvJudgeTimeout + `: "10ms" must be a duration of at least 1s, such as 2m`,
		config.EnvSubmissionPartBytes + `: "1MiB" must be a size from 5MiB to 5GiB, such as 8GiB or 16MiB`,
		config.EnvJudgeOutPrice + `: "NaN" must be a price in US dollars per million tokens, such as 2.50`,
		config.EnvLogFormat + `: "xml" must be text or json`,
		config.EnvSecretKey + `: must be at least 32 characters, got 21`,
		config.EnvS3Endpoint + `: "https://s3.internal" must be host[:port] without a scheme or path (use PROCTOR_S3_USE_SSL for TLS)`,
		config.EnvS3AccessKey + `: required when PROCTOR_ARTIFACTS_URL is an s3:// URL`,
		config.EnvS3SecretKey + `: required when PROCTOR_ARTIFACTS_URL is an s3:// URL`,
	}, lines)
}

func TestFlags(t *testing.T) {
	t.Parallel()
	byName := make(map[string]config.Flag)
	for _, f := range config.Flags() {
		byName[f.Name] = f
	}
	require.Len(t, byName, 5)
	for name, env := range map[string]string{"addr": config.EnvAddr, "base-url": config.EnvBaseURL, "data-dir": config.EnvDataDir,
		"database-url": config.EnvDatabaseURL, "artifacts-url": config.EnvArtifactsURL} {
		require.Equal(t, env, byName[name].Env, name)
		require.Contains(t, byName[name].Usage, env, "the usage names the variable the flag overrides")
	}
	require.Equal(t, "folder for the default database, artifacts and secret key (PROCTOR_DATA_DIR, default data)", byName["data-dir"].Usage)
}

// TestMarkdown: docs/configuration.md is what the option table renders.
func TestMarkdown(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join("..", config.DocsPath))
	require.NoError(t, err)
	if !bytes.Equal(config.Markdown(), page) {
		t.Fatalf("%s is not what the option table renders: run `go generate ./config` and commit it", config.DocsPath)
	}
}

func TestConfig_EnsureSecretKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := config.Load(env(map[string]string{config.EnvDataDir: dir}), nil)
	require.NoError(t, err)
	require.NoError(t, c.EnsureSecretKey())
	require.GreaterOrEqual(t, len(c.SecretKey), 32)
	info, err := os.Stat(filepath.Join(dir, "secret.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	again, err := config.Load(env(map[string]string{config.EnvDataDir: dir}), nil)
	require.NoError(t, err)
	require.NoError(t, again.EnsureSecretKey())
	require.Equal(t, c.SecretKey, again.SecretKey, "the generated key is reused on the next start")
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"1024": 1024, "16MiB": 16 << 20, "8 GiB": 8 << 30, "500MB": 500_000_000, "2g": 2 << 30, "1.5KiB": 1536, "7b": 7, " 3 kb ": 3000,
	} {
		got, err := config.ParseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "MiB", "-1", "ten", "1 parsec", "1e30GiB"} {
		_, err := config.ParseBytes(in)
		require.Error(t, err, in)
	}
	require.Equal(t, "16MiB", config.FormatBytes(16<<20))
	require.Equal(t, "1000 bytes", config.FormatBytes(1000))
}
