package verified

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"proctor/models"
)

// Evaluator names inside a WebArena-Verified evaluation spec.
const (
	AgentResponseEvaluator = "AgentResponseEvaluator"
	NetworkEventEvaluator  = "NetworkEventEvaluator"
)

// Statuses an agent response may report (case-insensitive).
func agentStatuses() []string {
	return []string{"SUCCESS", "ACTION_NOT_ALLOWED_ERROR", "PERMISSION_DENIED_ERROR", "NOT_FOUND_ERROR",
		"DATA_VALIDATION_ERROR", "UNKNOWN_ERROR"}
}

// evaluatorSpec is one entry of a task's `eval` list: decoded and checked, or
// the reason it cannot be used.
type evaluatorSpec struct {
	name     string
	raw      json.RawMessage
	expected json.RawMessage
	agent    *agentSpec
	network  *networkSpec
	err      error
}

// agentSpec is an AgentResponseEvaluator.
type agentSpec struct {
	ordered       bool
	schema        *schema
	taskType      string // lower case
	status        string
	retrieved     any
	hasRetrieved  bool
	retrievedJSON json.RawMessage
}

// networkSpec is a NetworkEventEvaluator with WebArena-Verified's defaults:
// http_method GET, response_status 200, last_event_only true.
type networkSpec struct {
	urls            []string
	headers         map[string]any
	queryParams     map[string][]string // nil when the spec gives none
	postData        map[string]any
	responseContent map[string]any
	responseCookies map[string]any
	responseStatus  int
	httpMethod      string

	lastEventOnly       bool
	ignoredQuery        []string
	ignoredQueryPattern []string
	ignoredPostPattern  []string
	decodeBase64        bool
	querySchema         *schema
	postSchema          *schema
	shouldNotExist      bool
}

// specOptions lists the evaluator-level keys each evaluator accepts.
func specOptions(name string) []string {
	switch name {
	case AgentResponseEvaluator:
		return []string{"evaluator", "expected", "ordered", "results_schema"}
	case NetworkEventEvaluator:
		return []string{"evaluator", "expected", "last_event_only", "ignored_query_params", "ignored_query_params_patterns",
			"decode_base64_query", "query_params_schema", "post_data_schema", "ignored_post_data_params_patterns", "should_not_exist"}
	}
	return nil
}

// SpecOptions lists, per evaluator, the spec keys and expected fields the
// evaluator implements; anything else in a spec is an error verdict.
func SpecOptions() map[string][]string {
	return map[string][]string{
		AgentResponseEvaluator:               specOptions(AgentResponseEvaluator),
		NetworkEventEvaluator:                specOptions(NetworkEventEvaluator),
		AgentResponseEvaluator + ".expected": {"task_type", "performed_operation", "status", "retrieved_data", "error_details"},
		NetworkEventEvaluator + ".expected": {"url", "headers", "query_params", "post_data", "response_content",
			"response_status", "http_method", "response_cookies"},
	}
}

// parseSpec reads a task's evaluation spec: a list with exactly one
// AgentResponseEvaluator. An evaluator that cannot be used keeps its reason, so
// that it reports an error while the others still run.
func parseSpec(spec string, re *regexCache) ([]evaluatorSpec, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, errors.New("the task has no evaluation spec")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(spec), &raws); err != nil {
		return nil, fmt.Errorf("the evaluation spec is not a list of evaluators: %v", err)
	}
	out := make([]evaluatorSpec, len(raws))
	agents := 0
	for i, raw := range raws {
		var head struct {
			Evaluator string          `json:"evaluator"`
			Expected  json.RawMessage `json:"expected"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("eval[%d] is not an evaluator object: %v", i, err)
		}
		s := evaluatorSpec{name: head.Evaluator, raw: raw, expected: head.Expected}
		where := fmt.Sprintf("eval[%d] (%s)", i, head.Evaluator)
		switch head.Evaluator {
		case AgentResponseEvaluator:
			agents++
			s.agent, s.err = parseAgentSpec(raw, where)
		case NetworkEventEvaluator:
			s.network, s.err = parseNetworkSpec(raw, where, re)
		case "":
			return nil, fmt.Errorf("eval[%d]: evaluator is missing", i)
		default:
			s.err = fmt.Errorf("%s: evaluator %q is not supported (supported: %s, %s)", where, head.Evaluator, AgentResponseEvaluator, NetworkEventEvaluator)
		}
		out[i] = s
	}
	if agents != 1 {
		return nil, fmt.Errorf("the evaluation spec needs exactly one %s, found %d", AgentResponseEvaluator, agents)
	}
	return out, nil
}

// strictKeys decodes an object and refuses keys outside allowed.
func strictKeys(raw json.RawMessage, where string, allowed []string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s: expected a JSON object", where)
	}
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("%s: %q is not a supported option (supported: %s)", where, k, strings.Join(allowed, ", "))
		}
	}
	return obj, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func parseAgentSpec(raw json.RawMessage, where string) (*agentSpec, error) {
	obj, err := strictKeys(raw, where, specOptions(AgentResponseEvaluator))
	if err != nil {
		return nil, err
	}
	a := &agentSpec{}
	if v, ok := obj["ordered"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &a.ordered); err != nil {
			return nil, fmt.Errorf("%s.ordered: expected true or false", where)
		}
	}
	rs, ok := obj["results_schema"]
	if !ok || isNull(rs) {
		return nil, fmt.Errorf("%s: results_schema is missing", where)
	}
	if a.schema, err = parseSchema(rs, where+".results_schema"); err != nil {
		return nil, err
	}
	exp, err := strictKeys(obj["expected"], where+".expected", SpecOptions()[AgentResponseEvaluator+".expected"])
	if err != nil {
		return nil, err
	}
	tt := exp["task_type"]
	if isNull(tt) {
		tt = exp["performed_operation"]
	}
	if err := json.Unmarshal(tt, &a.taskType); err != nil || !slices.Contains([]string{models.TaskRetrieve, models.TaskMutate, models.TaskNavigate}, strings.ToLower(a.taskType)) {
		return nil, fmt.Errorf("%s.expected.task_type: expected retrieve, mutate or navigate, got %s", where, orMissing(tt))
	}
	a.taskType = strings.ToLower(a.taskType)
	if err := json.Unmarshal(exp["status"], &a.status); err != nil || !slices.Contains(agentStatuses(), strings.ToUpper(a.status)) {
		return nil, fmt.Errorf("%s.expected.status: expected one of %s, got %s", where, strings.Join(agentStatuses(), ", "), orMissing(exp["status"]))
	}
	if rd, ok := exp["retrieved_data"]; ok {
		a.hasRetrieved = true
		a.retrievedJSON = rd
		if a.retrieved, err = decodeJSON(rd); err != nil {
			return nil, fmt.Errorf("%s.expected.retrieved_data: %v", where, err)
		}
	}
	return a, nil
}

func orMissing(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "nothing"
	}
	return string(raw)
}

func parseNetworkSpec(raw json.RawMessage, where string, re *regexCache) (*networkSpec, error) {
	obj, err := strictKeys(raw, where, specOptions(NetworkEventEvaluator))
	if err != nil {
		return nil, err
	}
	n := &networkSpec{lastEventOnly: true, responseStatus: 200, httpMethod: "GET"}
	flag := func(key string, dst *bool) error {
		if v, ok := obj[key]; ok && !isNull(v) {
			if err := json.Unmarshal(v, dst); err != nil {
				return fmt.Errorf("%s.%s: expected true or false", where, key)
			}
		}
		return nil
	}
	strs := func(key string, dst *[]string) error {
		if v, ok := obj[key]; ok && !isNull(v) {
			if err := json.Unmarshal(v, dst); err != nil {
				return fmt.Errorf("%s.%s: expected a list of strings", where, key)
			}
		}
		return nil
	}
	for _, step := range []error{
		flag("last_event_only", &n.lastEventOnly), flag("decode_base64_query", &n.decodeBase64), flag("should_not_exist", &n.shouldNotExist),
		strs("ignored_query_params", &n.ignoredQuery), strs("ignored_query_params_patterns", &n.ignoredQueryPattern),
		strs("ignored_post_data_params_patterns", &n.ignoredPostPattern),
	} {
		if step != nil {
			return nil, step
		}
	}
	for _, p := range append(slices.Clone(n.ignoredQueryPattern), n.ignoredPostPattern...) {
		if _, err := re.compile(p, true, false); err != nil {
			return nil, fmt.Errorf("%s: ignored parameter pattern: %w", where, err)
		}
	}
	if v, ok := obj["query_params_schema"]; ok && !isNull(v) {
		if n.querySchema, err = parseSchema(v, where+".query_params_schema"); err != nil {
			return nil, err
		}
	}
	if v, ok := obj["post_data_schema"]; ok && !isNull(v) {
		if n.postSchema, err = parseSchema(v, where+".post_data_schema"); err != nil {
			return nil, err
		}
	}

	exp, err := strictKeys(obj["expected"], where+".expected", SpecOptions()[NetworkEventEvaluator+".expected"])
	if err != nil {
		return nil, err
	}
	var one string
	if err := json.Unmarshal(exp["url"], &one); err == nil && strings.TrimSpace(one) != "" {
		n.urls = []string{one}
	} else if err := json.Unmarshal(exp["url"], &n.urls); err != nil || len(n.urls) == 0 || slices.Contains(n.urls, "") {
		return nil, fmt.Errorf("%s.expected.url: expected a URL or a list of URLs, got %s", where, orMissing(exp["url"]))
	}
	if v, ok := exp["http_method"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &n.httpMethod); err != nil || n.httpMethod == "" {
			return nil, fmt.Errorf("%s.expected.http_method: expected a method such as POST", where)
		}
		n.httpMethod = strings.ToUpper(n.httpMethod)
	}
	if v, ok := exp["response_status"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &n.responseStatus); err != nil {
			return nil, fmt.Errorf("%s.expected.response_status: expected an HTTP status code", where)
		}
	}
	if v, ok := exp["query_params"]; ok && !isNull(v) {
		var q map[string]json.RawMessage
		if err := json.Unmarshal(v, &q); err != nil {
			return nil, fmt.Errorf("%s.expected.query_params: expected an object of value lists", where)
		}
		n.queryParams = map[string][]string{}
		for k, raw := range q {
			var vals []string
			if err := json.Unmarshal(raw, &vals); err != nil {
				var single string
				if err := json.Unmarshal(raw, &single); err != nil {
					return nil, fmt.Errorf("%s.expected.query_params.%s: expected a list of strings", where, k)
				}
				vals = []string{single}
			}
			n.queryParams[k] = vals
		}
	}
	objects := []struct {
		key string
		dst *map[string]any
	}{{"headers", &n.headers}, {"post_data", &n.postData}, {"response_content", &n.responseContent}, {"response_cookies", &n.responseCookies}}
	for _, o := range objects {
		v, ok := exp[o.key]
		if !ok || isNull(v) {
			continue
		}
		dec, err := decodeJSON(v)
		m, isObj := dec.(map[string]any)
		if err != nil || !isObj {
			return nil, fmt.Errorf("%s.expected.%s: expected an object", where, o.key)
		}
		*o.dst = m
	}
	for _, o := range []map[string]any{n.postData, n.responseContent} {
		for k := range o {
			if isPathKey(k) {
				if _, err := compileJSONPath(k, re); err != nil {
					return nil, fmt.Errorf("%s.expected: %w", where, err)
				}
			}
		}
	}
	return n, nil
}
