package hiddentest

import (
	"fmt"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of a suite.
const (
	MaxTests          = 500
	MaxSteps          = 100
	MaxCheckpoints    = 20
	MaxMasks          = 20
	MaxRegions        = 50
	MaxProbePaths     = 20
	MaxListItems      = 20 // body_contains, body_not_contains, body_matches, headers, markers
	MaxMapEntries     = 50 // query, form and request headers
	MaxBodyBytes      = 64 << 10
	MaxPathLength     = 2048
	MaxTextLength     = 2000
	MaxTitleLength    = 200
	MaxDescLength     = 5000
	MaxPatternLength  = 1000
	MaxLocatorLength  = 500
	MaxNameLength     = 100
	MaxNth            = 1000
	MaxCount          = 10000
	MinViewportWidth  = 320
	MaxViewportWidth  = 3840
	MinViewportHeight = 240
	MaxViewportHeight = 2160
)

// Validate checks every rule of the format (docs/hidden-tests.md) and, when
// captures is not nil, that every checkpoint names a reference capture that
// exists. All problems are reported together, each with its JSON path, in a
// *ValidationError (EINVALID); nil means the suite is valid.
func Validate(s *Suite, captures func(name string) bool) error {
	v := &validator{p: &problems{}, captures: captures}
	if s == nil {
		v.p.add("", "there is no suite")
		return v.p.err()
	}
	v.suite(s)
	return v.p.err()
}

// validator walks a suite; captures may be nil (not checked).
type validator struct {
	p        *problems
	captures func(name string) bool
}

func (v *validator) suite(s *Suite) {
	switch {
	case s.Version == 0:
		v.p.add("version", "missing: the format version is %d", FormatVersion)
	case s.Version != FormatVersion:
		v.p.add("version", "version %d is not supported: use %d", s.Version, FormatVersion)
	}
	switch {
	case s.Site == "":
		v.p.add("site", "missing: name the reference site")
	case !isName(s.Site, "._-"):
		v.p.add("site", "%q is not a site name: use 1 to %d lower-case letters, digits, '.', '_' and '-'", s.Site, MaxNameLength)
	}
	v.maxLen("description", s.Description, MaxDescLength)
	if vp := s.Viewport; vp != nil {
		if vp.Width < MinViewportWidth || vp.Width > MaxViewportWidth {
			v.p.add("viewport.width", "must be from %d to %d pixels", MinViewportWidth, MaxViewportWidth)
		}
		if vp.Height < MinViewportHeight || vp.Height > MaxViewportHeight {
			v.p.add("viewport.height", "must be from %d to %d pixels", MinViewportHeight, MaxViewportHeight)
		}
	}
	if s.Parallelism < 0 || s.Parallelism > MaxParallelism {
		v.p.add("parallelism", "must be from 1 to %d tests at once (absent: %d)", MaxParallelism, DefaultParallelism)
	}
	if len(s.Regions) > MaxRegions {
		v.p.add("regions", "at most %d regions, found %d", MaxRegions, len(s.Regions))
	}
	regions := map[string]string{}
	for i, r := range s.Regions {
		path := fmt.Sprintf("regions[%d]", i)
		v.slug(path+".name", r.Name, "a region", regions)
		v.locator(path+".locator", &r.Locator)
		v.maxLen(path+".reason", r.Reason, MaxTextLength)
	}
	switch {
	case len(s.Tests) == 0:
		v.p.add("tests", "the suite has no tests")
	case len(s.Tests) > MaxTests:
		v.p.add("tests", "at most %d tests, found %d", MaxTests, len(s.Tests))
	}
	ids := map[string]string{}
	for i := range s.Tests {
		v.test(fmt.Sprintf("tests[%d]", i), &s.Tests[i], ids)
	}
}

func (v *validator) test(path string, t *Test, ids map[string]string) {
	switch {
	case t.ID == "":
		v.p.add(path+".id", "missing: give the test an id")
	case !isName(t.ID, "._-"):
		v.p.add(path+".id", "%q is not an id: use 1 to %d lower-case letters, digits, '.', '_' and '-', starting with a letter or digit", t.ID, MaxNameLength)
	case ids[t.ID] != "":
		v.p.add(path+".id", "duplicate id %q (first at %s)", t.ID, ids[t.ID])
	default:
		ids[t.ID] = path
	}
	switch {
	case strings.TrimSpace(t.Title) == "":
		v.p.add(path+".title", "missing: say in a line what the test checks")
	default:
		v.maxLen(path+".title", t.Title, MaxTitleLength)
	}

	body := map[string]bool{GroupRequest: t.Request != nil, GroupBrowser: t.Journey != nil, GroupSystem: t.System != nil}
	field := map[string]string{GroupRequest: "request", GroupBrowser: "journey", GroupSystem: "system"}
	switch t.Group {
	case GroupRequest, GroupBrowser, GroupSystem:
		for _, other := range []string{GroupRequest, GroupBrowser, GroupSystem} {
			if other != t.Group && body[other] {
				v.p.add(path+"."+field[other], "%s %s test has no %s", article(t.Group), t.Group, field[other])
			}
		}
		if !body[t.Group] {
			v.p.add(path+"."+field[t.Group], "missing: %s %s test needs a %s", article(t.Group), t.Group, field[t.Group])
		}
	case "":
		v.p.add(path+".group", "missing: use request, browser or system")
	default:
		v.p.add(path+".group", "%q is not a group: use request, browser or system", t.Group)
	}
	switch {
	case t.Group != GroupBrowser && t.Level != 0:
		v.p.add(path+".level", "only browser tests have a level")
	case t.Group == GroupBrowser && t.Level == 0:
		v.p.add(path+".level", "missing: a browser test has level 1, 2 or 3")
	case t.Group == GroupBrowser && (t.Level < 1 || t.Level > 3):
		v.p.add(path+".level", "level %d does not exist: use 1, 2 or 3", t.Level)
	}
	_, limit := t.timeoutBounds()
	switch {
	case t.TimeoutMS < 0:
		v.p.add(path+".timeout_ms", "must not be negative")
	case t.TimeoutMS > limit:
		v.p.add(path+".timeout_ms", "at most %d for %s", limit, timeoutSubject(t))
	}

	if t.Group != GroupBrowser && len(t.Checkpoints) > 0 {
		v.p.add(path+".checkpoints", "only browser tests have checkpoints")
	} else {
		v.checkpoints(path, t)
	}
	switch {
	case t.Group == GroupRequest && t.Request != nil:
		v.request(path+".request", t.Request)
	case t.Group == GroupBrowser && t.Journey != nil:
		v.journey(path+".journey", t)
	case t.Group == GroupSystem && t.System != nil:
		v.system(path+".system", t.System)
	}
}

func timeoutSubject(t *Test) string {
	if t.Group == GroupSystem && t.System != nil && t.System.Kind != "" {
		return article(t.System.Kind) + " " + t.System.Kind + " test"
	}
	return article(t.Group) + " " + t.Group + " test"
}

func (v *validator) checkpoints(path string, t *Test) {
	if len(t.Checkpoints) > MaxCheckpoints {
		v.p.add(path+".checkpoints", "at most %d checkpoints, found %d", MaxCheckpoints, len(t.Checkpoints))
	}
	seen := map[string]string{}
	for i := range t.Checkpoints {
		c := &t.Checkpoints[i]
		cp := fmt.Sprintf("%s.checkpoints[%d]", path, i)
		if v.slug(cp+".capture", c.Capture, "a checkpoint of this test", seen) && v.captures != nil && !v.captures(c.Capture) {
			v.p.add(cp+".capture", "no reference capture named %q", c.Capture)
		}
		v.locator(cp+".region", &c.Region)
		if c.Threshold != nil && !(*c.Threshold > 0 && *c.Threshold <= 1) {
			v.p.add(cp+".threshold", "must be above 0 and at most 1, not %g", *c.Threshold)
		}
		if len(c.Masks) > MaxMasks {
			v.p.add(cp+".masks", "at most %d masks, found %d", MaxMasks, len(c.Masks))
		}
		for j := range c.Masks {
			v.locator(fmt.Sprintf("%s.masks[%d]", cp, j), &c.Masks[j])
		}
	}
}

// requestMethods are the methods a request test may use.
func requestMethods() []string {
	return []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
}

// managedHeaders are request headers the client sets itself.
func managedHeaders() []string {
	return []string{"Host", "Content-Length", "Transfer-Encoding", "Connection"}
}

func (v *validator) request(path string, r *RequestTest) {
	method := strings.ToUpper(r.EffectiveMethod())
	if !slices.Contains(requestMethods(), r.Method) && r.Method != "" {
		v.p.add(path+".method", "%q is not a method: use %s", r.Method, strings.Join(requestMethods(), ", "))
	}
	v.relPath(path+".path", r.Path)
	v.stringMap(path+".query", r.Query, MaxMapEntries)
	bodyless := method == "GET" || method == "HEAD"
	if len(r.Form) > 0 {
		v.stringMap(path+".form", r.Form, MaxMapEntries)
		if bodyless {
			v.p.add(path+".form", "a %s request has no form", method)
		}
		if r.ContentType != "" {
			v.p.add(path+".content_type", "a form is sent as application/x-www-form-urlencoded: give form or body with content_type")
		}
	}
	if r.Body != "" {
		switch {
		case len(r.Form) > 0:
			v.p.add(path+".body", "give form or body, not both")
		case bodyless:
			v.p.add(path+".body", "a %s request has no body", method)
		case r.ContentType == "":
			v.p.add(path+".content_type", "missing: a body needs a content_type")
		}
		if len(r.Body) > MaxBodyBytes {
			v.p.add(path+".body", "at most %d KiB", MaxBodyBytes>>10)
		}
	} else if r.ContentType != "" && len(r.Form) == 0 {
		v.p.add(path+".content_type", "a content_type needs a body")
	}
	v.maxLen(path+".content_type", r.ContentType, MaxNameLength)
	if len(r.Headers) > MaxMapEntries {
		v.p.add(path+".headers", "at most %d headers, found %d", MaxMapEntries, len(r.Headers))
	}
	for _, name := range sortedKeys(r.Headers) {
		hp := joinKey(path+".headers", name)
		switch {
		case !isToken(name):
			v.p.add(hp, "%q is not a header name", name)
		case slices.Contains(managedHeaders(), textproto.CanonicalMIMEHeaderKey(name)):
			v.p.add(hp, "the client sets %s itself", textproto.CanonicalMIMEHeaderKey(name))
		case strings.ContainsAny(r.Headers[name], "\r\n"):
			v.p.add(hp, "a header value is one line")
		default:
			v.maxLen(hp, r.Headers[name], MaxTextLength)
		}
	}
	switch {
	case r.MaxRedirects < 0:
		v.p.add(path+".max_redirects", "must not be negative")
	case r.MaxRedirects > MaxRedirectsCap:
		v.p.add(path+".max_redirects", "at most %d", MaxRedirectsCap)
	case r.MaxRedirects > 0 && !r.FollowRedirects:
		v.p.add(path+".max_redirects", "only a request that follows redirects takes max_redirects")
	}

	ep := path + ".expect"
	e := &r.Expect
	switch st := e.Status; {
	case st == nil:
		v.p.add(ep+".status", `missing: give a status code (404) or class ("2xx")`)
	case (st.Code == 0) == (st.Class == 0), st.Code != 0 && (st.Code < 100 || st.Code > 599), st.Class < 0 || st.Class > 5:
		// Only a suite built in Go gets here: JSON decoding already refuses these.
		v.p.add(ep+".status", "%s", statusHint)
	}
	if len(e.Headers) > MaxListItems {
		v.p.add(ep+".headers", "at most %d header expectations, found %d", MaxListItems, len(e.Headers))
	}
	for i := range e.Headers {
		h := &e.Headers[i]
		hp := fmt.Sprintf("%s.headers[%d]", ep, i)
		switch {
		case h.Name == "":
			v.p.add(hp+".name", "missing: name the header")
		case !isToken(h.Name):
			v.p.add(hp+".name", "%q is not a header name", h.Name)
		}
		if h.Absent && h.TextMatch.count() > 0 {
			v.p.add(hp, "an absent header takes no equals, contains or matches")
		} else {
			v.textMatch(hp, &h.TextMatch, false)
		}
	}
	v.texts(ep+".body_contains", e.BodyContains, false)
	v.texts(ep+".body_not_contains", e.BodyNotContains, false)
	v.texts(ep+".body_matches", e.BodyMatches, true)
	if e.Location != nil {
		if r.FollowRedirects {
			v.p.add(ep+".location", "a request that follows redirects has no redirect location to check")
		}
		v.textMatch(ep+".location", e.Location, true)
	}
}

// stepFields are the optional fields of a step, by JSON name, and whether a step sets them.
func stepFields(s *Step) []string {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"url", s.URL != ""}, {"matches", s.Matches != ""}, {"locator", s.Locator != nil},
		{"value", s.Value != nil}, {"key", s.Key != ""}, {"text", s.Text != ""},
		{"context", s.Context != ""}, {"capture", s.Capture != ""}, {"expect", s.Expect != nil},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	return set
}

// actionSpec is what an action needs and what else it takes.
type actionSpec struct {
	needs  []string
	takes  []string
	level3 bool
}

func actionSpecFor(action string) (actionSpec, bool) {
	switch action {
	case ActionGoto:
		return actionSpec{needs: []string{"url"}}, true
	case ActionClick, ActionCheck, ActionUncheck, ActionSubmit:
		return actionSpec{needs: []string{"locator"}}, true
	case ActionFill, ActionSelect:
		return actionSpec{needs: []string{"locator", "value"}}, true
	case ActionPress:
		return actionSpec{needs: []string{"key"}, takes: []string{"locator"}}, true
	case ActionReload:
		return actionSpec{}, true
	case ActionWaitForText:
		return actionSpec{needs: []string{"text"}, takes: []string{"locator"}}, true
	case ActionWaitForURL:
		return actionSpec{takes: []string{"url", "matches"}}, true
	case ActionExpect:
		return actionSpec{needs: []string{"expect"}}, true
	case ActionCheckpoint:
		return actionSpec{needs: []string{"capture"}}, true
	case ActionRestart:
		return actionSpec{level3: true}, true
	case ActionNewContext, ActionSwitchContext:
		return actionSpec{needs: []string{"context"}, level3: true}, true
	}
	return actionSpec{}, false
}

func actionNames() []string {
	return []string{ActionGoto, ActionClick, ActionFill, ActionSelect, ActionCheck, ActionUncheck, ActionSubmit,
		ActionPress, ActionReload, ActionWaitForText, ActionWaitForURL, ActionExpect, ActionCheckpoint,
		ActionRestart, ActionNewContext, ActionSwitchContext}
}

// fieldNoun names what a step field holds, for "a click needs a locator".
func fieldNoun(field string) string {
	switch field {
	case "url":
		return "a url"
	case "expect":
		return "an assertion (expect)"
	case "context":
		return "a context name"
	case "capture":
		return "a capture (the checkpoint to take)"
	}
	return article(field) + " " + field
}

func (v *validator) journey(path string, t *Test) {
	steps := t.Journey.Steps
	sp := path + ".steps"
	switch {
	case len(steps) == 0:
		v.p.add(sp, "a journey needs at least one step")
		return
	case len(steps) > MaxSteps:
		v.p.add(sp, "at most %d steps, found %d", MaxSteps, len(steps))
	}
	if steps[0].Action != ActionGoto {
		v.p.add(sp+"[0].action", "a journey starts with a goto")
	}
	state := journeyState{
		contexts:    map[string]bool{MainContext: true},
		checkpoints: map[string]bool{},
		taken:       map[string]string{},
		testTimeout: int(t.Timeout().Milliseconds()),
	}
	for _, c := range t.Checkpoints {
		state.checkpoints[c.Capture] = true
	}
	for i := range steps {
		v.step(fmt.Sprintf("%s[%d]", sp, i), &steps[i], t.Level, &state)
	}
	if t.Level == 3 && !state.leavesLevel2 {
		v.p.add(sp, "a level-3 journey has a restart or a new_context step")
	}
}

// journeyState is what the steps so far have set up.
type journeyState struct {
	contexts     map[string]bool   // open browser contexts
	checkpoints  map[string]bool   // captures the test declares
	taken        map[string]string // capture → path of the step taking it
	testTimeout  int
	leavesLevel2 bool // a restart or new_context was seen
}

func (v *validator) step(path string, s *Step, level int, st *journeyState) {
	spec, ok := actionSpecFor(s.Action)
	switch {
	case s.Action == "":
		v.p.add(path+".action", "missing: use one of %s", strings.Join(actionNames(), ", "))
		return
	case !ok:
		v.p.add(path+".action", "%q is not an action: use one of %s", s.Action, strings.Join(actionNames(), ", "))
		return
	}
	set := stepFields(s)
	for _, f := range spec.needs {
		if !slices.Contains(set, f) {
			v.p.add(path+"."+f, "%s %s needs %s", article(s.Action), s.Action, fieldNoun(f))
		}
	}
	for _, f := range set {
		if !slices.Contains(spec.needs, f) && !slices.Contains(spec.takes, f) {
			v.p.add(path+"."+f, "%s %s takes no %s", article(s.Action), s.Action, f)
		}
	}
	if spec.level3 {
		st.leavesLevel2 = true
		if level != 3 {
			v.p.add(path+".action", "%s %s is only allowed in level-3 tests", article(s.Action), s.Action)
		}
	}
	limit := MaxStepTimeoutMS
	if s.Action == ActionRestart {
		limit = MaxRestartStepTimeoutMS
	}
	switch {
	case s.TimeoutMS < 0:
		v.p.add(path+".timeout_ms", "must not be negative")
	case s.TimeoutMS > limit:
		v.p.add(path+".timeout_ms", "at most %d for %s %s", limit, article(s.Action), s.Action)
	case s.TimeoutMS > st.testTimeout:
		v.p.add(path+".timeout_ms", "at most the test's timeout (%d)", st.testTimeout)
	}

	switch s.Action {
	case ActionGoto:
		if s.URL != "" {
			v.relPath(path+".url", s.URL)
		}
	case ActionWaitForURL:
		switch {
		case s.URL == "" && s.Matches == "":
			v.p.add(path, "a wait_for_url needs a url (the exact relative URL) or matches (a regular expression)")
		case s.URL != "" && s.Matches != "":
			v.p.add(path, "a wait_for_url takes url or matches, not both")
		case s.URL != "":
			v.relPath(path+".url", s.URL)
		default:
			v.pattern(path+".matches", s.Matches)
		}
	case ActionPress:
		v.maxLen(path+".key", s.Key, MaxNameLength)
	case ActionWaitForText:
		v.maxLen(path+".text", s.Text, MaxTextLength)
	case ActionFill, ActionSelect:
		if s.Value != nil {
			v.maxLen(path+".value", *s.Value, MaxTextLength)
		}
	case ActionCheckpoint:
		switch {
		case s.Capture == "":
		case !st.checkpoints[s.Capture]:
			v.p.add(path+".capture", "the test declares no checkpoint with capture %q", s.Capture)
		case st.taken[s.Capture] != "":
			v.p.add(path+".capture", "the checkpoint %q is already taken at %s", s.Capture, st.taken[s.Capture])
		default:
			st.taken[s.Capture] = path
		}
	case ActionNewContext:
		switch {
		case s.Context == "":
		case !isName(s.Context, "-"):
			v.p.add(path+".context", "%q is not a context name: use 1 to %d lower-case letters, digits and '-'", s.Context, MaxNameLength)
		case st.contexts[s.Context]:
			v.p.add(path+".context", "the context %q is already open", s.Context)
		default:
			st.contexts[s.Context] = true
		}
	case ActionSwitchContext:
		if s.Context != "" && !st.contexts[s.Context] {
			v.p.add(path+".context", "no context named %q is open at this step", s.Context)
		}
	}
	if s.Locator != nil {
		v.locator(path+".locator", s.Locator)
	}
	if s.Expect != nil && s.Action == ActionExpect {
		v.assertion(path+".expect", s.Expect)
	}
}

// assertionSpec is what an assertion kind needs: a locator, a text
// comparison (required or optional), a count, an attribute name.
type assertionSpec struct {
	locator   bool
	match     int // 0 none, 1 optional, 2 required
	count     bool
	attribute bool
}

func assertionSpecFor(kind string) (assertionSpec, bool) {
	switch kind {
	case AssertVisible, AssertHidden:
		return assertionSpec{locator: true}, true
	case AssertText, AssertValue:
		return assertionSpec{locator: true, match: 2}, true
	case AssertCount:
		return assertionSpec{locator: true, count: true}, true
	case AssertURL, AssertTitle:
		return assertionSpec{match: 2}, true
	case AssertAttribute:
		return assertionSpec{locator: true, attribute: true, match: 1}, true
	}
	return assertionSpec{}, false
}

func assertionKinds() []string {
	return []string{AssertVisible, AssertHidden, AssertText, AssertCount, AssertValue, AssertURL, AssertTitle, AssertAttribute}
}

func (v *validator) assertion(path string, a *Assertion) {
	spec, ok := assertionSpecFor(a.Kind)
	switch {
	case a.Kind == "":
		v.p.add(path+".kind", "missing: use one of %s", strings.Join(assertionKinds(), ", "))
		return
	case !ok:
		v.p.add(path+".kind", "%q is not an assertion: use one of %s", a.Kind, strings.Join(assertionKinds(), ", "))
		return
	}
	what := article(a.Kind) + " " + a.Kind + " assertion"
	switch {
	case spec.locator && a.Locator == nil:
		v.p.add(path+".locator", "%s needs a locator", what)
	case !spec.locator && a.Locator != nil:
		v.p.add(path+".locator", "%s takes no locator", what)
	case a.Locator != nil:
		v.locator(path+".locator", a.Locator)
	}
	switch {
	case spec.count && a.Count == nil:
		v.p.add(path+".count", "%s needs a count", what)
	case !spec.count && a.Count != nil:
		v.p.add(path+".count", "%s takes no count", what)
	case a.Count != nil && (*a.Count < 0 || *a.Count > MaxCount):
		v.p.add(path+".count", "must be from 0 to %d", MaxCount)
	}
	switch {
	case spec.attribute && a.Name == "":
		v.p.add(path+".name", "%s needs the attribute's name", what)
	case !spec.attribute && a.Name != "":
		v.p.add(path+".name", "%s takes no name", what)
	case a.Name != "":
		v.maxLen(path+".name", a.Name, MaxNameLength)
	}
	if spec.match == 0 {
		if a.TextMatch.count() > 0 {
			v.p.add(path, "%s takes no equals, contains or matches", what)
		}
		return
	}
	v.textMatch(path, &a.TextMatch, spec.match == 2)
}

func (v *validator) system(path string, s *SystemTest) {
	set := map[string]bool{
		"path": s.Path != "", "probe": s.Probe != "", "paths": len(s.Paths) > 0, "method": s.Method != "",
		"body": s.Body != "", "content_type": s.ContentType != "", "headers": len(s.Headers) > 0,
		"markers": len(s.Markers) > 0,
	}
	var takes []string
	switch s.Kind {
	case SystemHealth, SystemRestart:
		takes = []string{"path"}
	case SystemOfflineBuild:
	case SystemSecurity:
		takes = []string{"probe", "paths", "method", "body", "content_type", "headers", "markers"}
	case "":
		v.p.add(path+".kind", "missing: use health, offline_build, restart or security")
		return
	default:
		v.p.add(path+".kind", "%q is not a system test kind: use health, offline_build, restart or security", s.Kind)
		return
	}
	for _, f := range []string{"path", "probe", "paths", "method", "body", "content_type", "headers", "markers"} {
		if set[f] && !slices.Contains(takes, f) {
			v.p.add(path+"."+f, "%s %s test takes no %s", article(s.Kind), s.Kind, f)
		}
	}
	if s.Kind != SystemSecurity {
		if s.Path != "" {
			v.relPath(path+".path", s.Path)
		}
		return
	}
	switch s.Probe {
	case ProbePathTraversal, ProbeDirectoryListing, ProbeErrorDisclosure:
		if len(s.Headers) > 0 {
			v.p.add(path+".headers", "only a security_headers probe takes headers")
		}
	case ProbeSecurityHeaders:
		if len(s.Headers) == 0 {
			v.p.add(path+".headers", "missing: a security_headers probe names the headers every response needs")
		}
		if len(s.Markers) > 0 {
			v.p.add(path+".markers", "a security_headers probe takes no markers")
		}
	case "":
		v.p.add(path+".probe", "missing: use path_traversal, directory_listing, error_disclosure or security_headers")
	default:
		v.p.add(path+".probe", "%q is not a probe: use path_traversal, directory_listing, error_disclosure or security_headers", s.Probe)
	}
	switch {
	case len(s.Paths) == 0:
		v.p.add(path+".paths", "missing: a probe requests at least one path")
	case len(s.Paths) > MaxProbePaths:
		v.p.add(path+".paths", "at most %d paths, found %d", MaxProbePaths, len(s.Paths))
	}
	for i, p := range s.Paths {
		v.relPath(fmt.Sprintf("%s.paths[%d]", path, i), p)
	}
	if s.Method != "" && !slices.Contains(requestMethods(), s.Method) {
		v.p.add(path+".method", "%q is not a method: use %s", s.Method, strings.Join(requestMethods(), ", "))
	}
	switch {
	case s.Body != "" && s.ContentType == "":
		v.p.add(path+".content_type", "missing: a body needs a content_type")
	case s.Body == "" && s.ContentType != "":
		v.p.add(path+".content_type", "a content_type needs a body")
	case s.Body != "" && (s.Method == "" || s.Method == "GET" || s.Method == "HEAD"):
		v.p.add(path+".body", "a %s request has no body", (&RequestTest{Method: s.Method}).EffectiveMethod())
	}
	if len(s.Body) > MaxBodyBytes {
		v.p.add(path+".body", "at most %d KiB", MaxBodyBytes>>10)
	}
	if len(s.Headers) > MaxListItems {
		v.p.add(path+".headers", "at most %d headers, found %d", MaxListItems, len(s.Headers))
	}
	for i, h := range s.Headers {
		if !isToken(h) {
			v.p.add(fmt.Sprintf("%s.headers[%d]", path, i), "%q is not a header name", h)
		}
	}
	v.texts(path+".markers", s.Markers, false)
}

// locatorKinds are the mutually exclusive ways of finding elements.
func locatorKinds(l *Locator) []string {
	var set []string
	for _, k := range []struct {
		name, value string
	}{{"role", l.Role}, {"text", l.Text}, {"label", l.Label}, {"placeholder", l.Placeholder}, {"test_id", l.TestID}, {"css", l.CSS}} {
		if k.value != "" {
			set = append(set, k.name)
		}
	}
	return set
}

func (v *validator) locator(path string, l *Locator) {
	kinds := locatorKinds(l)
	switch len(kinds) {
	case 0:
		v.p.add(path, "a locator needs one of role, text, label, placeholder, test_id and css")
	case 1:
	default:
		v.p.add(path, "give only one of role, text, label, placeholder, test_id and css (found %s)", strings.Join(kinds, " and "))
	}
	if l.Role != "" && !slices.Contains(ariaRoles(), l.Role) {
		v.p.add(path+".role", "%q is not an ARIA role", l.Role)
	}
	if l.Name != "" && l.Role == "" {
		v.p.add(path+".name", "only a role locator takes a name")
	}
	if l.Exact && l.Name == "" && l.Text == "" && l.Label == "" && l.Placeholder == "" {
		v.p.add(path+".exact", "exact applies to a role's name, a text, a label or a placeholder")
	}
	if l.Nth != nil && (*l.Nth < 0 || *l.Nth > MaxNth) {
		v.p.add(path+".nth", "must be from 0 to %d", MaxNth)
	}
	for _, f := range []struct{ name, value string }{
		{"role", l.Role}, {"name", l.Name}, {"text", l.Text}, {"label", l.Label},
		{"placeholder", l.Placeholder}, {"test_id", l.TestID}, {"css", l.CSS},
	} {
		v.maxLen(path+"."+f.name, f.value, MaxLocatorLength)
	}
}

// count is how many comparisons are set.
func (m *TextMatch) count() int {
	n := 0
	if m.Equals != nil {
		n++
	}
	if m.Contains != "" {
		n++
	}
	if m.Matches != "" {
		n++
	}
	return n
}

func (v *validator) textMatch(path string, m *TextMatch, required bool) {
	switch n := m.count(); {
	case n == 0 && required:
		v.p.add(path, "give one of equals, contains or matches")
	case n > 1:
		v.p.add(path, "give only one of equals, contains and matches")
	}
	if m.Equals != nil {
		v.maxLen(path+".equals", *m.Equals, MaxTextLength)
	}
	v.maxLen(path+".contains", m.Contains, MaxTextLength)
	if m.Matches != "" {
		v.pattern(path+".matches", m.Matches)
	}
}

// texts checks a list of texts or, with patterns, of regular expressions.
func (v *validator) texts(path string, list []string, patterns bool) {
	if len(list) > MaxListItems {
		v.p.add(path, "at most %d entries, found %d", MaxListItems, len(list))
	}
	for i, s := range list {
		ip := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case s == "":
			v.p.add(ip, "an empty text checks nothing")
		case patterns:
			v.pattern(ip, s)
		default:
			v.maxLen(ip, s, MaxTextLength)
		}
	}
}

// pattern checks a regular expression: RE2 syntax, as Proctor evaluates them in Go.
func (v *validator) pattern(path, expr string) {
	if utf8.RuneCountInString(expr) > MaxPatternLength {
		v.p.add(path, "at most %d characters", MaxPatternLength)
		return
	}
	if _, err := regexp.Compile(expr); err != nil {
		v.p.add(path, "the regular expression does not compile: %v", err)
	}
}

// relPath checks a path relative to the base URL: it starts with "/" (not
// "//", which would name another host), may carry a query, and has no spaces,
// control characters or fragment. Percent-encoding and dot segments are kept
// as written, so probes can send them.
func (v *validator) relPath(path, p string) {
	switch {
	case p == "":
		v.p.add(path, `missing: a path starting with "/"`)
	case !strings.HasPrefix(p, "/"):
		v.p.add(path, `%q is not a path relative to the base URL: start it with "/"`, p)
	case strings.HasPrefix(p, "//"):
		v.p.add(path, `%q would leave the candidate's site: start it with a single "/"`, p)
	case len(p) > MaxPathLength:
		v.p.add(path, "at most %d characters", MaxPathLength)
	case strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		v.p.add(path, "%q has spaces or control characters: percent-encode them", p)
	case strings.Contains(p, "#"):
		v.p.add(path, "%q has a fragment, which is never sent", p)
	}
}

func (v *validator) stringMap(path string, m map[string]string, limit int) {
	if len(m) > limit {
		v.p.add(path, "at most %d entries, found %d", limit, len(m))
	}
	for _, k := range sortedKeys(m) {
		if k == "" {
			v.p.add(path, "a name is empty")
			continue
		}
		v.maxLen(joinKey(path, k), m[k], MaxTextLength)
	}
}

// slug checks a name of lower-case letters, digits and hyphens, unique among
// seen (name → path of its first use); what says where it must be unique.
func (v *validator) slug(path, name, what string, seen map[string]string) bool {
	switch {
	case name == "":
		v.p.add(path, "missing: give a name")
	case !isName(name, "-"):
		v.p.add(path, "%q is not a name: use 1 to %d lower-case letters, digits and '-', starting with a letter or digit", name, MaxNameLength)
	case seen[name] != "":
		v.p.add(path, "%s already has the name %q (at %s)", what, name, seen[name])
	default:
		seen[name] = path
		return true
	}
	return false
}

func (v *validator) maxLen(path, s string, limit int) {
	if utf8.RuneCountInString(s) > limit {
		v.p.add(path, "at most %d characters", limit)
	}
}

// isName reports whether s is 1 to MaxNameLength lower-case letters, digits and
// the extra characters, starting with a letter or digit.
func isName(s, extra string) bool {
	if s == "" || len(s) > MaxNameLength {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune(extra, c)) {
			return false
		}
	}
	return true
}

// isToken reports whether s is an HTTP token (a valid header name).
func isToken(s string) bool {
	if s == "" || len(s) > MaxNameLength {
		return false
	}
	for _, c := range s {
		if c > '~' || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// article is "a" or "an" before a word.
func article(word string) string {
	if strings.HasPrefix(word, "url") {
		return "a"
	}
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// ariaRoles are the roles Playwright's getByRole accepts.
func ariaRoles() []string {
	return []string{
		"alert", "alertdialog", "application", "article", "banner", "blockquote", "button", "caption", "cell",
		"checkbox", "code", "columnheader", "combobox", "complementary", "contentinfo", "definition", "deletion",
		"dialog", "directory", "document", "emphasis", "feed", "figure", "form", "generic", "grid", "gridcell",
		"group", "heading", "img", "insertion", "link", "list", "listbox", "listitem", "log", "main", "marquee",
		"math", "meter", "menu", "menubar", "menuitem", "menuitemcheckbox", "menuitemradio", "navigation", "none",
		"note", "option", "paragraph", "presentation", "progressbar", "radio", "radiogroup", "region", "row",
		"rowgroup", "rowheader", "scrollbar", "search", "searchbox", "separator", "slider", "spinbutton", "status",
		"strong", "subscript", "superscript", "switch", "tab", "table", "tablist", "tabpanel", "term", "textbox",
		"time", "timer", "toolbar", "tooltip", "tree", "treegrid", "treeitem",
	}
}
