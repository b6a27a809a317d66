package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// ProctorFormatVersion is the value of "proctor_benchmark" in the header line that
// this importer reads.
const ProctorFormatVersion = 1

// proctorHeader is the optional first line of a proctor file.
type proctorHeader struct {
	ProctorBenchmark *int                     `json:"proctor_benchmark"`
	Name             string                   `json:"name"`
	Description      string                   `json:"description"`
	Evaluator        string                   `json:"evaluator"`
	PassThreshold    *float64                 `json:"pass_threshold"`
	Subsets          map[string]proctorSubset `json:"subsets"`
}

// proctorSubset is a subset declared in the header.
type proctorSubset struct {
	Description string            `json:"description"`
	TaskIDs     []json.RawMessage `json:"task_ids"`
	Checksum    string            `json:"checksum"`
}

// proctorTask is one task line. docs/benchmark-format.md documents every field.
type proctorTask struct {
	ID               string              `json:"id"`
	Intent           string              `json:"intent"`
	IntentTemplate   string              `json:"intent_template"`
	StartURLs        []string            `json:"start_urls"`
	Sites            []string            `json:"sites"`
	TaskType         string              `json:"task_type"`
	Difficulty       string              `json:"difficulty"`
	Domain           string              `json:"domain"`
	Attributes       []string            `json:"attributes"`
	Revision         int                 `json:"revision"`
	Modality         string              `json:"modality"`
	FileFormat       string              `json:"file_format"`
	AccessType       string              `json:"access_type"`
	Budget           *proctorBudget      `json:"budget"`
	Rubric           []proctorRubricItem `json:"rubric"`
	Metadata         json.RawMessage     `json:"metadata"`
	ReferenceAnswers json.RawMessage     `json:"reference_answers"`
	Eval             json.RawMessage     `json:"eval"`
	ReferenceActions json.RawMessage     `json:"reference_actions"`
}

// proctorBudget caps an OpenDS-World-style task.
type proctorBudget struct {
	MaxToolCalls int `json:"max_tool_calls"`
	MaxSeconds   int `json:"max_seconds"`
}

// proctorRubricItem is one rubric item of a task line.
type proctorRubricItem struct {
	Key          string   `json:"key"`
	Requirement  string   `json:"requirement"`
	Verification string   `json:"verification"`
	Weight       *float64 `json:"weight"`
}

// Field length limits of the proctor format.
const (
	maxIDLength     = 200
	maxDomainLength = 100
)

// countingReader counts the bytes read, to refuse oversized input while streaming.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// parseProctor reads the proctor JSON Lines format: an optional header line, then
// one task object per line. Blank lines are skipped.
func parseProctor(r io.Reader, lim limits, kinds *eval.Registry) (*parsed, error) {
	cr := &countingReader{r: io.LimitReader(r, lim.input+1)}
	sc := bufio.NewScanner(cr)
	// +2 leaves room for the "\r\n" ending so the limit applies to the content.
	sc.Buffer(make([]byte, 0, min(64<<10, lim.line+2)), lim.line+2)

	p := &parsed{}
	explicitEvaluator := ""
	lineNo := 0
	first := true
	tooLarge := func() error {
		return models.Errorf(models.ETOOLARGE, "input: larger than %s", formatBytes(lim.input))
	}
	for sc.Scan() {
		lineNo++
		if cr.n > lim.input {
			return nil, tooLarge()
		}
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) > lim.line {
			return nil, models.Errorf(models.ETOOLARGE, "line %d: longer than %s", lineNo, formatBytes(int64(lim.line)))
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := checkUTF8(line, "input", lineNo); err != nil {
			return nil, err
		}
		if first {
			first = false
			if isProctorHeader(line) {
				if err := parseProctorHeader(p, line, lineNo, kinds); err != nil {
					return nil, err
				}
				explicitEvaluator = p.evaluator
				continue
			}
		}
		task, where, err := parseProctorTask(line, lineNo, explicitEvaluator, kinds)
		if err != nil {
			return nil, err
		}
		p.tasks = append(p.tasks, task)
		p.where = append(p.where, where)
		p.pos = append(p.pos, fmt.Sprintf("line %d", lineNo))
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, models.Errorf(models.ETOOLARGE, "line %d: longer than %s", lineNo+1, formatBytes(int64(lim.line)))
		}
		return nil, &models.Error{Code: models.EINVALID, Message: "input: cannot be read", Err: err}
	}
	if cr.n > lim.input {
		return nil, tooLarge()
	}
	if p.evaluator == "" {
		p.evaluator = defaultEvaluator(p.tasks)
	}
	return p, nil
}

// defaultEvaluator picks the evaluator of a file whose header names none: rubric
// when every task has a rubric, none otherwise.
func defaultEvaluator(tasks []models.Task) string {
	for _, t := range tasks {
		if len(t.RubricItems) == 0 {
			return models.EvaluatorNone
		}
	}
	return models.EvaluatorRubric
}

// isProctorHeader reports whether a line is an object with a proctor_benchmark key.
func isProctorHeader(line []byte) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return false
	}
	_, ok := m["proctor_benchmark"]
	return ok
}

// parseProctorHeader reads the header line into p.
func parseProctorHeader(p *parsed, line []byte, lineNo int, kinds *eval.Registry) error {
	where := fmt.Sprintf("line %d", lineNo)
	var h proctorHeader
	if err := decodeLine(line, &h); err != nil {
		return decodeErr(where, err)
	}
	if h.ProctorBenchmark == nil || *h.ProctorBenchmark != ProctorFormatVersion {
		return fieldErr(where, "proctor_benchmark", "this importer reads version %d", ProctorFormatVersion)
	}
	p.name = strings.TrimSpace(h.Name)
	p.description = strings.TrimSpace(h.Description)
	if h.Evaluator != "" {
		if err := oneOf(where, "evaluator", h.Evaluator, kinds.Named()); err != nil {
			return err
		}
		p.evaluator = h.Evaluator
	}
	if h.PassThreshold != nil {
		x := *h.PassThreshold
		if !kinds.GradesCandidates(p.evaluator) {
			return fieldErr(where, "pass_threshold", "only a hidden-tests benchmark (\"evaluator\": %q) is graded by pass rates; remove it or set the evaluator", models.EvaluatorHiddenTests)
		}
		if err := models.CheckPassThreshold(x); err != nil {
			return fieldErr(where, "pass_threshold", "%g is out of range: give the pass rate a task needs to succeed, above 0 and at most 1 (1, the default, means every test that ran must pass)", x)
		}
		if x != models.DefaultPassThreshold {
			p.passThreshold = &x
		}
	}
	names := make([]string, 0, len(h.Subsets))
	for name := range h.Subsets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := h.Subsets[name]
		swhere := fmt.Sprintf("%s: subset %q", where, name)
		if s.TaskIDs == nil {
			return fieldErr(swhere, "task_ids", "missing: expected an array of task ids")
		}
		sub, err := newSubset(swhere, name, s.Description, s.TaskIDs, s.Checksum)
		if err != nil {
			return err
		}
		p.subsets = append(p.subsets, sub)
		p.subsetWhere = append(p.subsetWhere, swhere)
	}
	return nil
}

// decodeLine decodes exactly one JSON value from line, refusing unknown fields.
func decodeLine(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return errors.New("extra data after the JSON object: one object per line")
	}
	return nil
}

// parseProctorTask reads one task line.
func parseProctorTask(line []byte, lineNo int, evaluator string, kinds *eval.Registry) (models.Task, string, error) {
	where := fmt.Sprintf("line %d", lineNo)
	var head map[string]json.RawMessage
	if json.Unmarshal(line, &head) == nil {
		var id string
		if json.Unmarshal(head["id"], &id) == nil && strings.TrimSpace(id) != "" {
			where = fmt.Sprintf("line %d (task %s)", lineNo, quoteID(id))
		}
	}
	var in proctorTask
	if err := decodeLine(line, &in); err != nil {
		if _, isHeader := head["proctor_benchmark"]; isHeader {
			return models.Task{}, where, invalid(where, "the header line must be the first line of the file")
		}
		return models.Task{}, where, decodeErr(where, err)
	}
	t, err := proctorTaskOf(where, in, evaluator, kinds)
	return t, where, err
}

// proctorTaskOf validates a decoded task line and converts it.
func proctorTaskOf(where string, in proctorTask, evaluator string, kinds *eval.Registry) (models.Task, error) {
	var err error
	if strings.TrimSpace(in.ID) == "" {
		return models.Task{}, fieldErr(where, "id", "missing or empty: every task needs a string id")
	}
	if len(in.ID) > maxIDLength || strings.TrimSpace(in.ID) != in.ID {
		return models.Task{}, fieldErr(where, "id", "must be at most %d characters without surrounding spaces", maxIDLength)
	}
	if strings.TrimSpace(in.Intent) == "" {
		return models.Task{}, fieldErr(where, "intent", "missing or empty")
	}
	for i, u := range in.StartURLs {
		if strings.TrimSpace(u) == "" {
			return models.Task{}, fieldErr(where, "start_urls", "item %d is empty", i)
		}
	}
	sites := in.Sites
	if sites == nil {
		sites = sitesFromStartURLs(in.StartURLs)
	}
	if len(sites) > 0 {
		if err := checkSites(where, "sites", sites, validSiteName, "lower-case letters, digits, '.', '_' and '-'"); err != nil {
			return models.Task{}, err
		}
	}
	if in.TaskType != "" {
		if err := oneOf(where, "task_type", in.TaskType, taskTypes()); err != nil {
			return models.Task{}, err
		}
	}
	if in.Difficulty != "" {
		if err := oneOf(where, "difficulty", in.Difficulty, difficulties()); err != nil {
			return models.Task{}, err
		}
	}
	domain := strings.TrimSpace(in.Domain)
	if len(domain) > maxDomainLength {
		return models.Task{}, fieldErr(where, "domain", "must be at most %d characters", maxDomainLength)
	}
	for i, a := range in.Attributes {
		if !models.ValidSlug(a) {
			return models.Task{}, fieldErr(where, "attributes", "%q is not a slug: use lower-case letters, digits and hyphens", a)
		}
		if slices.Contains(in.Attributes[:i], a) {
			return models.Task{}, fieldErr(where, "attributes", "%q is listed twice", a)
		}
	}
	if in.Revision < 0 {
		return models.Task{}, fieldErr(where, "revision", "must not be negative")
	}
	for _, f := range [][2]string{{"modality", in.Modality}, {"file_format", in.FileFormat}, {"access_type", in.AccessType}} {
		if f[1] != "" && !models.ValidSlug(f[1]) {
			return models.Task{}, fieldErr(where, f[0], "%q is not a slug: use lower-case letters, digits and hyphens", f[1])
		}
	}
	var budget proctorBudget
	if in.Budget != nil {
		budget = *in.Budget
		if budget.MaxToolCalls < 0 {
			return models.Task{}, fieldErr(where, "budget.max_tool_calls", "must not be negative")
		}
		if budget.MaxSeconds < 0 {
			return models.Task{}, fieldErr(where, "budget.max_seconds", "must not be negative")
		}
	}
	items, err := proctorRubric(where, in.Rubric)
	if err != nil {
		return models.Task{}, err
	}
	t := models.Task{
		ExternalID:     in.ID,
		Intent:         in.Intent,
		IntentTemplate: in.IntentTemplate,
		StartURLs:      in.StartURLs,
		Sites:          sites,
		SiteKey:        models.SiteKeyOf(sites),
		TaskType:       in.TaskType,
		Difficulty:     in.Difficulty,
		Domain:         domain,
		Attributes:     in.Attributes,
		Revision:       in.Revision,
		Modality:       in.Modality,
		FileFormat:     in.FileFormat,
		AccessType:     in.AccessType,
		MaxToolCalls:   budget.MaxToolCalls,
		MaxSeconds:     budget.MaxSeconds,
		RubricItems:    items,
	}
	if !isNull(in.Metadata) {
		if jsonKind(in.Metadata) != "an object" {
			return models.Task{}, fieldErr(where, "metadata", "expected an object, found %s", jsonKind(in.Metadata))
		}
		if t.Metadata, err = canonicalJSON(in.Metadata); err != nil {
			return models.Task{}, decodeErr(where, err)
		}
	}
	if t.ReferenceAnswers, err = hiddenJSON(in.ReferenceAnswers); err != nil {
		return models.Task{}, decodeErr(where, err)
	}
	if t.EvalSpec, err = hiddenJSON(in.Eval); err != nil {
		return models.Task{}, decodeErr(where, err)
	}
	if t.ReferenceActions, err = referenceActions(where, in.ReferenceActions); err != nil {
		return models.Task{}, err
	}
	// What the header's evaluator needs of every task is checked here, so a
	// file that cannot be graded is refused at import rather than at run time.
	if evaluator != "" {
		if err := kinds.Check(evaluator, where, &t, in.Eval); err != nil {
			return models.Task{}, err
		}
	}
	return t, nil
}

// sitesFromStartURLs derives sites when a task lists none: __SHOPPING__ gives
// shopping, https://www.example.com/x gives www.example.com.
func sitesFromStartURLs(urls []string) models.JSONStrings {
	var sites models.JSONStrings
	for _, u := range urls {
		if s := siteFromStartURL(u); s != "" && !slices.Contains(sites, s) {
			sites = append(sites, s)
		}
	}
	return sites
}

// proctorRubric converts the rubric list; keys default to R1, R2, … by position.
func proctorRubric(where string, in []proctorRubricItem) ([]models.RubricItem, error) {
	if len(in) == 0 {
		return nil, nil
	}
	items := make([]models.RubricItem, len(in))
	weights := make([]*float64, len(in))
	keys := map[string]bool{}
	for i, r := range in {
		key := strings.TrimSpace(r.Key)
		if key == "" {
			key = fmt.Sprintf("R%d", i+1)
		}
		if keys[key] {
			return nil, fieldErr(where, fmt.Sprintf("rubric[%d].key", i), "%q is used twice", key)
		}
		keys[key] = true
		if strings.TrimSpace(r.Requirement) == "" {
			return nil, fieldErr(where, fmt.Sprintf("rubric[%d].requirement", i), "missing or empty")
		}
		items[i] = models.RubricItem{Key: key, Position: i, Requirement: r.Requirement, Verification: r.Verification}
		weights[i] = r.Weight
	}
	if err := applyWeights(where, "rubric", items, weights); err != nil {
		return nil, err
	}
	return items, nil
}

// referenceActions checks a reference action script: a list of objects whose
// "type" belongs to the agent protocol's vocabulary.
func referenceActions(where string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var actions []json.RawMessage
	if err := json.Unmarshal(raw, &actions); err != nil {
		return "", fieldErr(where, "reference_actions", "expected a list of action objects, found %s", jsonKind(raw))
	}
	for i, a := range actions {
		var act map[string]json.RawMessage
		if err := json.Unmarshal(a, &act); err != nil || act == nil {
			return "", fieldErr(where, fmt.Sprintf("reference_actions[%d]", i), "expected an action object, found %s", jsonKind(a))
		}
		var typ string
		if err := json.Unmarshal(act["type"], &typ); err != nil || typ == "" {
			return "", fieldErr(where, fmt.Sprintf("reference_actions[%d].type", i), "missing: expected one of %s", strings.Join(actionTypes(), ", "))
		}
		if err := oneOf(where, fmt.Sprintf("reference_actions[%d].type", i), typ, actionTypes()); err != nil {
			return "", err
		}
	}
	return canonicalJSON(raw)
}

// CheckVerifiedSpec checks a task's WebArena-Verified evaluation spec (a list
// of evaluators) at import and settles the task's type from it; EINVALID
// naming where otherwise.
func CheckVerifiedSpec(where string, t *models.Task, spec json.RawMessage) error {
	taskType, _, err := verifiedEval(where, spec)
	if err != nil {
		return err
	}
	return settleTaskType(where, t, taskType)
}

// CheckWebArenaSpec checks a task's original WebArena evaluation spec
// (eval_types and their references) at import and settles the task's type
// from it; EINVALID naming where otherwise.
func CheckWebArenaSpec(where string, t *models.Task, spec json.RawMessage) error {
	if isNull(spec) {
		return fieldErr(where, "eval", "missing: the evaluator is %s", models.EvaluatorWebArena)
	}
	var ev webArenaEval
	if err := json.Unmarshal(spec, &ev); err != nil {
		return fieldErr(where, "eval", "expected an object with eval_types, found %s", jsonKind(spec))
	}
	taskType, err := webArenaTaskType(where, ev.EvalTypes)
	if err != nil {
		return err
	}
	return settleTaskType(where, t, taskType)
}

// CheckHiddenTestsSpec checks a hidden-tests task's eval (its suite and
// reference captures) at import, keeping the suite as the task's evaluation
// spec and the captures as its reference captures; EINVALID naming where
// otherwise.
func CheckHiddenTestsSpec(where string, t *models.Task, spec json.RawMessage) error {
	return hiddenTestsEval(where, t, spec)
}

// CheckRubric requires a task to have rubric items, for evaluators that grade
// by them; EINVALID naming where otherwise.
func CheckRubric(evaluator string) func(where string, t *models.Task, spec json.RawMessage) error {
	return func(where string, t *models.Task, _ json.RawMessage) error {
		if len(t.RubricItems) == 0 {
			return fieldErr(where, "rubric", "missing or empty: the evaluator is %s", evaluator)
		}
		return nil
	}
}

// settleTaskType fills an absent task type from the evaluation spec and refuses a
// declared one that contradicts it.
func settleTaskType(where string, t *models.Task, fromEval string) error {
	switch t.TaskType {
	case "":
		t.TaskType = fromEval
	case fromEval:
	default:
		return fieldErr(where, "task_type", "%q contradicts the evaluation spec, which says %q", t.TaskType, fromEval)
	}
	return nil
}
