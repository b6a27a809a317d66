package config_test

import (
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
		require.ErrorContains(t, err, config.EnvJudgeBaseURL+": must not carry credentials")
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
