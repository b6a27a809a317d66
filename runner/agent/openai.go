package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"proctor/internal/chat"
	"strings"
	"unicode/utf8"

	"proctor/models"
)

// Defaults of the openai agent's settings.
const (
	DefaultOpenAIBaseURL  = "https://api.openai.com/v1"
	DefaultMaxAXTreeChars = 20000
	DefaultHistorySteps   = 10
	// maxHistoryThought caps each remembered thought, keeping the prompt short.
	maxHistoryThought = 300
)

// openAISettings are the keys an openai agent's configuration may set.
type openAISettings struct {
	Model             string   `json:"model"`
	Temperature       *float64 `json:"temperature"`
	MaxTokens         *int     `json:"max_tokens"`
	Screenshot        *bool    `json:"screenshot"`
	MaxAXTreeChars    *int     `json:"max_axtree_chars"`
	History           *int     `json:"history"`
	InputCostPerMTok  float64  `json:"input_cost_per_mtok"`
	OutputCostPerMTok float64  `json:"output_cost_per_mtok"`
}

// parseOpenAISettings reads and checks an openai agent's settings; unknown keys
// are refused so a typo does not silently fall back to a default.
func parseOpenAISettings(settings json.RawMessage) (openAISettings, error) {
	var s openAISettings
	if err := decodeSettings(settings, &s, true); err != nil {
		return s, err
	}
	switch {
	case s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2):
		return s, models.FieldError("config", "temperature must be between 0 and 2")
	case s.MaxTokens != nil && *s.MaxTokens < 1:
		return s, models.FieldError("config", "max_tokens must be at least 1")
	case s.MaxAXTreeChars != nil && *s.MaxAXTreeChars < 1:
		return s, models.FieldError("config", "max_axtree_chars must be at least 1")
	case s.History != nil && *s.History < 0:
		return s, models.FieldError("config", "history must not be negative")
	case s.InputCostPerMTok < 0 || s.OutputCostPerMTok < 0:
		return s, models.FieldError("config", "input_cost_per_mtok and output_cost_per_mtok must not be negative")
	}
	return s, nil
}

// openAIAgent is the built-in LLM agent over a chat-completions endpoint. It
// remembers the episode's previous steps, so it serves one episode only.
type openAIAgent struct {
	url      string
	key      string
	model    string
	settings openAISettings
	poster   *poster

	attempt int64
	history []pastStep
}

// pastStep is one earlier step as the prompt recalls it.
type pastStep struct {
	step    int
	thought string
	action  string
	err     string
}

// newOpenAI builds an openai agent from cfg.
func newOpenAI(cfg Config) (*openAIAgent, error) {
	s, err := parseOpenAISettings(cfg.Settings)
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(cfg.EndpointURL, "/")
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, models.FieldError("endpoint_url", "the base URL is not an http or https URL")
	}
	if !strings.HasSuffix(base, "/chat/completions") {
		base += "/chat/completions"
	}
	model := s.Model
	if model == "" {
		model = cfg.Model
	}
	if model == "" {
		return nil, models.FieldError("model", "an openai agent needs a model: set the agent's model or \"model\" in its configuration")
	}
	if cfg.HTTPClient == nil {
		return nil, errors.New("agent: an openai agent needs an HTTP client (the SSRF-guarded one from netguard)")
	}
	a := &openAIAgent{
		url:      base,
		key:      cfg.Secrets[models.SecretOpenAIKey],
		model:    model,
		settings: s,
		poster:   newPoster(cfg, "chat-completions endpoint"),
	}
	return a, nil
}

// WantsScreenshot is the "screenshot" setting, true unless set to false.
func (a *openAIAgent) WantsScreenshot() bool {
	return a.settings.Screenshot == nil || *a.settings.Screenshot
}

// Step prompts the model with the observation and parses its one action.
func (a *openAIAgent) Step(ctx context.Context, req *models.StepRequest) (*models.StepResponse, error) {
	if req.AttemptID != a.attempt {
		a.attempt, a.history = req.AttemptID, nil
	}
	if n := len(a.history); n > 0 && req.Observation.LastActionError != "" {
		a.history[n-1].err = req.Observation.LastActionError
	}
	body, err := json.Marshal(a.request(req))
	if err != nil {
		return nil, fmt.Errorf("encode chat request: %w", err)
	}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("Accept", "application/json")
	header.Set("User-Agent", UserAgent)
	if a.key != "" {
		header.Set("Authorization", "Bearer "+a.key)
	}
	data, err := a.poster.post(ctx, a.url, header, body)
	if err != nil {
		return nil, err
	}
	var chat chat.Response
	if err := json.Unmarshal(data, &chat); err != nil {
		return nil, agentErr(KindMalformed, err, "the chat-completions endpoint's answer is not a chat completion: %s", strings.TrimPrefix(jsonProblem(err), "json: "))
	}
	usage := a.usage(&chat)
	if len(chat.Choices) == 0 {
		return nil, &Error{Kind: KindMalformed, Message: "the chat completion has no choices", Usage: usage}
	}
	choice := chat.Choices[0]
	content, err := messageText(choice.Message.Content)
	if err != nil || strings.TrimSpace(content) == "" {
		return nil, &Error{Kind: KindMalformed, Message: "the model's reply has no text content", Err: err, Usage: usage}
	}
	resp, perr := parseModelReply(content)
	if perr != nil {
		if choice.FinishReason == "length" && perr.Kind == KindMalformed {
			perr.Message += " (the reply was cut off at max_tokens)"
		}
		perr.Usage = usage
		return nil, perr
	}
	resp.Usage = usage
	a.remember(req.Step, resp)
	return resp, nil
}

// usage converts the completion's token counts and prices them.
func (a *openAIAgent) usage(chat *chat.Response) models.Usage {
	if chat.Usage == nil {
		return models.Usage{}
	}
	u := models.Usage{InputTokens: max(chat.Usage.PromptTokens, 0), OutputTokens: max(chat.Usage.CompletionTokens, 0)}
	u.Cost = float64(u.InputTokens)*a.settings.InputCostPerMTok/1e6 + float64(u.OutputTokens)*a.settings.OutputCostPerMTok/1e6
	return u
}

// remember adds the step to the history, keeping the last few.
func (a *openAIAgent) remember(step int, resp *models.StepResponse) {
	action, _ := json.Marshal(resp.Action)
	a.history = append(a.history, pastStep{step: step, thought: truncate(resp.Thought, maxHistoryThought), action: string(action)})
	keep := DefaultHistorySteps
	if a.settings.History != nil {
		keep = *a.settings.History
	}
	if len(a.history) > keep {
		a.history = a.history[len(a.history)-keep:]
	}
}

// request builds the chat-completions request for one step.
func (a *openAIAgent) request(req *models.StepRequest) *chat.Request {
	text := a.userText(req)
	var content any = text
	obs := req.Observation
	if a.WantsScreenshot() && obs.Screenshot != "" {
		mime := "image/jpeg"
		if obs.ScreenshotType == "png" {
			mime = "image/png"
		}
		content = []chat.Part{
			{Type: "text", Text: text},
			{Type: "image_url", ImageURL: &chat.ImageURL{URL: "data:" + mime + ";base64," + obs.Screenshot}},
		}
	}
	return &chat.Request{
		Model:       a.model,
		Temperature: a.settings.Temperature,
		MaxTokens:   a.settings.MaxTokens,
		Messages: []chat.Message{
			{Role: "system", Content: systemPrompt},
			{Role: "user", Content: content},
		},
	}
}

// userText renders the goal, the page and the recent history for the model.
func (a *openAIAgent) userText(req *models.StepRequest) string {
	obs := req.Observation
	var b strings.Builder
	fmt.Fprintf(&b, "Goal: %s\n", req.Task.Goal)
	if len(req.Task.StartURLs) > 0 {
		fmt.Fprintf(&b, "Start URLs: %s\n", strings.Join(req.Task.StartURLs, " "))
	}
	fmt.Fprintf(&b, "Step %d; %d steps and %.0f seconds left.\n\n", req.Step, req.Budget.StepsLeft, req.Budget.SecondsLeft)
	fmt.Fprintf(&b, "Current page: %s\nTitle: %s\n", obs.URL, obs.Title)
	if len(obs.Tabs) > 1 {
		b.WriteString("Tabs:\n")
		for _, t := range obs.Tabs {
			active := ""
			if t.Active {
				active = " (active)"
			}
			fmt.Fprintf(&b, "  %d%s: %s — %s\n", t.Index, active, t.Title, t.URL)
		}
	}
	if obs.LastActionError != "" {
		fmt.Fprintf(&b, "Your last action failed: %s\n", obs.LastActionError)
	}
	if len(obs.Downloads) > 0 {
		fmt.Fprintf(&b, "Downloaded files: %s\n", strings.Join(obs.Downloads, ", "))
	}
	if len(a.history) > 0 {
		b.WriteString("\nYour previous steps, oldest first:\n")
		for _, h := range a.history {
			fmt.Fprintf(&b, "- step %d: %s", h.step, h.action)
			if h.thought != "" {
				fmt.Fprintf(&b, " (thought: %s)", h.thought)
			}
			if h.err != "" {
				fmt.Fprintf(&b, " -> failed: %s", h.err)
			}
			b.WriteString("\n")
		}
	}
	limit := DefaultMaxAXTreeChars
	if a.settings.MaxAXTreeChars != nil {
		limit = *a.settings.MaxAXTreeChars
	}
	b.WriteString("\nAccessibility tree:\n")
	b.WriteString(truncate(obs.AXTree, limit))
	b.WriteString("\n\nReply with one JSON object: {\"thought\": \"...\", \"action\": {...}}")
	return b.String()
}

// truncate cuts s to at most n characters (runes), saying how much was cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := firstRunes(s, n)
	return cut + fmt.Sprintf("\n… (%d more characters cut)", utf8.RuneCountInString(s)-n)
}

// messageText returns a message's content, which servers send as a string or
// as a list of parts.
func messageText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []chat.Part
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// parseModelReply finds the JSON object in a model's reply, tolerating code
// fences and prose around it, and validates its action. A reply that is itself
// an action (it has "type" but no "action") is accepted too.
func parseModelReply(content string) (*models.StepResponse, *Error) {
	text := strings.TrimSpace(stripFences(content))
	if !strings.HasPrefix(text, "{") {
		start, end := strings.Index(text, "{"), strings.LastIndex(text, "}")
		if start < 0 || end < start {
			return nil, agentErr(KindMalformed, nil, "the model's reply holds no JSON object: %q", firstRunes(text, 100))
		}
		text = text[start : end+1]
	}
	var reply struct {
		Thought json.RawMessage `json:"thought"`
		Action  json.RawMessage `json:"action"`
		Type    string          `json:"type"`
	}
	if err := json.Unmarshal([]byte(text), &reply); err != nil {
		return nil, agentErr(KindMalformed, err, "the model's reply is not valid JSON: %s", strings.TrimPrefix(jsonProblem(err), "json: "))
	}
	raw := reply.Action
	if len(raw) == 0 && reply.Type != "" {
		raw = json.RawMessage(text)
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, agentErr(KindMalformed, nil, "the model's reply has no \"action\"")
	}
	var resp models.StepResponse
	if err := json.Unmarshal(raw, &resp.Action); err != nil {
		return nil, agentErr(KindMalformed, err, "the model's action is not valid: %s", strings.TrimPrefix(jsonProblem(err), "json: "))
	}
	if len(reply.Thought) > 0 && string(reply.Thought) != "null" {
		if err := json.Unmarshal(reply.Thought, &resp.Thought); err != nil {
			resp.Thought = string(reply.Thought)
		}
	}
	if err := resp.Action.Validate(); err != nil {
		return nil, agentErr(KindInvalidAction, err, "%s", err.Error())
	}
	return &resp, nil
}

// stripFences returns the inside of the first ``` fenced block, or s unchanged.
func stripFences(s string) string {
	start := strings.Index(s, "```")
	if start < 0 {
		return s
	}
	rest := s[start+3:]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 && !strings.Contains(rest[:nl], "{") {
		rest = rest[nl+1:] // drop the language tag line, such as "json"
	}
	if end := strings.Index(rest, "```"); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// systemPrompt tells the model the action format.
const systemPrompt = `You are a web agent operating a real browser to accomplish a goal for a user.
At every step you see the current page's accessibility tree, one element per line with
an element id in brackets, such as: [e12] button "Add to cart". You may also see a
screenshot. Choose exactly one action per step.

Reply with one JSON object and nothing else:
{"thought": "<one or two sentences of reasoning>", "action": {<one action>}}

A target is {"element_id": "e12"} (preferred), {"x": 640, "y": 200} (viewport CSS
pixels, click and hover only) or {"selector": "<Playwright selector>"}.
Actions:
{"type": "click", "target": {"element_id": "e12"}}
{"type": "fill", "target": {"element_id": "e7"}, "text": "blue mug"}  (replaces the field's text)
{"type": "press", "key": "Enter"}  (Playwright key names: "Enter", "Tab", "Control+A"; an optional target focuses an element first)
{"type": "select", "target": {"element_id": "e9"}, "values": ["Red"]}
{"type": "hover", "target": {"element_id": "e3"}}
{"type": "scroll", "delta_y": 600}  (pixels; positive scrolls down, delta_x scrolls sideways)
{"type": "goto", "url": "http://example.com/page"}
{"type": "go_back"}   {"type": "go_forward"}
{"type": "new_tab", "url": "http://example.com/"}   {"type": "switch_tab", "tab": 1}   {"type": "close_tab", "tab": 1}
{"type": "answer", "text": "42"}  (ends the task with a final answer)
{"type": "answer", "response": {"task_type": "retrieve", "status": "SUCCESS", "retrieved_data": ["42"], "error_details": null}}
{"type": "stop", "reason": "why the goal cannot be reached"}

Finish with "answer" once the goal is reached: for a question give the answer itself,
for a change or a navigation confirm it briefly. In a structured response, task_type
is retrieve, mutate or navigate, and status is SUCCESS or an error such as
NOT_FOUND_ERROR. Stay on the task's sites. If an action fails, try something else.`
