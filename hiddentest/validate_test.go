package hiddentest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func ptr[T any](v T) *T { return &v }

// validSuite is a small valid suite: tests[0] request, tests[1] browser L1 with
// a checkpoint, tests[2] browser L3, tests[3] system.
func validSuite() *Suite {
	return &Suite{Version: 1, Site: "shop", Tests: []Test{
		{ID: "req", Group: GroupRequest, Title: "Home page", Request: &RequestTest{
			Path: "/", Expect: RequestExpect{Status: &Status{Code: 200}},
		}},
		{ID: "b1", Group: GroupBrowser, Level: 1, Title: "Cart tab", Journey: &Journey{Steps: []Step{
			{Action: ActionGoto, URL: "/"},
			{Action: ActionClick, Locator: &Locator{Role: "link", Name: "Cart", Exact: true}},
			{Action: ActionExpect, Expect: &Assertion{Kind: AssertURL, TextMatch: TextMatch{Equals: ptr("/cart")}}},
			{Action: ActionCheckpoint, Capture: "cart"},
		}}, Checkpoints: []Checkpoint{{Capture: "cart", Region: Locator{CSS: "main"}}}},
		{ID: "b3", Group: GroupBrowser, Level: 3, Title: "Restart", Journey: &Journey{Steps: []Step{
			{Action: ActionGoto, URL: "/"},
			{Action: ActionRestart},
			{Action: ActionNewContext, Context: "other"},
			{Action: ActionSwitchContext, Context: MainContext},
		}}},
		{ID: "sys", Group: GroupSystem, Title: "Health", System: &SystemTest{Kind: SystemHealth}},
	}}
}

// problemsOf parses the suite after a JSON round trip and returns its problems.
func problemsOf(t *testing.T, s *Suite) []string {
	t.Helper()
	data, err := json.Marshal(s)
	require.NoError(t, err)
	return parseProblems(t, string(data))
}

func parseProblems(t *testing.T, input string) []string {
	t.Helper()
	suite, err := Parse(strings.NewReader(input))
	if err == nil {
		require.NotNil(t, suite)
		return nil
	}
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Nil(t, suite)
	var out []string
	for _, p := range verr.Problems {
		out = append(out, p.String())
	}
	return out
}

func TestValidSuite_Parses(t *testing.T) {
	t.Parallel()
	require.Empty(t, problemsOf(t, validSuite()))
	require.NoError(t, Validate(validSuite(), func(name string) bool { return name == "cart" }))
}

func TestParse_ReportsEachProblemAtItsPath(t *testing.T) {
	t.Parallel()
	steps := func(s *Suite, i int) []Step { return s.Tests[i].Journey.Steps }
	cases := []struct {
		name   string
		mutate func(s *Suite)
		want   []string
	}{
		{"click without locator", func(s *Suite) { steps(s, 1)[1].Locator = nil },
			[]string{"tests[1].journey.steps[1].locator: a click needs a locator"}},
		{"duplicate id", func(s *Suite) { s.Tests[3].ID = "req" },
			[]string{`tests[3].id: duplicate id "req" (first at tests[0])`}},
		{"invalid id", func(s *Suite) { s.Tests[0].ID = "Home Page" },
			[]string{`tests[0].id: "Home Page" is not an id: use 1 to 100 lower-case letters, digits, '.', '_' and '-', starting with a letter or digit`}},
		{"restart steps outside level 3", func(s *Suite) { s.Tests[2].Level = 2 }, []string{
			"tests[2].journey.steps[1].action: a restart is only allowed in level-3 tests",
			"tests[2].journey.steps[2].action: a new_context is only allowed in level-3 tests",
			"tests[2].journey.steps[3].action: a switch_context is only allowed in level-3 tests",
		}},
		{"level outside 1 to 3", func(s *Suite) { s.Tests[1].Level = 4 },
			[]string{"tests[1].level: level 4 does not exist: use 1, 2 or 3"}},
		{"browser test without level", func(s *Suite) { s.Tests[1].Level = 0 },
			[]string{"tests[1].level: missing: a browser test has level 1, 2 or 3"}},
		{"level on a request test", func(s *Suite) { s.Tests[0].Level = 1 },
			[]string{"tests[0].level: only browser tests have a level"}},
		{"level 3 without restart or new context", func(s *Suite) { s.Tests[2].Journey.Steps = steps(s, 2)[:1] },
			[]string{"tests[2].journey.steps: a level-3 journey has a restart or a new_context step"}},
		{"journey not starting with goto", func(s *Suite) { steps(s, 1)[0] = Step{Action: ActionReload} },
			[]string{"tests[1].journey.steps[0].action: a journey starts with a goto"}},
		{"unknown action", func(s *Suite) { steps(s, 1)[1].Action = "tap" },
			[]string{`tests[1].journey.steps[1].action: "tap" is not an action: use one of goto, click, fill, select, check, uncheck, submit, press, reload, wait_for_text, wait_for_url, expect, checkpoint, restart, new_context, switch_context`}},
		{"field an action does not take", func(s *Suite) { steps(s, 1)[1].Key = "Enter" },
			[]string{"tests[1].journey.steps[1].key: a click takes no key"}},
		{"fill without value, press without key", func(s *Suite) {
			steps(s, 1)[1] = Step{Action: ActionFill, Locator: &Locator{Label: "Search"}}
			steps(s, 1)[2] = Step{Action: ActionPress}
		}, []string{
			"tests[1].journey.steps[1].value: a fill needs a value",
			"tests[1].journey.steps[2].key: a press needs a key",
		}},
		{"wait_for_url with url and matches", func(s *Suite) {
			steps(s, 1)[2] = Step{Action: ActionWaitForURL, URL: "/cart", Matches: "^/cart$"}
		}, []string{"tests[1].journey.steps[2]: a wait_for_url takes url or matches, not both"}},
		{"checkpoint step without a declared checkpoint", func(s *Suite) { steps(s, 1)[3].Capture = "orders" },
			[]string{`tests[1].journey.steps[3].capture: the test declares no checkpoint with capture "orders"`}},
		{"checkpoint taken twice", func(s *Suite) {
			s.Tests[1].Journey.Steps = append(steps(s, 1), Step{Action: ActionCheckpoint, Capture: "cart"})
		}, []string{`tests[1].journey.steps[4].capture: the checkpoint "cart" is already taken at tests[1].journey.steps[3]`}},
		{"switch to a context never opened", func(s *Suite) { steps(s, 2)[3].Context = "third" },
			[]string{`tests[2].journey.steps[3].context: no context named "third" is open at this step`}},
		{"new context named main", func(s *Suite) { steps(s, 2)[2].Context = MainContext },
			[]string{`tests[2].journey.steps[2].context: the context "main" is already open`}},
		{"regular expression that does not compile", func(s *Suite) {
			s.Tests[0].Request.Expect.BodyMatches = []string{"ok", "("}
			steps(s, 1)[2].Expect.TextMatch = TextMatch{Matches: "[a-"}
		}, []string{
			"tests[0].request.expect.body_matches[1]: the regular expression does not compile: error parsing regexp: missing closing ): `(`",
			"tests[1].journey.steps[2].expect.matches: the regular expression does not compile: error parsing regexp: missing closing ]: `[a-`",
		}},
		{"assertion fields", func(s *Suite) {
			steps(s, 1)[2].Expect = &Assertion{Kind: AssertCount, Locator: &Locator{CSS: "li"}, TextMatch: TextMatch{Contains: "x"}}
			s.Tests[1].Journey.Steps = append(steps(s, 1),
				Step{Action: ActionExpect, Expect: &Assertion{Kind: AssertText, Locator: &Locator{CSS: "h1"}}},
				Step{Action: ActionExpect, Expect: &Assertion{Kind: AssertURL, Locator: &Locator{CSS: "a"}, TextMatch: TextMatch{Equals: ptr("/"), Contains: "/"}}},
				Step{Action: ActionExpect, Expect: &Assertion{Kind: "shown"}},
			)
		}, []string{
			"tests[1].journey.steps[2].expect.count: a count assertion needs a count",
			"tests[1].journey.steps[2].expect: a count assertion takes no equals, contains or matches",
			"tests[1].journey.steps[4].expect: give one of equals, contains or matches",
			"tests[1].journey.steps[5].expect.locator: a url assertion takes no locator",
			"tests[1].journey.steps[5].expect: give only one of equals, contains and matches",
			`tests[1].journey.steps[6].expect.kind: "shown" is not an assertion: use one of visible, hidden, text, count, value, url, title, attribute`,
		}},
		{"locators", func(s *Suite) {
			steps(s, 1)[1].Locator = &Locator{Role: "buton", CSS: "a"}
			s.Tests[1].Checkpoints[0].Region = Locator{CSS: "main", Name: "Main", Exact: true, Nth: ptr(-1)}
			s.Tests[1].Checkpoints[0].Masks = []Locator{{}}
		}, []string{
			"tests[1].checkpoints[0].region.name: only a role locator takes a name",
			"tests[1].checkpoints[0].region.nth: must be from 0 to 1000",
			"tests[1].checkpoints[0].masks[0]: a locator needs one of role, text, label, placeholder, test_id and css",
			"tests[1].journey.steps[1].locator: give only one of role, text, label, placeholder, test_id and css (found role and css)",
			`tests[1].journey.steps[1].locator.role: "buton" is not an ARIA role`,
		}},
		{"exact without text", func(s *Suite) { steps(s, 1)[1].Locator = &Locator{TestID: "cart", Exact: true} },
			[]string{"tests[1].journey.steps[1].locator.exact: exact applies to a role's name, a text, a label or a placeholder"}},
		{"thresholds", func(s *Suite) {
			s.Tests[1].Checkpoints[0].Threshold = ptr(1.5)
			s.Tests[1].Checkpoints = append(s.Tests[1].Checkpoints, Checkpoint{Capture: "cart", Region: Locator{CSS: "h1"}, Threshold: ptr(0.0)})
		}, []string{
			"tests[1].checkpoints[0].threshold: must be above 0 and at most 1, not 1.5",
			`tests[1].checkpoints[1].capture: a checkpoint of this test already has the name "cart" (at tests[1].checkpoints[0].capture)`,
			"tests[1].checkpoints[1].threshold: must be above 0 and at most 1, not 0",
		}},
		{"checkpoints outside browser tests", func(s *Suite) { s.Tests[0].Checkpoints = []Checkpoint{{Capture: "x", Region: Locator{CSS: "a"}}} },
			[]string{"tests[0].checkpoints: only browser tests have checkpoints"}},
		{"timeouts above their caps", func(s *Suite) {
			s.Tests[1].TimeoutMS = 20_000
			steps(s, 1)[1].TimeoutMS = 30_000
			steps(s, 2)[1].TimeoutMS = 400_000
			s.Tests[3].TimeoutMS = 200_000
			s.Tests[0].TimeoutMS = -1
		}, []string{
			"tests[0].timeout_ms: must not be negative",
			"tests[1].journey.steps[1].timeout_ms: at most the test's timeout (20000)",
			"tests[2].journey.steps[1].timeout_ms: at most 300000 for a restart",
			"tests[3].timeout_ms: at most 120000 for a health test",
		}},
		{"request rules", func(s *Suite) {
			r := s.Tests[0].Request
			r.Method = "get"
			r.Form = map[string]string{"q": "lamp"}
			r.Headers = map[string]string{"Host": "example.com", "Bad Name": "x"}
			r.MaxRedirects = 3
			r.Expect.Location = &TextMatch{}
		}, []string{
			`tests[0].request.method: "get" is not a method: use GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`,
			"tests[0].request.form: a GET request has no form",
			`tests[0].request.headers["Bad Name"]: "Bad Name" is not a header name`,
			"tests[0].request.headers.Host: the client sets Host itself",
			"tests[0].request.max_redirects: only a request that follows redirects takes max_redirects",
			"tests[0].request.expect.location: give one of equals, contains or matches",
		}},
		{"request body rules", func(s *Suite) {
			r := s.Tests[0].Request
			r.Method, r.Body, r.FollowRedirects = "POST", "{}", true
			r.Expect = RequestExpect{Location: &TextMatch{Equals: ptr("/cart")}, Headers: []HeaderExpect{{Name: "Location", Absent: true, TextMatch: TextMatch{Contains: "/"}}}, BodyContains: []string{""}}
		}, []string{
			"tests[0].request.content_type: missing: a body needs a content_type",
			"tests[0].request.expect.status: missing: give a status code (404) or class (\"2xx\")",
			"tests[0].request.expect.headers[0]: an absent header takes no equals, contains or matches",
			"tests[0].request.expect.body_contains[0]: an empty text checks nothing",
			"tests[0].request.expect.location: a request that follows redirects has no redirect location to check",
		}},
		{"paths", func(s *Suite) {
			s.Tests[0].Request.Path = "cart"
			steps(s, 1)[0].URL = "//evil.example/"
			s.Tests[3].System.Path = "/a b"
		}, []string{
			`tests[0].request.path: "cart" is not a path relative to the base URL: start it with "/"`,
			`tests[1].journey.steps[0].url: "//evil.example/" would leave the candidate's site: start it with a single "/"`,
			`tests[3].system.path: "/a b" has spaces or control characters: percent-encode them`,
		}},
		{"group and body", func(s *Suite) {
			s.Tests[0].Journey = &Journey{Steps: []Step{{Action: ActionGoto, URL: "/"}}}
			s.Tests[3].Group = "ops"
		}, []string{
			"tests[0].journey: a request test has no journey",
			`tests[3].group: "ops" is not a group: use request, browser or system`,
		}},
		{"system rules", func(s *Suite) {
			s.Tests[3].System = &SystemTest{Kind: SystemHealth, Probe: ProbePathTraversal}
			s.Tests = append(s.Tests,
				Test{ID: "sec", Group: GroupSystem, Title: "Probe", System: &SystemTest{Kind: SystemSecurity}},
				Test{ID: "hdr", Group: GroupSystem, Title: "Headers", System: &SystemTest{Kind: SystemSecurity, Probe: ProbeSecurityHeaders, Paths: []string{"/"}, Markers: []string{"x"}}},
				Test{ID: "build", Group: GroupSystem, Title: "Build", System: &SystemTest{Kind: SystemOfflineBuild, Path: "/"}},
			)
		}, []string{
			"tests[3].system.probe: a health test takes no probe",
			"tests[4].system.probe: missing: use path_traversal, directory_listing, error_disclosure or security_headers",
			"tests[4].system.paths: missing: a probe requests at least one path",
			"tests[5].system.headers: missing: a security_headers probe names the headers every response needs",
			"tests[5].system.markers: a security_headers probe takes no markers",
			"tests[6].system.path: an offline_build test takes no path",
		}},
		{"suite fields", func(s *Suite) {
			s.Version, s.Site = 2, ""
			s.Viewport = &Viewport{Width: 100, Height: 800}
			s.Parallelism = MaxParallelism + 1
			s.Regions = []Region{{Name: "date", Locator: Locator{CSS: ".date"}}, {Name: "date", Locator: Locator{CSS: ".time"}}}
		}, []string{
			"version: version 2 is not supported: use 1",
			"site: missing: name the reference site",
			"viewport.width: must be from 320 to 3840 pixels",
			"parallelism: must be from 1 to 16 tests at once (absent: 4)",
			`regions[1].name: a region already has the name "date" (at regions[0].name)`,
		}},
		{"negative parallelism", func(s *Suite) { s.Parallelism = -1 }, []string{"parallelism: must be from 1 to 16 tests at once (absent: 4)"}},
		{"no tests", func(s *Suite) { s.Tests = nil }, []string{"tests: the suite has no tests"}},
		{"too many tests", func(s *Suite) {
			for i := len(s.Tests); i <= MaxTests; i++ {
				s.Tests = append(s.Tests, Test{ID: fmt.Sprintf("t%d", i), Group: GroupSystem, Title: "Health", System: &SystemTest{Kind: SystemHealth}})
			}
		}, []string{"tests: at most 500 tests, found 501"}},
		{"too many steps", func(s *Suite) {
			for len(s.Tests[1].Journey.Steps) <= MaxSteps {
				s.Tests[1].Journey.Steps = append(s.Tests[1].Journey.Steps, Step{Action: ActionReload})
			}
		}, []string{"tests[1].journey.steps: at most 100 steps, found 101"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := validSuite()
			tc.mutate(s)
			require.Equal(t, tc.want, problemsOf(t, s))
		})
	}
}

func TestParse_IsStrict(t *testing.T) {
	t.Parallel()
	const tail = `"tests":[{"id":"h","group":"system","title":"Health","system":{"kind":"health"}}]}`
	cases := []struct {
		name, input string
		want        []string
	}{
		{"unknown field, deep", `{"version":1,"site":"shop","tests":[{"id":"h","group":"system","title":"Health","system":{"kind":"health","pth":"/"}}]}`,
			[]string{"tests[0].system.pth: unknown field"}},
		{"unknown fields everywhere, collected", `{"version":1,"site":"shop","owner":"x",` + strings.Replace(tail, `"title"`, `"tittle":"x","title"`, 1),
			[]string{"owner: unknown field", "tests[0].tittle: unknown field"}},
		{"field given twice", `{"version":1,"site":"shop","site":"forum",` + tail,
			[]string{"site: the field is given twice"}},
		{"wrong type is not also reported missing", `{"version":"1","site":"shop",` + tail,
			[]string{"version: expected a whole number, found a string"}},
		{"fraction where a whole number goes", `{"version":1.5,"site":"shop",` + tail,
			[]string{"version: expected a whole number, found the number 1.5"}},
		{"huge number", `{"version":99999999999,"site":"shop",` + tail,
			[]string{"version: the number 99999999999 is out of range"}},
		{"list where an object goes", `{"version":1,"site":"shop","tests":[[]]}`,
			[]string{"tests[0]: expected an object, found a list"}},
		{"object where a list goes", `{"version":1,"site":"shop","tests":{}}`,
			[]string{"tests: expected a list, found an object"}},
		{"malformed status", `{"version":1,"site":"shop","tests":[{"id":"r","group":"request","title":"R","request":{"path":"/","expect":{"status":"20x"}}}]}`,
			[]string{`tests[0].request.expect.status: give a status code from 100 to 599 (404) or a class from "1xx" to "5xx"`}},
		{"status out of range", `{"version":1,"site":"shop","tests":[{"id":"r","group":"request","title":"R","request":{"path":"/","expect":{"status":700}}}]}`,
			[]string{`tests[0].request.expect.status: give a status code from 100 to 599 (404) or a class from "1xx" to "5xx"`}},
		{"header names quoted in paths", `{"version":1,"site":"shop","tests":[{"id":"r","group":"request","title":"R","request":{"path":"/","headers":{"X-Trace.Id":1},"expect":{"status":200}}}]}`,
			[]string{`tests[0].request.headers["X-Trace.Id"]: expected a string, found the number 1`}},
		{"structural and semantic problems together", `{"version":1,"site":"shop","color":"red","tests":[{"group":"system","title":"Health","system":{"kind":"health"}}]}`,
			[]string{"color: unknown field", "tests[0].id: missing: give the test an id"}},
		{"malformed JSON", "{\n  \"version\": 1,\n  }", []string{
			"malformed JSON at line 3, column 3: invalid character '}' looking for beginning of object key string"}},
		{"data after the suite", `{"version":1,"site":"shop",` + tail + "\n {}", []string{
			"malformed JSON at line 2, column 2: unexpected data after the suite"}},
		{"truncated", `{"version": 1, "tests": [`, []string{"malformed JSON: the input ends early"}},
		{"empty", " \n", []string{"the suite is empty"}},
		{"not an object", `[]`, []string{"expected an object, found a list"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, parseProblems(t, tc.input))
		})
	}

	t.Run("nested too deeply", func(t *testing.T) {
		t.Parallel()
		input := `{"description":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "}"
		got := parseProblems(t, input)
		require.Len(t, got, 1)
		require.Equal(t, "description"+strings.Repeat("[0]", 31)+": values are nested more than 32 levels deep", got[0])
	})
}

func TestParse_CollectsProblemsUpToTheCap(t *testing.T) {
	t.Parallel()
	s := validSuite()
	s.Tests = nil
	for i := range 60 {
		s.Tests = append(s.Tests, Test{ID: fmt.Sprintf("t%d", i), Group: GroupSystem, Title: "Health", System: &SystemTest{Kind: "ping"}})
	}
	data, err := json.Marshal(s)
	require.NoError(t, err)
	_, err = Parse(bytes.NewReader(data))
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Problems, MaxProblems)
	require.Equal(t, 10, verr.More)
	require.Equal(t, `tests[0].system.kind: "ping" is not a system test kind: use health, offline_build, restart or security`, verr.Problems[0].String())
	require.True(t, strings.HasSuffix(err.Error(), "\n… and 10 more problems"), err.Error())
	require.Equal(t, MaxProblems+1, strings.Count(err.Error(), "\n")+1)
}

func TestParse_ErrorCodes(t *testing.T) {
	t.Parallel()
	_, err := Parse(strings.NewReader(`{"version":1}`))
	require.Equal(t, models.EINVALID, models.ErrorCode(err))
	require.Equal(t, "site: missing: name the reference site\ntests: the suite has no tests", models.ErrorMessage(err))

	_, err = Parse(bytes.NewReader(bytes.Repeat([]byte(" "), MaxSuiteBytes+1)))
	require.Equal(t, models.ETOOLARGE, models.ErrorCode(err))
	require.Equal(t, "the suite is larger than 4 MiB", models.ErrorMessage(err))

	_, err = Parse(failingReader{})
	require.Error(t, err)
	require.Equal(t, models.EINTERNAL, models.ErrorCode(err))
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestValidate_ChecksReferenceCaptures(t *testing.T) {
	t.Parallel()
	s := validSuite()
	err := Validate(s, func(string) bool { return false })
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, []Problem{{Path: "tests[1].checkpoints[0].capture", Message: `no reference capture named "cart"`}}, verr.Problems)

	// Without a lookup, captures are not checked (Parse's mode).
	require.NoError(t, Validate(s, nil))
}

func TestValidate_SuitesBuiltInGo(t *testing.T) {
	t.Parallel()
	s := validSuite()
	s.Tests[0].Request.Expect.Status = &Status{Code: 42}
	s.Tests[1].Checkpoints[0].Threshold = ptr(math.NaN())
	err := Validate(s, nil)
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, []string{
		`tests[0].request.expect.status: give a status code from 100 to 599 (404) or a class from "1xx" to "5xx"`,
		"tests[1].checkpoints[0].threshold: must be above 0 and at most 1, not NaN",
	}, []string{verr.Problems[0].String(), verr.Problems[1].String()})
	require.Len(t, verr.Problems, 2)

	require.EqualError(t, Validate(nil, nil), "there is no suite")
}
