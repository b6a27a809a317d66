package agreement

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestStudyKeys(t *testing.T) {
	items := []models.StudyDataItem{
		{ItemID: 1, RunID: 10, Benchmark: "wa", Model: "gpt-4o", Agent: "Agent A", TaskID: "7"},
		{ItemID: 2, RunID: 11, Benchmark: "wa", Model: "gpt-4o", Agent: "Agent B", TaskID: "7"},
		{ItemID: 3, RunID: 11, Benchmark: "wa", Model: "gpt-4o", Agent: "Agent B", TaskID: "8"},
		{ItemID: 4, RunID: 12, Benchmark: "wa", Agent: "Replayer", TaskID: "7"},
	}
	require.Equal(t, map[int64]Key{
		1: {Benchmark: "wa", Model: "gpt-4o (run 10)", TaskID: "7"},
		2: {Benchmark: "wa", Model: "gpt-4o (run 11)", TaskID: "7"},
		3: {Benchmark: "wa", Model: "gpt-4o", TaskID: "8"},
		4: {Benchmark: "wa", Model: "Replayer", TaskID: "7"},
	}, StudyKeys(items))
}
