package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// AgentProtocol names version 1 of the agent protocol (docs/agent-protocol.md).
const AgentProtocol = "proctor-agent/v1"

// Action types of the agent protocol.
const (
	ActClick     = "click"
	ActFill      = "fill"
	ActPress     = "press"
	ActSelect    = "select"
	ActHover     = "hover"
	ActScroll    = "scroll"
	ActGoto      = "goto"
	ActGoBack    = "go_back"
	ActGoForward = "go_forward"
	ActNewTab    = "new_tab"
	ActSwitchTab = "switch_tab"
	ActCloseTab  = "close_tab"
	ActWait      = "wait"
	ActAnswer    = "answer"
	ActStop      = "stop"
	// ActRecorded is an action recorded elsewhere and uploaded as its own
	// description (an Online-Mind2Web "<button> -> CLICK"); agents never send it.
	ActRecorded = "recorded"
)

// ActionTypes lists the protocol's action types.
func ActionTypes() []string {
	return []string{ActClick, ActFill, ActPress, ActSelect, ActHover, ActScroll, ActGoto, ActGoBack,
		ActGoForward, ActNewTab, ActSwitchTab, ActCloseTab, ActWait, ActAnswer, ActStop}
}

// Target says which element an action applies to: an element id from the
// observation's accessibility text, page coordinates in CSS pixels, or a
// Playwright selector. Exactly one form is given.
type Target struct {
	ElementID string   `json:"element_id,omitempty"`
	X         *float64 `json:"x,omitempty"`
	Y         *float64 `json:"y,omitempty"`
	Selector  string   `json:"selector,omitempty"`
}

// Action is one thing the agent asks the browser to do, or its final answer.
type Action struct {
	Type   string   `json:"type"`
	Target *Target  `json:"target,omitempty"` // click, fill, select, hover; optional for press and scroll
	Text   string   `json:"text,omitempty"`   // fill: the text; answer: a plain-text answer
	Key    string   `json:"key,omitempty"`    // press: a Playwright key such as "Enter" or "Control+A"
	Values []string `json:"values,omitempty"` // select: option values or labels
	URL    string   `json:"url,omitempty"`    // goto, new_tab
	Tab    *int     `json:"tab,omitempty"`    // switch_tab, close_tab: the tab index from the observation
	DeltaX float64  `json:"delta_x,omitempty"`
	DeltaY float64  `json:"delta_y,omitempty"` // scroll: pixels, positive is down
	// Seconds is how long a wait lasts: the whole wait, or at most this long
	// for Text to appear (the text, for a wait) or TextGone to disappear.
	Seconds  float64 `json:"seconds,omitempty"`
	TextGone string  `json:"text_gone,omitempty"`
	// Response is a structured final answer; the WebArena-Verified agent_response
	// shape {"task_type", "status", "retrieved_data", "error_details"} is accepted.
	Response json.RawMessage `json:"response,omitempty"`
	Reason   string          `json:"reason,omitempty"` // stop: why the agent gives up
}

// MaxWaitSeconds bounds one wait action.
const MaxWaitSeconds = 30

// Final reports whether the action ends the episode.
func (a Action) Final() bool { return a.Type == ActAnswer || a.Type == ActStop }

// Validate checks the action's shape for its type, naming the offending field.
func (a Action) Validate() error {
	bad := func(field, format string, args ...any) error {
		return FieldError("action."+field, format, args...)
	}
	if !slices.Contains(ActionTypes(), a.Type) {
		return bad("type", "%q is not one of %s", a.Type, strings.Join(ActionTypes(), ", "))
	}
	needsTarget := a.Type == ActClick || a.Type == ActFill || a.Type == ActSelect || a.Type == ActHover
	if a.Target != nil {
		forms := 0
		if a.Target.ElementID != "" {
			forms++
		}
		if a.Target.Selector != "" {
			forms++
		}
		if a.Target.X != nil || a.Target.Y != nil {
			if a.Target.X == nil || a.Target.Y == nil {
				return bad("target", "coordinates need both x and y")
			}
			forms++
		}
		if forms != 1 {
			return bad("target", "give exactly one of element_id, selector or x and y")
		}
		if (a.Type == ActFill || a.Type == ActSelect) && a.Target.X != nil {
			return bad("target", "%s needs an element, not coordinates", a.Type)
		}
	} else if needsTarget {
		return bad("target", "%s needs a target", a.Type)
	}
	switch a.Type {
	case ActPress:
		if a.Key == "" {
			return bad("key", "press needs a key such as \"Enter\"")
		}
	case ActSelect:
		if len(a.Values) == 0 {
			return bad("values", "select needs at least one value")
		}
	case ActGoto:
		if a.URL == "" {
			return bad("url", "goto needs a url")
		}
	case ActSwitchTab, ActCloseTab:
		if a.Tab == nil || *a.Tab < 0 {
			return bad("tab", "%s needs a tab index from the observation", a.Type)
		}
	case ActWait:
		if a.Seconds < 0 || a.Seconds > MaxWaitSeconds {
			return bad("seconds", "a wait lasts 0 to %d seconds, not %g", MaxWaitSeconds, a.Seconds)
		}
		if a.Seconds == 0 && a.Text == "" && a.TextGone == "" {
			return bad("seconds", "wait needs seconds, text or text_gone")
		}
		if a.Text != "" && a.TextGone != "" {
			return bad("text_gone", "wait for text or for text_gone, not both")
		}
	case ActScroll:
		if a.DeltaX == 0 && a.DeltaY == 0 {
			return bad("delta_y", "scroll needs delta_x or delta_y")
		}
	case ActAnswer:
		if a.Text == "" && len(a.Response) == 0 {
			return bad("text", "answer needs text or a response object")
		}
		if len(a.Response) > 0 {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(a.Response, &obj); err != nil {
				return bad("response", "must be a JSON object: %v", err)
			}
		}
	}
	return nil
}

// Summary renders the action in one short line for timelines and logs.
func (a Action) Summary() string {
	var b strings.Builder
	b.WriteString(a.Type)
	if a.Target != nil {
		switch {
		case a.Target.ElementID != "":
			fmt.Fprintf(&b, " [%s]", a.Target.ElementID)
		case a.Target.Selector != "":
			fmt.Fprintf(&b, " %s", a.Target.Selector)
		case a.Target.X != nil:
			fmt.Fprintf(&b, " (%.0f, %.0f)", *a.Target.X, *a.Target.Y)
		}
	}
	switch {
	case a.URL != "":
		fmt.Fprintf(&b, " %s", a.URL)
	case a.Key != "":
		fmt.Fprintf(&b, " %s", a.Key)
	case a.Type == ActAnswer && a.Text == "" && len(a.Response) > 0:
		fmt.Fprintf(&b, " %s", a.Response)
	case a.Type == ActWait:
		switch {
		case a.Text != "":
			fmt.Fprintf(&b, " for %q", a.Text)
		case a.TextGone != "":
			fmt.Fprintf(&b, " until %q is gone", a.TextGone)
		default:
			fmt.Fprintf(&b, " %gs", a.Seconds)
		}
	case a.Type == ActFill || a.Type == ActAnswer:
		fmt.Fprintf(&b, " %q", a.Text)
	case a.Type == ActRecorded:
		return a.Text
	case a.Type == ActStop && a.Reason != "":
		fmt.Fprintf(&b, " (%s)", a.Reason)
	case len(a.Values) > 0:
		fmt.Fprintf(&b, " %s", strings.Join(a.Values, ", "))
	case a.Tab != nil:
		fmt.Fprintf(&b, " tab %d", *a.Tab)
	}
	return b.String()
}

// Tab is one open browser tab in an observation.
type Tab struct {
	Index  int    `json:"index"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	Active bool   `json:"active"`
}

// Observation is what the agent sees before choosing an action.
type Observation struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Tabs  []Tab  `json:"tabs"`
	// AXTree is the page's accessibility text, one element a line, with stable
	// element ids in brackets: `[e12] button "Add to cart"`.
	AXTree string `json:"axtree"`
	// Screenshot is a base64 image, sent only to agents that ask for it.
	Screenshot      string   `json:"screenshot,omitempty"`
	ScreenshotType  string   `json:"screenshot_type,omitempty"` // "jpeg" or "png"
	LastActionError string   `json:"last_action_error,omitempty"`
	Downloads       []string `json:"downloads,omitempty"`
}

// StepTask is the public part of a task, as agents see it (never its answers).
type StepTask struct {
	ID        string   `json:"id"`
	Goal      string   `json:"goal"`
	StartURLs []string `json:"start_urls"`
	Sites     []string `json:"sites"`
}

// Budget is what an episode has left.
type Budget struct {
	StepsLeft   int      `json:"steps_left"`
	SecondsLeft float64  `json:"seconds_left"`
	CostLeft    *float64 `json:"cost_left,omitempty"`
}

// StepRequest is what Proctor sends an agent at every step.
type StepRequest struct {
	Protocol    string      `json:"protocol"`
	RunID       int64       `json:"run_id"`
	AttemptID   int64       `json:"attempt_id"`
	Step        int         `json:"step"`
	Task        StepTask    `json:"task"`
	Observation Observation `json:"observation"`
	Budget      Budget      `json:"budget"`
}

// Usage is what one agent call consumed.
type Usage struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	Cost         float64 `json:"cost,omitempty"`
}

// StepResponse is an agent's answer to a StepRequest.
type StepResponse struct {
	Action  Action `json:"action"`
	Thought string `json:"thought,omitempty"`
	Usage   Usage  `json:"usage,omitempty"`
}
