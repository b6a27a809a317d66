package verified

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"proctor/eval"
	"proctor/har"
	"proctor/models"
)

// DatasetTask is one task of a WebArena-Verified dataset file
// (webarena-verified.json), as the offline evaluation needs it.
type DatasetTask struct {
	TaskID           int             `json:"task_id"`
	IntentTemplateID int             `json:"intent_template_id"`
	Sites            []string        `json:"sites"`
	Revision         int             `json:"revision"`
	Eval             json.RawMessage `json:"eval"`
}

// ReadDataset decodes a WebArena-Verified dataset: a JSON list of tasks.
func ReadDataset(r io.Reader) ([]DatasetTask, error) {
	var tasks []DatasetTask
	if err := json.NewDecoder(r).Decode(&tasks); err != nil {
		return nil, fmt.Errorf("read dataset: expected a JSON list of tasks: %w", err)
	}
	seen := map[int]bool{}
	for i, t := range tasks {
		if seen[t.TaskID] {
			return nil, fmt.Errorf("read dataset: task_id %d appears twice (index %d)", t.TaskID, i)
		}
		seen[t.TaskID] = true
	}
	return tasks, nil
}

// Task is the task as the evaluator takes it.
func (t DatasetTask) Task() *models.Task {
	return &models.Task{ExternalID: strconv.Itoa(t.TaskID), Sites: t.Sites, Revision: t.Revision, EvalSpec: string(t.Eval)}
}

// SiteKey groups results by site as WebArena-Verified's summary does: the
// task's sites sorted and joined with "-".
func (t DatasetTask) SiteKey() string {
	s := append([]string(nil), t.Sites...)
	sort.Strings(s)
	return strings.Join(s, "-")
}

// TaskResult is a task's evaluation in the shape of WebArena-Verified's
// eval_result.json, so tools that read the benchmark's results read these.
type TaskResult struct {
	TaskID            int               `json:"task_id"`
	IntentTemplateID  int               `json:"intent_template_id"`
	Sites             []string          `json:"sites"`
	TaskRevision      int               `json:"task_revision"`
	Status            string            `json:"status"` // success | failure | error
	Score             float64           `json:"score"`
	EvaluatorsResults []EvaluatorResult `json:"evaluators_results"`
	ErrorMsg          *string           `json:"error_msg,omitempty"`
	Evaluator         string            `json:"evaluator"` // e.g. "proctor webarena-verified@2"
}

// EvaluatorResult is one evaluator's part of a TaskResult.
type EvaluatorResult struct {
	EvaluatorName    string          `json:"evaluator_name"`
	Status           string          `json:"status"`
	Score            float64         `json:"score"`
	Actual           json.RawMessage `json:"actual"`
	ActualNormalized json.RawMessage `json:"actual_normalized"`
	Expected         json.RawMessage `json:"expected"`
	Assertions       []Assertion     `json:"assertions"` // null when every check passed
	ErrorMsg         *string         `json:"error_msg"`
	ShouldNotExist   *bool           `json:"should_not_exist"`
}

// Assertion is one named check with its messages.
type Assertion struct {
	AssertionName string   `json:"assertion_name"`
	Status        string   `json:"status"` // failure, or success for notes on how the answer was read
	AssertionMsgs []string `json:"assertion_msgs"`
}

// NewTaskResult renders an evaluation's details for a dataset task, graded
// by the evaluator version given (Version or LenientVersion).
func NewTaskResult(t DatasetTask, d *eval.Details, version string) TaskResult {
	out := TaskResult{
		TaskID: t.TaskID, IntentTemplateID: t.IntentTemplateID, Sites: t.Sites, TaskRevision: t.Revision,
		Status: d.Status, Score: d.Score, ErrorMsg: d.ErrorMsg, Evaluator: "proctor " + version,
		EvaluatorsResults: make([]EvaluatorResult, 0, len(d.EvaluatorsResults)),
	}
	if out.Sites == nil {
		out.Sites = []string{}
	}
	for _, r := range d.EvaluatorsResults {
		er := EvaluatorResult{
			EvaluatorName: r.EvaluatorName, Status: r.Status, Score: r.Score,
			Actual: rawOrNull(r.Actual), ActualNormalized: rawOrNull(r.ActualNormalized), Expected: rawOrNull(r.Expected),
			ErrorMsg: r.ErrorMsg, ShouldNotExist: r.ShouldNotExist,
		}
		for _, a := range r.Assertions {
			status := models.OutcomeFailure
			if a.Passed {
				status = models.OutcomeSuccess
			}
			er.Assertions = append(er.Assertions, Assertion{AssertionName: a.Name, Status: status, AssertionMsgs: strings.Split(a.Message, "\n")})
		}
		out.EvaluatorsResults = append(out.EvaluatorsResults, er)
	}
	return out
}

// ErrorTaskResult is a task that could not be evaluated at all.
func ErrorTaskResult(t DatasetTask, msg, version string) TaskResult {
	return NewTaskResult(t, &eval.Details{TaskID: strconv.Itoa(t.TaskID), Status: models.OutcomeError, ErrorMsg: &msg}, version)
}

// ReadSitesConfig reads the site URLs from a WebArena-Verified config file:
// {"environments": {"__GITLAB__": {"urls": [...], "active_url_idx": 0}, …}}.
// The active URL comes first.
func ReadSitesConfig(r io.Reader) (Sites, error) {
	var cfg struct {
		Environments map[string]struct {
			URLs      []string `json:"urls"`
			ActiveIdx *int     `json:"active_url_idx"`
		} `json:"environments"`
	}
	if err := json.NewDecoder(r).Decode(&cfg); err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	out := Sites{}
	for name, env := range cfg.Environments {
		urls := append([]string(nil), env.URLs...)
		if env.ActiveIdx != nil {
			i := *env.ActiveIdx
			if i < 0 || i >= len(urls) {
				return nil, fmt.Errorf("read config: environments.%s.active_url_idx %d is outside its %d urls", name, i, len(urls))
			}
			urls[0], urls[i] = urls[i], urls[0]
		}
		for _, u := range urls {
			if normalizeSiteURL(u) == "" {
				return nil, fmt.Errorf("read config: environments.%s: %q is not an absolute URL", name, u)
			}
		}
		if len(urls) > 0 {
			out[siteName(name)] = urls
		}
	}
	return out, nil
}

// siteName turns "__GITLAB__" into "gitlab".
func siteName(key string) string { return strings.ToLower(strings.Trim(key, "_")) }

// InferSites guesses a task's site URLs from its HAR when no config gives them,
// as WebArena-Verified does: the origin of the first request that is not a
// static asset (for a multi-site task, the n-th distinct such origin for the
// n-th site), with /admin appended for shopping_admin. It is a guess: a
// config file or site flags are better.
func InferSites(network io.Reader, taskSites []string) (Sites, error) {
	events, err := readEvents(network, har.Options{})
	if err != nil {
		return nil, err
	}
	var origins []string
	seen := map[string]bool{}
	for _, e := range events {
		if e.static() {
			continue
		}
		u, err := url.Parse(e.url)
		if err != nil || u.Scheme == "" || u.Host == "" {
			continue
		}
		o := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
		if !seen[o] {
			seen[o] = true
			origins = append(origins, o)
		}
	}
	out := Sites{}
	if len(origins) == 0 {
		return out, nil
	}
	for i, s := range taskSites {
		o := origins[min(i, len(origins)-1)]
		if siteName(s) == "shopping_admin" {
			o += "/admin"
		}
		out[siteName(s)] = []string{o}
	}
	return out, nil
}
