package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestValidateSubsetName(t *testing.T) {
	t.Parallel()
	require.NoError(t, models.ValidateSubsetName("hard"))
	require.NoError(t, models.ValidateSubsetName("non-hard-2"))
	for name, want := range map[string]string{
		"full":       `the name "full" is reserved`,
		"":           `"" is not a valid subset name`,
		"Hard Tasks": `"Hard Tasks" is not a valid subset name`,
		"-hard":      "is not a valid subset name",
	} {
		err := models.ValidateSubsetName(name)
		require.Equal(t, models.EINVALID, models.ErrorCode(err), name)
		require.Equal(t, "subset", models.ErrorField(err), name)
		require.Contains(t, models.ErrorMessage(err), want, name)
	}
}
