package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"proctor/models"
)

// odysseysTask is one task of an Odysseys file.
type odysseysTask struct {
	ConfirmedTask   string                    `json:"confirmed_task"`
	Website         string                    `json:"website"`
	ReferenceLength *int                      `json:"reference_length"`
	Level           string                    `json:"level"`
	Rubrics         map[string]odysseysRubric `json:"rubrics"`
	Categories      []string                  `json:"categories"`
	NumCategories   *int                      `json:"num_categories"`
}

// odysseysRubric is one rubric item; the weight is absent in the unweighted release.
type odysseysRubric struct {
	Requirement  string   `json:"requirement"`
	Verification string   `json:"verification"`
	Weight       *float64 `json:"weight"`
}

// parseOdysseys converts an Odysseys task array; tasks are graded by their rubrics.
func parseOdysseys(raws []json.RawMessage) (*parsed, error) {
	p := &parsed{evaluator: models.EvaluatorRubric}
	for i, raw := range raws {
		id, where, err := stringTaskID(raw, i, "task_id")
		if err != nil {
			return nil, err
		}
		var in odysseysTask
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, decodeErr(where, err)
		}
		if strings.TrimSpace(in.ConfirmedTask) == "" {
			return nil, fieldErr(where, "confirmed_task", "missing or empty")
		}
		host := hostOf(in.Website)
		if host == "" {
			return nil, fieldErr(where, "website", "%q is not an http(s) URL", in.Website)
		}
		if err := oneOf(where, "level", in.Level, difficulties()); err != nil {
			return nil, err
		}
		if err := checkStrings(where, "categories", in.Categories); err != nil {
			return nil, err
		}
		items, err := odysseysRubrics(where, in.Rubrics)
		if err != nil {
			return nil, err
		}
		fields := map[string]json.RawMessage{}
		if in.ReferenceLength != nil {
			fields["reference_length"] = json.RawMessage(strconv.Itoa(*in.ReferenceLength))
		}
		if in.NumCategories != nil {
			fields["num_categories"] = json.RawMessage(strconv.Itoa(*in.NumCategories))
		}
		meta, err := metadataJSON(fields)
		if err != nil {
			return nil, decodeErr(where, err)
		}
		sites := models.JSONStrings{host}
		p.tasks = append(p.tasks, models.Task{
			ExternalID:  id,
			Intent:      in.ConfirmedTask,
			StartURLs:   models.JSONStrings{in.Website},
			Sites:       sites,
			SiteKey:     models.SiteKeyOf(sites),
			Difficulty:  in.Level,
			Attributes:  in.Categories,
			Metadata:    meta,
			RubricItems: items,
		})
		p.where = append(p.where, where)
		p.pos = append(p.pos, fmt.Sprintf("index %d", i))
	}
	return p, nil
}

// odysseysRubrics orders the R1..Rn map by its numeric suffix and applies the
// weight rule.
func odysseysRubrics(where string, rubrics map[string]odysseysRubric) ([]models.RubricItem, error) {
	if len(rubrics) == 0 {
		return nil, fieldErr(where, "rubrics", "missing or empty: a rubric-graded task needs at least one item")
	}
	type numbered struct {
		n   int
		key string
	}
	keys := make([]numbered, 0, len(rubrics))
	for k := range rubrics {
		n, err := strconv.Atoi(strings.TrimPrefix(k, "R"))
		if !strings.HasPrefix(k, "R") || err != nil || n < 1 || "R"+strconv.Itoa(n) != k {
			return nil, fieldErr(where, "rubrics", "key %q is not of the form R1, R2, …", k)
		}
		keys = append(keys, numbered{n, k})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].n < keys[j].n })
	items := make([]models.RubricItem, len(keys))
	weights := make([]*float64, len(keys))
	for i, k := range keys {
		r := rubrics[k.key]
		if strings.TrimSpace(r.Requirement) == "" {
			return nil, fieldErr(where, fmt.Sprintf("rubrics.%s.requirement", k.key), "missing or empty")
		}
		items[i] = models.RubricItem{Key: k.key, Position: i, Requirement: r.Requirement, Verification: r.Verification}
		weights[i] = r.Weight
	}
	if err := applyWeights(where, "rubrics", items, weights); err != nil {
		return nil, err
	}
	return items, nil
}

// stringTaskID reads a task id written as a JSON string; where names the task by
// id, or by array index when the id is unusable.
func stringTaskID(raw json.RawMessage, index int, field string) (string, string, error) {
	where := fmt.Sprintf("task at index %d", index)
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return "", where, invalid(where, "expected a task object, found %s", jsonKind(raw))
	}
	var head map[string]json.RawMessage
	if err := json.Unmarshal(raw, &head); err != nil {
		return "", where, decodeErr(where, err)
	}
	v, ok := head[field]
	if !ok || isNull(v) {
		return "", where, fieldErr(where, field, "missing: expected a string")
	}
	var id string
	if err := json.Unmarshal(v, &id); err != nil {
		return "", where, fieldErr(where, field, "expected a string, found %s", jsonKind(v))
	}
	if strings.TrimSpace(id) == "" {
		return "", where, fieldErr(where, field, "empty")
	}
	return id, "task " + quoteID(id), nil
}

// hostOf returns the lower-case host name of an http(s) URL, or "".
func hostOf(u string) string {
	parsed, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") {
		return ""
	}
	return strings.ToLower(parsed.Hostname())
}
