package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"proctor/internal/testenv"
)

// TestMain lets the test binary stand in for the proctor binary: with
// PROCTOR_TEST_SUBPROCESS set, it runs the given verb instead of the tests, so
// multi-process tests need no separate build.
func TestMain(m *testing.M) {
	if os.Getenv("PROCTOR_TEST_SUBPROCESS") == "1" {
		ctx, stop := signalContext()
		defer stop()
		p := &Program{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
		os.Exit(p.Run(ctx, strings.Fields(os.Getenv("PROCTOR_TEST_ARGS"))))
	}
	os.Exit(m.Run())
}

func randomName(t testing.TB) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// scaleOutEnv is an environment on PostgreSQL (a schema of its own) and the S3
// test server (a bucket of its own).
func scaleOutEnv(t testing.TB) testEnv {
	t.Helper()
	pg := os.Getenv("PROCTOR_TEST_DATABASE_URL")
	s3 := os.Getenv("PROCTOR_TEST_S3_ENDPOINT")
	testenv.SkipUnlessAvailable(t, "postgres", pg != "", "PROCTOR_TEST_DATABASE_URL not set: the scale-out test needs PostgreSQL")
	testenv.SkipUnlessAvailable(t, "s3", s3 != "", "PROCTOR_TEST_S3_ENDPOINT not set: the scale-out test needs an S3 server")
	ctx := context.Background()
	schema := "scale_" + randomName(t)
	conn, err := pgx.Connect(ctx, pg)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	u, err := url.Parse(pg)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	env := newTestEnv(t)
	env["PROCTOR_DATABASE_URL"] = u.String()
	env["PROCTOR_ARTIFACTS_URL"] = "s3://proctor-" + randomName(t) + "/runs"
	env["PROCTOR_S3_ENDPOINT"] = s3
	env["PROCTOR_S3_ACCESS_KEY"] = os.Getenv("PROCTOR_TEST_S3_ACCESS_KEY")
	env["PROCTOR_S3_SECRET_KEY"] = os.Getenv("PROCTOR_TEST_S3_SECRET_KEY")
	env["PROCTOR_S3_USE_SSL"] = "false"
	env["PROCTOR_SECRET_KEY"] = strings.Repeat("scale-out-secret-", 3)
	env["PROCTOR_LOG_LEVEL"] = "info"
	env["PLAYWRIGHT_DRIVER_PATH"] = os.Getenv("PLAYWRIGHT_DRIVER_PATH")
	env["PROCTOR_CHROMIUM_PATH"] = os.Getenv("PROCTOR_CHROMIUM_PATH")
	return env
}

// openMigrated opens the environment's database and store, migrating both.
func (e testEnv) openMigrated(t testing.TB) *App {
	t.Helper()
	p := &Program{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return e[k] }}
	app, err := p.openApp(context.Background(), &commonFlags{}, true)
	require.NoError(t, err)
	t.Cleanup(app.Close)
	return app
}
