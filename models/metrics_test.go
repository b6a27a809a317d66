package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestDimensions(t *testing.T) {
	t.Parallel()
	require.Equal(t, []models.Dimension{
		"site", "domain", "difficulty", "attribute", "task_type", "intent_template",
	}, models.Dimensions())
	// Callers own the returned slice.
	first := models.Dimensions()
	first[0] = "changed"
	require.Equal(t, models.DimensionSite, models.Dimensions()[0])
	for _, d := range models.BreakdownDimensions() {
		require.Contains(t, models.Dimensions(), models.Dimension(d), "the breakdowns page offers only stored dimensions")
	}
}
