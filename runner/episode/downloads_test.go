package episode

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSanitizeFileName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"report.csv":              "report.csv",
		"../../etc/passwd":        "passwd",
		`C:\temp\my file (1).pdf`: "my_file__1_.pdf",
		".proctor-meta":           "proctor-meta",
		"":                        "download",
		"..":                      "download",
		"données.csv":             "donn_es.csv",
	} {
		require.Equal(t, want, sanitizeFileName(in), in)
	}
	used := map[string]bool{"a.csv": true, "a-2.csv": true}
	require.Equal(t, "a-3.csv", uniqueName("a.csv", used))
	require.Equal(t, "b.csv", uniqueName("b.csv", used))
}
