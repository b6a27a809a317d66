package verified

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// Kinds of upstream defect a task's evaluation spec can have.
const (
	// DefectNoExpectedData: a retrieve task whose expected answer has no
	// retrieved_data key; the official evaluator fails every answer.
	DefectNoExpectedData = "no-expected-retrieved-data"
	// DefectUngradable: an expected value the official evaluator cannot
	// normalise, so it raises on every output; Proctor grades them errors.
	DefectUngradable = "ungradable-expected-value"
	// DefectConflictingChecks: two network checks compare the same single
	// request (or, on a navigate task, the same last page) with different
	// expectations, so no output passes both.
	DefectConflictingChecks = "conflicting-checks"
)

// lenientDefects lists the upstream defects of a task under the lenient
// reading: those it shares with the official one (it grades a retrieve task
// without expected data by its status, and types untyped numbers itself).
func lenientDefects(task *models.Task) []models.TaskDefect {
	var out []models.TaskDefect
	for _, d := range SpecDefects(task) {
		if d.Kind == DefectConflictingChecks {
			out = append(out, d)
		}
	}
	return out
}

// SpecDefects lists the upstream defects of a task's WebArena-Verified
// evaluation spec (placeholders resolved or not): flaws in the benchmark's
// published data, not in Proctor, that make every output fail or raise under
// the official evaluator. Proctor grades such tasks as the official evaluator
// does. A spec that does not parse at all has one ungradable defect saying
// why.
func SpecDefects(task *models.Task) []models.TaskDefect {
	if task == nil {
		return nil
	}
	specs, err := parseSpec(task.EvalSpec, newRegexCache())
	if err != nil {
		return []models.TaskDefect{{Kind: DefectUngradable, Message: "the evaluation spec cannot be read: " + err.Error()}}
	}
	var out []models.TaskDefect
	taskType := ""
	for _, s := range specs {
		if s.agent != nil {
			taskType = s.agent.taskType
			if s.agent.taskType == models.TaskRetrieve && !s.agent.hasRetrieved {
				out = append(out, models.TaskDefect{Kind: DefectNoExpectedData, Message: "The expected answer of this retrieve task has no retrieved_data: the official evaluator fails every answer, including the expected one."})
			}
		}
	}
	out = append(out, ungradableChecks(task)...)
	out = append(out, conflictingChecks(specs, taskType)...)
	return out
}

// ungradableChecks grades an empty answer with an empty network log against
// the spec, with every placeholder given a stand-in URL: an evaluator that
// still reports an error cannot normalise its own expected value.
func ungradableChecks(task *models.Task) []models.TaskDefect {
	sites := Sites{}
	for _, ph := range placeholdersIn(task.EvalSpec) {
		sites[ph] = []string{"http://" + strings.ToLower(strings.Trim(ph, "_")) + ".invalid"}
	}
	for _, s := range task.Sites {
		if _, ok := sites[Placeholder(s)]; !ok {
			sites[Placeholder(s)] = []string{"http://" + strings.ToLower(s) + ".invalid"}
		}
	}
	t := *task
	t.Sites = nil
	res, err := New().WithSites(sites).Evaluate(context.Background(), eval.Input{
		Task:  &t,
		Final: &models.Action{Type: models.ActAnswer, Text: "{}"},
		HAR:   strings.NewReader(`{"log":{"entries":[]}}`),
	})
	if err != nil {
		return []models.TaskDefect{{Kind: DefectUngradable, Message: "the evaluation spec cannot be graded: " + err.Error()}}
	}
	det, err := eval.ParseDetails(res.Details)
	if err != nil {
		return nil
	}
	var out []models.TaskDefect
	if det.ErrorMsg != nil {
		out = append(out, models.TaskDefect{Kind: DefectUngradable, Message: "The evaluation spec cannot be graded: " + *det.ErrorMsg})
	}
	for i, r := range det.EvaluatorsResults {
		if r.Status == models.OutcomeError && r.ErrorMsg != nil {
			out = append(out, models.TaskDefect{Kind: DefectUngradable, Message: fmt.Sprintf(
				"eval[%d] (%s): %s. It raises on every output of this task, and Proctor grades them errors.", i, r.EvaluatorName, *r.ErrorMsg)})
		}
	}
	return out
}

// placeholdersIn lists the __NAME__ placeholders a spec mentions.
func placeholdersIn(spec string) []string {
	var out []string
	seen := map[string]bool{}
	for rest := spec; ; {
		i := strings.Index(rest, "__")
		if i < 0 {
			return out
		}
		rest = rest[i:]
		end := strings.Index(rest[2:], "__")
		if end < 0 {
			return out
		}
		name := rest[:end+4]
		inner := name[2 : len(name)-2]
		if inner != "" && strings.Trim(inner, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") == "" {
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
			rest = rest[len(name):]
			continue
		}
		rest = rest[2:]
	}
}

// conflictingChecks finds network checks that each compare only one request,
// the same one, with different expectations. On a navigate task every GET
// check compares the last page loaded, so two of them with different URLs
// conflict; otherwise two checks of the same method and URL do.
func conflictingChecks(specs []evaluatorSpec, taskType string) []models.TaskDefect {
	type check struct {
		index    int
		expected string
	}
	groups := map[string][]check{}
	var order []string
	for i, s := range specs {
		n := s.network
		if n == nil || !n.lastEventOnly || n.shouldNotExist {
			continue
		}
		key := n.httpMethod + " " + strings.Join(n.urls, " | ")
		if taskType == models.TaskNavigate && n.httpMethod == "GET" {
			key = "the last page loaded"
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], check{i, canonicalExpected(s.expected)})
	}
	var out []models.TaskDefect
	for _, key := range order {
		g := groups[key]
		distinct := map[string]bool{}
		var idx []string
		for _, c := range g {
			distinct[c.expected] = true
			idx = append(idx, fmt.Sprintf("eval[%d]", c.index))
		}
		if len(distinct) < 2 {
			continue
		}
		what := "the last " + key + " request"
		if key == "the last page loaded" {
			what = key + " (whichever tab loaded it)"
		}
		out = append(out, models.TaskDefect{Kind: DefectConflictingChecks, Message: fmt.Sprintf(
			"%s each compare only %s with different expectations: no output passes them all.", strings.Join(idx, ", "), what)})
	}
	return out
}

// canonicalExpected is an expected object's JSON with sorted keys.
func canonicalExpected(raw json.RawMessage) string {
	v, err := decodeJSON(raw)
	if err != nil {
		return string(raw)
	}
	return compactJSON(v)
}
