package webarena

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// probeJS is the page-side reader every program_html probe runs (probe.js).
//
//go:embed probe.js
var probeJS string

// Page targets of probe.js.
const (
	targetPage        = "page"
	targetRedditPost  = "reddit_post"
	targetLatestOrder = "latest_order"
)

// Probe timing, in milliseconds. WebArena waits three seconds after opening
// a page before reading it; a probe reads as soon as the locator stops throwing
// and gives up after about as long.
const (
	patienceOpened = 3000  // a page opened for the probe
	patiencePrep   = 1000  // the last page after preparation steps (a click that unfolds a form section)
	loadWaitMS     = 10000 // a new window's load
)

// The func: helpers of WebArena's program_html that Proctor translates.
const (
	funcRedditPostURL    = "reddit_get_post_url"
	funcLatestOrderURL   = "shopping_get_latest_order_url"
	funcGitLabMemberRole = "gitlab_get_project_memeber_role" // sic: WebArena's spelling
	funcReviewRating     = "shopping_get_sku_latest_review_rating"
	funcReviewAuthor     = "shopping_get_sku_latest_review_author"
)

// lastURLArg and pageArg are the placeholders WebArena replaces with the last
// page's URL and the page object.
const (
	lastURLArg = "__last_url__"
	pageArg    = "__page__"
)

// target is one program_html entry: which page (url), what to read from it
// (locator), what to do first (prep_actions) and what must be found.
type target struct {
	URL              string          `json:"url"`
	Locator          string          `json:"locator"`
	PrepActions      []string        `json:"prep_actions"`
	RequiredContents json.RawMessage `json:"required_contents"`
}

// unsupportedError marks a program_html entry Proctor cannot read from a
// browser page, such as a helper that calls a site's API with administrator
// credentials. Its verdict is an error, never a pass.
type unsupportedError struct {
	form string // the url or locator as written in the spec
	why  string
}

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("%s is not supported: %s", e.form, e.why)
}

// Probes returns the page reads the task's program_html needs, one per entry
// that can be read from the browser, for the runner to take at the end of the
// episode (eval.PageProbe). The task must be resolved as the episode sees it:
// site placeholders in its EvalSpec and StartURLs replaced by URLs.
//
// Entries whose helper Proctor cannot reproduce in a browser (reading the
// shop's reviews through its REST API with administrator credentials) get no
// probe; Evaluate gives such tasks the verdict error. A task without
// program_html has no probes (nil). The error reports a spec that cannot be
// decoded or a URL that is not resolved; Evaluate reports the same spec problem.
func Probes(task *models.Task) ([]eval.PageProbe, error) {
	if task == nil {
		return nil, errors.New("webarena probes: no task given")
	}
	s, err := parseSpec(task.EvalSpec)
	if err != nil {
		return nil, fmt.Errorf("webarena probes for task %s: %w", task.ExternalID, err)
	}
	if !s.has(TypeProgramHTML) {
		return nil, nil
	}
	targets, err := parseTargets(s.ProgramHTML)
	if err != nil {
		return nil, fmt.Errorf("webarena probes for task %s: %w", task.ExternalID, err)
	}
	var probes []eval.PageProbe
	for i, t := range targets {
		locator, err := probeLocator(i, t)
		var unsupported *unsupportedError
		if errors.As(err, &unsupported) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("webarena probes for task %s: program_html[%d]: %w", task.ExternalID, i, err)
		}
		u, err := probeURL(t, task.StartURLs)
		if errors.As(err, &unsupported) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("webarena probes for task %s: program_html[%d]: %w", task.ExternalID, i, err)
		}
		probes = append(probes, eval.PageProbe{URL: u, Locator: locator})
	}
	return probes, nil
}

// parseTargets decodes program_html: a non-empty list of entries.
func parseTargets(raw json.RawMessage) ([]target, error) {
	if isNull(raw) {
		return nil, errors.New("program_html is missing")
	}
	var ts []target
	if err := json.Unmarshal(raw, &ts); err != nil {
		return nil, fmt.Errorf("program_html must be a list of {url, locator, required_contents}: %v", err)
	}
	if len(ts) == 0 {
		return nil, errors.New("program_html is empty: there is nothing to check")
	}
	return ts, nil
}

// pageKind says which page an entry reads: "last" (the active tab), "url" (a
// page the runner opens), or a WebArena helper that finds the page.
func pageKind(t target) (string, error) {
	switch {
	case t.URL == "last":
		return "last", nil
	case strings.HasPrefix(t.URL, "func:"):
		name, args, err := parseFunc(t.URL)
		if err != nil {
			return "", &unsupportedError{form: t.URL, why: err.Error()}
		}
		switch {
		case name == funcRedditPostURL && len(args) == 1 && args[0] == lastURLArg:
			return targetRedditPost, nil
		case name == funcLatestOrderURL && len(args) == 0:
			return targetLatestOrder, nil
		}
		return "", &unsupportedError{form: t.URL, why: "Proctor knows the url helpers reddit_get_post_url('__last_url__') and shopping_get_latest_order_url()"}
	case strings.TrimSpace(t.URL) == "":
		return "", errors.New("url is empty")
	}
	return "url", nil
}

// probeURL is the page the runner opens for an entry: "last" for the active
// tab (also for the reddit helper, which opens the post from there), the
// customer's order history for the latest-order helper.
func probeURL(t target, startURLs []string) (string, error) {
	kind, err := pageKind(t)
	if err != nil {
		return "", err
	}
	switch kind {
	case "last", targetRedditPost:
		return "last", nil
	case targetLatestOrder:
		// WebArena asks the shop's REST API (as its administrator) for the
		// newest order; the customer's order history lists the same order
		// first when, as in WebArena, the agent's account is the one ordering.
		if len(startURLs) == 0 {
			return "", fmt.Errorf("%s needs the shop's URL, the task's start URL, and the task has none", t.URL)
		}
		base, err := webURL(startURLs[0])
		if err != nil {
			return "", fmt.Errorf("%s needs the shop's URL from the task's start URL: %w", t.URL, err)
		}
		return strings.TrimRight(base.Scheme+"://"+base.Host+base.EscapedPath(), "/") + "/sales/order/history/", nil
	}
	if _, err := webURL(t.URL); err != nil {
		return "", err
	}
	return t.URL, nil
}

// webURL parses an absolute http(s) URL; anything else usually means a site
// placeholder was not resolved.
func webURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL (are the site placeholders resolved?)", raw)
	}
	return u, nil
}

// probeLocator is the JavaScript the runner evaluates for entry i: probe.js
// applied to the entry's reader, preparation steps and page. It names the
// entry, so that every entry's probe is distinct and Evaluate can find its
// result.
func probeLocator(i int, t target) (string, error) {
	kind, err := pageKind(t)
	if err != nil {
		return "", err
	}
	read, err := readerJS(t.Locator)
	if err != nil {
		return "", err
	}
	how := struct {
		Target   string `json:"target"`
		Patience int    `json:"patience"`
		LoadWait int    `json:"loadWait"`
	}{Target: targetPage, LoadWait: loadWaitMS}
	switch kind {
	case "last":
		if len(t.PrepActions) > 0 {
			how.Patience = patiencePrep
		}
	case "url":
		how.Patience = patienceOpened
	default:
		how.Target, how.Patience = kind, patienceOpened
	}
	prep := make([]string, len(t.PrepActions))
	for j, p := range t.PrepActions {
		prep[j] = windowFunc(p)
	}
	return fmt.Sprintf("/* WebArena program_html[%d] */ (%s)(%s, [%s], %s)",
		i, runtimeJS(), read, strings.Join(prep, ", "), mustJSON(how)), nil
}

// runtimeJS is probe.js without its header comment.
func runtimeJS() string {
	if i := strings.Index(probeJS, "async ("); i >= 0 {
		return strings.TrimSpace(probeJS[i:])
	}
	return strings.TrimSpace(probeJS)
}

// windowFunc turns a JavaScript expression into a function of the window it
// runs in, so that it can read a page opened in a new window.
func windowFunc(expr string) string {
	return "(document, window, location) => (" + expr + "\n)"
}

// readerJS translates a program_html locator into a windowFunc: empty reads
// the page's HTML (WebArena's page.content()), "document.…" and
// "[...document.…" expressions are used as they are, and func: helpers are
// translated where they only read the page.
func readerJS(locator string) (string, error) {
	switch {
	case strings.TrimSpace(locator) == "":
		return windowFunc(`(document.doctype ? new window.XMLSerializer().serializeToString(document.doctype) : "") + (document.documentElement ? document.documentElement.outerHTML : "")`), nil
	case strings.HasPrefix(locator, "document.") || strings.HasPrefix(locator, "[...document."):
		return windowFunc(locator), nil
	case strings.HasPrefix(locator, "func:"):
		name, args, err := parseFunc(locator)
		if err != nil {
			return "", &unsupportedError{form: locator, why: err.Error()}
		}
		switch name {
		case funcGitLabMemberRole:
			if len(args) != 2 || args[0] != pageArg {
				return "", &unsupportedError{form: locator, why: "expected (__page__, '<account>')"}
			}
			return windowFunc(gitlabMemberRoleJS(args[1])), nil
		case funcReviewRating, funcReviewAuthor:
			return "", &unsupportedError{form: locator, why: "WebArena reads the product's reviews through the shop's REST API with the shop administrator's credentials, which the browser does not have"}
		}
		return "", &unsupportedError{form: locator, why: "Proctor knows the locator helper gitlab_get_project_memeber_role(__page__, '<account>')"}
	}
	return "", &unsupportedError{form: locator, why: "a locator is empty, a JavaScript expression starting with document. or [...document., or a func: helper"}
}

// gitlabMemberRoleJS reads an account's role from a GitLab project members
// page, as WebArena's gitlab_get_project_memeber_role does: the role in the
// row whose account handle is @account; a missing account throws (WebArena
// reads an empty role then).
func gitlabMemberRoleJS(account string) string {
	handle := mustJSON("@" + account)
	return `(() => {
  const handles = document.querySelectorAll("td[data-label='Account'] span.gl-avatar-labeled-sublabel");
  let row = -1;
  for (let i = 0; i < handles.length; i++) {
    if (handles[i].outerText === ` + string(handle) + `) { row = i; break; }
  }
  return document.querySelectorAll("td.col-max-role span")[row].outerText;
})()`
}

// funcCall matches WebArena's "func:name(args)" helper calls.
var funcCall = regexp.MustCompile(`(?s)^func:([A-Za-z_][A-Za-z0-9_]*)\((.*)\)\s*$`)

// parseFunc splits "func:name('a', __page__)" into its name and arguments,
// with quoted arguments unquoted.
func parseFunc(s string) (string, []string, error) {
	m := funcCall.FindStringSubmatch(s)
	if m == nil {
		return "", nil, errors.New("not a helper call func:name(arguments)")
	}
	var (
		args    []string
		cur     strings.Builder
		quote   byte
		started bool
	)
	body := m[2]
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case quote != 0 && c == '\\' && i+1 < len(body):
			i++
			cur.WriteByte(body[i])
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, started = c, true
		case c == ',':
			args = append(args, strings.TrimSpace(cur.String()))
			cur.Reset()
			started = false
		case c == ' ' || c == '\t':
			if !started {
				continue
			}
			cur.WriteByte(c)
		default:
			started = true
			cur.WriteByte(c)
		}
	}
	if quote != 0 {
		return "", nil, errors.New("an argument's quote is not closed")
	}
	if last := strings.TrimSpace(cur.String()); last != "" || started || len(args) > 0 {
		args = append(args, last)
	}
	return m[1], args, nil
}
