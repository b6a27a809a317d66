package webarena_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/webarena"
	"proctor/models"
)

// judge is a fake FuzzyMatcher: it says yes when the answer contains the
// reference (case-insensitively), unless verdict or err say otherwise.
type judge struct {
	mu      sync.Mutex
	calls   [][3]string // intent, reference, answer
	verdict func(reference, answer string) bool
	err     error
}

func (j *judge) FuzzyMatch(ctx context.Context, intent, reference, answer string) (bool, models.Usage, error) {
	j.mu.Lock()
	j.calls = append(j.calls, [3]string{intent, reference, answer})
	j.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return false, models.Usage{}, err
	}
	usage := models.Usage{InputTokens: 100, OutputTokens: 5, Cost: 0.001}
	if j.err != nil {
		return false, usage, j.err
	}
	if j.verdict != nil {
		return j.verdict(reference, answer), usage, nil
	}
	return strings.Contains(strings.ToLower(answer), strings.ToLower(reference)), usage, nil
}

func (j *judge) callCount() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.calls)
}

const intent = "What is the top-1 best selling product in 2022?"

func task(spec string) *models.Task {
	return &models.Task{ExternalID: "7", Intent: intent, EvalSpec: spec, StartURLs: models.JSONStrings{"http://shop.test:7770"}}
}

func answer(text string) *models.Action { return &models.Action{Type: models.ActAnswer, Text: text} }

// evaluate grades in with fuzzy (nil: no judge) and checks the result's frame.
func evaluate(t *testing.T, fuzzy eval.FuzzyMatcher, in eval.Input) (*eval.Result, *eval.Details) {
	t.Helper()
	var ev *webarena.Evaluator
	if fuzzy != nil {
		ev = webarena.New(fuzzy)
	} else {
		ev = webarena.New(nil)
	}
	require.Equal(t, models.EvaluatorWebArena, ev.ID())
	res, err := ev.Evaluate(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, "webarena", res.Evaluator)
	require.Equal(t, "webarena@1", res.Version)
	d, err := eval.ParseDetails(res.Details)
	require.NoError(t, err)
	require.Equal(t, res.Verdict, d.Status)
	require.Equal(t, res.Score, d.Score)
	require.Equal(t, in.Task.ExternalID, d.TaskID)
	return res, d
}

// assertions lists the names of the failed (passed=false) or passed assertions.
func assertions(d *eval.Details, passed bool) []string {
	var names []string
	for _, r := range d.EvaluatorsResults {
		for _, a := range r.Assertions {
			if a.Passed == passed {
				names = append(names, a.Name)
			}
		}
	}
	return names
}

func errorMsg(d *eval.Details) string {
	if d.ErrorMsg != nil {
		return *d.ErrorMsg
	}
	var msgs []string
	for _, r := range d.EvaluatorsResults {
		if r.ErrorMsg != nil {
			msgs = append(msgs, *r.ErrorMsg)
		}
	}
	return strings.Join(msgs, "; ")
}

func TestEvaluate_StringMatch(t *testing.T) {
	t.Parallel()
	const (
		exact      = `{"eval_types":["string_match"],"reference_answers":{"exact_match":"Quest Lumaflex™ Band"},"reference_url":"","program_html":[]}`
		include    = `{"eval_types":["string_match"],"reference_answers":{"must_include":["Hyatt Regency","Pittsburgh"]},"reference_url":"","program_html":[]}`
		includeOne = `{"eval_types":["string_match"],"reference_answers":{"must_include":["0"]},"reference_url":"","program_html":[]}`
		fuzzy      = `{"eval_types":["string_match"],"reference_answers":{"fuzzy_match":["Time: 3h 30min"]},"reference_url":"","program_html":[]}`
		mixed      = `{"eval_types":["string_match"],"reference_answers":{"must_include":["Acadia National Park"],"fuzzy_match":["1h 23min"]},"reference_url":"","program_html":[]}`
		notAchiev  = `{"eval_types":["string_match"],"reference_answers":{"fuzzy_match":"N/A"},"reference_url":"","program_html":[],"string_note":"There is no review about under water photo"}`
	)
	for _, tc := range []struct {
		name    string
		spec    string
		final   *models.Action
		judge   *judge // nil: no judge configured
		verdict string
		failed  []string
		calls   int
		msg     string // part of the error message or of a failed assertion's message
	}{
		{name: "ExactMatch", spec: exact, final: answer(`  "quest lumaflex™ band" `), verdict: models.OutcomeSuccess},
		{name: "ExactMatchNearMiss", spec: exact, final: answer("Quest Lumaflex Band"), verdict: models.OutcomeFailure, failed: []string{"exact_match"}},
		{name: "ExactMatchExtraWords", spec: exact, final: answer("The answer is Quest Lumaflex™ Band"), verdict: models.OutcomeFailure, failed: []string{"exact_match"}},
		{name: "MustIncludeAll", spec: include, final: answer("hyatt regency pittsburgh international airport"), verdict: models.OutcomeSuccess},
		{name: "MustIncludeOneMissing", spec: include, final: answer("Hyatt Regency"), verdict: models.OutcomeFailure, failed: []string{"must_include[1]"}},
		{name: "MustIncludeSingleCharWord", spec: includeOne, final: answer("There are 0 orders."), verdict: models.OutcomeSuccess},
		{name: "MustIncludeSingleCharInsideNumber", spec: includeOne, final: answer("There are 10 orders"), verdict: models.OutcomeFailure, failed: []string{"must_include[0]"}},
		{name: "FuzzyMatchJudgeAgrees", spec: fuzzy, final: answer("It takes time: 3h 30min by car"), judge: &judge{}, verdict: models.OutcomeSuccess, calls: 1},
		{name: "FuzzyMatchJudgeDisagrees", spec: fuzzy, final: answer("about two hours"), judge: &judge{}, verdict: models.OutcomeFailure, failed: []string{"fuzzy_match[0]"}, calls: 1},
		{name: "FuzzyMatchWithoutJudge", spec: fuzzy, final: answer("3h 30min"), verdict: models.OutcomeError, msg: "fuzzy_match needs an LLM judge; none is configured"},
		{name: "FuzzyMatchJudgeFails", spec: fuzzy, final: answer("3h 30min"), judge: &judge{err: errors.New("HTTP 503")}, verdict: models.OutcomeError, msg: "fuzzy_match judge failed: HTTP 503", calls: 1},
		{name: "FuzzyMatchEmptyAnswerNeedsNoJudge", spec: fuzzy, final: &models.Action{Type: models.ActStop, Reason: "lost"}, verdict: models.OutcomeFailure, failed: []string{"fuzzy_match[0]"}},
		{name: "MustIncludeAndFuzzy", spec: mixed, final: answer("Acadia National Park, 1h 23min away"), judge: &judge{}, verdict: models.OutcomeSuccess, calls: 1},
		{name: "MustIncludeFailsFuzzyPasses", spec: mixed, final: answer("Yellowstone, 1h 23min away"), judge: &judge{}, verdict: models.OutcomeFailure, failed: []string{"must_include[0]"}, calls: 1},
		{name: "NotAchievableAnswered", spec: notAchiev, final: answer("N/A"), verdict: models.OutcomeSuccess},
		{name: "NotAchievableReasonJudged", spec: notAchiev, final: answer("I could not find it: there is no review about under water photo"), judge: &judge{verdict: func(ref, ans string) bool {
			return strings.Contains(ref, "There is no review about under water photo") && strings.Contains(ans, "no review")
		}}, verdict: models.OutcomeSuccess, calls: 1},
		{name: "NotAchievableWrongReason", spec: notAchiev, final: answer("The answer is 42"), judge: &judge{verdict: func(string, string) bool { return false }}, verdict: models.OutcomeFailure, failed: []string{"fuzzy_match"}, calls: 1},
		{name: "NotAchievableWithoutJudge", spec: notAchiev, final: answer("there are no such reviews"), verdict: models.OutcomeError, msg: "none is configured"},
		{name: "NotAchievableEmptyAnswer", spec: notAchiev, final: nil, judge: &judge{}, verdict: models.OutcomeFailure, failed: []string{"fuzzy_match"}},
		{name: "StopIsNoAnswer", spec: exact, final: &models.Action{Type: models.ActStop, Reason: "Quest Lumaflex™ Band"}, verdict: models.OutcomeFailure, failed: []string{"exact_match"}},
		{name: "StructuredResponse", spec: include, final: &models.Action{Type: models.ActAnswer, Response: []byte(`{"retrieved_data":["Hyatt Regency Pittsburgh"]}`)}, verdict: models.OutcomeSuccess},
		{name: "NoReferenceAnswers", spec: `{"eval_types":["string_match"],"reference_answers":null}`, final: answer("x"), verdict: models.OutcomeError, msg: "string_match needs reference_answers"},
		{name: "UnknownReferenceKind", spec: `{"eval_types":["string_match"],"reference_answers":{"ua_match":"x"}}`, final: answer("x"), verdict: models.OutcomeError, msg: "reference_answers.ua_match is not supported"},
		{name: "FuzzyStringOtherThanNA", spec: `{"eval_types":["string_match"],"reference_answers":{"fuzzy_match":"yes"}}`, final: answer("yes"), verdict: models.OutcomeError, msg: "fuzzy_match must be a list"},
		{name: "NotAchievableWithoutNote", spec: `{"eval_types":["string_match"],"reference_answers":{"fuzzy_match":"N/A"}}`, final: answer("nothing there"), judge: &judge{}, verdict: models.OutcomeError, msg: "string_note"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var fm eval.FuzzyMatcher
			if tc.judge != nil {
				fm = tc.judge
			}
			res, d := evaluate(t, fm, eval.Input{Task: task(tc.spec), Final: tc.final})
			require.Equal(t, tc.verdict, res.Verdict, "details: %s", res.Details)
			require.Len(t, d.EvaluatorsResults, 1)
			require.Equal(t, "StringEvaluator", d.EvaluatorsResults[0].EvaluatorName)
			if tc.verdict == models.OutcomeSuccess {
				require.Equal(t, 1.0, res.Score)
			} else {
				require.Zero(t, res.Score)
			}
			if tc.verdict != models.OutcomeError {
				require.Equal(t, tc.failed, assertions(d, false))
				for _, a := range d.EvaluatorsResults[0].Assertions {
					require.NotEmpty(t, a.Name)
					require.NotEmpty(t, a.Message, a.Name)
				}
			}
			if tc.msg != "" {
				text := errorMsg(d)
				for _, r := range d.EvaluatorsResults {
					for _, a := range r.Assertions {
						text += " " + a.Message
					}
				}
				require.Contains(t, text, tc.msg)
			}
			if tc.judge != nil {
				require.Equal(t, tc.calls, tc.judge.callCount())
				require.Equal(t, int64(100*tc.calls), res.Usage.InputTokens)
				for _, c := range tc.judge.calls {
					require.Equal(t, intent, c[0])
					require.Equal(t, strings.ToLower(c[2]), c[2], "the judge sees the cleaned answer, as in WebArena")
				}
			}
		})
	}
}

func TestEvaluate_Canceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	spec := `{"eval_types":["string_match"],"reference_answers":{"fuzzy_match":["a","b"]}}`
	_, err := webarena.New(cancelingJudge{&judge{}, cancel}).Evaluate(ctx, eval.Input{Task: task(spec), Final: answer("a b")})
	require.ErrorIs(t, err, context.Canceled, "a judge call cut by the cancellation is not a verdict")

	_, err = webarena.New(nil).Evaluate(ctx, eval.Input{Task: task(spec)})
	require.ErrorIs(t, err, context.Canceled)
	_, err = webarena.New(nil).Evaluate(context.Background(), eval.Input{})
	require.Error(t, err, "a nil task is a Go error")
}

// cancelingJudge cancels the evaluation while the judge is asked.
type cancelingJudge struct {
	*judge
	cancel context.CancelFunc
}

func (c cancelingJudge) FuzzyMatch(ctx context.Context, intent, reference, answer string) (bool, models.Usage, error) {
	c.cancel()
	return c.judge.FuzzyMatch(ctx, intent, reference, answer)
}

func TestEvaluate_URLMatch(t *testing.T) {
	t.Parallel()
	const (
		plain  = `{"eval_types":["url_match"],"reference_answers":null,"reference_url":"http://gitlab.test:8023/dashboard/todos","program_html":[],"url_note":"GOLD in PRED"}`
		alts   = `{"eval_types":["url_match"],"reference_answers":null,"reference_url":"http://reddit.test/f/deeplearning |OR| http://reddit.test/f/MachineLearning","program_html":[]}`
		query  = `{"eval_types":["url_match"],"reference_answers":null,"reference_url":"http://shop.test/catalogsearch/result/?q=lamp&product_list_order=price","program_html":[]}`
		altsQ  = `{"eval_types":["url_match"],"reference_answers":null,"reference_url":"http://shop.test/s?color=red |OR| http://shop.test/s?color=blue","program_html":[]}`
		badRef = `{"eval_types":["url_match"],"reference_answers":null,"reference_url":null,"program_html":[]}`
		badNot = `{"eval_types":["url_match"],"reference_url":"http://a.test/","url_note":"EXACT"}`
	)
	for _, tc := range []struct {
		name     string
		spec     string
		finalURL string
		noState  bool
		verdict  string
		failed   []string
		msg      string
	}{
		{name: "Same", spec: plain, finalURL: "http://gitlab.test:8023/dashboard/todos", verdict: models.OutcomeSuccess},
		{name: "TrailingSlashAndScheme", spec: plain, finalURL: "https://gitlab.test:8023/dashboard/todos/", verdict: models.OutcomeSuccess},
		{name: "GoldInLongerPred", spec: plain, finalURL: "http://gitlab.test:8023/dashboard/todos?state=done", verdict: models.OutcomeSuccess},
		{name: "OtherPath", spec: plain, finalURL: "http://gitlab.test:8023/dashboard/issues", verdict: models.OutcomeFailure, failed: []string{"url_match.base_path"}},
		{name: "PrefixOnly", spec: plain, finalURL: "http://gitlab.test:8023/dashboard", verdict: models.OutcomeFailure, failed: []string{"url_match.base_path"}},
		{name: "OtherHost", spec: plain, finalURL: "http://gitlab.test:9999/dashboard/todos", verdict: models.OutcomeFailure, failed: []string{"url_match.base_path"}},
		{name: "SecondAlternative", spec: alts, finalURL: "http://reddit.test/f/MachineLearning/123/my-post", verdict: models.OutcomeSuccess},
		{name: "NoAlternative", spec: alts, finalURL: "http://reddit.test/f/machinelearning", verdict: models.OutcomeFailure, failed: []string{"url_match.base_path"}},
		{name: "QueryInAnyOrder", spec: query, finalURL: "http://shop.test/catalogsearch/result/?product_list_order=price&q=lamp&p=2", verdict: models.OutcomeSuccess},
		{name: "QueryEncoded", spec: query, finalURL: "http://shop.test/catalogsearch/result/?q=l%61mp&product_list_order=price", verdict: models.OutcomeSuccess},
		{name: "QueryParamMissing", spec: query, finalURL: "http://shop.test/catalogsearch/result/?q=lamp", verdict: models.OutcomeFailure, failed: []string{"url_match.query[product_list_order]"}},
		{name: "QueryParamWrong", spec: query, finalURL: "http://shop.test/catalogsearch/result/?q=lamps&product_list_order=price", verdict: models.OutcomeFailure, failed: []string{"url_match.query[q]"}},
		{name: "QueryAlternativeValues", spec: altsQ, finalURL: "http://shop.test/s?color=blue", verdict: models.OutcomeSuccess},
		{name: "QueryAlternativeValuesMiss", spec: altsQ, finalURL: "http://shop.test/s?color=green", verdict: models.OutcomeFailure, failed: []string{"url_match.query[color]"}},
		{name: "NoPageState", spec: plain, noState: true, verdict: models.OutcomeError, msg: "no final URL"},
		{name: "NoReferenceURL", spec: badRef, finalURL: "http://a.test/", verdict: models.OutcomeError, msg: "url_match needs a reference_url"},
		{name: "UnknownRule", spec: badNot, finalURL: "http://a.test/", verdict: models.OutcomeError, msg: `url_note "EXACT" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := eval.Input{Task: task(tc.spec)}
			if !tc.noState {
				in.PageState = &eval.PageState{FinalURL: tc.finalURL}
			}
			res, d := evaluate(t, nil, in)
			require.Equal(t, tc.verdict, res.Verdict, "details: %s", res.Details)
			require.Len(t, d.EvaluatorsResults, 1)
			require.Equal(t, "URLEvaluator", d.EvaluatorsResults[0].EvaluatorName)
			if tc.verdict != models.OutcomeError {
				require.Equal(t, tc.failed, assertions(d, false))
				var actual struct {
					FinalURL string `json:"final_url"`
				}
				require.NoError(t, json.Unmarshal(d.EvaluatorsResults[0].Actual, &actual))
				require.Equal(t, tc.finalURL, actual.FinalURL)
			}
			if tc.msg != "" {
				require.Contains(t, errorMsg(d), tc.msg)
			}
		})
	}
}

// pageState answers the task's probes with values, in order: "value:…",
// "json:…" and "thrown:…" as probe.js returns them, or "!error" for a probe
// that failed in the runner.
func pageState(t *testing.T, tk *models.Task, finalURL string, values ...string) *eval.PageState {
	t.Helper()
	probes, err := webarena.Probes(tk)
	require.NoError(t, err)
	require.Len(t, probes, len(values), "one value per probe")
	ps := &eval.PageState{FinalURL: finalURL}
	for i, p := range probes {
		r := eval.ProbeResult{PageProbe: p}
		if msg, ok := strings.CutPrefix(values[i], "!"); ok {
			r.Error = msg
		} else {
			r.Value = values[i]
		}
		ps.Probes = append(ps.Probes, r)
	}
	return ps
}

func TestEvaluate_ProgramHTML(t *testing.T) {
	t.Parallel()
	const (
		bio = `{"eval_types":["program_html"],"reference_answers":null,"reference_url":"","program_html":[` +
			`{"url":"http://reddit.test/user/MarvelsGrantMan136","locator":"document.querySelector(\".user-bio__biography\").outerText","required_contents":{"exact_match":"Pro Python Developer with 20 years of Experience"}}]}`
		last = `{"eval_types":["program_html"],"reference_answers":null,"reference_url":"","program_html":[` +
			`{"url":"last","locator":"","required_contents":{"must_include":["jaw bruxism","mouth guard |OR| mouthguard"]}},` +
			`{"url":"last","locator":"document.querySelector('[name=\"website_ids\"').selectedIndex","required_contents":{"exact_match":"0"}}]}`
		reviews = `{"eval_types":["program_html"],"reference_answers":null,"reference_url":"","program_html":[` +
			`{"url":"last","locator":"func:shopping_get_sku_latest_review_rating('B00J8RZL7I')","required_contents":{"must_include":["100"]}}]}`
		gitlab = `{"eval_types":["program_html"],"reference_answers":null,"reference_url":"","program_html":[` +
			`{"url":"http://gitlab.test/byteblaze/dotfiles/-/project_members","locator":"func:gitlab_get_project_memeber_role(__page__, 'yjlou')","required_contents":{"must_include":["Developer"]}},` +
			`{"url":"http://gitlab.test/byteblaze/dotfiles/-/project_members","locator":"func:gitlab_get_project_memeber_role(__page__, 'koush')","required_contents":{"must_include":["Guest"]}}]}`
		badContents = `{"eval_types":["program_html"],"program_html":[{"url":"last","locator":"","required_contents":{"regex":"x"}}]}`
		empty       = `{"eval_types":["program_html"],"program_html":[]}`
	)
	for _, tc := range []struct {
		name    string
		spec    string
		values  []string // nil: no page state
		verdict string
		failed  []string
		msg     string
	}{
		{name: "ExactMatch", spec: bio, values: []string{"value:  Pro Python Developer with 20 years of Experience\n"}, verdict: models.OutcomeSuccess},
		{name: "ExactMatchNearMiss", spec: bio, values: []string{"value:Pro Python Developer with 2 years of Experience"}, verdict: models.OutcomeFailure, failed: []string{"program_html[0].exact_match"}},
		{name: "LocatorThrew", spec: bio, values: []string{"thrown:Cannot read properties of null (reading 'outerText')"}, verdict: models.OutcomeFailure, failed: []string{"program_html[0].exact_match"}, msg: "the locator failed"},
		{name: "PageNotRead", spec: bio, values: []string{"!navigation to http://reddit.test/user/MarvelsGrantMan136 failed: net::ERR_CONNECTION_REFUSED"}, verdict: models.OutcomeError, msg: "program_html[0] (url \"http://reddit.test/user/MarvelsGrantMan136\""},
		{name: "PageNotOpened", spec: bio, values: []string{"error:the browser did not open it"}, verdict: models.OutcomeError, msg: "the page could not be read: the browser did not open it"},
		{name: "UntaggedValue", spec: bio, values: []string{"Pro Python Developer with 20 years of Experience"}, verdict: models.OutcomeError, msg: "tagged form"},
		{name: "MustIncludeWithAlternativesAndNumber", spec: last, values: []string{"value:<p>Jaw Bruxism &amp; the MouthGuard</p>", "json:0"}, verdict: models.OutcomeSuccess},
		{name: "MustIncludeMissing", spec: last, values: []string{"value:<p>jaw bruxism</p>", "json:0"}, verdict: models.OutcomeFailure, failed: []string{"program_html[0].must_include[1]"}},
		{name: "NumberMismatch", spec: last, values: []string{"value:jaw bruxism mouth guard", "json:1"}, verdict: models.OutcomeFailure, failed: []string{"program_html[1].exact_match"}},
		{name: "NullIsNone", spec: last, values: []string{"value:jaw bruxism mouth guard", "json:null"}, verdict: models.OutcomeFailure, failed: []string{"program_html[1].exact_match"}, msg: `the value "none" is not "0"`},
		{name: "GitLabRoles", spec: gitlab, values: []string{"value:Developer", "value:Guest"}, verdict: models.OutcomeSuccess},
		{name: "GitLabRoleWrong", spec: gitlab, values: []string{"value:Developer", "value:Reporter"}, verdict: models.OutcomeFailure, failed: []string{"program_html[1].must_include[0]"}},
		{name: "UnsupportedHelper", spec: reviews, values: []string{}, verdict: models.OutcomeError, msg: "func:shopping_get_sku_latest_review_rating('B00J8RZL7I') is not supported"},
		{name: "NoPageState", spec: bio, values: nil, verdict: models.OutcomeError, msg: "no page state"},
		{name: "UnknownContents", spec: badContents, values: []string{"value:x"}, verdict: models.OutcomeError, msg: "required_contents.regex is not supported"},
		{name: "NothingToCheck", spec: empty, values: []string{}, verdict: models.OutcomeError, msg: "program_html is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tk := task(tc.spec)
			in := eval.Input{Task: tk}
			if tc.values != nil && tc.spec != empty {
				in.PageState = pageState(t, tk, "http://x.test/", tc.values...)
			} else if tc.spec == empty {
				in.PageState = &eval.PageState{}
			}
			res, d := evaluate(t, nil, in)
			require.Equal(t, tc.verdict, res.Verdict, "details: %s", res.Details)
			require.Len(t, d.EvaluatorsResults, 1)
			require.Equal(t, "HTMLContentEvaluator", d.EvaluatorsResults[0].EvaluatorName)
			if tc.verdict != models.OutcomeError {
				require.Equal(t, tc.failed, assertions(d, false))
			}
			if tc.msg != "" {
				text := errorMsg(d) + string(d.EvaluatorsResults[0].Actual)
				for _, a := range d.EvaluatorsResults[0].Assertions {
					text += " " + a.Message
				}
				require.Contains(t, text, tc.msg)
			}
		})
	}
}

func TestEvaluate_ProgramHTMLMissingProbe(t *testing.T) {
	t.Parallel()
	spec := `{"eval_types":["program_html"],"program_html":[` +
		`{"url":"last","locator":"document.title","required_contents":{"exact_match":"a"}},` +
		`{"url":"http://shop.test/a","locator":"document.title","required_contents":{"exact_match":"b"}}]}`
	tk := task(spec)
	full := pageState(t, tk, "http://shop.test/", "value:a", "value:b")
	_, d := evaluate(t, nil, eval.Input{Task: tk, PageState: full})
	require.Equal(t, models.OutcomeSuccess, d.Status)

	// Only the first entry was read.
	partial := &eval.PageState{FinalURL: full.FinalURL, Probes: full.Probes[:1]}
	_, d = evaluate(t, nil, eval.Input{Task: tk, PageState: partial})
	require.Equal(t, models.OutcomeError, d.Status)
	require.Contains(t, errorMsg(d), `program_html[1] (url "http://shop.test/a", locator "document.title"): was not read from the page`)

	// A probe of another page does not stand in for the entry's page.
	moved := &eval.PageState{FinalURL: full.FinalURL, Probes: append([]eval.ProbeResult(nil), full.Probes...)}
	moved.Probes[1].URL = "http://shop.test/elsewhere"
	_, d = evaluate(t, nil, eval.Input{Task: tk, PageState: moved})
	require.Equal(t, models.OutcomeError, d.Status)
	require.Contains(t, errorMsg(d), "program_html[1]")

	// Probes of the same locator are told apart by their entry.
	swapped := &eval.PageState{FinalURL: full.FinalURL, Probes: []eval.ProbeResult{full.Probes[1], full.Probes[0]}}
	_, d = evaluate(t, nil, eval.Input{Task: tk, PageState: swapped})
	require.Equal(t, models.OutcomeSuccess, d.Status)
}

func TestEvaluate_Combined(t *testing.T) {
	t.Parallel()
	spec := `{"eval_types":["string_match","url_match"],"reference_answers":{"must_include":["Hyatt"]},"reference_url":"http://map.test/directions","program_html":[]}`
	for _, tc := range []struct {
		name     string
		answer   string
		finalURL string
		verdict  string
	}{
		{"BothPass", "the hyatt", "http://map.test/directions?route=1", models.OutcomeSuccess},
		{"AnswerFails", "the marriott", "http://map.test/directions", models.OutcomeFailure},
		{"URLFails", "the hyatt", "http://map.test/search", models.OutcomeFailure},
		{"URLMissingIsError", "the hyatt", "", models.OutcomeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, d := evaluate(t, nil, eval.Input{Task: task(spec), Final: answer(tc.answer), PageState: &eval.PageState{FinalURL: tc.finalURL}})
			require.Equal(t, tc.verdict, res.Verdict, "details: %s", res.Details)
			require.Len(t, d.EvaluatorsResults, 2)
			require.Equal(t, "StringEvaluator", d.EvaluatorsResults[0].EvaluatorName)
			require.Equal(t, "URLEvaluator", d.EvaluatorsResults[1].EvaluatorName)
		})
	}
}

func TestEvaluate_BrokenSpec(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, spec, msg string }{
		{"Empty", "", "no evaluation spec"},
		{"NotAnObject", `[{"evaluator":"AgentResponseEvaluator"}]`, "not WebArena's eval object"},
		{"NoTypes", `{"eval_types":[]}`, "no eval_types"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, d := evaluate(t, nil, eval.Input{Task: task(tc.spec), Final: answer("x")})
			require.Equal(t, models.OutcomeError, res.Verdict)
			require.Contains(t, errorMsg(d), tc.msg)
		})
	}
	t.Run("UnknownType", func(t *testing.T) {
		t.Parallel()
		res, d := evaluate(t, nil, eval.Input{Task: task(`{"eval_types":["string_match","ua_match"],"reference_answers":{"exact_match":"x"}}`), Final: answer("x")})
		require.Equal(t, models.OutcomeError, res.Verdict)
		require.Len(t, d.EvaluatorsResults, 2)
		require.Equal(t, models.OutcomeSuccess, d.EvaluatorsResults[0].Status)
		require.Equal(t, "ua_match", d.EvaluatorsResults[1].EvaluatorName)
		require.Contains(t, errorMsg(d), `eval type "ua_match" is not supported`)
	})
}
