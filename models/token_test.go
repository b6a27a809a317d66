package models_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestNewToken(t *testing.T) {
	t.Parallel()
	plain, hash := models.NewToken("inv_")
	require.True(t, strings.HasPrefix(plain, "inv_"))
	require.Len(t, plain, len("inv_")+43, "32 random bytes, base64url without padding")
	require.Equal(t, models.HashToken(plain), hash)
	require.Len(t, hash, 64)
	other, _ := models.NewToken("inv_")
	require.NotEqual(t, plain, other)
}
