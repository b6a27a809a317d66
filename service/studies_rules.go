package service

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"proctor/agreement"
	"proctor/models"
	"proctor/storage"
)

// The study service's pure rules: what a study request, a label and an
// imported row must be, and their canonical spelling.

// Limits of a study request beyond those in models.
const (
	maxStudyUnmatched         = 100 // unmatched rows an import lists
	maxStudyRuns              = 500 // source runs named in one request
	maxStudyBenchmarks        = 50  // source benchmarks named in one request
	maxStudyOverlapAnnotators = 10  // annotators of one overlapping item
	maxStudyJudgeNameLen      = 100
	maxStudyJudgeModelLen     = 200
)

// checkStudyRequest validates every field of a request and returns it
// normalised; EINVALID naming the first bad field (its JSON name).
func checkStudyRequest(req models.StudyRequest) (*storage.StudySpec, error) {
	s := &storage.StudySpec{
		Name: strings.TrimSpace(req.Name), Description: strings.TrimSpace(req.Description),
		Sampling: strings.TrimSpace(req.Sampling), StratifyBy: strings.TrimSpace(req.StratifyBy),
		Seed: req.Seed, SampleSize: req.SampleSize, OverlapFraction: req.OverlapFraction,
		OverlapAnnotators: req.OverlapAnnotators, Blind: req.Blind,
	}
	switch {
	case s.Name == "":
		return nil, models.FieldError("name", "Name the study.")
	case len(s.Name) > models.MaxStudyNameLen:
		return nil, models.FieldError("name", "The name must be at most %d characters.", models.MaxStudyNameLen)
	case len(s.Description) > models.MaxStudyDescription:
		return nil, models.FieldError("description", "The description must be at most %d characters.", models.MaxStudyDescription)
	}
	for _, id := range req.RunIDs {
		if id <= 0 {
			return nil, models.FieldError("run_ids", "%d is not a run id.", id)
		}
		if !slices.Contains(s.RunIDs, id) {
			s.RunIDs = append(s.RunIDs, id)
		}
	}
	for _, slug := range req.Benchmarks {
		slug = strings.TrimSpace(slug)
		if slug != "" && !slices.Contains(s.Benchmarks, slug) {
			s.Benchmarks = append(s.Benchmarks, slug)
		}
	}
	switch {
	case len(s.RunIDs) == 0 && len(s.Benchmarks) == 0:
		return nil, models.FieldError("run_ids", "Choose at least one run or benchmark to sample from.")
	case len(s.RunIDs) > maxStudyRuns:
		return nil, models.FieldError("run_ids", "A study samples from at most %d runs.", maxStudyRuns)
	case len(s.Benchmarks) > maxStudyBenchmarks:
		return nil, models.FieldError("benchmarks", "A study samples from at most %d benchmarks.", maxStudyBenchmarks)
	}
	if s.Sampling == "" {
		s.Sampling = models.SampleRandom
	}
	switch s.Sampling {
	case models.SampleRandom:
		if s.StratifyBy != "" {
			return nil, models.FieldError("stratify_by", "Only stratified samples have strata; choose stratified sampling or no stratum.")
		}
	case models.SampleStratified:
		if !slices.Contains(models.StudyStrata(), s.StratifyBy) {
			return nil, models.FieldError("stratify_by", "A stratified sample needs a stratum: one of %s.", strings.Join(models.StudyStrata(), ", "))
		}
	default:
		return nil, models.FieldError("sampling", "Sampling must be %s or %s, not %q.", models.SampleRandom, models.SampleStratified, s.Sampling)
	}
	if s.SampleSize < 1 || s.SampleSize > models.MaxStudySample {
		return nil, models.FieldError("sample_size", "The sample size must be between 1 and %d.", models.MaxStudySample)
	}
	if math.IsNaN(s.OverlapFraction) || s.OverlapFraction < 0 || s.OverlapFraction > 1 {
		return nil, models.FieldError("overlap_fraction", "The overlap fraction must be between 0 and 1.")
	}
	if s.OverlapAnnotators == 0 {
		s.OverlapAnnotators = 2
	}
	if s.OverlapAnnotators < 2 || s.OverlapAnnotators > maxStudyOverlapAnnotators {
		return nil, models.FieldError("overlap_annotators", "Overlapping items go to between 2 and %d annotators.", maxStudyOverlapAnnotators)
	}
	labels, err := checkStudyLabels(req.Labels)
	if err != nil {
		return nil, err
	}
	s.Labels = labels
	if s.Judges, err = checkStudyJudges(req.Judges); err != nil {
		return nil, err
	}
	if len(req.Annotators) > models.MaxStudyAnnotators {
		return nil, models.FieldError("annotators", "A study has at most %d annotators.", models.MaxStudyAnnotators)
	}
	for _, raw := range req.Annotators {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		email, err := models.NormalizeEmail(raw)
		if err != nil {
			return nil, models.FieldError("annotators", "%s", models.ErrorMessage(err))
		}
		if !slices.Contains(s.Emails, email) {
			s.Emails = append(s.Emails, email)
		}
	}
	return s, nil
}

// checkStudyLabels checks the asked labels and returns them once each, in
// models.StudyLabelNames order.
func checkStudyLabels(labels []string) ([]string, error) {
	asked := map[string]bool{}
	for _, l := range labels {
		l = strings.TrimSpace(l)
		if !slices.Contains(models.StudyLabelNames(), l) {
			return nil, models.FieldError("labels", "Unknown label %q; a study may ask %s.", l, strings.Join(models.StudyLabelNames(), ", "))
		}
		asked[l] = true
	}
	var out []string
	for _, l := range models.StudyLabelNames() {
		if asked[l] {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, models.FieldError("labels", "Ask at least one label: %s.", strings.Join(models.StudyLabelNames(), ", "))
	}
	return out, nil
}

// checkStudyJudges checks judge configurations: at most MaxStudyJudges, each
// with a unique name (case-insensitively) and a known prompt.
func checkStudyJudges(judges []models.StudyJudge) ([]models.StudyJudge, error) {
	if len(judges) > models.MaxStudyJudges {
		return nil, models.FieldError("judges", "A study compares at most %d judge configurations.", models.MaxStudyJudges)
	}
	out := make([]models.StudyJudge, 0, len(judges))
	seen := map[string]bool{}
	for i, j := range judges {
		j.Name, j.Model, j.Prompt = strings.TrimSpace(j.Name), strings.TrimSpace(j.Model), strings.TrimSpace(j.Prompt)
		switch {
		case j.Name == "":
			return nil, models.FieldError("judges", "Judge configuration %d has no name.", i+1)
		case len(j.Name) > maxStudyJudgeNameLen:
			return nil, models.FieldError("judges", "Judge name %q is longer than %d characters.", j.Name[:maxStudyJudgeNameLen], maxStudyJudgeNameLen)
		case seen[strings.ToLower(j.Name)]:
			return nil, models.FieldError("judges", "Two judge configurations are named %q; names must differ.", j.Name)
		case len(j.Model) > maxStudyJudgeModelLen:
			return nil, models.FieldError("judges", "The model of judge %q is longer than %d characters.", j.Name, maxStudyJudgeModelLen)
		case !slices.Contains(models.StudyPrompts(), j.Prompt):
			return nil, models.FieldError("judges", "Judge %q: the prompt must be one of %s, not %q.", j.Name, strings.Join(models.StudyPrompts(), ", "), j.Prompt)
		}
		seen[strings.ToLower(j.Name)] = true
		out = append(out, j)
	}
	return out, nil
}

// checkSourcesSampled refuses a study whose named sources have no finished
// attempt among cands (benchIDs are the ids of spec.Benchmarks, in order):
// EINVALID naming every empty source, on "run_ids" when a run is one of
// them, else on "benchmarks".
func checkSourcesSampled(spec *storage.StudySpec, benchIDs []int64, cands []storage.StudyCandidate) error {
	perRun := map[int64]int{}
	perBenchmark := map[int64]int{}
	for _, c := range cands {
		perRun[c.RunID]++
		if c.BenchmarkID != 0 {
			perBenchmark[c.BenchmarkID]++
		}
	}
	var empty []string
	field := ""
	for _, id := range spec.RunIDs {
		if perRun[id] == 0 {
			empty = append(empty, fmt.Sprintf("run %d", id))
			field = "run_ids"
		}
	}
	for i, id := range benchIDs {
		if perBenchmark[id] == 0 {
			empty = append(empty, fmt.Sprintf("benchmark %q", spec.Benchmarks[i]))
			if field == "" {
				field = "benchmarks"
			}
		}
	}
	if len(empty) > 0 {
		return models.FieldError(field, "The sources have no finished attempts to sample: %s.", strings.Join(empty, ", "))
	}
	return nil
}

// stratum is the stratum a candidate falls in when a sample is stratified by.
func stratum(c storage.StudyCandidate, by string) string {
	switch by {
	case models.StratumOutcome:
		return c.Outcome
	case models.StratumAgent:
		return c.Agent
	case models.StratumSite:
		if c.SiteKey == "" {
			return "unknown"
		}
		return c.SiteKey
	case models.StratumDifficulty:
		if c.Difficulty == "" {
			return "unlabelled"
		}
		return c.Difficulty
	}
	return ""
}

// allowedAnswers lists a label's answers as forms spell them, for messages.
func allowedAnswers(spec agreement.Spec) string {
	values := slices.Clone(spec.Display)
	if spec.AllowsUnsure {
		values = append(values, "Unsure")
	}
	return strings.Join(values, ", ")
}

// offeredAnswer refuses a saved unsure answer to a label the annotation form
// offers no unsure for (optimality, looping): imported files may hold one, as
// AgentRewardBench's do (agreement.Spec.ReadsUnsure), but an annotator in
// Proctor chooses among the form's answers. EINVALID on field key.
func offeredAnswer(key, raw, canonical string) error {
	spec, ok := agreement.SpecOf(agreement.Label(key))
	if !ok || canonical != agreement.Unsure || spec.AllowsUnsure {
		return nil
	}
	return models.FieldError(key, "%q is not an answer to %s (allowed: %s).", strings.TrimSpace(raw), key, allowedAnswers(spec))
}

// rubricItemKey reads a RubricLabelKey; ok false when key is not one.
func rubricItemKey(key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, models.StudyLabelRubric+":")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && id > 0 && models.RubricLabelKey(id) == key
}

// canonicalLabel reads one label's value and returns its canonical
// spelling ("" clears it): EINVALID on field key naming the allowed answers.
// rubric lists the item's rubric items a rubric key may name; asks tells
// which labels are asked (nil: any label agreement knows).
func canonicalLabel(key, raw string, asks func(string) bool, rubric []models.RubricItem) (string, error) {
	if id, ok := rubricItemKey(key); ok {
		if asks != nil && !asks(models.StudyLabelRubric) {
			return "", models.FieldError(key, "The study does not ask about rubric items.")
		}
		if !slices.ContainsFunc(rubric, func(it models.RubricItem) bool { return it.ID == id }) {
			return "", models.FieldError(key, "Rubric item %d is not one of this task's.", id)
		}
		switch v := strings.ToLower(strings.TrimSpace(raw)); v {
		case "", models.RubricPass, models.RubricFail:
			return v, nil
		}
		return "", models.FieldError(key, "%q is not an answer to a rubric item (allowed: %s, %s).", raw, models.RubricPass, models.RubricFail)
	}
	spec, ok := agreement.SpecOf(agreement.Label(key))
	if !ok || (asks != nil && !asks(key)) {
		return "", models.FieldError(key, "The study does not ask %q.", key)
	}
	v, err := spec.Parse(raw)
	if err != nil {
		return "", models.FieldError(key, "%q is not an answer to %s (allowed: %s).", strings.TrimSpace(raw), key, allowedAnswers(spec))
	}
	return v, nil
}

// missingLabels lists the asked labels (and rubric items, when asked) that
// labels leave unanswered, in form order.
func missingLabels(st *models.Study, labels models.StudyLabels, rubric []models.RubricItem) []string {
	var missing []string
	for _, l := range st.Labels {
		if l == models.StudyLabelRubric {
			for _, it := range rubric {
				if labels[models.RubricLabelKey(it.ID)] == "" {
					missing = append(missing, models.RubricLabelKey(it.ID))
				}
			}
			continue
		}
		if labels[l] == "" {
			missing = append(missing, l)
		}
	}
	return missing
}

// matchImport checks import rows and matches them to the study's items the
// way the study's exports key them (agreement.MatchStudyImport: rubric rows
// by their "#" task ids, case and spaces ignored): EINVALID naming the line of
// a row without a name or with a bad label, or when no row matches an item.
// A later row for the same name and item replaces an earlier one's labels.
// Rows matching no item are listed (capped) in the result.
func matchImport(items []models.StudyDataItem, rows []models.StudyImportRow, party string) ([]storage.StudyImportMatch, *models.StudyImportResult, error) {
	res := &models.StudyImportResult{}
	if len(rows) == 0 {
		return nil, nil, models.Errorf(models.EINVALID, "The file has no rows to import.")
	}
	named := make([]models.StudyImportRow, len(rows))
	for i, r := range rows {
		r.Who = strings.TrimSpace(r.Who)
		switch {
		case r.Who == "":
			return nil, nil, models.Errorf(models.EINVALID, "Line %d names no %s.", r.Line, party)
		case len(r.Who) > maxStudyJudgeNameLen:
			return nil, nil, models.Errorf(models.EINVALID, "Line %d: the name is longer than %d characters.", r.Line, maxStudyJudgeNameLen)
		}
		named[i] = r
	}
	found, unmatched := agreement.MatchStudyImport(items, named)
	for i, r := range unmatched {
		if i == maxStudyUnmatched {
			res.Unmatched = append(res.Unmatched, fmt.Sprintf("… and %d more rows that match no item", len(unmatched)-maxStudyUnmatched))
			break
		}
		res.Unmatched = append(res.Unmatched, fmt.Sprintf("line %d: %s/%s/%s", r.Line, r.Benchmark, r.Model, r.TaskID))
	}
	if len(found) == 0 {
		return nil, nil, models.Errorf(models.EINVALID, "None of the file's %d rows matches an item of the study (items are matched by benchmark, model and task id), for example %s.",
			len(rows), res.Unmatched[0])
	}
	byID := make(map[int64]models.StudyDataItem, len(items))
	for _, it := range items {
		byID[it.ItemID] = it
	}
	matches := make([]storage.StudyImportMatch, 0, len(found))
	for _, f := range found {
		item := byID[f.ItemID]
		labels := models.StudyLabels{}
		for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
			v, err := canonicalLabel(k, f.Labels[k], nil, item.Rubric)
			if err != nil {
				return nil, nil, models.Errorf(models.EINVALID, "Line %d: %s", f.Lines[0], models.ErrorMessage(err))
			}
			if v != "" {
				labels[k] = v
			}
		}
		matches = append(matches, storage.StudyImportMatch{Item: item, Who: f.Who, Labels: labels})
	}
	return matches, res, nil
}

// checkImportedNames refuses an import that would leave a study with more
// than limit distinct imported annotators or judges (party): each one adds
// columns and pairwise comparisons to every report of the study. stored
// lists the names the study already holds.
func checkImportedNames(stored []string, matches []storage.StudyImportMatch, limit int, party string) error {
	have := make(map[string]bool, len(stored))
	for _, name := range stored {
		have[name] = true
	}
	added := map[string]bool{}
	for _, m := range matches {
		if !have[m.Who] {
			added[m.Who] = true
		}
	}
	if len(have)+len(added) > limit {
		return models.Errorf(models.EINVALID, "A study holds at most %d imported %ss; it has %d and the file adds %d.", limit, party, len(have), len(added))
	}
	return nil
}
