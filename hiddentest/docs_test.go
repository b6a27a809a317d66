package hiddentest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docBlocks returns the ```json blocks of docs/hidden-tests.md in order.
func docBlocks(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "hidden-tests.md"))
	require.NoError(t, err)
	var blocks []string
	rest := string(doc)
	for {
		_, after, ok := strings.Cut(rest, "```json\n")
		if !ok {
			return blocks
		}
		block, tail, ok := strings.Cut(after, "```")
		require.True(t, ok, "an unterminated ```json block")
		blocks = append(blocks, block)
		rest = tail
	}
}

func TestDocs_ExamplesHold(t *testing.T) {
	t.Parallel()
	blocks := docBlocks(t)
	require.Len(t, blocks, 2)

	s, err := Parse(strings.NewReader(blocks[0]))
	require.NoError(t, err)
	require.Equal(t, Summary{Total: 3, Request: 1, Browser: BrowserSummary{L1: 1}, System: 1}, s.Summary())
	require.Equal(t, []string{"shop-header"}, s.Captures())
	require.Equal(t, -1, s.Tests[1].CheckpointStep("shop-header"), "a checkpoint no step takes is taken after the last step")

	// The summary shown under "What teams see" is the sample suite's.
	want, err := json.Marshal(parseSample(t).Summary())
	require.NoError(t, err)
	require.JSONEq(t, string(want), blocks[1])
}
