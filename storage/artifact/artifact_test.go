package artifact

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidateKey(t *testing.T) {
	t.Parallel()

	for _, key := range []string{
		"a", "runs/1/step-1.png", "runs/1/page 1.html", "ünïcode/файл.txt", ".hidden/x",
		"a..b", "...", "x/.proctor", strings.Repeat("k", MaxKeyLen),
	} {
		require.NoError(t, ValidateKey(key), "%q", key)
	}

	for key, reason := range map[string]string{
		"":                               "empty",
		"../x":                           `".." segment`,
		"a/..":                           `".." segment`,
		"./a":                            `"." segment`,
		"a/./b":                          `"." segment`,
		"/abs":                           "leading slash",
		"a//b":                           "empty segment",
		"a/":                             "empty segment",
		`a\b`:                            "backslash",
		"a\x00b":                         "unprintable",
		"a\nb":                           "unprintable",
		"a\u200bb":                       "unprintable", // zero-width space
		"\xff":                           "UTF-8",
		".proctor-meta/a":                "reserved",
		"a/.proctor-tmp-1":               "reserved",
		strings.Repeat("k", MaxKeyLen+1): "longer than 1024 bytes",
	} {
		err := ValidateKey(key)
		require.ErrorIs(t, err, ErrInvalidKey, "%q", key)
		require.ErrorContains(t, err, reason, "%q", key)
		require.Less(t, len(err.Error()), 200, "message stays short")
		if len(key) < 80 {
			require.ErrorContains(t, err, fmt.Sprintf("%q", key), "message names the key")
		}
	}
}

func TestURLSigner(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	s := NewURLSigner([]byte("secret"))
	exp := now.Add(time.Minute)
	expStr := "1700000060"
	sig := s.Sign("runs/1/a.png", exp)
	require.Len(t, sig, 64)
	require.Equal(t, sig, s.Sign("runs/1/a.png", exp.Add(999*time.Millisecond)), "whole seconds")

	require.NoError(t, s.Verify("runs/1/a.png", expStr, sig, now))
	require.NoError(t, s.Verify("runs/1/a.png", expStr, strings.ToUpper(sig), now))

	for name, tc := range map[string]struct {
		key, expires, sig string
		now               time.Time
		want              error
	}{
		"Expired":         {"runs/1/a.png", expStr, sig, exp, ErrURLExpired},
		"LongExpired":     {"runs/1/a.png", expStr, sig, exp.Add(time.Hour), ErrURLExpired},
		"OtherKey":        {"runs/1/b.png", expStr, sig, now, ErrURLSignature},
		"OtherExpiry":     {"runs/1/a.png", "1700000061", sig, now, ErrURLSignature},
		"FlippedSig":      {"runs/1/a.png", expStr, "0" + sig[1:], now, ErrURLSignature},
		"ExpiresNotInt":   {"runs/1/a.png", "soon", sig, now, ErrURLMalformed},
		"ExpiresPlusSign": {"runs/1/a.png", "+" + expStr, sig, now, ErrURLMalformed},
		"ExpiresLeading0": {"runs/1/a.png", "0" + expStr, sig, now, ErrURLMalformed},
		"EmptyExpires":    {"runs/1/a.png", "", sig, now, ErrURLMalformed},
		"SigNotHex":       {"runs/1/a.png", expStr, "zz" + sig[2:], now, ErrURLMalformed},
		"SigShort":        {"runs/1/a.png", expStr, sig[:62], now, ErrURLMalformed},
		"EmptySig":        {"runs/1/a.png", expStr, "", now, ErrURLMalformed},
	} {
		require.ErrorIs(t, s.Verify(tc.key, tc.expires, tc.sig, tc.now), tc.want, name)
	}

	// The key is copied, and a zero signer verifies nothing.
	k := []byte("mutable")
	s2 := NewURLSigner(k)
	sig2 := s2.Sign("a", exp)
	k[0] = 'X'
	require.NoError(t, s2.Verify("a", expStr, sig2, now))
	var zero URLSigner
	require.ErrorIs(t, zero.Verify("a", expStr, zero.Sign("a", exp), now), ErrURLSignature)
}
