package agreement

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"proctor/models"
	"proctor/stats"
)

// Facets a study report is broken down by.
const (
	FacetBenchmark  = "benchmark"
	FacetAgent      = "agent"
	FacetSite       = "site"
	FacetDifficulty = "difficulty"
)

// StudyFacets lists the facets in page order.
func StudyFacets() []string {
	return []string{FacetBenchmark, FacetAgent, FacetSite, FacetDifficulty}
}

// Facet values of items that have none.
const (
	// FacetValueUnlabelled is the difficulty of a task without a difficulty
	// label, as study strata name it.
	FacetValueUnlabelled = "unlabelled"
	// FacetValueUnknown is the benchmark, agent or site of an item that
	// names none.
	FacetValueUnknown = "unknown"
)

// StudyReport is a study's agreement report: the report over every item, the
// same report per value of each facet, the judges ranked, and the items on
// which a judge and the human majority disagree.
type StudyReport struct {
	// Items are the study's sampled items; Labelled those with at least one
	// human label. With no label yet Report has zero items and no
	// comparison: the page says so rather than failing.
	Items    int `json:"items"`
	Labelled int `json:"labelled"`
	// Asked are the labels the study asks, in the study's order. Report
	// keeps every label, so imported labels the study does not ask are
	// still measured.
	Asked []Label `json:"asked"`
	// Report is over every item. Its human and judge summaries count study
	// items (an annotator's answers on an item, rubric answers included, are
	// one label); its per-label figures count units, each rubric item of an
	// item being one.
	Report *Report `json:"report"`
	// Breakdowns has, per facet asked for (Options.Facets), one report per
	// facet value, values sorted.
	Breakdowns map[string][]Breakdown `json:"breakdowns"`
	// Leaderboard ranks every judge (StudyJudgeRanks order).
	Leaderboard []JudgeRank `json:"leaderboard"`
	// Disagreements are in sample order, then label, rubric item and judge.
	Disagreements []Disagreement `json:"disagreements"`
	// Problems are stored values left out because they could not be read
	// (a label value no longer accepted, a row for an item not in the
	// sample).
	Problems []string `json:"problems"`
}

// Breakdown is the report over the items that share one value of a facet.
type Breakdown struct {
	Value    string  `json:"value"`
	Items    int     `json:"items"`    // sampled items with this value
	Labelled int     `json:"labelled"` // of which some annotator labelled
	Report   *Report `json:"report"`
}

// JudgeRank is one judge in a study's leaderboard: how well it agrees with
// the human majority on its ranking label, and what its judgments cost.
type JudgeRank struct {
	Judge string `json:"judge"`
	Kind  string `json:"kind"` // JudgeKindStudy, JudgeKindImported or JudgeKindAutomatic
	// Config is the judge's configuration, for a study judge still
	// configured.
	Config *models.StudyJudge `json:"config,omitempty"`
	// Label is the ranking label: success when the study asks it and the
	// judge has been compared on it, else the first label the study asks on
	// which it has; "" when it has been compared on none.
	Label Label `json:"label"`
	Items int   `json:"items"` // compared on Label
	// Agreement and Kappa (Cohen's, or quadratic-weighted for an ordinal
	// label: KappaMetric says which) with their 95% bootstrap intervals
	// when drawn; F1 for a two-category label.
	Agreement         *float64        `json:"agreement"`
	AgreementInterval *stats.Interval `json:"agreement_interval"`
	Kappa             *float64        `json:"kappa"`
	KappaMetric       string          `json:"kappa_metric"`
	KappaInterval     *stats.Interval `json:"kappa_interval"`
	F1                *float64        `json:"f1"`
	// Judgments are items the judge gave a verdict on; Errors items it
	// failed on. Cost is every call's, failed ones included (0 for the
	// automatic checks); CostPerJudgment is Cost / Judgments, null without
	// judgments.
	Judgments       int      `json:"judgments"`
	Errors          int      `json:"errors"`
	Cost            float64  `json:"cost"`
	CostPerJudgment *float64 `json:"cost_per_judgment"`
}

// Disagreement is one judge's sure answer that differs from the human
// majority on one label of one item (or rubric item).
type Disagreement struct {
	ItemID   int64 `json:"item_id"`
	Position int   `json:"position"`
	// Key is the unit's: a rubric item's task id ends in "#" and its key.
	Key   Key   `json:"key"`
	Label Label `json:"label"`
	// RubricItemID and RubricKey name the rubric item of a rubric label.
	RubricItemID int64         `json:"rubric_item_id,omitempty"`
	RubricKey    string        `json:"rubric_key,omitempty"`
	Judge        string        `json:"judge"`
	JudgeKind    string        `json:"judge_kind"`
	JudgeValue   string        `json:"judge_value"`
	Majority     string        `json:"majority"`
	Humans       []HumanAnswer `json:"humans"` // every answer, unsure ones too, in label order
}

// HumanAnswer is one annotator's answer.
type HumanAnswer struct {
	Annotator string `json:"annotator"`
	Value     string `json:"value"`
}

// BuildStudyReport builds a study's agreement report: its human labels
// (submitted and imported) against its judges (the study's configurations,
// imported judges, and the attempts' current evaluations as automatic
// judges), over every item and per value of each facet of opts.Facets. It
// never fails for want of labels: with none the report has zero items. It
// returns an EINVALID error for an unknown facet.
func BuildStudyReport(d *models.StudyData, opts Options) (*StudyReport, error) {
	if d == nil {
		return nil, fmt.Errorf("build study report: no study data")
	}
	facets := opts.Facets
	if facets == nil {
		facets = StudyFacets()
	}
	for _, f := range facets {
		if !slices.Contains(StudyFacets(), f) {
			return nil, models.FieldError("by", "unknown facet %q: choose %s", f, strings.Join(StudyFacets(), ", "))
		}
	}
	in := newStudyInput(d)
	report, err := in.report(nil, opts)
	if err != nil {
		return nil, fmt.Errorf("build study report: %w", err)
	}
	sr := &StudyReport{
		Items:      len(in.items),
		Labelled:   report.Human.Items,
		Asked:      askedLabels(d.Study),
		Report:     report,
		Breakdowns: map[string][]Breakdown{},
		Problems:   append([]string{}, in.problems...),
	}
	byFacet := opts
	if opts.BreakdownsWithoutIntervals {
		byFacet.Resamples, byFacet.Seed = 0, 0
	}
	for _, f := range facets {
		if sr.Breakdowns[f], err = in.breakdown(f, byFacet); err != nil {
			return nil, fmt.Errorf("build study report by %s: %w", f, err)
		}
	}
	sr.Leaderboard = in.leaderboard(report, sr.Asked)
	if sr.Disagreements, err = in.disagreements(); err != nil {
		return nil, fmt.Errorf("build study report: %w", err)
	}
	return sr, nil
}

// askedLabels are the study's labels that are agreement labels.
func askedLabels(s models.Study) []Label {
	asked := []Label{}
	for _, name := range s.Labels {
		if _, ok := SpecOf(Label(name)); ok && !slices.Contains(asked, Label(name)) {
			asked = append(asked, Label(name))
		}
	}
	return asked
}

// report is the report over the items keep accepts (all when nil), its
// summaries counted in study items.
func (in *studyInput) report(keep func(*models.StudyDataItem) bool, opts Options) (*Report, error) {
	r, err := buildReport(in.humanLabels(keep), in.verdictList(keep), opts, false)
	if err != nil {
		return nil, err
	}
	kept := func(id int64) bool { return keep == nil || keep(in.item(id)) }
	labelled := map[int64]int{}
	annotators := map[string]bool{}
	r.Human = HumanSummary{}
	for _, rec := range in.records {
		if !kept(rec.itemID) {
			continue
		}
		r.Human.Labels++
		annotators[rec.annotator] = true
		labelled[rec.itemID]++
	}
	r.Human.Annotators = len(annotators)
	r.Human.Items = len(labelled)
	for _, n := range labelled {
		if n >= 2 {
			r.Human.Overlap++
		}
	}
	r.Judges = map[string]*JudgeSummary{}
	for name, t := range in.judges {
		s := &JudgeSummary{}
		for id := range t.judged {
			if !kept(id) {
				continue
			}
			s.Verdicts++
			if labelled[id] > 0 {
				s.Matched++
			} else {
				s.Unmatched++
			}
		}
		if s.Verdicts > 0 {
			r.Judges[name] = s
		}
	}
	return r, nil
}

// facetValue is an item's value of a facet.
func facetValue(facet string, it *models.StudyDataItem) string {
	var v string
	switch facet {
	case FacetBenchmark:
		v = it.Benchmark
	case FacetAgent:
		v = it.Agent
	case FacetSite:
		v = it.Site
	case FacetDifficulty:
		if it.Difficulty == "" {
			return FacetValueUnlabelled
		}
		return it.Difficulty
	}
	if v == "" {
		return FacetValueUnknown
	}
	return v
}

// breakdown is one report per value of the facet, values sorted.
func (in *studyInput) breakdown(facet string, opts Options) ([]Breakdown, error) {
	counts := map[string]int{}
	for i := range in.items {
		counts[facetValue(facet, &in.items[i])]++
	}
	values := make([]string, 0, len(counts))
	for v := range counts {
		values = append(values, v)
	}
	slices.Sort(values)
	out := make([]Breakdown, 0, len(values))
	for _, v := range values {
		r, err := in.report(func(it *models.StudyDataItem) bool { return facetValue(facet, it) == v }, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		out = append(out, Breakdown{Value: v, Items: counts[v], Labelled: r.Human.Items, Report: r})
	}
	return out, nil
}

// leaderboard ranks the judges: by kappa, highest first, then by agreement,
// judges without one last; ties by kind (study judges first) and name.
func (in *studyInput) leaderboard(r *Report, asked []Label) []JudgeRank {
	candidates := asked
	if len(candidates) == 0 {
		candidates = Labels()
	}
	if slices.Contains(candidates, LabelSuccess) {
		candidates = append([]Label{LabelSuccess}, slices.DeleteFunc(slices.Clone(candidates), func(l Label) bool { return l == LabelSuccess })...)
	}
	ranks := make([]JudgeRank, 0, len(in.judges))
	for _, t := range in.judges {
		rank := JudgeRank{Judge: t.name, Kind: t.kind, Config: t.config, Judgments: len(t.judged), Errors: t.errors, Cost: t.cost}
		if rank.Judgments > 0 {
			perJudgment := t.cost / float64(rank.Judgments)
			rank.CostPerJudgment = &perJudgment
		}
		for _, l := range candidates {
			ja := r.Labels[l].Judges[t.name]
			if ja == nil || ja.Items == 0 {
				continue
			}
			spec, _ := SpecOf(l)
			rank.Label, rank.Items, rank.Agreement, rank.F1 = l, ja.Items, ja.Agreement, ja.F1
			rank.AgreementInterval = interval(ja.Intervals, MetricAgreement)
			rank.KappaMetric, rank.Kappa = MetricCohenKappa, ja.CohenKappa
			if spec.Ordinal {
				rank.KappaMetric, rank.Kappa = MetricQuadraticKappa, ja.QuadraticKappa
			}
			rank.KappaInterval = interval(ja.Intervals, rank.KappaMetric)
			break
		}
		ranks = append(ranks, rank)
	}
	slices.SortFunc(ranks, func(a, b JudgeRank) int {
		if c := descendingNilLast(a.Kappa, b.Kappa); c != 0 {
			return c
		}
		if c := descendingNilLast(a.Agreement, b.Agreement); c != 0 {
			return c
		}
		if c := cmp.Compare(judgeKindOrder(a.Kind), judgeKindOrder(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.Judge, b.Judge)
	})
	return ranks
}

// interval is a copy of a metric's interval, nil when none was drawn.
func interval(intervals map[string]stats.Interval, metric string) *stats.Interval {
	ci, ok := intervals[metric]
	if !ok {
		return nil
	}
	return &ci
}

// descendingNilLast orders larger values first and missing ones last.
func descendingNilLast(a, b *float64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*b, *a)
}

// disagreements lists every judge's sure answer that differs from the human
// majority.
func (in *studyInput) disagreements() ([]Disagreement, error) {
	items, err := groupItems(in.humanLabels(nil))
	if err != nil {
		return nil, err
	}
	byKey := make(map[Key]*Item, len(items))
	for i := range items {
		byKey[items[i].Key] = &items[i]
	}
	type placed struct {
		Disagreement
		label, rubric int
	}
	var found []placed
	for _, v := range in.verdicts {
		it := byKey[v.Key]
		if it == nil {
			continue
		}
		unit := in.units[v.Key]
		for li, l := range Labels() {
			value := v.Values[l]
			m, ok := it.Majority[l]
			if value == "" || value == Unsure || !ok || m.Value == "" || m.Value == value {
				continue
			}
			d := Disagreement{ItemID: unit.item.ItemID, Position: unit.item.Position, Key: v.Key, Label: l,
				Judge: v.Judge, JudgeKind: v.kind, JudgeValue: value, Majority: m.Value, Humans: []HumanAnswer{}}
			if unit.rubric != nil {
				d.RubricItemID, d.RubricKey = unit.rubric.ID, unit.rubric.Key
			}
			for _, h := range it.Labels {
				if hv := h.Values[l]; hv != "" {
					d.Humans = append(d.Humans, HumanAnswer{Annotator: h.Annotator, Value: hv})
				}
			}
			found = append(found, placed{d, li, unit.rubricIndex})
		}
	}
	slices.SortStableFunc(found, func(a, b placed) int {
		return cmp.Or(cmp.Compare(in.index[a.ItemID], in.index[b.ItemID]), cmp.Compare(a.label, b.label),
			cmp.Compare(a.rubric, b.rubric), strings.Compare(a.Judge, b.Judge))
	})
	out := make([]Disagreement, len(found))
	for i, f := range found {
		out[i] = f.Disagreement
	}
	return out, nil
}

// FilterDisagreements returns the disagreements on the label by the judge,
// in report order; an empty label or judge matches any.
func (r *StudyReport) FilterDisagreements(label Label, judge string) []Disagreement {
	out := []Disagreement{}
	for _, d := range r.Disagreements {
		if (label == "" || d.Label == label) && (judge == "" || d.Judge == judge) {
			out = append(out, d)
		}
	}
	return out
}

// DisagreementLabels are the labels with disagreements, in Labels order, for
// a filter's choices.
func (r *StudyReport) DisagreementLabels() []Label {
	var out []Label
	for _, l := range Labels() {
		if slices.ContainsFunc(r.Disagreements, func(d Disagreement) bool { return d.Label == l }) {
			out = append(out, l)
		}
	}
	return out
}

// DisagreementJudges are the judges with disagreements, sorted, for a
// filter's choices.
func (r *StudyReport) DisagreementJudges() []string {
	var out []string
	for _, d := range r.Disagreements {
		if !slices.Contains(out, d.Judge) {
			out = append(out, d.Judge)
		}
	}
	slices.Sort(out)
	return out
}

// Breakdown returns the breakdown by a facet; ok false when the report was
// not broken down by it.
func (r *StudyReport) Breakdown(facet string) ([]Breakdown, bool) {
	b, ok := r.Breakdowns[facet]
	return b, ok
}
