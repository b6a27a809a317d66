package connect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"proctor/models"
)

// The episode's MCP tools follow Playwright MCP (@playwright/mcp): the same
// names, arguments and snapshot layout, so an agent written for it works by
// changing its server URL. Every tool that acts is one recorded step of the
// episode and takes an optional "thought" the timeline shows. Two tools are
// Proctor's own: submit_answer and give_up, which end the episode.

// ServerVersion is the version the episode's MCP server reports.
const ServerVersion = "1"

// actionWait bounds how long an acting tool waits for its step to be taken
// and the page observed again.
const actionWait = 2 * time.Minute

// refPattern is the shape of a snapshot ref (Playwright MCP's, without
// frames: the episode's ids are unique across frames).
var refPattern = regexp.MustCompile(`^e[0-9]{1,9}$`)

// Schema helpers.
func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}
func num(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", Description: desc}
}
func boolean(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc}
}
func enum(desc string, values ...string) *jsonschema.Schema {
	s := str(desc)
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}
func list(desc string, items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: desc, Items: items}
}

// object is a tool's input schema; acting tools get "thought" too.
func object(acting bool, required []string, props map[string]*jsonschema.Schema) *jsonschema.Schema {
	if props == nil {
		props = map[string]*jsonschema.Schema{}
	}
	if acting {
		props["thought"] = str("Optional: why you take this action. Proctor shows it on the episode's timeline.")
	}
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required,
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

const (
	elementDesc = "Human-readable element description used to obtain permission to interact with the element"
	targetDesc  = "Exact target element reference from the page snapshot (e.g. e12), or a unique element selector"
)

// targetProps are the element arguments of Playwright MCP's element tools.
func targetProps(extra map[string]*jsonschema.Schema) map[string]*jsonschema.Schema {
	p := map[string]*jsonschema.Schema{"element": str(elementDesc), "target": str(targetDesc)}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// Tool arguments. Unknown arguments are refused by the schemas.
type (
	targetArgs struct {
		Element string `json:"element,omitempty"`
		Target  string `json:"target"`
		Thought string `json:"thought,omitempty"`
	}
	clickArgs struct {
		targetArgs
		DoubleClick bool     `json:"doubleClick,omitempty"`
		Button      string   `json:"button,omitempty"`
		Modifiers   []string `json:"modifiers,omitempty"`
	}
	typeArgs struct {
		targetArgs
		Text   string `json:"text"`
		Submit bool   `json:"submit,omitempty"`
		Slowly bool   `json:"slowly,omitempty"`
	}
	selectArgs struct {
		targetArgs
		Values []string `json:"values"`
	}
	keyArgs struct {
		Key     string `json:"key"`
		Thought string `json:"thought,omitempty"`
	}
	navigateArgs struct {
		URL     string `json:"url"`
		Thought string `json:"thought,omitempty"`
	}
	thoughtArgs struct {
		Thought string `json:"thought,omitempty"`
	}
	tabsArgs struct {
		Action  string `json:"action"`
		Index   *int   `json:"index,omitempty"`
		URL     string `json:"url,omitempty"`
		Thought string `json:"thought,omitempty"`
	}
	waitArgs struct {
		Time     *float64 `json:"time,omitempty"`
		Text     string   `json:"text,omitempty"`
		TextGone string   `json:"textGone,omitempty"`
		Thought  string   `json:"thought,omitempty"`
	}
	wheelArgs struct {
		DeltaX  float64 `json:"deltaX"`
		DeltaY  float64 `json:"deltaY"`
		Thought string  `json:"thought,omitempty"`
	}
	clickXYArgs struct {
		X          float64  `json:"x"`
		Y          float64  `json:"y"`
		Button     string   `json:"button,omitempty"`
		ClickCount *float64 `json:"clickCount,omitempty"`
		Delay      *float64 `json:"delay,omitempty"`
		Thought    string   `json:"thought,omitempty"`
	}
	snapshotArgs struct {
		Target   string   `json:"target,omitempty"`
		Filename string   `json:"filename,omitempty"`
		Depth    *float64 `json:"depth,omitempty"`
		Boxes    bool     `json:"boxes,omitempty"`
	}
	screenshotArgs struct {
		Element  string `json:"element,omitempty"`
		Target   string `json:"target,omitempty"`
		Type     string `json:"type,omitempty"`
		Filename string `json:"filename,omitempty"`
		FullPage bool   `json:"fullPage,omitempty"`
		Scale    string `json:"scale,omitempty"`
	}
	answerArgs struct {
		TaskType      string          `json:"task_type"`
		Status        string          `json:"status"`
		RetrievedData json.RawMessage `json:"retrieved_data,omitempty"`
		ErrorDetails  *string         `json:"error_details,omitempty"`
		Thought       string          `json:"thought,omitempty"`
	}
	giveUpArgs struct {
		Reason  string `json:"reason,omitempty"`
		Thought string `json:"thought,omitempty"`
	}
)

// newServer builds the MCP server of one episode.
func newServer(m *Mailbox) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "proctor-episode", Title: "Proctor episode browser", Version: ServerVersion},
		&mcp.ServerOptions{Instructions: "One benchmark episode's browser. Take a browser_snapshot, act with the browser tools " +
			"(each action is a recorded step), then call submit_answer, or give_up."})
	t := &tools{m: m}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	acting := func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}
	}

	mcp.AddTool(s, &mcp.Tool{Name: "browser_snapshot", Title: "Page snapshot",
		Description: "Capture accessibility snapshot of the current page, this is better than screenshot",
		InputSchema: object(false, nil, map[string]*jsonschema.Schema{
			"target":   str("Exact target element reference from the page snapshot, or a unique element selector; when given, only that element's subtree is returned"),
			"filename": str("Not supported by Proctor: snapshots are returned, not saved"),
			"depth":    num("Limit the depth of the snapshot tree"),
			"boxes":    boolean("Not supported by Proctor; ignored"),
		}), Annotations: readOnly}, t.snapshot)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_click", Title: "Click", Description: "Perform click on a web page",
		InputSchema: object(true, []string{"target"}, targetProps(map[string]*jsonschema.Schema{
			"doubleClick": boolean("Whether to perform a double click instead of a single click (Proctor supports single clicks only)"),
			"button":      enum("Button to click, defaults to left (Proctor supports left only)", "left", "right", "middle"),
			"modifiers":   list("Modifier keys to press (not supported by Proctor)", enum("", "Alt", "Control", "ControlOrMeta", "Meta", "Shift")),
		})), Annotations: acting("Click")}, t.click)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_type", Title: "Type text", Description: "Type text into editable element",
		InputSchema: object(true, []string{"target", "text"}, targetProps(map[string]*jsonschema.Schema{
			"text":   str("Text to type into the element"),
			"submit": boolean("Whether to submit entered text (press Enter after)"),
			"slowly": boolean("Whether to type one character at a time (Proctor fills the element at once)"),
		})), Annotations: acting("Type text")}, t.typeText)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_select_option", Title: "Select option", Description: "Select an option in a dropdown",
		InputSchema: object(true, []string{"target", "values"}, targetProps(map[string]*jsonschema.Schema{
			"values": list("Array of values to select in the dropdown. This can be a single value or multiple values.", &jsonschema.Schema{Type: "string"}),
		})), Annotations: acting("Select option")}, t.selectOption)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_hover", Title: "Hover mouse", Description: "Hover over element on page",
		InputSchema: object(true, []string{"target"}, targetProps(nil)), Annotations: acting("Hover mouse")}, t.hover)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_press_key", Title: "Press a key", Description: "Press a key on the keyboard",
		InputSchema: object(true, []string{"key"}, map[string]*jsonschema.Schema{
			"key": str("Name of the key to press or a character to generate, such as `ArrowLeft` or `a`"),
		}), Annotations: acting("Press a key")}, t.pressKey)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_navigate", Title: "Navigate to a URL", Description: "Navigate to a URL (one of the benchmark's sites)",
		InputSchema: object(true, []string{"url"}, map[string]*jsonschema.Schema{"url": str("The URL to navigate to")}),
		Annotations: acting("Navigate to a URL")}, t.navigate)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_navigate_back", Title: "Go back", Description: "Go back to the previous page in the history",
		InputSchema: object(true, nil, nil), Annotations: acting("Go back")}, t.back)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_navigate_forward", Title: "Go forward", Description: "Go forward to the next page in the history",
		InputSchema: object(true, nil, nil), Annotations: acting("Go forward")}, t.forward)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_tabs", Title: "Manage tabs", Description: "List, create, close, or select a browser tab.",
		InputSchema: object(true, []string{"action"}, map[string]*jsonschema.Schema{
			"action": enum("Operation to perform", "list", "new", "close", "select"),
			"index":  num("Tab index, used for close/select. If omitted for close, current tab is closed."),
			"url":    str("URL to navigate to in the new tab, used for new."),
		}), Annotations: acting("Manage tabs")}, t.tabs)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_take_screenshot", Title: "Take a screenshot",
		Description: "Take a screenshot of the current page's viewport (a JPEG, whatever type is asked for). You can't perform actions based on the screenshot, use browser_snapshot for actions.",
		InputSchema: object(false, nil, map[string]*jsonschema.Schema{
			"type":     enum("Image format for the screenshot (Proctor returns the step's JPEG)", "png", "jpeg", "webp"),
			"filename": str("Not supported by Proctor: screenshots are returned, not saved"),
			"element":  str(elementDesc),
			"target":   str("Not supported by Proctor: the screenshot is of the viewport"),
			"fullPage": boolean("Not supported by Proctor: the screenshot is of the viewport"),
			"scale":    enum("Image scale (Proctor's screenshots are at CSS scale)", "css", "device"),
		}), Annotations: readOnly}, t.screenshot)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_wait_for", Title: "Wait for",
		Description: "Wait for text to appear or disappear or a specified time to pass",
		InputSchema: object(true, nil, map[string]*jsonschema.Schema{
			"time":     num("The time to wait in seconds"),
			"text":     str("The text to wait for"),
			"textGone": str("The text to wait for to disappear"),
		}), Annotations: acting("Wait for")}, t.waitFor)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_mouse_wheel", Title: "Scroll mouse wheel", Description: "Scroll mouse wheel",
		InputSchema: object(true, []string{"deltaX", "deltaY"}, map[string]*jsonschema.Schema{
			"deltaX": num("X delta"), "deltaY": num("Y delta"),
		}), Annotations: acting("Scroll mouse wheel")}, t.wheel)
	mcp.AddTool(s, &mcp.Tool{Name: "browser_mouse_click_xy", Title: "Click", Description: "Click left mouse button at a given position",
		InputSchema: object(true, []string{"x", "y"}, map[string]*jsonschema.Schema{
			"x": num("X coordinate"), "y": num("Y coordinate"),
			"button":     enum("Button to click, defaults to left (Proctor supports left only)", "left", "right", "middle"),
			"clickCount": num("Number of clicks, defaults to 1 (Proctor supports 1 only)"),
			"delay":      num("Time to wait between mouse down and mouse up in milliseconds (ignored)"),
		}), Annotations: acting("Click")}, t.clickXY)
	mcp.AddTool(s, &mcp.Tool{Name: "submit_answer", Title: "Submit the answer",
		Description: "End the episode with the task's answer, in WebArena-Verified's agent_response shape: task_type retrieve, mutate or navigate; " +
			"status SUCCESS or an error such as NOT_FOUND_ERROR, ACTION_NOT_ALLOWED_ERROR or PERMISSION_DENIED_ERROR; " +
			"retrieved_data the list of values a retrieve task asks for (null otherwise); error_details free text or null.",
		InputSchema: object(true, []string{"task_type", "status"}, map[string]*jsonschema.Schema{
			"task_type":      enum("What the task asked for", "retrieve", "mutate", "navigate", "RETRIEVE", "MUTATE", "NAVIGATE"),
			"status":         str("SUCCESS, or an error status such as NOT_FOUND_ERROR, ACTION_NOT_ALLOWED_ERROR, PERMISSION_DENIED_ERROR"),
			"retrieved_data": {Types: []string{"array", "null"}, Description: "The values a retrieve task asks for (strings, numbers, objects), or null"},
			"error_details":  {Types: []string{"string", "null"}, Description: "Free text about an error status, or null"},
		}), Annotations: acting("Submit the answer")}, t.submitAnswer)
	mcp.AddTool(s, &mcp.Tool{Name: "give_up", Title: "Give up", Description: "End the episode without an answer",
		InputSchema: object(true, nil, map[string]*jsonschema.Schema{"reason": str("Why the task cannot be done")}),
		Annotations: acting("Give up")}, t.giveUp)
	return s
}

func ptr[T any](v T) *T { return &v }

// tools are the tool handlers of one episode.
type tools struct{ m *Mailbox }

// toolError is a tool result that failed before any step was taken.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func refuse(format string, args ...any) error { return &toolError{fmt.Sprintf(format, args...)} }

// target turns a tool's target into an action target, checking a ref
// against the snapshot the agent was shown.
func (t *tools) target(ctx context.Context, target string) (*models.Target, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return nil, refuse("target is required: a ref from the page snapshot, such as e12")
	}
	if !refPattern.MatchString(target) {
		if len(target) > 1000 {
			return nil, refuse("the selector is %d characters; at most 1000 are accepted", len(target))
		}
		return &models.Target{Selector: target}, nil
	}
	obs, err := t.m.Observation(ctx, -1)
	if err != nil {
		return nil, err
	}
	if !Refs(obs.Observation.AXTree)[target] {
		return nil, refuse("Ref %s not found in the current page snapshot. Try capturing new snapshot.", target)
	}
	return &models.Target{ElementID: target}, nil
}

func (t *tools) snapshot(ctx context.Context, _ *mcp.CallToolRequest, in snapshotArgs) (*mcp.CallToolResult, any, error) {
	if in.Filename != "" {
		return nil, nil, refuse("filename is not supported: Proctor returns snapshots, it does not save them")
	}
	obs, err := t.m.Observation(ctx, -1)
	if err != nil {
		return nil, nil, t.ended(err)
	}
	depth := 0
	if in.Depth != nil {
		depth = int(*in.Depth)
	}
	return pageResult(obs, "", depth, in.Target)
}

func (t *tools) click(ctx context.Context, _ *mcp.CallToolRequest, in clickArgs) (*mcp.CallToolResult, any, error) {
	if in.DoubleClick || (in.Button != "" && in.Button != "left") || len(in.Modifiers) > 0 {
		return nil, nil, refuse("Proctor's browser clicks with the left button only: double clicks, other buttons and modifiers are not supported")
	}
	target, err := t.target(ctx, in.Target)
	if err != nil {
		return nil, nil, t.ended(err)
	}
	return t.act(ctx, in.Thought, models.Action{Type: models.ActClick, Target: target})
}

func (t *tools) typeText(ctx context.Context, _ *mcp.CallToolRequest, in typeArgs) (*mcp.CallToolResult, any, error) {
	target, err := t.target(ctx, in.Target)
	if err != nil {
		return nil, nil, t.ended(err)
	}
	res, out, err := t.act(ctx, in.Thought, models.Action{Type: models.ActFill, Target: target, Text: in.Text})
	if err != nil || !in.Submit || res.IsError {
		return res, out, err
	}
	return t.act(ctx, "", models.Action{Type: models.ActPress, Target: target, Key: "Enter"})
}

func (t *tools) selectOption(ctx context.Context, _ *mcp.CallToolRequest, in selectArgs) (*mcp.CallToolResult, any, error) {
	target, err := t.target(ctx, in.Target)
	if err != nil {
		return nil, nil, t.ended(err)
	}
	return t.act(ctx, in.Thought, models.Action{Type: models.ActSelect, Target: target, Values: in.Values})
}

func (t *tools) hover(ctx context.Context, _ *mcp.CallToolRequest, in targetArgs) (*mcp.CallToolResult, any, error) {
	target, err := t.target(ctx, in.Target)
	if err != nil {
		return nil, nil, t.ended(err)
	}
	return t.act(ctx, in.Thought, models.Action{Type: models.ActHover, Target: target})
}

func (t *tools) pressKey(ctx context.Context, _ *mcp.CallToolRequest, in keyArgs) (*mcp.CallToolResult, any, error) {
	return t.act(ctx, in.Thought, models.Action{Type: models.ActPress, Key: in.Key})
}

func (t *tools) navigate(ctx context.Context, _ *mcp.CallToolRequest, in navigateArgs) (*mcp.CallToolResult, any, error) {
	if _, err := models.ParseHTTPURL(in.URL, "url"); err != nil {
		return nil, nil, refuse("%s", models.ErrorMessage(err))
	}
	return t.act(ctx, in.Thought, models.Action{Type: models.ActGoto, URL: in.URL})
}

func (t *tools) back(ctx context.Context, _ *mcp.CallToolRequest, in thoughtArgs) (*mcp.CallToolResult, any, error) {
	return t.act(ctx, in.Thought, models.Action{Type: models.ActGoBack})
}

func (t *tools) forward(ctx context.Context, _ *mcp.CallToolRequest, in thoughtArgs) (*mcp.CallToolResult, any, error) {
	return t.act(ctx, in.Thought, models.Action{Type: models.ActGoForward})
}

func (t *tools) tabs(ctx context.Context, _ *mcp.CallToolRequest, in tabsArgs) (*mcp.CallToolResult, any, error) {
	switch in.Action {
	case "list":
		obs, err := t.m.Observation(ctx, -1)
		if err != nil {
			return nil, nil, t.ended(err)
		}
		return textResult(false, "### Open tabs\n"+tabList(obs.Observation)), nil, nil
	case "new":
		if in.URL != "" {
			if _, err := models.ParseHTTPURL(in.URL, "url"); err != nil {
				return nil, nil, refuse("%s", models.ErrorMessage(err))
			}
		}
		return t.act(ctx, in.Thought, models.Action{Type: models.ActNewTab, URL: in.URL})
	case "select", "close":
		var index int
		if in.Index != nil {
			index = *in.Index
		} else if in.Action == "select" {
			return nil, nil, refuse("select needs the index of a tab (browser_tabs with action list shows them)")
		} else {
			obs, err := t.m.Observation(ctx, -1)
			if err != nil {
				return nil, nil, t.ended(err)
			}
			for _, tab := range obs.Observation.Tabs {
				if tab.Active {
					index = tab.Index
				}
			}
		}
		typ := models.ActSwitchTab
		if in.Action == "close" {
			typ = models.ActCloseTab
		}
		return t.act(ctx, in.Thought, models.Action{Type: typ, Tab: &index})
	}
	return nil, nil, refuse("action must be list, new, close or select, not %q", in.Action)
}

func (t *tools) screenshot(ctx context.Context, _ *mcp.CallToolRequest, in screenshotArgs) (*mcp.CallToolResult, any, error) {
	if in.Filename != "" || in.Target != "" || in.FullPage {
		return nil, nil, refuse("Proctor returns the screenshot of the viewport it takes at every step: filename, target and fullPage are not supported")
	}
	obs, err := t.m.Observation(ctx, -1)
	if err != nil {
		return nil, nil, t.ended(err)
	}
	data, err := base64.StdEncoding.DecodeString(obs.Observation.Screenshot)
	if err != nil || len(data) == 0 {
		return nil, nil, refuse("this step has no screenshot")
	}
	mime := "image/jpeg"
	if obs.Observation.ScreenshotType == "png" {
		mime = "image/png"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "### Result\nTook the viewport screenshot of step " + fmt.Sprint(obs.Step) + ".\n" + pageSection(obs.Observation)},
		&mcp.ImageContent{Data: data, MIMEType: mime},
	}}, nil, nil
}

func (t *tools) waitFor(ctx context.Context, _ *mcp.CallToolRequest, in waitArgs) (*mcp.CallToolResult, any, error) {
	a := models.Action{Type: models.ActWait, Text: in.Text, TextGone: in.TextGone}
	if in.Time != nil {
		a.Seconds = min(*in.Time, models.MaxWaitSeconds)
	}
	if err := a.Validate(); err != nil {
		return nil, nil, refuse("%s", strings.TrimPrefix(models.ErrorMessage(err), "action."))
	}
	return t.act(ctx, in.Thought, a)
}

func (t *tools) wheel(ctx context.Context, _ *mcp.CallToolRequest, in wheelArgs) (*mcp.CallToolResult, any, error) {
	return t.act(ctx, in.Thought, models.Action{Type: models.ActScroll, DeltaX: in.DeltaX, DeltaY: in.DeltaY})
}

func (t *tools) clickXY(ctx context.Context, _ *mcp.CallToolRequest, in clickXYArgs) (*mcp.CallToolResult, any, error) {
	if (in.Button != "" && in.Button != "left") || (in.ClickCount != nil && *in.ClickCount != 1) {
		return nil, nil, refuse("Proctor's browser clicks once with the left button only")
	}
	return t.act(ctx, in.Thought, models.Action{Type: models.ActClick, Target: &models.Target{X: &in.X, Y: &in.Y}})
}

func (t *tools) submitAnswer(ctx context.Context, _ *mcp.CallToolRequest, in answerArgs) (*mcp.CallToolResult, any, error) {
	resp := map[string]any{"task_type": strings.ToLower(in.TaskType), "status": in.Status, "retrieved_data": nil, "error_details": nil}
	if len(in.RetrievedData) > 0 {
		resp["retrieved_data"] = in.RetrievedData
	}
	if in.ErrorDetails != nil {
		resp["error_details"] = *in.ErrorDetails
	}
	raw, err := json.Marshal(resp)
	if err != nil {
		return nil, nil, refuse("the answer cannot be encoded: %v", err)
	}
	return t.act(ctx, in.Thought, models.Action{Type: models.ActAnswer, Response: raw})
}

func (t *tools) giveUp(ctx context.Context, _ *mcp.CallToolRequest, in giveUpArgs) (*mcp.CallToolResult, any, error) {
	return t.act(ctx, in.Thought, models.Action{Type: models.ActStop, Reason: in.Reason})
}

// act takes one step and answers with the page it leads to, or how the
// episode ended.
func (t *tools) act(ctx context.Context, thought string, a models.Action) (*mcp.CallToolResult, any, error) {
	if err := a.Validate(); err != nil {
		return nil, nil, refuse("%s", models.ErrorMessage(err))
	}
	ctx, cancel := context.WithTimeout(ctx, actionWait)
	defer cancel()
	step, err := t.m.Act(ctx, -1, &models.StepResponse{Action: a, Thought: thought})
	if err != nil {
		return nil, nil, t.ended(err)
	}
	next, err := t.m.Observation(ctx, step)
	if errors.Is(err, ErrEnded) {
		how := t.m.Ending()
		if a.Final() {
			return textResult(false, "### Result\n"+how), nil, nil
		}
		return textResult(true, "### Error\nThe episode is over: "+how), nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return pageResult(next, next.Observation.LastActionError, 0, "")
}

// ended turns ErrEnded into a tool error saying how the episode ended.
func (t *tools) ended(err error) error {
	if errors.Is(err, ErrEnded) {
		return refuse("The episode is over: %s", t.m.Ending())
	}
	return err
}

// pageResult is Playwright MCP's answer layout: the result or error, the
// tabs, the page and its snapshot.
func pageResult(obs *models.StepRequest, actionErr string, depth int, root string) (*mcp.CallToolResult, any, error) {
	snap, err := SnapshotYAML(obs.Observation.AXTree, root, depth)
	if err != nil {
		return nil, nil, refuse("%s", err.Error())
	}
	var b strings.Builder
	if actionErr != "" {
		b.WriteString("### Error\n" + actionErr + "\n")
	}
	if len(obs.Observation.Tabs) > 1 {
		b.WriteString("### Open tabs\n" + tabList(obs.Observation))
	}
	b.WriteString(pageSection(obs.Observation))
	if len(obs.Observation.Downloads) > 0 {
		b.WriteString("- Downloads: " + strings.Join(obs.Observation.Downloads, ", ") + "\n")
	}
	fmt.Fprintf(&b, "- Steps left: %d\n- Seconds left: %.0f\n", obs.Budget.StepsLeft, obs.Budget.SecondsLeft)
	b.WriteString("### Snapshot\n```yaml\n" + snap + "```\n")
	return textResult(actionErr != "", b.String()), nil, nil
}

// pageSection is the "### Page" section.
func pageSection(o models.Observation) string {
	s := "### Page\n- Page URL: " + o.URL + "\n"
	if o.Title != "" {
		s += "- Page Title: " + o.Title + "\n"
	}
	return s
}

// tabList lists the tabs as Playwright MCP does.
func tabList(o models.Observation) string {
	var b strings.Builder
	for _, tab := range o.Tabs {
		cur := ""
		if tab.Active {
			cur = " (current)"
		}
		fmt.Fprintf(&b, "- %d:%s [%s](%s)\n", tab.Index, cur, tab.Title, tab.URL)
	}
	return b.String()
}

func textResult(isError bool, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
