package artifact

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"proctor/internal/testenv"
)

const s3SkipReason = "PROCTOR_TEST_S3_ENDPOINT not set: S3 suite needs a real S3 server (make test starts versitygw)"

// s3TestConfig reads the test server from the environment, skipping the test
// when it is absent unless PROCTOR_TEST_REQUIRE lists s3.
func s3TestConfig(t *testing.T) S3Config {
	t.Helper()
	cfg := S3Config{
		Endpoint:  os.Getenv("PROCTOR_TEST_S3_ENDPOINT"),
		AccessKey: os.Getenv("PROCTOR_TEST_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("PROCTOR_TEST_S3_SECRET_KEY"),
	}
	if cfg.Endpoint != "" && cfg.AccessKey != "" && cfg.SecretKey != "" {
		return cfg
	}
	reason := s3SkipReason
	if cfg.Endpoint != "" {
		reason = "PROCTOR_TEST_S3_ACCESS_KEY or PROCTOR_TEST_S3_SECRET_KEY not set: the S3 suite needs credentials for PROCTOR_TEST_S3_ENDPOINT"
	}
	testenv.SkipUnlessAvailable(t, "s3", false, reason)
	return S3Config{}
}

// setupS3 returns a store in a bucket of its own, removed after the test.
func setupS3(t *testing.T, prefix string) *S3 {
	t.Helper()
	cfg := s3TestConfig(t)
	cfg.Bucket = "proctor-test-" + randomSuffix(t)
	cfg.Prefix = prefix
	s, err := NewS3(t.Context(), cfg)
	require.NoError(t, err)
	require.NoError(t, s.EnsureBucket(t.Context()))
	t.Cleanup(func() { removeBucket(t, s) })
	return s
}

func removeBucket(t *testing.T, s *S3) {
	t.Helper()
	// t.Context is already cancelled when Cleanup functions run.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Recursive: true}) {
		require.NoError(t, obj.Err)
		require.NoError(t, s.client.RemoveObject(ctx, s.bucket, obj.Key, minio.RemoveObjectOptions{}))
	}
	require.NoError(t, s.client.RemoveBucket(ctx, s.bucket))
}

func randomSuffix(t *testing.T) string {
	var b [6]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

func TestS3_Store(t *testing.T) {
	t.Parallel()
	s3TestConfig(t)
	runStoreSuite(t, func(t *testing.T) Store { return setupS3(t, "") })
}

// The same contract holds when the store lives under a prefix of a shared bucket.
func TestS3_StoreWithPrefix(t *testing.T) {
	t.Parallel()
	s3TestConfig(t)
	runStoreSuite(t, func(t *testing.T) Store { return setupS3(t, "/env/proctor/") })
}

func TestS3_Prefix(t *testing.T) {
	t.Parallel()
	s := setupS3(t, "tenant-a")
	putString(t, s, "runs/1/a.png", "x", "image/png")

	// The object lives under the prefix, and keys come back without it.
	_, err := s.client.StatObject(t.Context(), s.bucket, "tenant-a/runs/1/a.png", minio.StatObjectOptions{})
	require.NoError(t, err)
	requireKeys(t, s, "", "runs/1/a.png")

	// Objects outside the prefix are invisible.
	_, err = s.client.PutObject(t.Context(), s.bucket, "tenant-b/runs/1/b.png", strings.NewReader("y"), 1, minio.PutObjectOptions{})
	require.NoError(t, err)
	requireKeys(t, s, "", "runs/1/a.png")
}

func TestS3_Bucket(t *testing.T) {
	t.Parallel()
	cfg := s3TestConfig(t)
	cfg.Bucket = "proctor-test-" + randomSuffix(t)
	s, err := NewS3(t.Context(), cfg)
	require.NoError(t, err)

	require.ErrorContains(t, s.Ping(t.Context()), "does not exist")
	require.NoError(t, s.EnsureBucket(t.Context()))
	t.Cleanup(func() { removeBucket(t, s) })
	require.NoError(t, s.EnsureBucket(t.Context()), "idempotent")
	require.NoError(t, s.Ping(t.Context()))

	bad := cfg
	bad.SecretKey = "wrong-" + cfg.SecretKey
	wrong, err := NewS3(t.Context(), bad)
	require.NoError(t, err)
	require.Error(t, wrong.Ping(t.Context()))
}

func TestNewS3_Config(t *testing.T) {
	t.Parallel()
	_, err := NewS3(t.Context(), S3Config{Bucket: "b"})
	require.ErrorContains(t, err, "endpoint")
	_, err = NewS3(t.Context(), S3Config{Endpoint: "127.0.0.1:9000"})
	require.ErrorContains(t, err, "bucket")
	_, err = NewS3(t.Context(), S3Config{Endpoint: "127.0.0.1:9000", Bucket: "b", Prefix: "a/../b"})
	require.ErrorIs(t, err, ErrInvalidKey)
	s, err := NewS3(t.Context(), S3Config{Endpoint: "127.0.0.1:9000", Bucket: "b", Prefix: "/a/b/"})
	require.NoError(t, err)
	require.Equal(t, "a/b/", s.prefix)
}
