package service

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// TestCheckDataset: a dataset storage could not write whole is refused
// before the transaction, naming what is wrong.
func TestCheckDataset(t *testing.T) {
	t.Parallel()
	good := func() *models.Dataset {
		return &models.Dataset{Format: models.FormatProctor, Checksum: "abc",
			Tasks:   []models.Task{{ExternalID: "t1"}, {ExternalID: "t2"}},
			Subsets: []models.DatasetSubset{{Name: "smoke", ExternalIDs: []string{"t1"}}}}
	}
	require.NoError(t, checkDataset(good()))
	for _, tc := range []struct {
		name  string
		spoil func(d *models.Dataset)
		want  string
	}{
		{"NoTasks", func(d *models.Dataset) { d.Tasks = nil }, "the dataset has no tasks"},
		{"NoChecksum", func(d *models.Dataset) { d.Checksum = "" }, "the dataset has no checksum"},
		{"ReservedSubset", func(d *models.Dataset) { d.Subsets[0].Name = models.SubsetFull }, `subset "full": the name "full" is reserved`},
		{"UnknownTask", func(d *models.Dataset) { d.Subsets[0].ExternalIDs = []string{"t1", "no-such-task"} }, `subset "smoke": task id no-such-task is not in the benchmark`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := good()
			tc.spoil(d)
			err := checkDataset(d)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), tc.want)
		})
	}
	require.Equal(t, models.EINVALID, models.ErrorCode(checkDataset(nil)))
}
