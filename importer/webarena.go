package importer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"proctor/models"
)

// webArenaTask is one task of the original WebArena test.raw.json.
type webArenaTask struct {
	Sites            []string        `json:"sites"`
	StartURL         string          `json:"start_url"`
	Intent           string          `json:"intent"`
	IntentTemplate   string          `json:"intent_template"`
	IntentTemplateID json.RawMessage `json:"intent_template_id"`
	RequireLogin     json.RawMessage `json:"require_login"`
	RequireReset     json.RawMessage `json:"require_reset"`
	StorageState     json.RawMessage `json:"storage_state"`
	Geolocation      json.RawMessage `json:"geolocation"`
	Eval             json.RawMessage `json:"eval"`
}

// webArenaEval is the part of the original `eval` object Proctor reads; the whole
// object is kept in EvalSpec.
type webArenaEval struct {
	EvalTypes        []string        `json:"eval_types"`
	ReferenceAnswers json.RawMessage `json:"reference_answers"`
}

// WebArena's evaluation types.
const (
	evalStringMatch = "string_match"
	evalURLMatch    = "url_match"
	evalProgramHTML = "program_html"
)

// parseWebArena converts the original WebArena test.raw.json.
func parseWebArena(raws []json.RawMessage) (*parsed, error) {
	p := &parsed{evaluator: models.EvaluatorWebArena}
	for i, raw := range raws {
		id, where, err := intTaskID(raw, i)
		if err != nil {
			return nil, err
		}
		var in webArenaTask
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, decodeErr(where, err)
		}
		if strings.TrimSpace(in.Intent) == "" {
			return nil, fieldErr(where, "intent", "missing or empty")
		}
		if err := checkSites(where, "sites", in.Sites, validSiteIdentifier, "lower-case letters, digits and '_'"); err != nil {
			return nil, err
		}
		if strings.TrimSpace(in.StartURL) == "" {
			return nil, fieldErr(where, "start_url", "missing or empty")
		}
		if isNull(in.Eval) {
			return nil, fieldErr(where, "eval", "missing: expected an object with eval_types")
		}
		var ev webArenaEval
		if err := json.Unmarshal(in.Eval, &ev); err != nil {
			return nil, fieldErr(where, "eval", "expected an object with eval_types, found %s", jsonKind(in.Eval))
		}
		taskType, err := webArenaTaskType(where, ev.EvalTypes)
		if err != nil {
			return nil, err
		}
		spec, err := canonicalJSON(in.Eval)
		if err != nil {
			return nil, decodeErr(where, err)
		}
		answers, err := hiddenJSON(ev.ReferenceAnswers)
		if err != nil {
			return nil, decodeErr(where, err)
		}
		meta, err := metadataJSON(map[string]json.RawMessage{
			"intent_template_id": in.IntentTemplateID,
			"require_login":      in.RequireLogin,
			"require_reset":      in.RequireReset,
			"storage_state":      in.StorageState,
			"geolocation":        in.Geolocation,
		})
		if err != nil {
			return nil, decodeErr(where, err)
		}
		p.tasks = append(p.tasks, models.Task{
			ExternalID:       strconv.FormatInt(id, 10),
			Intent:           in.Intent,
			IntentTemplate:   in.IntentTemplate,
			StartURLs:        models.JSONStrings{in.StartURL},
			Sites:            in.Sites,
			SiteKey:          models.SiteKeyOf(in.Sites),
			TaskType:         taskType,
			Metadata:         meta,
			EvalSpec:         spec,
			ReferenceAnswers: answers,
		})
		p.where = append(p.where, where)
		p.pos = append(p.pos, fmt.Sprintf("index %d", i))
	}
	return p, nil
}

// webArenaTaskType maps WebArena's eval_types to a task type. The original data
// has no task type, so it is read from how the task is checked: a string_match
// checks an answer (retrieve); a url_match alone checks where the agent ended up
// (navigate); anything else checks page state with program_html (mutate).
func webArenaTaskType(where string, types []string) (string, error) {
	if len(types) == 0 {
		return "", fieldErr(where, "eval.eval_types", "missing or empty")
	}
	for _, t := range types {
		if err := oneOf(where, "eval.eval_types", t, []string{evalStringMatch, evalURLMatch, evalProgramHTML}); err != nil {
			return "", err
		}
	}
	switch {
	case slices.Contains(types, evalStringMatch):
		return models.TaskRetrieve, nil
	case !slices.Contains(types, evalProgramHTML):
		return models.TaskNavigate, nil
	}
	return models.TaskMutate, nil
}
