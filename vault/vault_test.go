package vault_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/vault"
)

func TestVault(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("s", 32)
	v, err := vault.New(secret)
	require.NoError(t, err)

	t.Run("RoundTrip", func(t *testing.T) {
		sealed, err := v.Seal([]byte(`{"OPENAI_API_KEY":"sk-1"}`), "agent:1")
		require.NoError(t, err)
		require.NotContains(t, string(sealed), "sk-1")
		plain, err := v.Open(sealed, "agent:1")
		require.NoError(t, err)
		require.Equal(t, `{"OPENAI_API_KEY":"sk-1"}`, string(plain))
	})
	t.Run("WrongContext", func(t *testing.T) {
		sealed, err := v.Seal([]byte("x"), "agent:1")
		require.NoError(t, err)
		_, err = v.Open(sealed, "agent:2")
		require.ErrorIs(t, err, vault.ErrDecrypt)
	})
	t.Run("WrongKey", func(t *testing.T) {
		sealed, err := v.Seal([]byte("x"), "agent:1")
		require.NoError(t, err)
		other, err := vault.New(strings.Repeat("t", 32))
		require.NoError(t, err)
		_, err = other.Open(sealed, "agent:1")
		require.ErrorIs(t, err, vault.ErrDecrypt)
		require.NotEqual(t, v.SigningKey(), other.SigningKey())
	})
	t.Run("Tampered", func(t *testing.T) {
		sealed, err := v.Seal([]byte("x"), "a")
		require.NoError(t, err)
		sealed[len(sealed)-1] ^= 1
		_, err = v.Open(sealed, "a")
		require.ErrorIs(t, err, vault.ErrDecrypt)
		_, err = v.Open([]byte("short"), "a")
		require.ErrorIs(t, err, vault.ErrDecrypt)
	})
	t.Run("ShortSecret", func(t *testing.T) {
		_, err := vault.New("too short")
		require.ErrorContains(t, err, "at least 32 characters")
	})
}
