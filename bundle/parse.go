package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"proctor/har"
	"proctor/models"
)

// role is what a file is to the formats, told by its name alone: a tar.gz is
// read once, before the bundle's format (which needs every name) is known,
// so each file is parsed for the role its name gives it and the format's
// layout later picks the records it uses.
type role int

const (
	roleOther         role = iota
	roleManifest           // manifest.json (Proctor)
	roleAgentResponse      // agent_response.json (WebArena-Verified)
	roleAnswer             // answer.json (Proctor)
	roleSteps              // steps.jsonl (Proctor)
	roleHAR                // network.har, *.har
	roleMissing            // .missing
	roleResult             // result.json (Online-Mind2Web)
	roleSummary            // summary_info.json (AgentLab)
	roleStepsInfo          // steps_info.json (AgentLab)
	roleImage              // *.png, *.jpg, *.jpeg
)

func roleOf(name string) role {
	base := path.Base(name)
	switch base {
	case "manifest.json":
		return roleManifest
	case "agent_response.json":
		return roleAgentResponse
	case "answer.json":
		return roleAnswer
	case "steps.jsonl":
		return roleSteps
	case ".missing":
		return roleMissing
	case "result.json":
		return roleResult
	case "summary_info.json":
		return roleSummary
	case "steps_info.json":
		return roleStepsInfo
	}
	switch strings.ToLower(path.Ext(base)) {
	case ".har":
		return roleHAR
	case ".png", ".jpg", ".jpeg":
		if strings.HasPrefix(base, "screenshot_som_") {
			return roleOther // AgentLab's set-of-marks copies: not part of the trajectory
		}
		return roleImage
	}
	return roleOther
}

// record is what reading one file found: its parsed content, or why it is invalid.
type record struct {
	path    string
	role    role
	size    int64
	problem string

	raw         json.RawMessage // compact JSON: agent_response.json, answer.json (as an Action), manifest.json
	steps       []stepLine      // steps.jsonl
	result      *om2wResult     // result.json
	summary     *agentLabSummary
	stepsInfo   []agentLabStep
	contentType string // images and HARs
	cut         bool   // a text field was cut to maxTextBytes
	// answerText marks an agent_response.json of the wrong shape whose text
	// raw holds as the answer despite its problem.
	answerText bool
}

// retainedBytes estimates what the record holds in memory, its path aside
// (counted with every file name).
func (rec *record) retainedBytes() int64 {
	n := recordOverhead + len(rec.problem) + len(rec.raw) + len(rec.contentType)
	for _, sl := range rec.steps {
		st := sl.step
		n += stepOverhead + len(sl.screenshot) + len(st.Action) + len(st.Thought) + len(st.URL) + len(st.Title) + len(st.Error)
	}
	if r := rec.result; r != nil {
		n += len(r.taskID) + len(r.final)
		for _, a := range r.actions {
			n += stepOverhead + len(a)
		}
		for _, t := range r.thoughts {
			n += stepOverhead + len(t)
		}
	}
	if s := rec.summary; s != nil {
		n += len(s.taskID) + len(s.taskName) + len(s.errMsg)
	}
	for _, si := range rec.stepsInfo {
		n += stepOverhead + len(si.action) + len(si.final) + len(si.think) + len(si.url) + len(si.errMsg)
	}
	return int64(n)
}

// stepLine is a parsed steps.jsonl line with its screenshot still as written.
type stepLine struct {
	line       int
	step       Step
	screenshot string
	// tokensStated, costStated: the line gave tokens_in or tokens_out, cost.
	tokensStated, costStated bool
}

// parse reads a file for its role. Content problems land in rec.problem; the
// error is only a refusal or read error from the archive.
func (in *inspector) parse(rec *record, r io.Reader) error {
	switch rec.role {
	case roleMissing:
		return nil
	case roleImage:
		return in.images.check(rec, r, in.store)
	case roleHAR:
		rec.contentType = "application/json"
		var err error
		if in.store != nil {
			err = in.storeHAR(rec, r)
		} else {
			_, err = har.Validate(r, in.lim.MaxHARBytes)
		}
		if err != nil && har.KindOf(err) == 0 {
			return err
		}
		if err != nil {
			rec.problem = err.Error()
		}
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r, in.lim.MaxJSONBytes+1))
	if err != nil {
		return err
	}
	if int64(len(b)) > in.lim.MaxJSONBytes {
		rec.problem = fmt.Sprintf("the file is over the JSON limit of %s", humanBytes(in.lim.MaxJSONBytes))
		return nil
	}
	if rec.role == roleManifest && len(b) > maxManifestBytes {
		rec.problem = fmt.Sprintf("the file is over the limit of %s for a manifest, whose fields are short", humanBytes(maxManifestBytes))
		return nil
	}
	if i := invalidUTF8At(b); i >= 0 {
		rec.problem = fmt.Sprintf("not valid UTF-8 (byte %d)", i)
		return nil
	}
	var problem error
	switch rec.role {
	case roleManifest:
		problem = compactObject(rec, b)
	case roleAgentResponse:
		problem = parseAgentResponse(rec, b)
	case roleAnswer:
		problem = parseAnswer(rec, b)
	case roleSteps:
		problem = parseSteps(rec, b)
	case roleResult:
		problem = parseOM2WResult(rec, b)
	case roleSummary:
		problem = parseAgentLabSummary(rec, b)
	case roleStepsInfo:
		problem = parseAgentLabSteps(rec, b)
	}
	if problem != nil {
		rec.problem = shorten(problem.Error(), maxProblemBytes) // it may quote the file
	}
	return nil
}

// storeHAR hands a HAR to the inspection's store while validating it: the
// validator reads what the store reads, through a pipe, and the store gets
// every byte even when the validator stops early at a problem. The error is
// the store's, or the validator's (a HAR problem is an *har.Error).
func (in *inspector) storeHAR(rec *record, r io.Reader) error {
	pr, pw := io.Pipe()
	validated := make(chan error, 1)
	go func() {
		_, err := har.Validate(pr, in.lim.MaxHARBytes)
		_, _ = io.Copy(io.Discard, pr) // the rest still goes to the store
		validated <- err
	}()
	err := in.store(rec.path, rec.contentType, rec.size, io.TeeReader(r, pw))
	pw.CloseWithError(err) // nil: the validator reads to the end
	verr := <-validated
	if err != nil {
		return err
	}
	return verr
}

func invalidUTF8At(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// jsonProblem words a decoding error for a submitter.
func jsonProblem(err error) error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("invalid JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "the document"
		}
		return fmt.Errorf("%s must be %s, not %s", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("invalid JSON: the document ends too early")
	}
	return fmt.Errorf("invalid JSON: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// anything after the value.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return jsonProblem(err)
	}
	if dec.More() {
		return errors.New("invalid JSON: more than one value")
	}
	return nil
}

// decodeLoose decodes one JSON value, ignoring fields it does not know.
func decodeLoose(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return jsonProblem(err)
	}
	return nil
}

func compactObject(rec *record, b []byte) error {
	var obj map[string]json.RawMessage
	if err := decodeLoose(b, &obj); err != nil {
		return err
	}
	if obj == nil {
		return errors.New("must be a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return jsonProblem(err)
	}
	rec.raw = buf.Bytes()
	return nil
}

// parseAgentResponse reads a WebArena-Verified agent_response.json: an
// object with task_type, status, retrieved_data and error_details (keys are
// case-insensitive). It becomes the answer action's response. A file of
// another shape (not JSON, JSON with text around it, another object) is a
// problem the report lists, but its text is still kept as the answer
// (rec.answerText), so that the task is graded as WebArena-Verified's own
// evaluator grades that file rather than as no answer at all.
func parseAgentResponse(rec *record, b []byte) error {
	problem := compactObject(rec, b)
	if problem == nil && !looksLikeAgentResponse(rec.raw) {
		problem = errors.New("not a WebArena-Verified agent response: expected an object with task_type, status and retrieved_data")
	}
	if problem != nil {
		rec.raw = nil
		if raw, err := cappedJSON(models.Action{Type: models.ActAnswer, Text: string(b)}, "the answer"); err == nil {
			rec.raw, rec.answerText = raw, true
		}
		return problem
	}
	raw, err := cappedJSON(models.Action{Type: models.ActAnswer, Response: rec.raw}, "the answer")
	rec.raw = raw
	return err
}

func looksLikeAgentResponse(obj json.RawMessage) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return false
	}
	for k := range fields {
		switch strings.ToLower(k) {
		case "task_type", "status", "retrieved_data":
			return true
		}
	}
	return false
}

// parseAnswer reads a Proctor answer.json: a final action ({"type":
// "answer"|"stop", ...}), a WebArena-Verified agent response, or {"text": ...}.
func parseAnswer(rec *record, b []byte) error {
	var fields map[string]json.RawMessage
	if err := decodeLoose(b, &fields); err != nil {
		return err
	}
	if fields == nil {
		return errors.New(`must be a JSON object: a final action, a WebArena-Verified agent response or {"text": "..."}`)
	}
	var action models.Action
	switch {
	case fields["type"] != nil:
		if err := decodeStrict(b, &action); err != nil {
			return err
		}
		if !action.Final() {
			return fmt.Errorf("the final action's type must be %q or %q, not %q", models.ActAnswer, models.ActStop, action.Type)
		}
		if err := action.Validate(); err != nil {
			return err
		}
	case looksLikeAgentResponse(b):
		if err := compactObject(rec, b); err != nil {
			return err
		}
		action = models.Action{Type: models.ActAnswer, Response: rec.raw}
	case fields["text"] != nil:
		var text struct {
			Text string `json:"text"`
		}
		if err := decodeStrict(b, &text); err != nil {
			return err
		}
		if text.Text == "" {
			return errors.New("text is empty")
		}
		action = models.Action{Type: models.ActAnswer, Text: text.Text}
	default:
		return errors.New(`expected a final action ({"type": "answer", ...}), a WebArena-Verified agent response or {"text": "..."}`)
	}
	raw, err := cappedJSON(action, "the answer")
	rec.raw = raw
	return err
}

// proctorStep is one steps.jsonl line of the Proctor format.
type proctorStep struct {
	Action     json.RawMessage `json:"action"`
	Thought    string          `json:"thought"`
	URL        string          `json:"url"`
	Title      string          `json:"title"`
	StartedAt  *time.Time      `json:"started_at"`
	DurationMS int64           `json:"duration_ms"`
	TokensIn   *int64          `json:"tokens_in"`
	TokensOut  *int64          `json:"tokens_out"`
	Cost       *float64        `json:"cost"`
	Screenshot string          `json:"screenshot"`
	Error      string          `json:"error"`
}

// parseSteps reads steps.jsonl strictly: one object per line (blank lines
// skipped), unknown fields refused, the first bad line named.
func parseSteps(rec *record, b []byte) error {
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ps proctorStep
		if err := decodeStrict(line, &ps); err != nil {
			return fmt.Errorf("line %d: %v", i+1, err)
		}
		action, err := normalizeAction(ps.Action)
		if err != nil {
			return fmt.Errorf("line %d: %v", i+1, err)
		}
		if len(action) > maxActionBytes {
			return fmt.Errorf("line %d: the action is %s as JSON, over the limit of %s", i+1, humanBytes(int64(len(action))), humanBytes(maxActionBytes))
		}
		tokensIn, tokensOut, cost := deref(ps.TokensIn), deref(ps.TokensOut), deref(ps.Cost)
		if ps.DurationMS < 0 || tokensIn < 0 || tokensOut < 0 || cost < 0 {
			return fmt.Errorf("line %d: duration_ms, tokens_in, tokens_out and cost cannot be negative", i+1)
		}
		rec.steps = append(rec.steps, stepLine{line: i + 1, screenshot: ps.Screenshot,
			tokensStated: ps.TokensIn != nil || ps.TokensOut != nil, costStated: ps.Cost != nil, step: Step{
				Index: len(rec.steps), Action: action, Thought: cutText(ps.Thought, &rec.cut), URL: cutText(ps.URL, &rec.cut),
				Title: cutText(ps.Title, &rec.cut), StartedAt: ps.StartedAt, DurationMS: ps.DurationMS, TokensIn: tokensIn,
				TokensOut: tokensOut, Cost: cost, Error: cutText(ps.Error, &rec.cut),
			}})
	}
	return nil
}

// deref is the value p points at, or zero.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// normalizeAction turns a step's action (a models.Action object, or a
// string describing it) into models.Action JSON; strings become "recorded".
func normalizeAction(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("action is required: an action object or a string describing it")
	}
	var action models.Action
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, jsonProblem(err)
		}
		action = models.Action{Type: models.ActRecorded, Text: text}
	} else {
		if err := decodeStrict(raw, &action); err != nil {
			return nil, fmt.Errorf("action: %v", err)
		}
		if action.Type != models.ActRecorded {
			if err := action.Validate(); err != nil {
				return nil, err
			}
		}
	}
	return recordedJSON(action)
}

// recordedJSON encodes an action as the ingest stores it: compact, with
// "<" and ">" kept as written (recorded actions quote HTML).
func recordedJSON(action models.Action) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(action); err != nil {
		return nil, fmt.Errorf("encode the action: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// cappedJSON encodes an action or answer (what names it in the problem),
// refusing one over maxActionBytes.
func cappedJSON(action models.Action, what string) (json.RawMessage, error) {
	raw, err := recordedJSON(action)
	if err != nil {
		return nil, err
	}
	if len(raw) > maxActionBytes {
		return nil, fmt.Errorf("%s is %s as JSON, over the limit of %s", what, humanBytes(int64(len(raw))), humanBytes(maxActionBytes))
	}
	return raw, nil
}

// om2wResult is what an Online-Mind2Web result.json holds.
type om2wResult struct {
	taskID   string
	final    json.RawMessage   // the answer action, or nil
	actions  []json.RawMessage // recorded actions
	thoughts []string
}

func parseOM2WResult(rec *record, b []byte) error {
	var doc struct {
		TaskID   json.RawMessage   `json:"task_id"`
		Final    *string           `json:"final_result_response"`
		Actions  []json.RawMessage `json:"action_history"`
		Thoughts []json.RawMessage `json:"thoughts"`
	}
	if err := decodeLoose(b, &doc); err != nil {
		return err
	}
	res := &om2wResult{taskID: scalarText(doc.TaskID)}
	if doc.Final != nil && *doc.Final != "" {
		final, err := cappedJSON(models.Action{Type: models.ActAnswer, Text: *doc.Final}, "final_result_response")
		if err != nil {
			return err
		}
		res.final = final
	}
	for i, a := range doc.Actions {
		action, err := cappedJSON(models.Action{Type: models.ActRecorded, Text: scalarText(a)}, fmt.Sprintf("action_history[%d]", i))
		if err != nil {
			return err
		}
		res.actions = append(res.actions, action)
	}
	for _, t := range doc.Thoughts {
		res.thoughts = append(res.thoughts, cutText(scalarText(t), &rec.cut))
	}
	rec.result = res
	return nil
}

// scalarText is a JSON string's text, a number's digits, "" for null, or
// compact JSON for anything else (an action recorded as an object).
func scalarText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// agentLabSummary is what an AgentLab summary_info.json says about an episode.
type agentLabSummary struct {
	taskID     string // task_id, when the file names it
	taskName   string // task_name, when the file names it
	steps      int64
	reward     float64
	errMsg     string
	tokensIn   int64
	tokensOut  int64
	cost       float64
	durationMS int64
	// tokensStated, costStated: the summary gave its token counts, its cost.
	tokensStated, costStated bool
}

func parseAgentLabSummary(rec *record, b []byte) error {
	var doc map[string]json.RawMessage
	if err := decodeLoose(b, &doc); err != nil {
		return err
	}
	if doc == nil {
		return errors.New("must be a JSON object")
	}
	s := &agentLabSummary{taskID: scalarText(doc["task_id"]), taskName: scalarText(doc["task_name"])}
	var problems []string
	num := func(key string) float64 {
		raw := doc[key]
		if len(raw) == 0 || string(raw) == "null" {
			return 0
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || v < 0 {
			problems = append(problems, key)
			return 0
		}
		return v
	}
	s.steps = int64(num("n_steps"))
	if raw := doc["cum_reward"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s.reward); err != nil {
			problems = append(problems, "cum_reward")
		}
	}
	stated := func(key string) bool { raw := doc[key]; return len(raw) > 0 && string(raw) != "null" }
	s.tokensStated = stated("stats.cum_input_tokens") || stated("stats.cum_output_tokens")
	s.costStated = stated("stats.cum_cost")
	s.tokensIn = int64(num("stats.cum_input_tokens"))
	s.tokensOut = int64(num("stats.cum_output_tokens"))
	s.cost = num("stats.cum_cost")
	s.durationMS = int64(num("stats.cum_step_elapsed") * 1000)
	s.errMsg = cutText(scalarText(doc["err_msg"]), &rec.cut)
	if len(problems) > 0 {
		return fmt.Errorf("%s must be non-negative numbers", strings.Join(problems, ", "))
	}
	rec.summary = s
	return nil
}

// agentLabStep is what AgentLab's steps_info.json says about one step.
type agentLabStep struct {
	index      int
	action     json.RawMessage // a recorded action
	final      json.RawMessage // the answer or stop the action is, or nil
	think      string
	url        string
	errMsg     string
	tokensIn   int64
	tokensOut  int64
	cost       float64
	startedAt  *time.Time
	durationMS int64
}

// parseAgentLabSteps reads steps_info.json: AgentLab writes the current
// step's StepInfo as one object; a list of them is accepted too.
func parseAgentLabSteps(rec *record, b []byte) error {
	type stepInfo struct {
		Step      *int            `json:"step"`
		Action    json.RawMessage `json:"action"`
		AgentInfo struct {
			Think  json.RawMessage `json:"think"`
			ErrMsg json.RawMessage `json:"err_msg"`
		} `json:"agent_info"`
		Obs *struct {
			URL json.RawMessage `json:"url"`
		} `json:"obs"`
		Stats     map[string]json.RawMessage `json:"stats"`
		Profiling struct {
			AgentStart *float64 `json:"agent_start"`
			AgentStop  *float64 `json:"agent_stop"`
		} `json:"profiling"`
	}
	var list []stepInfo
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := decodeLoose(b, &list); err != nil {
			return err
		}
	} else {
		var one stepInfo
		if err := decodeLoose(b, &one); err != nil {
			return err
		}
		list = []stepInfo{one}
	}
	for i, si := range list {
		st := agentLabStep{index: i, think: cutText(scalarText(si.AgentInfo.Think), &rec.cut),
			errMsg: cutText(scalarText(si.AgentInfo.ErrMsg), &rec.cut)}
		text := scalarText(si.Action)
		var err error
		if st.action, err = cappedJSON(models.Action{Type: models.ActRecorded, Text: text}, fmt.Sprintf("step %d: the action", i)); err != nil {
			return err
		}
		if final, ok := agentLabFinal(text); ok {
			if len(final) > maxActionBytes {
				return fmt.Errorf("step %d: the answer is %s as JSON, over the limit of %s", i, humanBytes(int64(len(final))), humanBytes(maxActionBytes))
			}
			st.final = final
		}
		if si.Step != nil {
			if *si.Step < 0 {
				return fmt.Errorf("step %d: step cannot be negative", i)
			}
			st.index = *si.Step
		}
		if si.Obs != nil {
			st.url = cutText(scalarText(si.Obs.URL), &rec.cut)
		}
		for key, dst := range map[string]*int64{"input_tokens": &st.tokensIn, "output_tokens": &st.tokensOut} {
			var v float64
			if raw := si.Stats[key]; raw != nil && json.Unmarshal(raw, &v) == nil && v > 0 {
				*dst = int64(v)
			}
		}
		if raw := si.Stats["cost"]; raw != nil {
			_ = json.Unmarshal(raw, &st.cost) // a missing or odd cost is no cost
			st.cost = max(st.cost, 0)
		}
		if p := si.Profiling; p.AgentStart != nil && *p.AgentStart > 0 {
			start := time.UnixMilli(int64(*p.AgentStart * 1000)).UTC()
			st.startedAt = &start
			if p.AgentStop != nil && *p.AgentStop >= *p.AgentStart {
				st.durationMS = int64((*p.AgentStop - *p.AgentStart) * 1000)
			}
		}
		rec.stepsInfo = append(rec.stepsInfo, st)
	}
	return nil
}
