package hiddentest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docBlock returns the first ```json block of the named section ("## …") of
// docs/hidden-tests.md; other sections may hold examples of their own.
func docBlock(t *testing.T, section string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "hidden-tests.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "\n## "+section+"\n")
	require.True(t, ok, "no section %q", section)
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	_, after, ok := strings.Cut(rest, "```json\n")
	require.True(t, ok, "section %q has no ```json block", section)
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok, "an unterminated ```json block")
	return block
}

func TestDocs_ExamplesHold(t *testing.T) {
	t.Parallel()
	s, err := Parse(strings.NewReader(docBlock(t, "A minimal suite")))
	require.NoError(t, err)
	require.Equal(t, Summary{Total: 3, Request: 1, Browser: BrowserSummary{L1: 1}, System: 1}, s.Summary())
	require.Equal(t, []string{"shop-header"}, s.Captures())
	require.Equal(t, -1, s.Tests[1].CheckpointStep("shop-header"), "a checkpoint no step takes is taken after the last step")

	// The summary shown under "What teams see" is the sample suite's.
	want, err := json.Marshal(parseSample(t).Summary())
	require.NoError(t, err)
	require.JSONEq(t, string(want), docBlock(t, "What teams see"))
}
