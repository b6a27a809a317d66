package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"proctor/api"
	"proctor/internal/apiclient"
	"proctor/models"
)

// printHiddenSummary writes a hidden-tests run's pass rates under its
// state: the overall pass rate over the tests that ran with its 95%
// interval and the tests not run on the platform, the pass threshold, then
// each task's outcome and pass rates overall and per group. A run whose
// tests have not run yet says so.
func (p *Program) printHiddenSummary(ctx context.Context, c *apiclient.Client, runID int64) error {
	h, err := c.HiddenResults(ctx, runID)
	if err != nil {
		return err
	}
	writeHiddenSummary(p.Stdout, h)
	return nil
}

// writeHiddenSummary writes printHiddenSummary's lines.
func writeHiddenSummary(w io.Writer, h *api.HiddenRunResults) {
	pr := h.PassRate
	switch {
	case pr.Total == 0:
		fmt.Fprintln(w, "pass rate: no test results yet")
	case pr.Rate == nil:
		fmt.Fprintf(w, "pass rate: none of the %s could run on this platform\n", plural(pr.Total, "test"))
	default:
		line := fmt.Sprintf("pass rate %s (%d of %s run; 95%% CI %.1f–%.1f%%)", percent(pr.Rate), pr.Passed, plural(pr.Ran, "test"), 100*pr.CI95[0], 100*pr.CI95[1])
		if pr.NotRun > 0 {
			line += fmt.Sprintf("; %s not run on this platform", plural(pr.NotRun, "test"))
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "a task succeeds "+thresholdText(h.PassThreshold))
	if len(h.Tasks) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tOUTCOME\tPASS RATE\tREQUEST\tBROWSER\tSYSTEM\tNOT RUN")
	for _, t := range h.Tasks {
		outcome := t.Outcome
		if outcome == "" {
			outcome = t.Status
		}
		if t.Summary == nil {
			fmt.Fprintf(tw, "%s\t%s\t—\t—\t—\t—\t—\n", t.TaskID, outcome)
			continue
		}
		s := t.Summary
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", t.TaskID, outcome, tallyText(s.Overall), tallyText(s.Request),
			tallyText(s.Browser), tallyText(s.System), s.Overall.NotRun)
	}
	tw.Flush()
}

// tallyText is a tally's pass rate over the tests that ran with its counts,
// such as "73.8% (31/42)"; "—" when none ran.
func tallyText(t models.HiddenTally) string {
	if t.Ran() == 0 {
		return "—"
	}
	return fmt.Sprintf("%s (%d/%d)", percent(t.Rate()), t.Passed, t.Ran())
}

// thresholdText says when a task succeeds.
func thresholdText(threshold float64) string {
	if threshold <= 0 || threshold >= models.DefaultPassThreshold {
		return "when every test that ran passed"
	}
	return "when at least " + strconv.FormatFloat(100*threshold, 'f', -1, 64) + "% of the tests that ran passed"
}

// percent is a rate as a percentage with one decimal; "—" for none.
func percent(x *float64) string {
	if x == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100**x)
}
