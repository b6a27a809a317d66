package agreement

import (
	"maps"
	"slices"

	"proctor/stats"
)

// Options control BuildReport.
type Options struct {
	// Resamples is the number of bootstrap resamples behind the 95% intervals;
	// 0 (or less) leaves the intervals out.
	Resamples int
	// Seed fixes the bootstrap draws, so the same input gives the same report.
	Seed uint64
	// Skipped are the rows the import left out; the report counts and lists
	// them.
	Skipped []RowError
	// Facets are the facets BuildStudyReport breaks a study down by (Facet*
	// names); nil means every facet of StudyFacets. BuildReport ignores it.
	Facets []string
	// BreakdownsWithoutIntervals leaves the bootstrap out of the breakdowns'
	// reports: drawing it again for every facet value multiplies a report's
	// cost. BuildReport ignores it.
	BreakdownsWithoutIntervals bool
}

// Report is the agreement report: per label, human-vs-human agreement and each
// judge against the human majority. Every rate is a fraction between 0 and 1;
// a statistic that is undefined on its data (docs/agreement.md) or does not
// apply to the label is null.
type Report struct {
	// Labels has every label of Labels(), labelled or not, so scripts can rely
	// on the keys.
	Labels      map[Label]*LabelReport   `json:"labels"`
	Human       HumanSummary             `json:"human"`
	Judges      map[string]*JudgeSummary `json:"judges"`
	SkippedRows int                      `json:"skipped_rows"`
	Skipped     []RowError               `json:"skipped"`
	Bootstrap   BootstrapSettings        `json:"bootstrap"`
}

// HumanSummary counts the human input.
type HumanSummary struct {
	Labels     int `json:"labels"`     // one annotator's labels for one item (a CSV row)
	Annotators int `json:"annotators"` // distinct annotators
	Items      int `json:"items"`      // distinct items
	Overlap    int `json:"overlap"`    // items labelled by two or more annotators
}

// JudgeSummary counts one judge's verdicts.
type JudgeSummary struct {
	Verdicts  int `json:"verdicts"`
	Matched   int `json:"matched"`   // for items some annotator labelled
	Unmatched int `json:"unmatched"` // for items no annotator labelled: left out
}

// BootstrapSettings say how the intervals were drawn; Resamples 0 means none.
type BootstrapSettings struct {
	Resamples  int     `json:"resamples"`
	Seed       uint64  `json:"seed"`
	Confidence float64 `json:"confidence"`
}

// LabelReport is everything about one label.
type LabelReport struct {
	Categories []string `json:"categories"`
	Ordinal    bool     `json:"ordinal"`
	// Positive is the positive class of the binary metrics; null for ordinal
	// labels, which have none.
	Positive *string `json:"positive"`
	// Items have a human majority: the items judges are compared on. Labelled
	// items have at least one human answer; Labelled = Items + Ties + Unsure.
	Items    int `json:"items"`
	Labelled int `json:"labelled"`
	Ties     int `json:"ties"`   // items whose top categories tie
	Unsure   int `json:"unsure"` // items whose every answer is unsure
	// UnsureAnswers counts the label's unsure answers on every item, each
	// left out of the vote, the pairs and every statistic (AgentRewardBench's
	// convention); present for every label, 0 when none.
	UnsureAnswers int `json:"unsure_answers"`
	// Majority counts items by their majority category.
	Majority   map[string]int             `json:"majority"`
	HumanHuman HumanAgreement             `json:"human_human"`
	Judges     map[string]*JudgeAgreement `json:"judges"`
}

// HumanAgreement is human-vs-human agreement on the items two or more
// annotators answered (unsure answers left out).
type HumanAgreement struct {
	Items      int `json:"items"`      // items with two or more sure answers
	Pairs      int `json:"pairs"`      // pairs of answers on the same item, m(m−1)/2 per item
	Annotators int `json:"annotators"` // annotators with at least one sure answer
	// Agreement, CohenKappa and QuadraticKappa are over the pairs, the
	// annotator whose label came first being the first rater;
	// QuadraticKappa only for ordinal labels.
	Agreement      *float64 `json:"agreement"`
	CohenKappa     *float64 `json:"cohen_kappa"`
	QuadraticKappa *float64 `json:"quadratic_kappa"`
	// KrippendorffAlpha (nominal) is over every annotator at once; the ordinal
	// and interval variants only for ordinal labels.
	KrippendorffAlpha         *float64                  `json:"krippendorff_alpha"`
	KrippendorffAlphaOrdinal  *float64                  `json:"krippendorff_alpha_ordinal"`
	KrippendorffAlphaInterval *float64                  `json:"krippendorff_alpha_interval"`
	Confusion                 Table                     `json:"confusion"`
	Intervals                 map[string]stats.Interval `json:"intervals"`
}

// JudgeAgreement is one judge against the human majority on one label.
// Verdicts = Items + NoHumanLabel + NoMajority + Unsure.
type JudgeAgreement struct {
	Items        int `json:"items"`          // compared: the humans have a majority and the judge a sure answer
	Verdicts     int `json:"verdicts"`       // the judge answered this label
	NoHumanLabel int `json:"no_human_label"` // no annotator answered this label for the item
	NoMajority   int `json:"no_majority"`    // the humans tie or are all unsure
	Unsure       int `json:"unsure"`         // the judge answered unsure

	Agreement      *float64 `json:"agreement"`
	CohenKappa     *float64 `json:"cohen_kappa"`
	QuadraticKappa *float64 `json:"quadratic_kappa"` // ordinal labels only
	// The binary metrics take the human majority as the truth and the label's
	// Positive class as positive; null for ordinal labels.
	Precision *float64                  `json:"precision"`
	Recall    *float64                  `json:"recall"`
	F1        *float64                  `json:"f1"`
	Accuracy  *float64                  `json:"accuracy"`
	NPV       *float64                  `json:"npv"`
	TNR       *float64                  `json:"tnr"`
	Confusion Table                     `json:"confusion"`
	Intervals map[string]stats.Interval `json:"intervals"`
}

// Table is a confusion matrix with its categories named.
type Table struct {
	Rows       string   `json:"rows"`    // who the rows are
	Columns    string   `json:"columns"` // who the columns are
	Categories []string `json:"categories"`
	Counts     [][]int  `json:"counts"`
}

// Metric names: JSON keys, CSV columns and Intervals keys.
const (
	MetricAgreement      = "agreement"
	MetricCohenKappa     = "cohen_kappa"
	MetricQuadraticKappa = "quadratic_kappa"
	MetricAlpha          = "krippendorff_alpha"
	MetricAlphaOrdinal   = "krippendorff_alpha_ordinal"
	MetricAlphaInterval  = "krippendorff_alpha_interval"
	MetricPrecision      = "precision"
	MetricRecall         = "recall"
	MetricF1             = "f1"
	MetricAccuracy       = "accuracy"
	MetricNPV            = "npv"
	MetricTNR            = "tnr"
)

// Who the rows and columns of a Table are.
const (
	rowsHumanMajority      = "human majority"
	rowsFirstAnnotator     = "first annotator"
	columnsSecondAnnotator = "second annotator"
	columnsJudge           = "judge"
)

// DefaultResamples is the number of bootstrap resamples the CLI draws unless
// told otherwise: the count stats uses for leaderboard intervals.
const DefaultResamples = stats.DefaultResamples

// BuildReport measures agreement. humans are the human labels (at least one);
// verdicts the judges' (any number). Items are matched on (benchmark,
// model_name, task_id), surrounding spaces ignored. It returns an EINVALID
// error for input Items or the verdict checks refuse, and for a judge none of
// whose verdicts is for an item with a human label (the keys probably do not
// line up); verdicts for some unlabelled items are only counted
// (JudgeSummary.Unmatched).
func BuildReport(humans []HumanLabel, verdicts []Verdict, opts Options) (*Report, error) {
	if len(humans) == 0 {
		return nil, invalidf("no human labels: nothing to measure agreement against")
	}
	return buildReport(humans, verdicts, opts, true)
}

// buildReport is BuildReport; strict refuses a judge none of whose verdicts
// meets a human label. A study is built leniently: early on no item has a
// human label yet, or only items its judges have not reached, and its report
// says so rather than failing.
func buildReport(humans []HumanLabel, verdicts []Verdict, opts Options, strict bool) (*Report, error) {
	items, err := groupItems(humans)
	if err != nil {
		return nil, err
	}
	verdicts, err = checkVerdicts(verdicts)
	if err != nil {
		return nil, err
	}
	byKey := make(map[Key]*Item, len(items))
	for i := range items {
		byKey[items[i].Key] = &items[i]
	}

	r := &Report{
		Labels:      map[Label]*LabelReport{},
		Judges:      map[string]*JudgeSummary{},
		SkippedRows: len(opts.Skipped),
		Skipped:     append([]RowError{}, opts.Skipped...),
		Bootstrap:   BootstrapSettings{Resamples: max(opts.Resamples, 0), Seed: opts.Seed, Confidence: 0.95},
	}
	annotators := map[string]bool{}
	for _, it := range items {
		for _, h := range it.Labels {
			annotators[h.Annotator] = true
		}
		if len(it.Labels) >= 2 {
			r.Human.Overlap++
		}
	}
	r.Human = HumanSummary{Labels: len(humans), Annotators: len(annotators), Items: len(items), Overlap: r.Human.Overlap}

	firstUnmatched := map[string]Key{}
	for _, v := range verdicts {
		s := r.Judges[v.Judge]
		if s == nil {
			s = &JudgeSummary{}
			r.Judges[v.Judge] = s
		}
		s.Verdicts++
		if byKey[v.Key] != nil {
			s.Matched++
			continue
		}
		s.Unmatched++
		if _, ok := firstUnmatched[v.Judge]; !ok {
			firstUnmatched[v.Judge] = v.Key
		}
	}
	for _, judge := range slices.Sorted(maps.Keys(r.Judges)) {
		if s := r.Judges[judge]; strict && s.Matched == 0 {
			return nil, invalidf("judge %q: none of its %d verdicts is for an item with human labels (first: %s); items are matched on benchmark, model_name and task_id",
				judge, s.Verdicts, firstUnmatched[judge])
		}
	}

	for _, l := range Labels() {
		r.Labels[l] = buildLabel(l, items, byKey, verdicts, opts)
	}
	return r, nil
}

// buildLabel computes one label's report.
func buildLabel(l Label, items []Item, byKey map[Key]*Item, verdicts []Verdict, opts Options) *LabelReport {
	spec, _ := SpecOf(l)
	lr := &LabelReport{
		Categories: spec.Categories,
		Ordinal:    spec.Ordinal,
		Majority:   map[string]int{},
		Judges:     map[string]*JudgeAgreement{},
	}
	if spec.Positive >= 0 {
		lr.Positive = &spec.Categories[spec.Positive]
	}
	for _, it := range items {
		m, ok := it.Majority[l]
		if !ok {
			continue
		}
		lr.Labelled++
		lr.UnsureAnswers += m.Unsure
		switch {
		case m.Value != "":
			lr.Items++
			lr.Majority[m.Value]++
		case m.Tie:
			lr.Ties++
		default:
			lr.Unsure++
		}
	}
	lr.HumanHuman = humanAgreement(spec, items, opts)

	comparisons := map[string][]stats.Pair{}
	for _, v := range verdicts {
		value := v.Values[l]
		if value == "" {
			continue
		}
		ja := lr.Judges[v.Judge]
		if ja == nil {
			ja = &JudgeAgreement{}
			lr.Judges[v.Judge] = ja
		}
		ja.Verdicts++
		var m Majority
		var answered bool
		if it := byKey[v.Key]; it != nil {
			m, answered = it.Majority[l]
		}
		switch {
		case !answered:
			ja.NoHumanLabel++
		case m.Value == "":
			ja.NoMajority++
		case value == Unsure:
			ja.Unsure++
		default:
			human, _ := spec.Code(m.Value)
			judge, _ := spec.Code(value)
			comparisons[v.Judge] = append(comparisons[v.Judge], stats.Pair{First: human, Second: judge})
		}
	}
	for judge, ja := range lr.Judges {
		fillJudge(ja, spec, comparisons[judge], opts)
	}
	return lr
}

// statistic is a named statistic of a confusion table.
type statistic struct {
	name string
	fn   stats.ConfusionStatistic
	set  func(*float64)
}

// fillJudge computes a judge's figures from its (human, judge) pairs.
func fillJudge(ja *JudgeAgreement, spec Spec, pairs []stats.Pair, opts Options) {
	k := len(spec.Categories)
	c := stats.NewConfusion(k, pairs)
	ja.Items = len(pairs)
	ja.Confusion = Table{Rows: rowsHumanMajority, Columns: columnsJudge, Categories: spec.Categories, Counts: c.Counts}
	list := []statistic{
		{MetricAgreement, stats.Confusion.Agreement, func(v *float64) { ja.Agreement = v }},
		{MetricCohenKappa, stats.Confusion.CohenKappa, func(v *float64) { ja.CohenKappa = v }},
	}
	if spec.Ordinal {
		list = append(list, statistic{MetricQuadraticKappa, stats.Confusion.QuadraticKappa, func(v *float64) { ja.QuadraticKappa = v }})
	}
	if spec.Positive >= 0 {
		binary := func(get func(stats.BinaryMetrics) *float64) stats.ConfusionStatistic {
			return func(c stats.Confusion) (float64, bool) { return value(get(c.Binary(spec.Positive))) }
		}
		list = append(list,
			statistic{MetricPrecision, binary(func(m stats.BinaryMetrics) *float64 { return m.Precision }), func(v *float64) { ja.Precision = v }},
			statistic{MetricRecall, binary(func(m stats.BinaryMetrics) *float64 { return m.Recall }), func(v *float64) { ja.Recall = v }},
			statistic{MetricF1, binary(func(m stats.BinaryMetrics) *float64 { return m.F1 }), func(v *float64) { ja.F1 = v }},
			statistic{MetricAccuracy, binary(func(m stats.BinaryMetrics) *float64 { return m.Accuracy }), func(v *float64) { ja.Accuracy = v }},
			statistic{MetricNPV, binary(func(m stats.BinaryMetrics) *float64 { return m.NPV }), func(v *float64) { ja.NPV = v }},
			statistic{MetricTNR, binary(func(m stats.BinaryMetrics) *float64 { return m.TNR }), func(v *float64) { ja.TNR = v }},
		)
	}
	fns := make([]stats.ConfusionStatistic, len(list))
	for i, s := range list {
		s.set(pointer(s.fn(c)))
		fns[i] = s.fn
	}
	ja.Intervals = map[string]stats.Interval{}
	if opts.Resamples > 0 && len(pairs) > 0 {
		for i, ci := range stats.BootstrapConfusion(k, pairs, opts.Resamples, opts.Seed, fns...) {
			if _, defined := list[i].fn(c); defined && ci != nil {
				ja.Intervals[list[i].name] = *ci
			}
		}
	}
}

// humanItem is an item with two or more sure answers: its pairs and its values.
type humanItem struct {
	pairs  []stats.Pair
	values []int
}

// humanAgreement computes human-vs-human agreement on one label.
func humanAgreement(spec Spec, items []Item, opts Options) HumanAgreement {
	k := len(spec.Categories)
	annotators := map[string]bool{}
	var overlap []humanItem
	for _, it := range items {
		var codes []int
		for _, h := range it.Labels {
			if code, ok := spec.Code(h.Values[spec.Label]); ok {
				codes = append(codes, code)
				annotators[h.Annotator] = true
			}
		}
		if len(codes) < 2 {
			continue
		}
		hi := humanItem{values: codes}
		for i := range codes {
			for j := i + 1; j < len(codes); j++ {
				hi.pairs = append(hi.pairs, stats.Pair{First: codes[i], Second: codes[j]})
			}
		}
		overlap = append(overlap, hi)
	}

	type output struct {
		name string
		set  func(*float64)
	}
	var list []output
	ha := HumanAgreement{Items: len(overlap), Annotators: len(annotators), Intervals: map[string]stats.Interval{}}
	add := func(name string, set func(*float64)) { list = append(list, output{name, set}) }
	add(MetricAgreement, func(v *float64) { ha.Agreement = v })
	add(MetricCohenKappa, func(v *float64) { ha.CohenKappa = v })
	add(MetricAlpha, func(v *float64) { ha.KrippendorffAlpha = v })
	if spec.Ordinal {
		add(MetricQuadraticKappa, func(v *float64) { ha.QuadraticKappa = v })
		add(MetricAlphaOrdinal, func(v *float64) { ha.KrippendorffAlphaOrdinal = v })
		add(MetricAlphaInterval, func(v *float64) { ha.KrippendorffAlphaInterval = v })
	}
	table := stats.NewConfusion(k, nil)
	units := make([][]int, 0, len(overlap))
	// compute evaluates every statistic on a multiset of overlap items.
	compute := func(sample []int, values []float64, defined []bool) {
		for _, row := range table.Counts {
			clear(row)
		}
		units = units[:0]
		for _, i := range sample {
			for _, p := range overlap[i].pairs {
				table.Counts[p.First][p.Second]++
			}
			units = append(units, overlap[i].values)
		}
		for s, st := range list {
			switch st.name {
			case MetricAgreement:
				values[s], defined[s] = table.Agreement()
			case MetricCohenKappa:
				values[s], defined[s] = table.CohenKappa()
			case MetricQuadraticKappa:
				values[s], defined[s] = table.QuadraticKappa()
			case MetricAlpha:
				values[s], defined[s] = stats.KrippendorffAlpha(units, stats.AlphaNominal)
			case MetricAlphaOrdinal:
				values[s], defined[s] = stats.KrippendorffAlpha(units, stats.AlphaOrdinal)
			case MetricAlphaInterval:
				values[s], defined[s] = stats.KrippendorffAlpha(units, stats.AlphaInterval)
			}
		}
	}

	all := make([]int, len(overlap))
	for i := range all {
		all[i] = i
	}
	values, defined := make([]float64, len(list)), make([]bool, len(list))
	compute(all, values, defined)
	for s, st := range list {
		if defined[s] {
			st.set(&values[s])
		}
	}
	ha.Pairs = table.N()
	ha.Confusion = Table{Rows: rowsFirstAnnotator, Columns: columnsSecondAnnotator, Categories: spec.Categories,
		Counts: stats.NewConfusion(k, nil).Counts}
	for i, row := range table.Counts {
		copy(ha.Confusion.Counts[i], row)
	}
	if opts.Resamples > 0 && len(overlap) > 0 {
		for s, ci := range stats.BootstrapItems(len(overlap), len(list), opts.Resamples, opts.Seed, compute) {
			if defined[s] && ci != nil {
				ha.Intervals[list[s].name] = *ci
			}
		}
	}
	return ha
}

// value unpacks a metric pointer into a statistic's result.
func value(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// pointer packs a statistic's result into a metric pointer.
func pointer(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}
