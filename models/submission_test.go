package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestFormatSizeOverLimit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		size, limit         int64
		wantSize, wantLimit string
	}{
		{2 << 30, 1 << 30, "2 GiB", "1 GiB"},
		{1<<30 + 200<<20, 1 << 30, "1.2 GiB", "1 GiB"},
		// One byte over would read "8 GiB; the largest is 8 GiB".
		{8<<30 + 1, 8 << 30, "8589934593 bytes", "8589934592 bytes (8 GiB)"},
		{1<<30 + 1<<20, 1 << 30, "1074790400 bytes", "1073741824 bytes (1 GiB)"},
		{1025, 1024, "1025 bytes", "1024 bytes (1 KiB)"},
	} {
		size, limit := models.FormatSizeOverLimit(c.size, c.limit)
		require.Equal(t, c.wantSize, size, "%d over %d", c.size, c.limit)
		require.Equal(t, c.wantLimit, limit, "%d over %d", c.size, c.limit)
		require.NotEqual(t, size, limit)
	}
}

func TestSubmission_Parts(t *testing.T) {
	t.Parallel()
	s := models.Submission{Size: 10, PartSize: 4}
	require.Equal(t, 3, s.PartsTotal())
	for n, want := range map[int][2]int64{1: {0, 4}, 2: {4, 4}, 3: {8, 2}} {
		require.Equal(t, want[0], s.PartOffset(n), "offset of part %d", n)
		require.Equal(t, want[1], s.PartLength(n), "length of part %d", n)
	}
	require.Zero(t, s.PartLength(4), "there is no part 4")
	empty := models.Submission{}
	require.Zero(t, empty.PartsTotal(), "no parts without a size")
}
