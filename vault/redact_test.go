package vault_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/vault"
)

func TestRedactor(t *testing.T) {
	t.Parallel()
	const token = "tok-3f9a/b+c=d\"e"
	r := vault.NewRedactor(token, "", "short")
	for _, text := range []string{
		"Bearer " + token,
		`{"echo": "tok-3f9a/b+c=d\"e"}`,
		"?key=" + url.QueryEscape(token),
		"/path/" + url.PathEscape(token),
		"Basic " + base64.StdEncoding.EncodeToString([]byte(token)),
		base64.RawURLEncoding.EncodeToString([]byte(token)),
	} {
		got := r.Text(text)
		require.Contains(t, got, vault.Redacted, text)
		require.NotContains(t, got, "3f9a", text)
	}
	require.Equal(t, "a short word stays", r.Text("a short word stays"), "secrets under the minimum length are not looked for")
	require.Equal(t, "x", (*vault.Redactor)(nil).Text("x"))
	require.Equal(t, "x", vault.NewRedactor().Text("x"))
}

func TestRedactor_Logger(t *testing.T) {
	t.Parallel()
	const token = "sk-live-abcdef123456"
	var buf bytes.Buffer
	log := vault.NewRedactor(token).Logger(slog.New(slog.NewTextHandler(&buf, nil)))
	log.With("endpoint", "https://agent.example/?key="+token).WithGroup("call").
		Info("agent said "+token, "error", errors.New("401: bad token "+token), "body", token, "n", 3)
	out := buf.String()
	require.NotContains(t, out, "abcdef123456")
	require.Contains(t, out, "agent said [redacted]")
	require.Contains(t, out, "call.error=\"401: bad token [redacted]\"")
	require.Contains(t, out, "call.n=3")
}
