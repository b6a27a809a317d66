package agreement

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"proctor/stats"
)

// humanColumns are the columns WriteHumanCSV writes: AgentRewardBench's
// annotations.csv order, then the score and a rubric item's pass or fail
// (filled on rubric units only).
func humanColumns() []string {
	return []string{ColumnAnnotator, ColumnBenchmark, ColumnTaskID, ColumnModel, ColumnExperiment,
		"trajectory_success", "trajectory_side_effect", "trajectory_optimality", "trajectory_looping", "trajectory_score", "rubric_pass"}
}

// verdictColumns are the columns WriteVerdictsCSV writes.
func verdictColumns() []string {
	return []string{ColumnBenchmark, ColumnModel, ColumnTaskID, ColumnJudge,
		"trajectory_success", "trajectory_side_effect", "trajectory_optimality", "trajectory_looping", "trajectory_score", "rubric_pass"}
}

// display is a label's value as AgentRewardBench spells it.
func display(column string, values Values) string {
	for _, l := range Labels() {
		if spec, _ := SpecOf(l); spec.Column == column {
			return spec.DisplayOf(values[l])
		}
	}
	return ""
}

// WriteHumanCSV writes human labels in AgentRewardBench's annotations.csv
// layout (plus trajectory_score), values spelled as AgentRewardBench spells
// them ("Successful", "2. Suboptimal"), so ReadHumanCSV and AgentRewardBench's
// own scripts read them back.
func WriteHumanCSV(w io.Writer, humans []HumanLabel) error {
	cw := csv.NewWriter(w)
	columns := humanColumns()
	rows := [][]string{columns}
	for _, h := range humans {
		row := []string{h.Annotator, h.Benchmark, h.TaskID, h.Model, h.Experiment}
		for _, c := range columns[5:] {
			row = append(row, display(c, h.Values))
		}
		rows = append(rows, row)
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write human labels: %w", err)
	}
	return nil
}

// WriteVerdictsCSV writes verdicts in the judge CSV layout ReadVerdictsCSV
// reads.
func WriteVerdictsCSV(w io.Writer, verdicts []Verdict) error {
	cw := csv.NewWriter(w)
	columns := verdictColumns()
	rows := [][]string{columns}
	for _, v := range verdicts {
		row := []string{v.Benchmark, v.Model, v.TaskID, v.Judge}
		for _, c := range columns[4:] {
			row = append(row, display(c, v.Values))
		}
		rows = append(rows, row)
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write verdicts: %w", err)
	}
	return nil
}

// WriteHumanJSONL writes human labels as JSON Lines, one object a label with
// the CSV's keys; labels not answered are left out.
func WriteHumanJSONL(w io.Writer, humans []HumanLabel) error {
	enc := json.NewEncoder(w)
	for _, h := range humans {
		obj := map[string]string{ColumnAnnotator: h.Annotator, ColumnBenchmark: h.Benchmark, ColumnTaskID: h.TaskID, ColumnModel: h.Model}
		if h.Experiment != "" {
			obj[ColumnExperiment] = h.Experiment
		}
		addLabels(obj, h.Values)
		if err := enc.Encode(obj); err != nil {
			return fmt.Errorf("write human labels: %w", err)
		}
	}
	return nil
}

// WriteVerdictsJSONL writes verdicts as JSON Lines in the layout
// ReadVerdictsJSONL reads.
func WriteVerdictsJSONL(w io.Writer, verdicts []Verdict) error {
	enc := json.NewEncoder(w)
	for _, v := range verdicts {
		obj := map[string]string{ColumnBenchmark: v.Benchmark, ColumnModel: v.Model, ColumnTaskID: v.TaskID, ColumnJudge: v.Judge}
		addLabels(obj, v.Values)
		if err := enc.Encode(obj); err != nil {
			return fmt.Errorf("write verdicts: %w", err)
		}
	}
	return nil
}

func addLabels(obj map[string]string, values Values) {
	for _, l := range Labels() {
		spec, _ := SpecOf(l)
		if v := values[l]; v != "" {
			obj[spec.Column] = spec.DisplayOf(v)
		}
	}
}

// WriteReportJSON writes the report as indented JSON.
func WriteReportJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// ReportMetrics lists the metrics of the report in the order the CSV and the
// text report show them.
func ReportMetrics() []string {
	return []string{MetricAgreement, MetricCohenKappa, MetricQuadraticKappa,
		MetricAlpha, MetricAlphaOrdinal, MetricAlphaInterval,
		MetricPrecision, MetricRecall, MetricF1, MetricAccuracy, MetricNPV, MetricTNR}
}

// Metrics returns the human-vs-human metrics by name (nil: undefined or not
// applicable).
func (h HumanAgreement) Metrics() map[string]*float64 {
	return map[string]*float64{
		MetricAgreement: h.Agreement, MetricCohenKappa: h.CohenKappa, MetricQuadraticKappa: h.QuadraticKappa,
		MetricAlpha: h.KrippendorffAlpha, MetricAlphaOrdinal: h.KrippendorffAlphaOrdinal, MetricAlphaInterval: h.KrippendorffAlphaInterval,
	}
}

// Metrics returns the judge's metrics by name (nil: undefined or not
// applicable).
func (j JudgeAgreement) Metrics() map[string]*float64 {
	return map[string]*float64{
		MetricAgreement: j.Agreement, MetricCohenKappa: j.CohenKappa, MetricQuadraticKappa: j.QuadraticKappa,
		MetricPrecision: j.Precision, MetricRecall: j.Recall, MetricF1: j.F1,
		MetricAccuracy: j.Accuracy, MetricNPV: j.NPV, MetricTNR: j.TNR,
	}
}

// WriteReportCSV writes the report as one CSV row per label and comparison:
// first the label's human-vs-human row (comparison human_human), then one row
// per judge by name (comparison judge). Each metric has a column and, for its
// 95% interval, METRIC_low and METRIC_high; an undefined or inapplicable value
// is an empty cell. The label's counts (label_items, labelled, ties,
// unsure_items, unsure_answers) repeat on each of its rows.
func WriteReportCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(append([][]string{reportCSVHeader()}, reportCSVRows(r)...)); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// reportCSVHeader is the header of WriteReportCSV.
func reportCSVHeader() []string {
	header := []string{"label", "comparison", "judge", "label_items", "labelled", "ties", "unsure_items", "unsure_answers",
		"items", "pairs", "verdicts", "no_human_label", "no_majority", "unsure"}
	for _, m := range ReportMetrics() {
		header = append(header, m, m+"_low", m+"_high")
	}
	return header
}

// reportCSVRows are the rows of WriteReportCSV after its header.
func reportCSVRows(r *Report) [][]string {
	var rows [][]string
	metricCells := func(values map[string]*float64, intervals map[string]stats.Interval) []string {
		var cells []string
		for _, m := range ReportMetrics() {
			ci, ok := intervals[m]
			if values[m] == nil || !ok {
				cells = append(cells, number(values[m]), "", "")
				continue
			}
			cells = append(cells, number(values[m]), number(&ci.Low), number(&ci.High))
		}
		return cells
	}
	for _, l := range Labels() {
		lr := r.Labels[l]
		if lr == nil {
			continue
		}
		row := func(comparison, judge string, counts []string, cells []string) []string {
			out := []string{string(l), comparison, judge,
				strconv.Itoa(lr.Items), strconv.Itoa(lr.Labelled), strconv.Itoa(lr.Ties), strconv.Itoa(lr.Unsure), strconv.Itoa(lr.UnsureAnswers)}
			return append(append(out, counts...), cells...)
		}
		h := lr.HumanHuman
		rows = append(rows, row("human_human", "",
			[]string{strconv.Itoa(h.Items), strconv.Itoa(h.Pairs), "", "", "", ""},
			metricCells(h.Metrics(), h.Intervals)))
		for _, judge := range slices.Sorted(maps.Keys(lr.Judges)) {
			j := lr.Judges[judge]
			rows = append(rows, row("judge", judge,
				[]string{strconv.Itoa(j.Items), "", strconv.Itoa(j.Verdicts), strconv.Itoa(j.NoHumanLabel), strconv.Itoa(j.NoMajority), strconv.Itoa(j.Unsure)},
				metricCells(j.Metrics(), j.Intervals)))
		}
	}
	return rows
}

// WriteStudyReportJSON writes a study's report as indented JSON.
func WriteStudyReportJSON(w io.Writer, r *StudyReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write study report: %w", err)
	}
	return nil
}

// WriteStudyReportCSV writes a study's report as WriteReportCSV writes a
// report, with two columns in front: facet and value, empty on the rows of
// the report over every item, then the rows of each breakdown (facets in
// StudyFacets order, values sorted).
func WriteStudyReportCSV(w io.Writer, r *StudyReport) error {
	rows := [][]string{append([]string{"facet", "value"}, reportCSVHeader()...)}
	add := func(facet, value string, report *Report) {
		for _, row := range reportCSVRows(report) {
			rows = append(rows, append([]string{facet, value}, row...))
		}
	}
	add("", "", r.Report)
	for _, facet := range StudyFacets() {
		for _, b := range r.Breakdowns[facet] {
			add(facet, b.Value, b.Report)
		}
	}
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("write study report: %w", err)
	}
	return nil
}

// number formats a metric for CSV: the shortest exact decimal, "" for nil.
func number(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
