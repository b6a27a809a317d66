package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestCanonicalEmail(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ada@example.org", models.CanonicalEmail("  Ada@Example.ORG \n"))
	require.Equal(t, "not an email", models.CanonicalEmail(" Not An Email "), "no validation")
	got, err := models.NormalizeEmail(" Ada@Example.ORG ")
	require.NoError(t, err)
	require.Equal(t, models.CanonicalEmail(" Ada@Example.ORG "), got)
}
