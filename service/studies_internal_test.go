package service

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestChooseStudyJudges(t *testing.T) {
	t.Parallel()
	configs := []models.StudyJudge{{Name: "gpt"}, {Name: "claude"}, {Name: "local"}}
	for _, tc := range []struct {
		name    string
		configs []models.StudyJudge
		names   []string
		want    []string
		err     string
	}{
		{"All", configs, nil, []string{"gpt", "claude", "local"}, ""},
		{"Named", configs, []string{"local", " gpt ", "local"}, []string{"local", "gpt"}, ""},
		{"Unknown", configs, []string{"gpt", "gemini", "o9"}, nil, `The study has no judge configuration named "gemini", "o9" (it has: gpt, claude, local).`},
		{"NoConfigurations", nil, nil, nil, "The study has no judge configurations to run: add one first."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := chooseStudyJudges(tc.configs, tc.names)
			if tc.err != "" {
				require.Equal(t, models.EINVALID, models.ErrorCode(err))
				require.Equal(t, tc.err, models.ErrorMessage(err))
				require.Equal(t, "judge", models.ErrorField(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
