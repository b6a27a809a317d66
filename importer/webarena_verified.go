package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"proctor/models"
)

// webArenaVerifiedTask is one task of webarena-verified.json. Fields Proctor does
// not use are ignored so newer upstream files still import.
type webArenaVerifiedTask struct {
	Sites             []string        `json:"sites"`
	StartURLs         []string        `json:"start_urls"`
	Intent            string          `json:"intent"`
	IntentTemplate    string          `json:"intent_template"`
	IntentTemplateID  json.RawMessage `json:"intent_template_id"`
	InstantiationDict json.RawMessage `json:"instantiation_dict"`
	Revision          int             `json:"revision"`
	Eval              json.RawMessage `json:"eval"`
}

// evaluatorEntry is the part of a WebArena-Verified evaluator Proctor reads; the
// whole entry is kept verbatim in EvalSpec.
type evaluatorEntry struct {
	Evaluator string          `json:"evaluator"`
	Expected  json.RawMessage `json:"expected"`
}

const agentResponseEvaluator = "AgentResponseEvaluator"

// parseWebArenaVerified converts the WebArena-Verified dataset.
func parseWebArenaVerified(raws []json.RawMessage) (*parsed, error) {
	p := &parsed{evaluator: models.EvaluatorWebArenaVerified}
	for i, raw := range raws {
		id, where, err := intTaskID(raw, i)
		if err != nil {
			return nil, err
		}
		var in webArenaVerifiedTask
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, decodeErr(where, err)
		}
		if strings.TrimSpace(in.Intent) == "" {
			return nil, fieldErr(where, "intent", "missing or empty")
		}
		if err := checkSites(where, "sites", in.Sites, validSiteIdentifier, "lower-case letters, digits and '_'"); err != nil {
			return nil, err
		}
		if err := checkStartURLs(where, in.StartURLs); err != nil {
			return nil, err
		}
		taskType, evalSpec, err := verifiedEval(where, in.Eval)
		if err != nil {
			return nil, err
		}
		meta, err := metadataJSON(map[string]json.RawMessage{
			"intent_template_id": in.IntentTemplateID,
			"instantiation_dict": in.InstantiationDict,
		})
		if err != nil {
			return nil, decodeErr(where, err)
		}
		p.tasks = append(p.tasks, models.Task{
			ExternalID:     strconv.FormatInt(id, 10),
			Intent:         in.Intent,
			IntentTemplate: in.IntentTemplate,
			StartURLs:      in.StartURLs,
			Sites:          in.Sites,
			SiteKey:        models.SiteKeyOf(in.Sites),
			TaskType:       taskType,
			Revision:       in.Revision,
			Metadata:       meta,
			EvalSpec:       evalSpec,
		})
		p.where = append(p.where, where)
		p.pos = append(p.pos, fmt.Sprintf("index %d", i))
	}
	return p, nil
}

// verifiedEval checks a WebArena-Verified `eval` list (exactly one
// AgentResponseEvaluator) and returns the task type it declares and the list as
// canonical JSON.
func verifiedEval(where string, raw json.RawMessage) (taskType, spec string, err error) {
	if isNull(raw) {
		return "", "", fieldErr(where, "eval", "missing: expected a list of evaluators")
	}
	var entries []evaluatorEntry
	if err := json.Unmarshal(raw, &entries); err != nil {
		return "", "", fieldErr(where, "eval", "expected a list of evaluator objects, found %s", jsonKind(raw))
	}
	found := 0
	for i, e := range entries {
		if e.Evaluator == "" {
			return "", "", fieldErr(where, fmt.Sprintf("eval[%d].evaluator", i), "missing or empty")
		}
		if e.Evaluator != agentResponseEvaluator {
			continue
		}
		found++
		var exp struct {
			TaskType string `json:"task_type"`
		}
		if err := json.Unmarshal(e.Expected, &exp); err != nil || isNull(e.Expected) {
			return "", "", fieldErr(where, fmt.Sprintf("eval[%d].expected", i), "expected an object with a task_type, found %s", jsonKind(e.Expected))
		}
		taskType = strings.ToLower(exp.TaskType)
		if err := oneOf(where, fmt.Sprintf("eval[%d].expected.task_type", i), taskType,
			[]string{models.TaskRetrieve, models.TaskMutate, models.TaskNavigate}); err != nil {
			return "", "", err
		}
	}
	if found != 1 {
		return "", "", fieldErr(where, "eval", "expected exactly one %s, found %d", agentResponseEvaluator, found)
	}
	spec, err = canonicalJSON(raw)
	if err != nil {
		return "", "", decodeErr(where, err)
	}
	return taskType, spec, nil
}

// intTaskID reads the integer task_id of a WebArena task; where names the task by
// id, or by array index when the id is unusable.
func intTaskID(raw json.RawMessage, index int) (int64, string, error) {
	where := fmt.Sprintf("task at index %d", index)
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return 0, where, invalid(where, "expected a task object, found %s", jsonKind(raw))
	}
	var head struct {
		TaskID json.RawMessage `json:"task_id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return 0, where, decodeErr(where, err)
	}
	if isNull(head.TaskID) {
		return 0, where, fieldErr(where, "task_id", "missing: expected an integer")
	}
	var n json.Number
	if err := json.Unmarshal(head.TaskID, &n); err != nil {
		return 0, where, fieldErr(where, "task_id", "expected an integer, found %s", jsonKind(head.TaskID))
	}
	id, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || id < 0 {
		return 0, where, fieldErr(where, "task_id", "%s is not a non-negative integer", n)
	}
	return id, fmt.Sprintf("task %d", id), nil
}

// checkStartURLs requires at least one non-empty start URL. Placeholders such as
// __GITLAB__ stay as written: each deployment maps them to its site URLs.
func checkStartURLs(where string, urls []string) error {
	if len(urls) == 0 {
		return fieldErr(where, "start_urls", "missing or empty: a task needs a start URL")
	}
	for i, u := range urls {
		if strings.TrimSpace(u) == "" {
			return fieldErr(where, "start_urls", "item %d is empty", i)
		}
	}
	return nil
}

// metadataJSON builds a task's public metadata from the fields present in the
// input (absent ones are left out, null ones kept), as canonical JSON; "" when
// none is present.
func metadataJSON(fields map[string]json.RawMessage) (string, error) {
	m := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		if len(bytes.TrimSpace(v)) > 0 {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return "", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return canonicalJSON(b)
}
