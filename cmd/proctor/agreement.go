package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"proctor/agreement"
	"proctor/models"
	"proctor/stats"
)

// judgeFiles collects repeated --judge FILE flags.
type judgeFiles []string

// String lists the files as given, for flag's help text.
func (j *judgeFiles) String() string { return strings.Join(*j, ",") }

// Set adds one file.
func (j *judgeFiles) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("expected a file name")
	}
	*j = append(*j, v)
	return nil
}

// agreementCommand is `proctor agreement --human HUMAN.csv [--judge FILE …]
// [--skip-bad-rows] [--json] [--csv OUT.csv] [--bootstrap N] [--seed S]`: the
// offline human-vs-judge agreement report (docs/agreement.md), without a
// database. Every file is read completely before anything is printed, so bad
// input gives one message and no partial report.
func (p *Program) agreementCommand(_ context.Context, args []string) error {
	const usage = "agreement --human HUMAN.csv [--judge JUDGE.csv|JUDGE.jsonl …] [--skip-bad-rows] [--json] [--csv OUT.csv] [--bootstrap N] [--seed S]"
	fs := flag.NewFlagSet("proctor agreement", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	human := fs.String("human", "", "human labels in AgentRewardBench's annotations.csv layout")
	var judges judgeFiles
	fs.Var(&judges, "judge", "judge verdicts, .csv or .jsonl (repeatable)")
	skipBad := fs.Bool("skip-bad-rows", false, "leave malformed rows out (the report counts them) instead of stopping at the first")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	csvOut := fs.String("csv", "", "also write the report as CSV to this file")
	resamples := fs.Int("bootstrap", agreement.DefaultResamples, "bootstrap resamples for the 95% intervals; 0 leaves them out")
	seed := fs.Uint64("seed", stats.DefaultSeed, "bootstrap seed")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	switch {
	case len(positional) > 0:
		return usagef("unexpected argument %q: files are given with --human and --judge (usage: proctor %s)", positional[0], usage)
	case *human == "":
		return usagef("--human is required: the human labels CSV (usage: proctor %s)", usage)
	case *resamples < 0:
		return usagef("--bootstrap %d: expected 0 (no intervals) or more resamples", *resamples)
	}
	for _, j := range judges {
		if _, err := verdictReader(j); err != nil {
			return err
		}
	}

	humans, skipped, err := readHumanFile(*human, *skipBad)
	if err != nil {
		return err
	}
	humanKeys := map[agreement.Key]bool{}
	for _, h := range humans {
		humanKeys[h.Key] = true
	}
	var verdicts []agreement.Verdict
	for _, j := range judges {
		vs, sk, err := readJudgeFile(j, *skipBad, humanKeys)
		if err != nil {
			return err
		}
		verdicts = append(verdicts, vs...)
		skipped = append(skipped, sk...)
	}

	report, err := agreement.BuildReport(humans, verdicts, agreement.Options{Resamples: *resamples, Seed: *seed, Skipped: skipped})
	if err != nil {
		return err
	}
	if *csvOut != "" {
		if err := writeFileWith(*csvOut, func(w io.Writer) error { return agreement.WriteReportCSV(w, report) }); err != nil {
			return err
		}
	}
	if *asJSON {
		return agreement.WriteReportJSON(p.Stdout, report)
	}
	printAgreement(p.Stdout, report)
	return nil
}

// readHumanFile reads the human labels; a file left with none is bad input.
func readHumanFile(path string, skipBad bool) ([]agreement.HumanLabel, []agreement.RowError, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, nil, prefixError("--human", err)
	}
	defer f.Close()
	humans, skipped, err := agreement.ReadHumanCSV(f, agreement.ReadOptions{Name: filepath.Base(path), SkipBadRows: skipBad})
	if err != nil {
		return nil, nil, withSkipHint(err)
	}
	if len(humans) == 0 {
		return nil, nil, models.Errorf(models.EINVALID, "%s: no human labels%s", path, skippedNote(skipped))
	}
	return humans, skipped, nil
}

// readJudgeFile reads one judge file; a file with no verdict, or none for an
// item with human labels, is bad input.
func readJudgeFile(path string, skipBad bool, humanKeys map[agreement.Key]bool) ([]agreement.Verdict, []agreement.RowError, error) {
	read, err := verdictReader(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := openInput(path)
	if err != nil {
		return nil, nil, prefixError("--judge", err)
	}
	defer f.Close()
	verdicts, skipped, err := read(f, agreement.ReadOptions{Name: filepath.Base(path), SkipBadRows: skipBad})
	if err != nil {
		return nil, nil, withSkipHint(err)
	}
	if len(verdicts) == 0 {
		return nil, nil, models.Errorf(models.EINVALID, "%s: no verdicts%s", path, skippedNote(skipped))
	}
	matched := slices.ContainsFunc(verdicts, func(v agreement.Verdict) bool { return humanKeys[v.Key] })
	if !matched {
		return nil, nil, models.Errorf(models.EINVALID,
			"%s: none of its %d verdicts is for an item in the human labels (first: %s); items are matched on benchmark, model_name and task_id",
			path, len(verdicts), verdicts[0].Key)
	}
	return verdicts, skipped, nil
}

// verdictReader picks the reader by the file's extension.
func verdictReader(path string) (func(io.Reader, agreement.ReadOptions) ([]agreement.Verdict, []agreement.RowError, error), error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return agreement.ReadVerdictsCSV, nil
	case ".jsonl", ".ndjson":
		return agreement.ReadVerdictsJSONL, nil
	}
	return nil, usagef("--judge %s: unknown format: name the file .csv or .jsonl (JSON Lines)", path)
}

// withSkipHint tells the user how to proceed past a bad row.
func withSkipHint(err error) error {
	var me *models.Error
	if !errors.Is(err, agreement.ErrBadRow) || !errors.As(err, &me) {
		return err
	}
	cp := *me
	cp.Message += " (--skip-bad-rows leaves such rows out and counts them)"
	return &cp
}

func skippedNote(skipped []agreement.RowError) string {
	if len(skipped) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s skipped)", plural(len(skipped), "bad row"))
}

// writeFileWith creates path and writes it with write.
func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// printAgreement prints the report for a terminal: what was read, then per
// label a table of human-vs-human and each judge.
func printAgreement(w io.Writer, r *agreement.Report) {
	h := r.Human
	fmt.Fprintf(w, "human labels: %d from %s on %s (%d labelled by two or more)\n",
		h.Labels, plural(h.Annotators, "annotator"), plural(h.Items, "item"), h.Overlap)
	if r.SkippedRows > 0 {
		fmt.Fprintf(w, "skipped %s:\n", plural(r.SkippedRows, "bad row"))
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	if len(r.Judges) > 0 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(r.Judges)) {
			j := r.Judges[name]
			part := name + " " + plural(j.Verdicts, "verdict")
			if j.Unmatched > 0 {
				part += fmt.Sprintf(" (%d for items without human labels)", j.Unmatched)
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(w, "judges: %s\n", strings.Join(parts, "; "))
	}
	if r.Bootstrap.Resamples > 0 {
		fmt.Fprintf(w, "95%% bootstrap intervals in brackets (%d resamples of the items, seed %d)\n", r.Bootstrap.Resamples, r.Bootstrap.Seed)
	}
	for _, l := range agreement.Labels() {
		lr := r.Labels[l]
		if lr == nil || (lr.Labelled == 0 && len(lr.Judges) == 0) {
			continue
		}
		fmt.Fprintln(w)
		printLabel(w, l, lr)
	}
}

// printLabel prints one label's table.
func printLabel(w io.Writer, l agreement.Label, lr *agreement.LabelReport) {
	head := fmt.Sprintf("%s: %s with a human majority", l, plural(lr.Items, "item"))
	var notes []string
	if lr.Ties > 0 {
		notes = append(notes, plural(lr.Ties, "tie"))
	}
	if lr.Unsure > 0 {
		notes = append(notes, fmt.Sprintf("%d all unsure", lr.Unsure))
	}
	if lr.UnsureAnswers > 0 {
		notes = append(notes, plural(lr.UnsureAnswers, "unsure answer")+" left out")
	}
	if lr.Positive != nil {
		notes = append(notes, "positive: "+*lr.Positive)
	}
	if len(notes) > 0 {
		head += " (" + strings.Join(notes, ", ") + ")"
	}
	fmt.Fprintln(w, head)

	type column struct {
		title  string
		metric string
		rate   bool // shown as a percentage
	}
	columns := []column{{"agreement", agreement.MetricAgreement, true}, {"kappa", agreement.MetricCohenKappa, false}}
	if lr.Ordinal {
		columns = append(columns, column{"quadratic kappa", agreement.MetricQuadraticKappa, false},
			column{"alpha", agreement.MetricAlpha, false}, column{"ordinal alpha", agreement.MetricAlphaOrdinal, false})
	} else {
		columns = append(columns, column{"alpha", agreement.MetricAlpha, false})
		for _, m := range []string{agreement.MetricPrecision, agreement.MetricRecall, agreement.MetricF1,
			agreement.MetricAccuracy, agreement.MetricNPV, agreement.MetricTNR} {
			columns = append(columns, column{m, m, true})
		}
	}
	withInterval := map[string]bool{agreement.MetricAgreement: true, agreement.MetricCohenKappa: true, agreement.MetricQuadraticKappa: true}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	titles := []string{"  ", "items"}
	for _, c := range columns {
		titles = append(titles, c.title)
	}
	fmt.Fprintln(tw, strings.Join(titles, "\t"))
	row := func(name, items string, values map[string]*float64, intervals map[string]stats.Interval) {
		cells := []string{"  " + name, items}
		for _, c := range columns {
			cell := formatMetric(values[c.metric], c.rate)
			if ci, ok := intervals[c.metric]; ok && withInterval[c.metric] && values[c.metric] != nil {
				cell += " [" + formatMetric(&ci.Low, c.rate) + ", " + formatMetric(&ci.High, c.rate) + "]"
			}
			cells = append(cells, cell)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	hh := lr.HumanHuman
	row("humans", plural(hh.Pairs, "pair"), hh.Metrics(), hh.Intervals)
	var leftOut []string
	for _, name := range slices.Sorted(maps.Keys(lr.Judges)) {
		j := lr.Judges[name]
		row(name, fmt.Sprint(j.Items), j.Metrics(), j.Intervals)
		var why []string
		for _, reason := range []struct {
			n    int
			what string
		}{{j.NoHumanLabel, "no human label"}, {j.NoMajority, "no human majority"}, {j.Unsure, "judge unsure"}} {
			if reason.n > 0 {
				why = append(why, fmt.Sprintf("%d %s", reason.n, reason.what))
			}
		}
		if len(why) > 0 {
			leftOut = append(leftOut, name+": "+strings.Join(why, ", "))
		}
	}
	tw.Flush()
	if len(leftOut) > 0 {
		fmt.Fprintf(w, "  verdicts left out: %s\n", strings.Join(leftOut, "; "))
	}
}

// formatMetric shows a rate as a percentage and a kappa or alpha with three
// decimals; "—" for an undefined or inapplicable value.
func formatMetric(v *float64, rate bool) string {
	switch {
	case v == nil:
		return "—"
	case rate:
		return fmt.Sprintf("%.1f%%", 100**v)
	}
	return fmt.Sprintf("%.3f", *v)
}
