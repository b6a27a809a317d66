package agreement

import (
	"maps"
	"strconv"
	"strings"

	"proctor/models"
)

// StudyImportMatch is what one annotator or judge said about one study item
// in an imported file: its rows for the item (the item's own and its rubric
// units') merged into one set of labels, as study assignments and verdicts
// store them.
type StudyImportMatch struct {
	ItemID int64
	Who    string
	Labels models.StudyLabels // label names and models.RubricLabelKey keys → canonical values
	Lines  []int              // the rows' lines
}

// HumanImportRows turns human labels read by ReadHumanCSV into study import
// rows: labels by name, values canonical.
func HumanImportRows(humans []HumanLabel) []models.StudyImportRow {
	rows := make([]models.StudyImportRow, len(humans))
	for i, h := range humans {
		rows[i] = importRow(h.Key, h.Annotator, h.Values, h.Line)
	}
	return rows
}

// VerdictImportRows turns verdicts read by ReadVerdictsCSV or
// ReadVerdictsJSONL into study import rows.
func VerdictImportRows(verdicts []Verdict) []models.StudyImportRow {
	rows := make([]models.StudyImportRow, len(verdicts))
	for i, v := range verdicts {
		rows[i] = importRow(v.Key, v.Judge, v.Values, v.Line)
	}
	return rows
}

func importRow(k Key, who string, values Values, line int) models.StudyImportRow {
	labels := models.StudyLabels{}
	for l, v := range values {
		labels[string(l)] = v
	}
	return models.StudyImportRow{Benchmark: k.Benchmark, Model: k.Model, TaskID: k.TaskID, Who: who, Labels: labels, Line: line}
}

// MatchStudyImport matches import rows to a study's items by StudyKeys, the
// keys its exports write, ignoring case and surrounding spaces: imported
// files spell benchmarks, models and task ids their own way. A row whose task id is an item's task id, "#" and
// one of its rubric item keys (RubricUnitTaskID) is that rubric item's answer:
// its rubric label is stored under models.RubricLabelKey. The rows of one
// annotator or judge for one item are merged, a later row's value winning a
// label both give; matches come in the order of their first row. Rows that
// match no item, or no rubric item of theirs, are returned in input order.
func MatchStudyImport(items []models.StudyDataItem, rows []models.StudyImportRow) (matched []StudyImportMatch, unmatched []models.StudyImportRow) {
	keys := StudyKeys(items)
	type target struct {
		item   *models.StudyDataItem
		rubric *models.RubricItem
	}
	targets := map[Key]target{}
	for i := range items {
		it := &items[i]
		key := keys[it.ItemID]
		targets[foldKey(key)] = target{item: it}
		for r := range it.Rubric {
			targets[foldKey(rubricKey(key, it.Rubric[r].Key))] = target{item: it, rubric: &it.Rubric[r]}
		}
	}
	index := map[string]int{} // who and item → place in matched
	for _, row := range rows {
		t, ok := targets[foldKey(Key{Benchmark: row.Benchmark, Model: row.Model, TaskID: row.TaskID})]
		if !ok {
			unmatched = append(unmatched, row)
			continue
		}
		labels := maps.Clone(row.Labels)
		if t.rubric != nil {
			value, answered := row.Labels[string(LabelRubric)]
			if !answered {
				unmatched = append(unmatched, row) // a rubric unit's row answers only its rubric item
				continue
			}
			labels = models.StudyLabels{models.RubricLabelKey(t.rubric.ID): value}
		} else {
			delete(labels, string(LabelRubric)) // a rubric answer needs its rubric item's key
			if len(labels) == 0 {
				unmatched = append(unmatched, row)
				continue
			}
		}
		id := row.Who + "\x00" + strconv.FormatInt(t.item.ItemID, 10)
		i, seen := index[id]
		if !seen {
			i = len(matched)
			index[id] = i
			matched = append(matched, StudyImportMatch{ItemID: t.item.ItemID, Who: row.Who, Labels: models.StudyLabels{}})
		}
		maps.Copy(matched[i].Labels, labels)
		matched[i].Lines = append(matched[i].Lines, row.Line)
	}
	return matched, unmatched
}

// foldKey folds a key for matching.
func foldKey(k Key) Key {
	fold := func(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
	return Key{Benchmark: fold(k.Benchmark), Model: fold(k.Model), TaskID: fold(k.TaskID)}
}
