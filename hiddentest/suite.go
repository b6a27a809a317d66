// Package hiddentest defines Proctor's hidden-test suites: the declarative JSON
// form in which a hidden-tests benchmark (WebsiteBench style) states how a
// candidate's rebuild of a reference website is checked. A suite holds Request
// tests (direct HTTP checks), Browser journeys at three levels (L1 an immediate
// response on one page, L2 a state change read back later, L3 persistence, other
// visitors and recovery after a restart) with visual checkpoints, and System
// tests (health, offline build, restart, security probes).
//
// The package parses and validates suites; it runs nothing. docs/hidden-tests.md
// documents the format. Test definitions are hidden from teams: what they may
// see of a suite is its Summary.
package hiddentest

import (
	"slices"
	"time"
)

// FormatVersion is the value of "version" this package reads.
const FormatVersion = 1

// Test groups.
const (
	GroupRequest = "request"
	GroupBrowser = "browser"
	GroupSystem  = "system"
)

// Journey step actions.
const (
	ActionGoto          = "goto"
	ActionClick         = "click"
	ActionFill          = "fill"
	ActionSelect        = "select"
	ActionCheck         = "check"
	ActionUncheck       = "uncheck"
	ActionSubmit        = "submit"
	ActionPress         = "press"
	ActionReload        = "reload"
	ActionWaitForText   = "wait_for_text"
	ActionWaitForURL    = "wait_for_url"
	ActionExpect        = "expect"
	ActionCheckpoint    = "checkpoint"
	ActionRestart       = "restart"
	ActionNewContext    = "new_context"
	ActionSwitchContext = "switch_context"
)

// Assertion kinds of an expect step.
const (
	AssertVisible   = "visible"
	AssertHidden    = "hidden"
	AssertText      = "text"
	AssertCount     = "count"
	AssertValue     = "value"
	AssertURL       = "url"
	AssertTitle     = "title"
	AssertAttribute = "attribute"
)

// System test kinds.
const (
	SystemHealth       = "health"
	SystemOfflineBuild = "offline_build"
	SystemRestart      = "restart"
	SystemSecurity     = "security"
)

// Security probes of a security system test.
const (
	ProbePathTraversal    = "path_traversal"
	ProbeDirectoryListing = "directory_listing"
	ProbeErrorDisclosure  = "error_disclosure"
	ProbeSecurityHeaders  = "security_headers"
)

// MainContext is the name of the browser context every journey starts in.
const MainContext = "main"

// DefaultThreshold is the normalised SSIM score a checkpoint needs when it
// states no threshold (WebsiteBench's τ).
const DefaultThreshold = 0.75

// Default viewport of journeys and reference captures.
const (
	DefaultViewportWidth  = 1280
	DefaultViewportHeight = 800
)

// How many of a suite's tests run at once against one candidate.
const (
	DefaultParallelism = 4
	MaxParallelism     = 16
)

// Suite is one task's hidden-test suite.
type Suite struct {
	// Version is the format version, FormatVersion.
	Version int `json:"version"`
	// Site names the reference site the suite was written against (the task's site).
	Site string `json:"site"`
	// Description says what the suite covers; like the tests, it is hidden.
	Description string `json:"description,omitempty"`
	// Viewport is the browser window of every journey and of the reference
	// captures (DefaultViewportWidth × DefaultViewportHeight when absent).
	Viewport *Viewport `json:"viewport,omitempty"`
	// Parallelism caps how many tests run against the candidate at once
	// (1 to MaxParallelism; 0 means DefaultParallelism). A small candidate
	// may not take more; tests that restart it always run alone.
	Parallelism int `json:"parallelism,omitempty"`
	// Regions are the declared non-deterministic parts of pages (timestamps,
	// order numbers, per-visitor values); they are masked in every checkpoint.
	Regions []Region `json:"regions,omitempty"`
	// Tests are the hidden tests, in the order results list them.
	Tests []Test `json:"tests"`
}

// Viewport is a browser window size in CSS pixels.
type Viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Region is a declared non-deterministic region of the site's pages.
type Region struct {
	// Name identifies the region in results (a slug, unique in the suite).
	Name string `json:"name"`
	// Locator finds the region's elements; every match inside a checkpoint's
	// region is masked in both the reference and the candidate image.
	Locator Locator `json:"locator"`
	// Reason says why the region varies.
	Reason string `json:"reason,omitempty"`
}

// Test is one hidden test. Exactly one of Request, Journey and System is set,
// matching Group.
type Test struct {
	// ID is unique in the suite (a slug); results and reruns refer to it.
	ID string `json:"id"`
	// Group is GroupRequest, GroupBrowser or GroupSystem.
	Group string `json:"group"`
	// Level is a browser test's level: 1, 2 or 3. Other groups have none.
	Level int `json:"level,omitempty"`
	// Title says in a line what the test checks; shown with its result.
	Title string `json:"title"`
	// TimeoutMS bounds the whole test in milliseconds (0: the group's default).
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Request is a request test's HTTP exchange.
	Request *RequestTest `json:"request,omitempty"`
	// Journey is a browser test's steps.
	Journey *Journey `json:"journey,omitempty"`
	// System is a system test's check.
	System *SystemTest `json:"system,omitempty"`
	// Checkpoints are a browser test's visual comparisons with reference captures.
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
}

// RequestTest is one HTTP request sent straight to the candidate and what its
// response must show.
type RequestTest struct {
	// Method is GET (the default), HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
	Method string `json:"method,omitempty"`
	// Path is appended to the candidate's base URL as written; it starts with
	// "/" and may carry a query.
	Path string `json:"path"`
	// Query holds parameters added to the path's query (encoded, sorted by name).
	Query map[string]string `json:"query,omitempty"`
	// Form is sent as an application/x-www-form-urlencoded body (sorted by name).
	Form map[string]string `json:"form,omitempty"`
	// Body is a raw body sent with ContentType; it excludes Form.
	Body string `json:"body,omitempty"`
	// ContentType is the raw body's media type.
	ContentType string `json:"content_type,omitempty"`
	// Headers are extra request headers.
	Headers map[string]string `json:"headers,omitempty"`
	// FollowRedirects makes the client follow redirects (with a cookie jar);
	// otherwise the first response is checked.
	FollowRedirects bool `json:"follow_redirects,omitempty"`
	// MaxRedirects caps followed redirects (0: DefaultMaxRedirects).
	MaxRedirects int `json:"max_redirects,omitempty"`
	// Expect is what the response must show.
	Expect RequestExpect `json:"expect"`
}

// RequestExpect is what a request test's response must show; every stated
// expectation must hold.
type RequestExpect struct {
	// Status is the exact status code (404) or class ("2xx"). Required.
	Status *Status `json:"status"`
	// Headers are expectations on response headers.
	Headers []HeaderExpect `json:"headers,omitempty"`
	// BodyContains lists texts the body must contain.
	BodyContains []string `json:"body_contains,omitempty"`
	// BodyNotContains lists texts the body must not contain.
	BodyNotContains []string `json:"body_not_contains,omitempty"`
	// BodyMatches lists regular expressions (RE2) the body must match.
	BodyMatches []string `json:"body_matches,omitempty"`
	// Location is the redirect target, relative to the base URL, of a request
	// that does not follow redirects.
	Location *TextMatch `json:"location,omitempty"`
}

// HeaderExpect is an expectation on one response header. With no condition
// the header must be present.
type HeaderExpect struct {
	// Name is the header's name (case does not matter).
	Name string `json:"name"`
	// Absent requires the header to be missing.
	Absent bool `json:"absent,omitempty"`
	TextMatch
}

// TextMatch compares a text: at most one of Equals, Contains and Matches is set.
// Where a comparison is required, one of them must be.
type TextMatch struct {
	// Equals requires the whole text.
	Equals *string `json:"equals,omitempty"`
	// Contains requires a substring.
	Contains string `json:"contains,omitempty"`
	// Matches requires a match of a regular expression (RE2 syntax).
	Matches string `json:"matches,omitempty"`
}

// Journey is a browser test's steps, run in order in a fresh browser context.
type Journey struct {
	Steps []Step `json:"steps"`
}

// Step is one journey step: an action, a wait, an assertion, a checkpoint or,
// at level 3, a restart or a change of browser context. Which fields a step
// takes depends on its action (docs/hidden-tests.md has the table).
type Step struct {
	// Action is one of the Action* constants.
	Action string `json:"action"`
	// URL is a goto's path relative to the base URL, or the exact relative URL
	// a wait_for_url waits for.
	URL string `json:"url,omitempty"`
	// Matches is the regular expression a wait_for_url waits for.
	Matches string `json:"matches,omitempty"`
	// Locator is the element acted on, or the scope of a wait_for_text.
	Locator *Locator `json:"locator,omitempty"`
	// Value is the text a fill types or the option (value or label) a select picks.
	Value *string `json:"value,omitempty"`
	// Key is the key a press presses, in Playwright's notation ("Enter", "Control+A").
	Key string `json:"key,omitempty"`
	// Text is the text a wait_for_text waits for.
	Text string `json:"text,omitempty"`
	// Context names the browser context a new_context opens or a switch_context
	// returns to.
	Context string `json:"context,omitempty"`
	// Capture names the test's checkpoint a checkpoint step takes.
	Capture string `json:"capture,omitempty"`
	// Expect is an expect step's assertion.
	Expect *Assertion `json:"expect,omitempty"`
	// TimeoutMS bounds the step in milliseconds (0: the action's default).
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// Assertion is an expect step's condition; it is retried until it holds or the
// step's timeout passes. Which fields it takes depends on Kind.
type Assertion struct {
	// Kind is one of the Assert* constants.
	Kind string `json:"kind"`
	// Locator is the element the assertion is about.
	Locator *Locator `json:"locator,omitempty"`
	// Count is a count assertion's number of matching elements.
	Count *int `json:"count,omitempty"`
	// Name is an attribute assertion's attribute.
	Name string `json:"name,omitempty"`
	TextMatch
}

// Locator finds elements the way Playwright's locators do: exactly one of Role,
// Text, Label, Placeholder, TestID and CSS is set.
type Locator struct {
	// Role is an ARIA role (Playwright's getByRole), with an optional accessible Name.
	Role string `json:"role,omitempty"`
	Name string `json:"name,omitempty"`
	// Text finds elements by their text (getByText).
	Text string `json:"text,omitempty"`
	// Label finds form controls by their label (getByLabel).
	Label string `json:"label,omitempty"`
	// Placeholder finds inputs by their placeholder (getByPlaceholder).
	Placeholder string `json:"placeholder,omitempty"`
	// TestID finds elements by their data-testid attribute (getByTestId).
	TestID string `json:"test_id,omitempty"`
	// CSS is a CSS selector.
	CSS string `json:"css,omitempty"`
	// Exact makes Name, Text, Label or Placeholder match the whole text, case
	// included; otherwise a case-insensitive substring matches.
	Exact bool `json:"exact,omitempty"`
	// Nth picks the nth match (0-based) when several elements match.
	Nth *int `json:"nth,omitempty"`
}

// Checkpoint is a visual comparison: the screenshot of Region is compared with
// the reference capture named Capture by normalised SSIM.
type Checkpoint struct {
	// Capture names the reference capture (a slug); it also names the
	// checkpoint within the test.
	Capture string `json:"capture"`
	// Region is the element whose screenshot is compared.
	Region Locator `json:"region"`
	// Threshold is the score needed, in (0, 1] (DefaultThreshold when absent).
	Threshold *float64 `json:"threshold,omitempty"`
	// Masks are elements masked in both images besides the suite's regions.
	Masks []Locator `json:"masks,omitempty"`
}

// SystemTest is a system test's check. Which fields it takes depends on Kind.
type SystemTest struct {
	// Kind is one of the System* constants.
	Kind string `json:"kind"`
	// Path is what a health or restart test requests (default: the health URL
	// the candidate declared, else "/").
	Path string `json:"path,omitempty"`
	// Probe is a security test's probe, one of the Probe* constants.
	Probe string `json:"probe,omitempty"`
	// Paths are the paths a security probe requests, sent as written (no
	// dot-segment removal, percent-encoding kept).
	Paths []string `json:"paths,omitempty"`
	// Method is the probe requests' method (GET when absent).
	Method string `json:"method,omitempty"`
	// Body and ContentType are sent with every probe request when set.
	Body        string `json:"body,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// Headers are the response headers a security_headers probe requires.
	Headers []string `json:"headers,omitempty"`
	// Markers are texts that, found in a response body, fail the probe, in
	// addition to the probe's built-in ones (DefaultMarkers).
	Markers []string `json:"markers,omitempty"`
}

// Defaults and caps of timeouts, in milliseconds.
const (
	DefaultRequestTimeoutMS      = 10_000
	MaxRequestTimeoutMS          = 60_000
	DefaultBrowserTimeoutMS      = 60_000
	MaxBrowserTimeoutMS          = 300_000
	DefaultStepTimeoutMS         = 10_000
	MaxStepTimeoutMS             = 60_000
	DefaultRestartStepTimeoutMS  = 60_000
	MaxRestartStepTimeoutMS      = 300_000
	DefaultHealthTimeoutMS       = 10_000
	MaxHealthTimeoutMS           = 120_000
	DefaultRestartTimeoutMS      = 120_000
	MaxRestartTimeoutMS          = 600_000
	DefaultOfflineBuildTimeoutMS = 600_000
	MaxOfflineBuildTimeoutMS     = 1_800_000
	DefaultSecurityTimeoutMS     = 30_000
	MaxSecurityTimeoutMS         = 120_000
)

// Redirects a request test follows.
const (
	DefaultMaxRedirects = 10
	MaxRedirectsCap     = 20
)

// timeoutBounds returns the default and the cap of a test's timeout.
func (t *Test) timeoutBounds() (def, limit int) {
	switch {
	case t.Group == GroupRequest:
		return DefaultRequestTimeoutMS, MaxRequestTimeoutMS
	case t.Group == GroupBrowser:
		return DefaultBrowserTimeoutMS, MaxBrowserTimeoutMS
	case t.Group == GroupSystem && t.System != nil:
		switch t.System.Kind {
		case SystemHealth:
			return DefaultHealthTimeoutMS, MaxHealthTimeoutMS
		case SystemRestart:
			return DefaultRestartTimeoutMS, MaxRestartTimeoutMS
		case SystemOfflineBuild:
			return DefaultOfflineBuildTimeoutMS, MaxOfflineBuildTimeoutMS
		case SystemSecurity:
			return DefaultSecurityTimeoutMS, MaxSecurityTimeoutMS
		}
	}
	return DefaultRequestTimeoutMS, MaxRequestTimeoutMS
}

// Timeout is how long the whole test may take: its timeout_ms or its group's
// (and for system tests its kind's) default.
func (t *Test) Timeout() time.Duration {
	def, _ := t.timeoutBounds()
	return ms(t.TimeoutMS, def)
}

// Timeout is how long the step may take: its timeout_ms or its action's default.
func (s *Step) Timeout() time.Duration {
	if s.Action == ActionRestart {
		return ms(s.TimeoutMS, DefaultRestartStepTimeoutMS)
	}
	return ms(s.TimeoutMS, DefaultStepTimeoutMS)
}

// Redirects is how many redirects the request follows: 0 when it follows none.
func (r *RequestTest) Redirects() int {
	switch {
	case !r.FollowRedirects:
		return 0
	case r.MaxRedirects > 0:
		return r.MaxRedirects
	}
	return DefaultMaxRedirects
}

// EffectiveMethod is the request's method, GET when none is given.
func (r *RequestTest) EffectiveMethod() string {
	if r.Method == "" {
		return "GET"
	}
	return r.Method
}

// EffectiveThreshold is the checkpoint's threshold, DefaultThreshold when none is given.
func (c *Checkpoint) EffectiveThreshold() float64 {
	if c.Threshold == nil {
		return DefaultThreshold
	}
	return *c.Threshold
}

// EffectiveViewport is the suite's viewport, the default one when none is given.
func (s *Suite) EffectiveViewport() Viewport {
	if s.Viewport == nil {
		return Viewport{Width: DefaultViewportWidth, Height: DefaultViewportHeight}
	}
	return *s.Viewport
}

// EffectiveParallelism is the suite's parallelism, DefaultParallelism when
// none is given.
func (s *Suite) EffectiveParallelism() int {
	if s.Parallelism <= 0 {
		return DefaultParallelism
	}
	return min(s.Parallelism, MaxParallelism)
}

// Captures lists the reference captures the suite's checkpoints name, sorted,
// each once.
func (s *Suite) Captures() []string {
	var names []string
	for _, t := range s.Tests {
		for _, c := range t.Checkpoints {
			names = append(names, c.Capture)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// CheckpointStep returns the index of the journey step that takes the named
// checkpoint, or -1 when none does: the checkpoint is then taken after the
// journey's last step.
func (t *Test) CheckpointStep(capture string) int {
	if t.Journey == nil {
		return -1
	}
	for i, st := range t.Journey.Steps {
		if st.Action == ActionCheckpoint && st.Capture == capture {
			return i
		}
	}
	return -1
}

// RestartsCandidate reports whether the test takes the candidate down: a
// journey with a restart step, or a restart or offline-build system test.
// Nothing else may run against the candidate meanwhile.
func (t *Test) RestartsCandidate() bool {
	switch {
	case t.Journey != nil:
		return slices.ContainsFunc(t.Journey.Steps, func(st Step) bool { return st.Action == ActionRestart })
	case t.System != nil:
		return t.System.Kind == SystemRestart || t.System.Kind == SystemOfflineBuild
	}
	return false
}

func ms(v, def int) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Millisecond
}
