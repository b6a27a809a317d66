package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// testEnv is an environment pointing every verb at a scratch data folder.
type testEnv map[string]string

func newTestEnv(t testing.TB) testEnv {
	dir := t.TempDir()
	return testEnv{
		"PROCTOR_DATA_DIR":     dir,
		"PROCTOR_DATABASE_URL": "sqlite:" + filepath.Join(dir, "proctor.db"),
		"PROCTOR_ADDR":         "127.0.0.1:0",
		"PROCTOR_LOG_LEVEL":    "warn",
	}
}

// run executes one verb in-process and returns its exit code and output.
func (e testEnv) run(t testing.TB, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	p := &Program{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return e[k] }}
	code = p.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

// serve starts `proctor serve` in-process on a free port and stops it (and waits
// for the graceful shutdown) when the test ends.
func (e testEnv) serve(t testing.TB) string {
	t.Helper()
	ready := make(chan string, 1)
	var errb syncBuffer
	p := &Program{Stdin: strings.NewReader(""), Stdout: &errb, Stderr: &errb, Getenv: func(k string) string { return e[k] }, Ready: ready}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- p.Run(ctx, []string{"serve"}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			require.Equal(t, 0, code, "serve exit code; output:\n%s", errb.String())
		case <-time.After(30 * time.Second):
			t.Error("serve did not shut down within 30s")
		}
	})
	select {
	case url := <-ready:
		return url
	case code := <-done:
		t.Fatalf("serve exited with %d before listening:\n%s", code, errb.String())
	}
	return ""
}

// open opens the environment's (migrated) database and artifact store so a
// test can look at what a verb did; closed when the test ends.
func (e testEnv) open(t *testing.T) *App {
	t.Helper()
	p := &Program{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return e[k] }}
	app, err := p.openApp(context.Background(), &commonFlags{}, false)
	require.NoError(t, err)
	t.Cleanup(app.Close)
	return app
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestServe(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	url := env.serve(t)
	for _, path := range []string{"/healthz", "/readyz", "/"} {
		res, err := http.Get(url + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
	}
	key, err := os.Stat(filepath.Join(env["PROCTOR_DATA_DIR"], "secret.key"))
	require.NoError(t, err, "the secret key is generated on first start")
	require.Equal(t, os.FileMode(0o600), key.Mode().Perm())
}

func TestServe_HousekeepingDeletesExpiredSessions(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	code, _, stderr := env.run(t, "a long enough password\n", "user", "create", "--password-stdin", "ops@example.org")
	require.Equal(t, exitOK, code, stderr)
	app := env.open(t)
	ctx := context.Background()
	u, err := app.accountService().Authenticate(ctx, "ops@example.org", "a long enough password")
	require.NoError(t, err)
	_, live, err := app.DB.CreateSession(ctx, u.ID, "test", "127.0.0.1")
	require.NoError(t, err)
	_, expired, err := app.DB.CreateSession(ctx, u.ID, "test", "127.0.0.1")
	require.NoError(t, err)
	require.NoError(t, app.DB.Gorm().Model(expired).Update("expires_at", time.Now().UTC().Add(-time.Hour)).Error)

	env.serve(t)
	sessions := func() []string {
		var ids []string
		require.NoError(t, app.DB.Gorm().Model(&models.Session{}).Order("id").Pluck("id", &ids).Error)
		return ids
	}
	require.Eventually(t, func() bool { return len(sessions()) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the housekeeping job deletes expired sessions when the worker starts")
	require.Equal(t, []string{live.ID}, sessions())
}

func TestProgram_BadConfig(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env["PROCTOR_DATABASE_URL"] = "mysql://nope"
	env["PROCTOR_SECRET_KEY"] = "short"
	code, _, stderr := env.run(t, "", "migrate")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, "PROCTOR_DATABASE_URL: ")
	require.Contains(t, stderr, "PROCTOR_SECRET_KEY: must be at least 32 characters")
}

// TestProgram_FlagsOverrideEnvironment: the flags config.Flags declares win
// over their variables.
func TestProgram_FlagsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env["PROCTOR_DATABASE_URL"] = "mysql://nope"
	path := filepath.Join(t.TempDir(), "flagged.db")
	code, _, stderr := env.run(t, "", "migrate", "--database-url", "sqlite:"+path)
	require.Equal(t, exitOK, code, stderr)
	require.FileExists(t, path)
	code, _, stderr = env.run(t, "", "migrate", "--addr", "nonsense")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, `PROCTOR_ADDR: "nonsense" must be host:port`)
}

func TestProgram_Usage(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	code, _, stderr := env.run(t, "", "frobnicate")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `unknown command "frobnicate"`)
	code, stdout, _ := env.run(t, "", "help")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "serve")
}

func TestProgram_Migrate(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	code, stdout, stderr := env.run(t, "", "migrate")
	require.Equal(t, exitOK, code, stderr)
	require.NotContains(t, stdout, "applied 0 now")
	code, stdout, _ = env.run(t, "", "migrate")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "applied 0 now")
}

func TestProgram_UserCreate(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)

	t.Run("GeneratedPassword", func(t *testing.T) {
		code, stdout, stderr := env.run(t, "", "user", "create", "--admin", "root@example.org")
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stdout, "created admin root@example.org")
		require.Contains(t, stdout, "one-time password: ")
		require.Contains(t, stdout, "works for one sign-in: the account must choose its own password then")
		var u models.User
		require.NoError(t, env.open(t).DB.Gorm().Where("email = ?", "root@example.org").First(&u).Error)
		require.True(t, u.MustChangePassword, "a printed password is a one-time one")
	})
	t.Run("PasswordFromStdin", func(t *testing.T) {
		code, stdout, stderr := env.run(t, "a long enough password\n", "user", "create", "--password-stdin", "ops@example.org")
		require.Equal(t, exitOK, code, stderr)
		require.NotContains(t, stdout, "one-time password")
		var u models.User
		require.NoError(t, env.open(t).DB.Gorm().Where("email = ?", "ops@example.org").First(&u).Error)
		require.False(t, u.MustChangePassword, "a password the operator chose is kept")
	})
	t.Run("Duplicate", func(t *testing.T) {
		code, _, stderr := env.run(t, "", "user", "create", "root@example.org")
		require.Equal(t, exitConflict, code)
		require.Contains(t, stderr, "already exists")
	})
	t.Run("WeakPassword", func(t *testing.T) {
		code, _, stderr := env.run(t, "short\n", "user", "create", "--password-stdin", "weak@example.org")
		require.Equal(t, exitUsage, code)
		require.Contains(t, stderr, "password: password must be at least 10 characters")
	})
	t.Run("BadEmail", func(t *testing.T) {
		code, _, stderr := env.run(t, "", "user", "create", "nope")
		require.Equal(t, exitUsage, code)
		require.Contains(t, stderr, "is not a valid email address")
	})
	t.Run("List", func(t *testing.T) {
		code, stdout, _ := env.run(t, "", "user", "list")
		require.Equal(t, exitOK, code)
		require.Contains(t, stdout, "root@example.org")
	})
}

func TestProgram_UserSetPassword(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	code, _, stderr := env.run(t, "a long enough password\n", "user", "create", "--password-stdin", "ops@example.org")
	require.Equal(t, exitOK, code, stderr)
	ctx := context.Background()

	t.Run("GeneratedPassword", func(t *testing.T) {
		code, stdout, stderr := env.run(t, "", "user", "set-password", "--admin", "OPS@example.org")
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stdout, "set the password of admin ops@example.org")
		_, password, ok := strings.Cut(stdout, "one-time password: ")
		require.True(t, ok, stdout)
		password, _, _ = strings.Cut(password, "\n")
		app := env.open(t)
		u, err := app.accountService().Authenticate(ctx, "ops@example.org", password)
		require.NoError(t, err, "the new password authenticates")
		require.True(t, u.IsAdmin, "--admin promotes")
		require.True(t, u.MustChangePassword, "the printed password is a one-time one")
		_, err = app.accountService().Authenticate(ctx, "ops@example.org", "a long enough password")
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err), "the old one no longer does")
	})
	t.Run("PasswordFromStdin", func(t *testing.T) {
		code, stdout, stderr := env.run(t, "another long password\n", "user", "set-password", "--password-stdin", "ops@example.org")
		require.Equal(t, exitOK, code, stderr)
		require.NotContains(t, stdout, "one-time password")
		u, err := env.open(t).accountService().Authenticate(ctx, "ops@example.org", "another long password")
		require.NoError(t, err)
		require.False(t, u.MustChangePassword, "a password the operator chose is kept")
	})
	for _, tc := range []struct {
		name, stdin string
		args        []string
		code        int
		want        string
	}{
		{"UnknownEmail", "", []string{"nobody@example.org"}, exitNotFound, `no account has the email "nobody@example.org"`},
		{"WeakPassword", "short\n", []string{"--password-stdin", "ops@example.org"}, exitUsage, "password: password must be at least 10 characters"},
		{"NoEmail", "", nil, exitUsage, "expected exactly one EMAIL argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := env.run(t, tc.stdin, append([]string{"user", "set-password"}, tc.args...)...)
			requireOneLineError(t, tc.code, tc.want, code, stdout, stderr)
		})
	}
}
