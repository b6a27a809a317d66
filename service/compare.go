package service

import (
	"context"
	"slices"
	"strings"

	"proctor/models"
	"proctor/stats"
	"proctor/storage"
)

// CompareRuns compares 2–4 runs of one benchmark, the first being the
// baseline: each run's metrics from its precomputed leaderboard rows (computed
// now for a run that has none yet) with deltas and breakdown deltas against the
// baseline, every task all the runs attempted with each run's attempt and
// outcome (matched by external id, so runs on different versions of the
// benchmark compare on the tasks they share), and a paired test of success of
// each run against the baseline (McNemar's exact test).
//
// A run is comparable by its team's members and admins, and by everyone once
// both the run and its benchmark are published, unless administrators hid
// it. EINVALID on the runs field for fewer than two or more than four ids, a
// repeated id, or runs of different benchmarks; ENOTFOUND for a run that does
// not exist or that the caller may not see (checked before benchmarks, so an
// error never tells what a private run is about); EFORBIDDEN when any of them
// is blind to the caller.
func (s *Runs) CompareRuns(ctx context.Context, ids []int64) (*models.Comparison, error) {
	if len(ids) < models.MinCompareRuns || len(ids) > models.MaxCompareRuns {
		return nil, models.FieldError(models.CompareParam, "choose %d to %d runs to compare; %d given", models.MinCompareRuns, models.MaxCompareRuns, len(ids))
	}
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			return nil, models.FieldError(models.CompareParam, "run %d is named twice: each run can be compared once", id)
		}
	}
	src, err := s.store.CompareSource(ctx, runScope(ctx), ids)
	if err != nil {
		return nil, err
	}
	rows := src.Runs
	for _, r := range rows[1:] {
		if r.BenchmarkID != rows[0].BenchmarkID {
			return nil, models.FieldError(models.CompareParam,
				"run %d is on %s (%s) and run %d on %s (%s): only runs of the same benchmark can be compared",
				rows[0].ID, rows[0].BenchmarkName, rows[0].BenchmarkSlug, r.ID, r.BenchmarkName, r.BenchmarkSlug)
		}
	}
	if err := s.access.ReadRuns(ctx, ids...); err != nil {
		return nil, err
	}
	reports := src.Reports
	for id, scopes := range src.Scopes {
		reports[id] = Reports(scopes)
	}
	c := &models.Comparison{BenchmarkSlug: rows[0].BenchmarkSlug, BenchmarkName: rows[0].BenchmarkName}
	for _, r := range rows {
		c.Runs = append(c.Runs, models.CompareRun{
			RunListItem: r.RunListItem, BenchmarkVersion: r.BenchmarkVersion,
			Model: models.RunAgentSnapshot(&models.Run{AgentSnapshot: r.AgentSnapshot}).Model,
		})
		if r.VersionID != rows[0].VersionID {
			c.VersionsDiffer = true
		}
	}
	chosen := chooseCompareReports(c, reports)
	c.Metrics = compareMetrics(chosen)
	c.Breakdowns = compareBreakdowns(chosen)
	c.Tasks = sharedTasks(ids, src.Attempts)
	for i := 1; i < len(c.Runs); i++ {
		p := c.PairCounts(i)
		p.PValue = stats.McNemarExact(p.BaselineOnly, p.RunOnly)
		c.Paired = append(c.Paired, p)
	}
	return c, nil
}

// compareDimensions are the breakdowns a comparison shows deltas for. Intent
// templates are left out: hundreds of one-task groups say nothing side by side.
func compareDimensions() []stats.Dimension {
	return []stats.Dimension{stats.DimensionSite, stats.DimensionDomain, stats.DimensionDifficulty, stats.DimensionAttribute, stats.DimensionTaskType}
}

// chooseCompareReports picks the report of each run that the comparison
// shows, and records on the comparison which task set they cover. Runs of one
// subset show it; when the runs mix full runs with runs of one named subset,
// the full runs show their numbers restricted to that subset, so every column
// covers the same tasks; otherwise each run shows its own subset.
func chooseCompareReports(c *models.Comparison, reports map[int64][]models.MetricsReport) []models.MetricsReport {
	named := map[string]bool{}
	for _, r := range c.Runs {
		if r.Subset != models.SubsetFull {
			named[r.Subset] = true
		}
	}
	target := models.SubsetFull
	if len(named) == 1 {
		for name := range named {
			target = name
		}
	}
	chosen := make([]models.MetricsReport, len(c.Runs))
	common := len(named) <= 1
	for i, r := range c.Runs {
		rep, ok := findReport(reports[r.ID], target, r.Subset != target)
		if !ok {
			common = false
			break
		}
		chosen[i] = rep
	}
	if !common {
		target = ""
		for i, r := range c.Runs {
			rep, ok := findReport(reports[r.ID], r.Subset, false)
			if !ok {
				rep = stats.NewReport(r.Subset, false, nil)
			}
			chosen[i] = rep
		}
	}
	c.MetricsSubset = target
	for i := range c.Runs {
		c.Runs[i].MetricsSubset, c.Runs[i].Restricted = chosen[i].Subset, chosen[i].Restricted
	}
	return chosen
}

func findReport(reports []models.MetricsReport, subset string, restricted bool) (models.MetricsReport, bool) {
	for _, rep := range reports {
		if rep.Subset == subset && rep.Restricted == restricted {
			return rep, true
		}
	}
	return models.MetricsReport{}, false
}

// compareMetrics lays the headline metrics side by side. Judge, rubric,
// perfect and efficiency rows appear only when some run has them.
func compareMetrics(reports []models.MetricsReport) []models.CompareMetric {
	type metricDef struct {
		key, label string
		higher     bool
		optional   bool
		value      func(m models.Metrics) models.CompareValue
	}
	est := func(e *models.Estimate) models.CompareValue {
		if e == nil {
			return models.CompareValue{}
		}
		return models.CompareValue{Value: compareFloat(e.Mean), Low: compareFloat(e.CI.Low), High: compareFloat(e.CI.High), N: e.N}
	}
	// perAttempt is a value over every attempt, missing when there is none
	// or when it is unknown (an upload did not state it).
	perAttempt := func(m models.Metrics, unknown bool, v float64) models.CompareValue {
		if m.N == 0 || unknown {
			return models.CompareValue{}
		}
		return models.CompareValue{Value: compareFloat(v), N: m.N}
	}
	defs := []metricDef{
		{"success_rate", "Success rate", true, false, func(m models.Metrics) models.CompareValue {
			return rateValue(m)
		}},
		{"judge_score", "Judge score (1–5)", true, true, func(m models.Metrics) models.CompareValue { return est(m.JudgeScore) }},
		{"rubric_score", "Rubric score", true, true, func(m models.Metrics) models.CompareValue { return est(m.RubricScore) }},
		{"perfect_rate", "Perfect rate", true, true, func(m models.Metrics) models.CompareValue {
			if m.PerfectRate == nil {
				return models.CompareValue{}
			}
			v := models.CompareValue{Value: compareFloat(*m.PerfectRate)}
			if m.PerfectCI != nil {
				v.Low, v.High = compareFloat(m.PerfectCI.Low), compareFloat(m.PerfectCI.High)
			}
			if m.RubricScore != nil {
				v.N = m.RubricScore.N
			}
			return v
		}},
		{"efficiency", "Trajectory efficiency", true, true, func(m models.Metrics) models.CompareValue {
			if m.Efficiency == nil {
				return models.CompareValue{}
			}
			return models.CompareValue{Value: compareFloat(*m.Efficiency), N: m.RubricScore.N}
		}},
		{"mean_steps", "Mean steps", false, false, func(m models.Metrics) models.CompareValue { return perAttempt(m, m.Unknown.Steps, m.MeanSteps) }},
		{"cost_per_task", "Cost per task", false, false, func(m models.Metrics) models.CompareValue { return perAttempt(m, m.Unknown.Cost, m.CostPerTask) }},
		{"tokens", "Tokens", false, false, func(m models.Metrics) models.CompareValue {
			return perAttempt(m, m.Unknown.Tokens, float64(m.TokensIn+m.TokensOut))
		}},
	}
	var out []models.CompareMetric
	for _, d := range defs {
		values := make([]models.CompareValue, len(reports))
		present := false
		for i, r := range reports {
			values[i] = d.value(r.Metrics)
			present = present || values[i].Value != nil
		}
		if d.optional && !present {
			continue
		}
		out = append(out, models.CompareMetric{Key: d.key, Label: d.label, HigherIsBetter: d.higher, Values: withDeltas(values)})
	}
	return out
}

// rateValue is a success rate with its Wilson interval and counts; missing
// when no attempt has a verdict yet.
func rateValue(m models.Metrics) models.CompareValue {
	if m.Graded == 0 {
		return models.CompareValue{}
	}
	return models.CompareValue{Value: compareFloat(m.SuccessRate), Low: compareFloat(m.SuccessCI.Low), High: compareFloat(m.SuccessCI.High), K: m.Successes, N: m.Graded}
}

// withDeltas sets each value's difference from the first.
func withDeltas(values []models.CompareValue) []models.CompareValue {
	base := values[0].Value
	for i := 1; i < len(values); i++ {
		if base != nil && values[i].Value != nil {
			values[i].Delta = compareFloat(*values[i].Value - *base)
		}
	}
	return values
}

// compareBreakdowns lays each run's success rate per label value side by side,
// over the union of the runs' groups; a dimension where no run has a label is
// left out.
func compareBreakdowns(reports []models.MetricsReport) []models.CompareBreakdown {
	var out []models.CompareBreakdown
	for _, d := range compareDimensions() {
		var keys []string
		for _, r := range reports {
			for _, g := range r.Breakdowns[d] {
				if !slices.Contains(keys, g.Key) {
					keys = append(keys, g.Key)
				}
			}
		}
		if len(keys) == 0 || (len(keys) == 1 && keys[0] == stats.Unlabeled) {
			continue
		}
		slices.SortFunc(keys, func(a, b string) int {
			switch {
			case a == b:
				return 0
			case a == stats.Unlabeled:
				return 1
			case b == stats.Unlabeled:
				return -1
			}
			return strings.Compare(a, b)
		})
		bd := models.CompareBreakdown{Dimension: string(d)}
		for _, key := range keys {
			values := make([]models.CompareValue, len(reports))
			for i, r := range reports {
				for _, g := range r.Breakdowns[d] {
					if g.Key == key {
						values[i] = rateValue(g.Metrics)
					}
				}
			}
			bd.Groups = append(bd.Groups, models.CompareGroup{Key: key, Values: withDeltas(values)})
		}
		out = append(out, bd)
	}
	return out
}

// sharedTasks keeps the tasks every run attempted, matched by external id, in
// the baseline's task order and with the baseline's task labels.
func sharedTasks(ids []int64, attempts []storage.CompareAttempt) []models.CompareTask {
	column := map[int64]int{}
	for i, id := range ids {
		column[id] = i
	}
	type shared struct {
		task     models.CompareTask
		position int
	}
	byTask := map[string]*shared{}
	for _, a := range attempts {
		s := byTask[a.ExternalID]
		if s == nil {
			s = &shared{task: models.CompareTask{ExternalID: a.ExternalID, Cells: make([]models.CompareCell, len(ids))}}
			byTask[a.ExternalID] = s
		}
		col := column[a.RunID]
		if col == 0 {
			s.task.Intent, s.task.Difficulty, s.task.Site, s.position = a.Intent, a.Difficulty, a.SiteKey, a.Position
		}
		s.task.Cells[col] = models.CompareCell{RunID: a.RunID, AttemptID: a.ID, Outcome: a.Outcome}
	}
	var kept []*shared
	for _, s := range byTask {
		if !slices.ContainsFunc(s.task.Cells, func(c models.CompareCell) bool { return c.AttemptID == 0 }) {
			kept = append(kept, s)
		}
	}
	slices.SortFunc(kept, func(a, b *shared) int {
		if a.position != b.position {
			return a.position - b.position
		}
		return strings.Compare(a.task.ExternalID, b.task.ExternalID)
	})
	out := make([]models.CompareTask, len(kept))
	for i, s := range kept {
		out[i] = s.task
	}
	return out
}

// compareFloat returns a pointer to a copy of v.
func compareFloat(v float64) *float64 { return &v }
