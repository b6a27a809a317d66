package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/agreement"
	"proctor/models"
	"proctor/service"
	"proctor/stats"
	"proctor/web"
)

// studyReport loads a study's data and its agreement report, broken down by
// the facets asked for (none: an empty list; every one: nil).
func (s *Server) studyReport(c echo.Context, facets []string) (*models.StudyData, *agreement.StudyReport, error) {
	id, err := int64Param(c, "id")
	if err != nil {
		return nil, nil, err
	}
	return s.deps.Studies.StudyReport(c.Request().Context(), id, facets)
}

// studyFacet reads ?by=: "" for no breakdown, else a facet of
// agreement.StudyFacets (EINVALID naming the parameter otherwise).
func studyFacet(c echo.Context) (string, error) {
	by := strings.TrimSpace(c.QueryParam("by"))
	if by != "" && !slices.Contains(agreement.StudyFacets(), by) {
		return "", &models.Error{Code: models.EINVALID, Field: "by",
			Message: fmt.Sprintf("by must be one of %s.", strings.Join(agreement.StudyFacets(), ", "))}
	}
	return by, nil
}

// showStudyReport is the agreement report page, with the breakdown by one
// facet when ?by= names it.
func (s *Server) showStudyReport(c echo.Context) error {
	by, err := studyFacet(c)
	if err != nil {
		return err
	}
	facets := []string{}
	if by != "" {
		facets = []string{by}
	}
	d, r, err := s.studyReport(c, facets)
	if err != nil {
		return err
	}
	v := studyReportView(d, r, by)
	return s.render(c, http.StatusOK, web.StudyReportPage(s.page(c, "Agreement report of "+d.Study.Name), v))
}

// reportLabels are the labels the page shows: those the study asks, then
// any other label with human labels (imported ones the study does not ask).
func reportLabels(r *agreement.StudyReport) []agreement.Label {
	out := slices.Clone(r.Asked)
	for _, l := range agreement.Labels() {
		if lr := r.Report.Labels[l]; lr != nil && lr.Labelled > 0 && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// primaryLabel is the label breakdowns show: success when the study asks it,
// else its first label.
func primaryLabel(r *agreement.StudyReport) agreement.Label {
	if slices.Contains(r.Asked, agreement.LabelSuccess) || len(r.Asked) == 0 {
		return agreement.LabelSuccess
	}
	return r.Asked[0]
}

// metricTitles names the metrics for column headings.
func metricTitle(metric string) string {
	switch metric {
	case agreement.MetricAgreement:
		return "Agreement"
	case agreement.MetricCohenKappa:
		return "Cohen's κ"
	case agreement.MetricQuadraticKappa:
		return "Quadratic κ"
	case agreement.MetricAlpha:
		return "Krippendorff's α"
	case agreement.MetricAlphaOrdinal:
		return "α (ordinal)"
	case agreement.MetricAlphaInterval:
		return "α (interval)"
	case agreement.MetricPrecision:
		return "Precision"
	case agreement.MetricRecall:
		return "Recall"
	case agreement.MetricF1:
		return "F1"
	case agreement.MetricAccuracy:
		return "Accuracy"
	case agreement.MetricNPV:
		return "NPV"
	case agreement.MetricTNR:
		return "TNR"
	}
	return metric
}

// labelMetrics are the metrics a label's table shows, in column order:
// the ordinal ones for ordinal labels, the binary ones otherwise.
func labelMetrics(ordinal bool) []string {
	if ordinal {
		return []string{agreement.MetricAgreement, agreement.MetricCohenKappa, agreement.MetricQuadraticKappa,
			agreement.MetricAlpha, agreement.MetricAlphaOrdinal, agreement.MetricAlphaInterval}
	}
	return []string{agreement.MetricAgreement, agreement.MetricCohenKappa, agreement.MetricAlpha,
		agreement.MetricPrecision, agreement.MetricRecall, agreement.MetricF1, agreement.MetricAccuracy,
		agreement.MetricNPV, agreement.MetricTNR}
}

// formatStat writes a statistic for the page: two decimals, "—" when it is
// undefined.
func formatStat(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

// formatInterval writes a 95% interval as [low, high] (an en dash would read
// as a minus between negative bounds), "" when none was drawn.
func formatInterval(ci *stats.Interval) string {
	if ci == nil {
		return ""
	}
	return "[" + strconv.FormatFloat(ci.Low, 'f', 2, 64) + ", " + strconv.FormatFloat(ci.High, 'f', 2, 64) + "]"
}

func intervalOf(intervals map[string]stats.Interval, metric string) *stats.Interval {
	ci, ok := intervals[metric]
	if !ok {
		return nil
	}
	return &ci
}

// displayValue is a label's value as people read it ("Successful",
// "2. Suboptimal").
func displayValue(l agreement.Label, v string) string {
	spec, ok := agreement.SpecOf(l)
	if !ok || v == "" {
		return v
	}
	if v == agreement.Unsure {
		return "Unsure"
	}
	if d := spec.DisplayOf(v); d != "" {
		return d
	}
	return v
}

func confusionOf(l agreement.Label, t agreement.Table) web.StudyConfusion {
	c := web.StudyConfusion{Rows: t.Rows, Columns: t.Columns, Counts: t.Counts}
	for _, cat := range t.Categories {
		c.Categories = append(c.Categories, displayValue(l, cat))
	}
	return c
}

// humanCounts says what the annotators' pairs are over and how many unsure
// answers of the label were left out of them.
func humanCounts(h agreement.HumanAgreement, unsureAnswers int) string {
	s := fmt.Sprintf("%d items, %d pairs, %d annotators", h.Items, h.Pairs, h.Annotators)
	switch unsureAnswers {
	case 0:
	case 1:
		s += "; 1 unsure answer left out"
	default:
		s += fmt.Sprintf("; %d unsure answers left out", unsureAnswers)
	}
	return s
}

// studyReportView lays a study report out for the page.
func studyReportView(d *models.StudyData, r *agreement.StudyReport, by string) web.StudyReportView {
	rep := r.Report
	v := web.StudyReportView{
		Study: d.Study, Items: r.Items, Labelled: r.Labelled, Annotators: rep.Human.Annotators, Overlap: rep.Human.Overlap,
		Resamples: rep.Bootstrap.Resamples, Facets: agreement.StudyFacets(), By: by, Problems: r.Problems,
	}
	kinds := map[string]string{}
	for _, j := range r.Leaderboard {
		kinds[j.Judge] = j.Kind
	}
	for _, l := range reportLabels(r) {
		lr := rep.Labels[l]
		if lr == nil {
			continue
		}
		lv := web.StudyLabelReport{
			Label: string(l), Title: web.StudyLabelTitle(string(l)), Ordinal: lr.Ordinal, Items: lr.Items, Labelled: lr.Labelled,
			Ties: lr.Ties, Unsure: lr.Unsure,
		}
		if lr.Positive != nil {
			lv.Positive = displayValue(l, *lr.Positive)
		}
		for _, cat := range lr.Categories {
			if n := lr.Majority[cat]; n > 0 {
				lv.Majority = append(lv.Majority, web.StudyCount{Category: displayValue(l, cat), Count: n})
			}
		}
		metrics := labelMetrics(lr.Ordinal)
		h := lr.HumanHuman
		hm := h.Metrics()
		lv.Human = web.StudyComparison{
			Who: "Annotators with each other", Items: h.Items,
			Counts:    humanCounts(h, lr.UnsureAnswers),
			Confusion: confusionOf(l, h.Confusion),
		}
		for _, m := range metrics {
			lv.Human.Metrics = append(lv.Human.Metrics, web.StudyMetric{Name: m, Title: metricTitle(m), Value: formatStat(hm[m]), Interval: formatInterval(intervalOf(h.Intervals, m))})
		}
		for _, judge := range judgeOrder(r, lr) {
			j := lr.Judges[judge]
			jm := j.Metrics()
			cmpv := web.StudyComparison{
				Who: judge, Kind: kinds[judge], Items: j.Items,
				Counts: fmt.Sprintf("%d verdicts: %d compared, %d without a human label, %d without a majority, %d unsure",
					j.Verdicts, j.Items, j.NoHumanLabel, j.NoMajority, j.Unsure),
				Confusion:         confusionOf(l, j.Confusion),
				DisagreementsHref: web.StudyDisagreementsPath(d.Study.ID, string(l), judge),
			}
			for _, m := range metrics {
				cmpv.Metrics = append(cmpv.Metrics, web.StudyMetric{Name: m, Title: metricTitle(m), Value: formatStat(jm[m]), Interval: formatInterval(intervalOf(j.Intervals, m))})
			}
			lv.Judges = append(lv.Judges, cmpv)
		}
		v.Labels = append(v.Labels, lv)
	}
	for i, j := range r.Leaderboard {
		row := web.StudyJudgeRankRow{
			Rank: i + 1, Judge: j.Judge, Kind: j.Kind, Label: string(j.Label), Items: j.Items,
			Agreement: formatStat(j.Agreement), AgreementCI: formatInterval(j.AgreementInterval),
			Kappa: formatStat(j.Kappa), KappaMetric: j.KappaMetric, KappaCI: formatInterval(j.KappaInterval),
			F1: formatStat(j.F1), Judgments: j.Judgments, Errors: j.Errors, Cost: formatDollars(&j.Cost),
			CostPerJudgment:   formatDollars(j.CostPerJudgment),
			DisagreementsHref: web.StudyDisagreementsPath(d.Study.ID, "", j.Judge),
		}
		if c := j.Config; c != nil {
			row.Config = judgeConfigText(*c)
		}
		v.Leaderboard = append(v.Leaderboard, row)
	}
	if by != "" {
		v.Breakdown = breakdownView(r, by)
	}
	return v
}

// judgeOrder lists a label's judges in leaderboard order, then any other by
// name.
func judgeOrder(r *agreement.StudyReport, lr *agreement.LabelReport) []string {
	var out []string
	for _, j := range r.Leaderboard {
		if lr.Judges[j.Judge] != nil {
			out = append(out, j.Judge)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(lr.Judges)) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// formatDollars writes a cost, "—" when there is none.
func formatDollars(v *float64) string {
	if v == nil {
		return "—"
	}
	return web.CostText(*v)
}

// judgeConfigText describes a judge configuration in a few words.
func judgeConfigText(j models.StudyJudge) string {
	model := j.Model
	if model == "" {
		model = "server model"
	}
	parts := []string{model, j.Prompt}
	if j.Screenshots {
		parts = append(parts, "screenshots")
	}
	if j.Accessibility {
		parts = append(parts, "accessibility text")
	}
	return strings.Join(parts, ", ")
}

// breakdownView is each facet value's key figures on the primary label.
func breakdownView(r *agreement.StudyReport, by string) *web.StudyBreakdownView {
	rows, ok := r.Breakdown(by)
	if !ok {
		return nil
	}
	l := primaryLabel(r)
	b := &web.StudyBreakdownView{Facet: by, Label: string(l)}
	for _, j := range r.Leaderboard {
		b.Judges = append(b.Judges, j.Judge)
	}
	spec, _ := agreement.SpecOf(l)
	kappa := func(ordinal bool, m map[string]*float64) *float64 {
		if ordinal {
			return m[agreement.MetricQuadraticKappa]
		}
		return m[agreement.MetricCohenKappa]
	}
	for _, br := range rows {
		row := web.StudyFacetRow{Value: br.Value, Items: br.Items, Labelled: br.Labelled}
		var lr *agreement.LabelReport
		if br.Report != nil {
			lr = br.Report.Labels[l]
		}
		if lr != nil {
			h := lr.HumanHuman.Metrics()
			row.Human = web.StudyFacetFigure{Agreement: formatStat(h[agreement.MetricAgreement]), Kappa: formatStat(kappa(spec.Ordinal, h)), Items: lr.HumanHuman.Items}
		}
		for _, judge := range b.Judges {
			var f web.StudyFacetFigure
			if lr != nil {
				if j := lr.Judges[judge]; j != nil {
					m := j.Metrics()
					f = web.StudyFacetFigure{Agreement: formatStat(m[agreement.MetricAgreement]), Kappa: formatStat(kappa(spec.Ordinal, m)), Items: j.Items}
				}
			}
			row.Judges = append(row.Judges, f)
		}
		b.Rows = append(b.Rows, row)
	}
	return b
}

// showStudyDisagreements lists the disagreements, filtered by ?label= (a
// label name) and ?judge= (a judge of the study); 400 for any other value.
func (s *Server) showStudyDisagreements(c echo.Context) error {
	label := strings.TrimSpace(c.QueryParam("label"))
	if label != "" {
		if _, ok := agreement.SpecOf(agreement.Label(label)); !ok {
			return &models.Error{Code: models.EINVALID, Field: "label", Message: fmt.Sprintf("label must be one of %s.", labelNames())}
		}
	}
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	d, r, err := s.deps.Studies.StudyDisagreements(c.Request().Context(), id)
	if err != nil {
		return err
	}
	judge := strings.TrimSpace(c.QueryParam("judge"))
	judges := make([]string, 0, len(r.Leaderboard))
	for _, j := range r.Leaderboard {
		judges = append(judges, j.Judge)
	}
	slices.Sort(judges)
	if judge != "" && !slices.Contains(judges, judge) {
		return &models.Error{Code: models.EINVALID, Field: "judge", Message: fmt.Sprintf("judge %q is not a judge of this study.", judge)}
	}
	v := web.StudyDisagreementsView{Study: d.Study, Label: label, Judge: judge, Judges: judges, HasLabels: r.Labelled > 0}
	for _, l := range reportLabels(r) {
		v.Labels = append(v.Labels, string(l))
	}
	if label != "" && !slices.Contains(v.Labels, label) {
		v.Labels = append(v.Labels, label)
	}
	for _, dis := range r.FilterDisagreements(agreement.Label(label), judge) {
		row := web.StudyDisagreementRow{
			ItemID: dis.ItemID, Position: dis.Position, Item: dis.Key.String(), Label: web.StudyLabelTitle(string(dis.Label)),
			Judge: dis.Judge, JudgeValue: displayValue(dis.Label, dis.JudgeValue), Majority: displayValue(dis.Label, dis.Majority),
		}
		if dis.RubricKey != "" {
			row.Label = "Rubric item " + dis.RubricKey
		}
		for _, h := range dis.Humans {
			row.Humans = append(row.Humans, h.Annotator+": "+displayValue(dis.Label, h.Value))
		}
		v.Rows = append(v.Rows, row)
	}
	return s.render(c, http.StatusOK, web.StudyDisagreementsPage(s.page(c, "Disagreements in "+d.Study.Name), v))
}

// labelNames lists the label names for messages.
func labelNames() string {
	var names []string
	for _, l := range agreement.Labels() {
		names = append(names, string(l))
	}
	return strings.Join(names, ", ")
}

// exportStudy answers one of a study's export files as an attachment.
func (s *Server) exportStudy(c echo.Context) error {
	file := c.Param("file")
	if !slices.Contains(web.StudyExportFiles(), file) {
		return models.Errorf(models.ENOTFOUND, "A study exports %s; %q is none of them.", strings.Join(web.StudyExportFiles(), ", "), file)
	}
	var facets []string // every facet, for the report files
	if !strings.HasPrefix(file, "report.") {
		facets = []string{}
	}
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	d, err := s.deps.Studies.StudyData(c.Request().Context(), id)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch file {
	case "labels.csv":
		err = agreement.WriteHumanCSV(&buf, csvSafeHumans(agreement.StudyHumanLabels(d)))
	case "labels.jsonl":
		err = agreement.WriteHumanJSONL(&buf, agreement.StudyHumanLabels(d))
	case "verdicts.csv":
		err = agreement.WriteVerdictsCSV(&buf, csvSafeVerdicts(agreement.StudyVerdictList(d)))
	case "verdicts.jsonl":
		err = agreement.WriteVerdictsJSONL(&buf, agreement.StudyVerdictList(d))
	default:
		var r *agreement.StudyReport
		if r, err = service.BuildStudyReport(d, facets); err != nil {
			return err
		}
		if file == "report.json" {
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			err = enc.Encode(r)
		} else {
			err = agreement.WriteReportCSV(&buf, csvSafeReport(r.Report))
		}
	}
	if err != nil {
		return fmt.Errorf("export %s of study %d: %w", file, id, err)
	}
	contentType := map[string]string{
		".csv": "text/csv; charset=utf-8", ".jsonl": "application/jsonl; charset=utf-8", ".json": "application/json; charset=utf-8",
	}[file[strings.LastIndex(file, "."):]]
	h := c.Response().Header()
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="study-%d-%s"`, id, file))
	h.Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, contentType, buf.Bytes())
}

// csvSafeHumans keeps the free text of a labels CSV (annotator and model
// names) from being read as formulas by a spreadsheet (csvText); imports
// undo it (csvUntext), so an export still imports back.
func csvSafeHumans(humans []agreement.HumanLabel) []agreement.HumanLabel {
	out := slices.Clone(humans)
	for i := range out {
		out[i].Annotator, out[i].Model, out[i].Experiment = csvText(out[i].Annotator), csvText(out[i].Model), csvText(out[i].Experiment)
	}
	return out
}

// csvSafeVerdicts does for verdicts what csvSafeHumans does for labels.
func csvSafeVerdicts(verdicts []agreement.Verdict) []agreement.Verdict {
	out := slices.Clone(verdicts)
	for i := range out {
		out[i].Judge, out[i].Model = csvText(out[i].Judge), csvText(out[i].Model)
	}
	return out
}

// csvSafeReport is the report with its judge names formula-safe, for the
// CSV export.
func csvSafeReport(r *agreement.Report) *agreement.Report {
	cp := *r
	cp.Labels = map[agreement.Label]*agreement.LabelReport{}
	for l, lr := range r.Labels {
		if lr == nil {
			continue
		}
		lc := *lr
		lc.Judges = map[string]*agreement.JudgeAgreement{}
		for name, j := range lr.Judges {
			lc.Judges[csvText(name)] = j
		}
		cp.Labels[l] = &lc
	}
	return &cp
}

// csvUntext undoes csvText: a quote put in front of a leading =, +, -, @,
// tab or carriage return is dropped.
func csvUntext(s string) string {
	if len(s) >= 2 && s[0] == '\'' && strings.ContainsRune("=+-@\t\r", rune(s[1])) {
		return s[1:]
	}
	return s
}
