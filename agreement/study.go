package agreement

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"proctor/models"
)

// Judge kinds a study compares.
const (
	JudgeKindStudy     = "study"     // a judge configuration of the study, judged by Proctor
	JudgeKindImported  = "imported"  // verdicts imported from a file
	JudgeKindAutomatic = "automatic" // the attempts' current evaluations
)

// judgeKindOrder ranks the kinds for listings: configured judges first.
func judgeKindOrder(kind string) int {
	switch kind {
	case JudgeKindStudy:
		return 0
	case JudgeKindImported:
		return 1
	}
	return 2
}

// Prefixes of the automatic judges' names: an attempt's current evaluation
// of a kind is a judge named by its kind and evaluator ("check:
// webarena-verified").
const (
	automaticCheckPrefix  = "check: "
	automaticJudgePrefix  = "judge: "
	automaticRubricPrefix = "rubric: "
)

// AutomaticJudgeName is the name under which an evaluation of the kind
// (models.EvaluationCheck, EvaluationJudge, EvaluationRubric) by the evaluator
// is compared; "" for another kind.
func AutomaticJudgeName(kind, evaluator string) string {
	switch kind {
	case models.EvaluationCheck:
		return automaticCheckPrefix + evaluator
	case models.EvaluationJudge:
		return automaticJudgePrefix + evaluator
	case models.EvaluationRubric:
		return automaticRubricPrefix + evaluator
	}
	return ""
}

// rubricUnitSeparator joins a task id and a rubric item key.
const rubricUnitSeparator = "#"

// RubricUnitTaskID is the task id of a rubric unit: the item's task id, "#"
// and the rubric item's key. Each (item, rubric item) is an item of its own
// in reports, exports and imports, so a rubric item is measured like any
// other two-category question.
func RubricUnitTaskID(taskID, rubricKey string) string {
	return taskID + rubricUnitSeparator + rubricKey
}

// studyUnit is what a report key stands for in a study: an item, or one
// rubric item of an item.
type studyUnit struct {
	item *models.StudyDataItem
	// rubric is the rubric item and rubricIndex its place in the item's
	// rubric; nil and -1 for the item itself.
	rubric      *models.RubricItem
	rubricIndex int
}

// studyHuman is a human label for one unit with the item it belongs to.
type studyHuman struct {
	HumanLabel
	itemID int64
}

// studyVerdict is a judge's verdict for one unit with the item it belongs
// to.
type studyVerdict struct {
	Verdict
	itemID int64
	kind   string
}

// humanRecord is one annotator's submitted labels for one item, as the
// report's human summary counts them (a rubric answer is part of its item's
// labels, not a label of its own).
type humanRecord struct {
	itemID    int64
	annotator string
}

// judgeTally is what one judge did over a study's items.
type judgeTally struct {
	name   string
	kind   string
	config *models.StudyJudge
	judged map[int64]bool // items it gave a verdict on
	errors int            // items it gave no verdict on
	cost   float64        // every call, failed ones included
}

// studyInput is a study turned into the agreement package's values: every
// human label and verdict keyed by StudyKeys (rubric units by
// RubricUnitTaskID), with what the report groups by.
type studyInput struct {
	items    []models.StudyDataItem // in sample order
	index    map[int64]int          // item id → place in items
	keys     map[int64]Key
	units    map[Key]studyUnit
	humans   []studyHuman
	records  []humanRecord
	verdicts []studyVerdict
	judges   map[string]*judgeTally
	// problems are stored values left out because they cannot be read (a
	// label value no spec accepts, a row for an item not in the sample).
	problems []string
}

// newStudyInput converts a study's data. It never fails: a row it cannot use
// is left out and named in problems, so one bad stored value does not take a
// study's report away.
func newStudyInput(d *models.StudyData) *studyInput {
	in := &studyInput{index: map[int64]int{}, units: map[Key]studyUnit{}, judges: map[string]*judgeTally{}}
	in.items = slices.Clone(d.Items)
	slices.SortStableFunc(in.items, func(a, b models.StudyDataItem) int { return cmp.Compare(a.Position, b.Position) })
	for i, it := range in.items {
		in.index[it.ItemID] = i
	}
	in.keys = StudyKeys(in.items)
	for i := range in.items {
		it := &in.items[i]
		key := in.keys[it.ItemID]
		in.units[key] = studyUnit{item: it, rubricIndex: -1}
		for r := range it.Rubric {
			in.units[rubricKey(key, it.Rubric[r].Key)] = studyUnit{item: it, rubric: &it.Rubric[r], rubricIndex: r}
		}
	}
	in.addHumans(d.Human)
	in.addJudges(d)
	slices.SortStableFunc(in.verdicts, func(a, b studyVerdict) int { return cmp.Compare(in.index[a.itemID], in.index[b.itemID]) })
	return in
}

// rubricKey is the key of a rubric item's unit.
func rubricKey(item Key, rubricItemKey string) Key {
	item.TaskID = RubricUnitTaskID(item.TaskID, rubricItemKey)
	return item
}

// item is the item with the id; nil when it is not in the sample.
func (in *studyInput) item(id int64) *models.StudyDataItem {
	i, ok := in.index[id]
	if !ok {
		return nil
	}
	return &in.items[i]
}

// problemf records a value left out.
func (in *studyInput) problemf(format string, args ...any) {
	in.problems = append(in.problems, fmt.Sprintf(format, args...))
}

// lastPerItem keeps, of the rows that share an owner and an item, the last
// one: storage keeps one row per annotator or judge and item, and should it
// ever hand over two, the later one is the answer that stands.
func lastPerItem[T any](rows []T, id func(T) string) []T {
	last := map[string]int{}
	for i, r := range rows {
		last[id(r)] = i
	}
	out := make([]T, 0, len(last))
	for i, r := range rows {
		if last[id(r)] == i {
			out = append(out, r)
		}
	}
	return out
}

// annotatorNames names each annotator: by their name, unless two people share
// it, when a user becomes "name (user N)" and an imported annotator "name
// (imported)". A user without a name is "user N".
func annotatorNames(labels []models.StudyHumanLabel) map[string]string {
	identity := func(h models.StudyHumanLabel) string {
		if h.UserID != 0 {
			return "user " + strconv.FormatInt(h.UserID, 10)
		}
		return "imported " + h.Annotator
	}
	base := func(h models.StudyHumanLabel) string {
		if name := strings.TrimSpace(h.Annotator); name != "" {
			return name
		}
		return identity(h)
	}
	people := map[string]map[string]bool{} // name → identities
	for _, h := range labels {
		if people[base(h)] == nil {
			people[base(h)] = map[string]bool{}
		}
		people[base(h)][identity(h)] = true
	}
	names := map[string]string{}
	for _, h := range labels {
		name := base(h)
		if len(people[name]) > 1 {
			if h.UserID != 0 {
				name = fmt.Sprintf("%s (user %d)", name, h.UserID)
			} else {
				name += " (imported)"
			}
		}
		names[identity(h)] = name
	}
	return names
}

// addHumans converts the human labels, in sample order.
func (in *studyInput) addHumans(labels []models.StudyHumanLabel) {
	names := annotatorNames(labels)
	identity := func(h models.StudyHumanLabel) string {
		if h.UserID != 0 {
			return "user " + strconv.FormatInt(h.UserID, 10)
		}
		return "imported " + h.Annotator
	}
	labels = lastPerItem(labels, func(h models.StudyHumanLabel) string {
		return identity(h) + "\x00" + strconv.FormatInt(h.ItemID, 10)
	})
	labels = slices.Clone(labels)
	slices.SortStableFunc(labels, func(a, b models.StudyHumanLabel) int {
		return cmp.Compare(in.index[a.ItemID], in.index[b.ItemID])
	})
	for _, h := range labels {
		name := names[identity(h)]
		it := in.item(h.ItemID)
		if it == nil {
			in.problemf("labels by %s for item %d: the item is not in the study's sample", name, h.ItemID)
			continue
		}
		where := fmt.Sprintf("labels by %s for item %d", name, it.Position)
		key := in.keys[it.ItemID]
		if problem := checkKey(key, ColumnAnnotator, name); problem != "" {
			in.problemf("%s: %s", where, problem)
			continue
		}
		values, rubric := in.studyValues(where, h.Labels, it.Rubric)
		if len(values) == 0 && len(rubric) == 0 {
			continue
		}
		in.records = append(in.records, humanRecord{itemID: it.ItemID, annotator: name})
		if len(values) > 0 {
			in.humans = append(in.humans, studyHuman{HumanLabel{Key: key, Annotator: name, Values: values}, it.ItemID})
		}
		for _, rv := range rubric {
			in.humans = append(in.humans, studyHuman{HumanLabel{Key: rubricKey(key, rv.key), Annotator: name,
				Values: Values{LabelRubric: rv.value}}, it.ItemID})
		}
	}
}

// rubricValue is one rubric item's answer.
type rubricValue struct {
	key   string
	value string
}

// studyValues reads stored study labels: the item's own labels by name and,
// in rubric order, each rubric item's pass or fail under
// models.RubricLabelKey. A value no spec accepts is left out and recorded;
// answers for rubric items the task no longer has are ignored.
func (in *studyInput) studyValues(where string, labels models.StudyLabels, rubric []models.RubricItem) (Values, []rubricValue) {
	values := Values{}
	for _, l := range Labels() {
		if l == LabelRubric {
			continue
		}
		spec, _ := SpecOf(l)
		v, err := spec.Parse(labels[string(l)])
		if err != nil {
			in.problemf("%s: %v", where, err)
			continue
		}
		if v != "" {
			values[l] = v
		}
	}
	spec, _ := SpecOf(LabelRubric)
	var out []rubricValue
	for _, ri := range rubric {
		v, err := spec.Parse(labels[models.RubricLabelKey(ri.ID)])
		if err != nil {
			in.problemf("%s: rubric item %s: %v", where, ri.Key, err)
			continue
		}
		if v != "" {
			out = append(out, rubricValue{key: ri.Key, value: v})
		}
	}
	return values, out
}

// tally is the judge's tally, made on first use.
func (in *studyInput) tally(name, kind string) *judgeTally {
	t := in.judges[name]
	if t == nil {
		t = &judgeTally{name: name, kind: kind, judged: map[int64]bool{}}
		in.judges[name] = t
	}
	return t
}

// addVerdict records one judge's answer on one item: its own labels and its
// rubric answers, each a verdict for its unit.
func (in *studyInput) addVerdict(t *judgeTally, it *models.StudyDataItem, values Values, rubric []rubricValue) {
	t.judged[it.ItemID] = true
	key := in.keys[it.ItemID]
	if len(values) > 0 {
		in.verdicts = append(in.verdicts, studyVerdict{Verdict{Key: key, Judge: t.name, Values: values}, it.ItemID, t.kind})
	}
	for _, rv := range rubric {
		in.verdicts = append(in.verdicts, studyVerdict{Verdict{Key: rubricKey(key, rv.key), Judge: t.name,
			Values: Values{LabelRubric: rv.value}}, it.ItemID, t.kind})
	}
}

// addJudges converts the study judges' and imported judges' verdicts and the
// automatic judges' evaluations.
func (in *studyInput) addJudges(d *models.StudyData) {
	// Configured judges are listed even before they have judged anything.
	for _, j := range d.Study.Judges {
		t := in.tally(j.Name, JudgeKindStudy)
		t.config = &j
	}
	evaluations := lastPerItem(d.Evaluations, func(e models.StudyEvaluation) string {
		return AutomaticJudgeName(e.Kind, e.Evaluator) + "\x00" + strconv.FormatInt(e.ItemID, 10)
	})
	// An imported judge that shares a name with a configured or automatic
	// judge is renamed rather than merged: they are different judges.
	taken := map[string]bool{}
	for name := range in.judges {
		taken[name] = true
	}
	for _, v := range d.Verdicts {
		if !v.Imported {
			taken[v.Judge] = true
		}
	}
	for _, e := range evaluations {
		taken[AutomaticJudgeName(e.Kind, e.Evaluator)] = true
	}
	judgeName := func(v models.StudyVerdict) string {
		if v.Imported && taken[v.Judge] {
			return v.Judge + " (imported)"
		}
		return v.Judge
	}

	verdicts := lastPerItem(d.Verdicts, func(v models.StudyVerdict) string {
		return judgeName(v) + "\x00" + strconv.FormatInt(v.StudyItemID, 10)
	})
	for _, v := range verdicts {
		name := judgeName(v)
		it := in.item(v.StudyItemID)
		switch {
		case strings.TrimSpace(name) == "":
			in.problemf("a verdict for item %d names no judge", v.StudyItemID)
			continue
		case it == nil:
			in.problemf("verdict of %s for item %d: the item is not in the study's sample", name, v.StudyItemID)
			continue
		}
		kind := JudgeKindStudy
		if v.Imported {
			kind = JudgeKindImported
		}
		t := in.tally(name, kind)
		t.cost += v.Cost
		if v.Error != "" {
			t.errors++
			continue
		}
		values, rubric := in.studyValues(fmt.Sprintf("verdict of %s for item %d", name, it.Position), v.Labels, it.Rubric)
		in.addVerdict(t, it, values, rubric)
	}

	for _, e := range evaluations {
		name := AutomaticJudgeName(e.Kind, e.Evaluator)
		it := in.item(e.ItemID)
		switch {
		case name == "":
			continue // a kind that answers none of the study's questions
		case it == nil:
			in.problemf("evaluation %s of item %d: the item is not in the study's sample", name, e.ItemID)
			continue
		}
		t := in.tally(name, JudgeKindAutomatic)
		if e.Kind != models.EvaluationCheck {
			// A deterministic check costs nothing to run again; an LLM
			// judge's cost is what it was charged.
			t.cost += e.Cost
		}
		success, ok := automaticSuccess(e.Verdict)
		if !ok {
			t.errors++
			continue
		}
		values := Values{}
		var rubric []rubricValue
		switch e.Kind {
		case models.EvaluationCheck:
			values[LabelSuccess] = success
		case models.EvaluationJudge:
			values[LabelSuccess] = success
			if e.JudgeScore != nil && *e.JudgeScore >= 1 && *e.JudgeScore <= 5 {
				values[LabelScore] = strconv.Itoa(*e.JudgeScore)
			}
		case models.EvaluationRubric:
			for _, ri := range it.Rubric {
				if passed, ok := e.Rubric[ri.ID]; ok {
					rubric = append(rubric, rubricValue{key: ri.Key, value: passFail(passed)})
				}
			}
		}
		in.addVerdict(t, it, values, rubric)
	}
}

// automaticSuccess maps an evaluation's verdict to the success label; ok
// false for an error (or anything else), which is no verdict.
func automaticSuccess(verdict string) (string, bool) {
	switch verdict {
	case models.OutcomeSuccess:
		return "successful", true
	case models.OutcomeFailure:
		return "unsuccessful", true
	}
	return "", false
}

// passFail is a rubric judgment as the rubric label spells it.
func passFail(passed bool) string {
	if passed {
		return models.RubricPass
	}
	return models.RubricFail
}

// StudyHumanLabels returns a study's human labels as HumanLabels, in sample
// order, for WriteHumanCSV and WriteHumanJSONL: items keyed by StudyKeys, the
// annotator by name (made unique when two people share one), one label for
// the item's own questions and one per rubric item answered, keyed by
// RubricUnitTaskID. Values that cannot be read are left out
// (BuildStudyReport lists them).
func StudyHumanLabels(d *models.StudyData) []HumanLabel {
	if d == nil {
		return nil
	}
	return newStudyInput(d).humanLabels(nil)
}

// StudyVerdictList returns every judge's verdicts on a study, for
// WriteVerdictsCSV and WriteVerdictsJSONL: the study's judge configurations,
// the imported judges and the automatic judges ("check: …", "judge: …",
// "rubric: …"), keyed as StudyHumanLabels keys the human labels, in sample
// order. Failed judgments carry no verdict and are left out. With the human
// labels, they give `proctor agreement` the study's report.
func StudyVerdictList(d *models.StudyData) []Verdict {
	if d == nil {
		return nil
	}
	return newStudyInput(d).verdictList(nil)
}

// humanLabels are the human labels of the items keep accepts (all when keep
// is nil).
func (in *studyInput) humanLabels(keep func(*models.StudyDataItem) bool) []HumanLabel {
	out := []HumanLabel{}
	for _, h := range in.humans {
		if keep == nil || keep(in.item(h.itemID)) {
			out = append(out, h.HumanLabel)
		}
	}
	return out
}

// verdictList are the verdicts on the items keep accepts (all when keep is
// nil).
func (in *studyInput) verdictList(keep func(*models.StudyDataItem) bool) []Verdict {
	out := []Verdict{}
	for _, v := range in.verdicts {
		if keep == nil || keep(in.item(v.itemID)) {
			out = append(out, v.Verdict)
		}
	}
	return out
}
