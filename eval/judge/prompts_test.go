package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestPrompts(t *testing.T) {
	t.Parallel()
	prompts := Prompts()
	var versions []string
	for _, p := range prompts {
		versions = append(versions, p.Version)
		sum := sha256.Sum256([]byte(p.Text))
		require.Equal(t, hex.EncodeToString(sum[:]), p.SHA256, p.Version)
		require.True(t, strings.HasPrefix(p.Version, p.Name+"-v"), p.Version)
		require.Contains(t, p.Text, `{{define "system"`, p.Version)
		require.Contains(t, p.Text, `{{define "user"`, p.Version)
		require.Contains(t, p.Text, "JSON", "JSON mode needs the word JSON in the prompt")
	}
	// Released versions stay listed, since recorded verdicts cite them.
	require.Equal(t, []string{"fuzzy-match-v1", FuzzyMatchVersion, LabelsVersion, "rubric-v1", RubricVersion, "trajectory-v1", TrajectoryVersion}, versions)

	// The judges use the listed prompts, byte for byte.
	c, err := New(Config{BaseURL: "http://judge.test/v1", Model: "m"})
	require.NoError(t, err)
	used := 0
	for _, p := range prompts {
		if inUse, ok := c.prompts[p.Name]; ok && inUse.Version == p.Version {
			require.Equal(t, p.SHA256, c.prompts[p.Name].SHA256)
			used++
		}
	}
	require.Equal(t, 3, used)

	// A study may choose every prompt models.StudyPrompts lists, byte for byte.
	for _, version := range models.StudyPrompts() {
		p, ok := c.studyPrompts[version]
		require.True(t, ok, version)
		require.Equal(t, version, p.Version)
		for _, stored := range prompts {
			if stored.Version == version {
				require.Equal(t, stored.SHA256, p.SHA256, version)
			}
		}
	}
	require.Len(t, c.studyPrompts, len(models.StudyPrompts()))

	// The trajectory prompt defines every score level.
	var trajectory Prompt
	for _, p := range prompts {
		if p.Version == TrajectoryVersion {
			trajectory = p
		}
	}
	for _, level := range []string{"5 = fully satisfies the task", "4 = satisfies the task with minor flaws", "3 = partially satisfies", "2 = mostly fails", "1 = major errors and no progress"} {
		require.Contains(t, trajectory.Text, level)
	}
}

func TestPromptNames(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{"trajectory-v1.md": "trajectory", "fuzzy-match-v12.md": "fuzzy-match"} {
		name, ok := promptName(file)
		require.True(t, ok, file)
		require.Equal(t, want, name)
	}
	for _, file := range []string{"README.md", "trajectory.md", "trajectory-vx.md", "-v1.md", "trajectory-v1.txt"} {
		_, ok := promptName(file)
		require.False(t, ok, file)
	}
	require.Equal(t, 12, versionNumber("fuzzy-match-v12"))
	require.Zero(t, versionNumber("fuzzy-match"))
}
