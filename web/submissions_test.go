package web

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// TestSubmissionReport_CappedLists: a report lists at most its cap of tasks
// and invalid files; the page counts every one and says how many it leaves out.
func TestSubmissionReport_CappedLists(t *testing.T) {
	r := &models.SubmissionReport{
		TasksFound:   []string{"a", "b"},
		TasksUnknown: []string{"x1", "x2", "x3"},
		InvalidFiles: []models.FileProblem{{Path: "a/bad.png", TaskID: "a", Problem: "not a valid screenshot"}},
		Counts:       models.SubmissionReportCounts{TasksUnknown: 1503, InvalidFiles: 40},
	}
	var b strings.Builder
	require.NoError(t, submissionReport(r).Render(context.Background(), &b))
	html := b.String()
	require.Contains(t, html, "Unknown (1503)")
	require.Contains(t, html, `data-testid="tasks-more-unknown">… and 1500 more, not listed.`)
	require.Contains(t, html, `data-testid="invalid-files-more">… and 39 more invalid files, not listed.`)
	require.Contains(t, html, "Tasks found (2)", "an uncapped list counts what it lists")
	require.NotContains(t, html, "tasks-more-found")
}
