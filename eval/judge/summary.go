package judge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"proctor/eval"
	"proctor/internal/jpegscale"
	"proctor/models"
)

// Sizes of what a judge sees.
const (
	// ImageWidth and imageQuality shape the screenshots sent: small enough to be
	// cheap, large enough to read a page's headings and buttons.
	ImageWidth   = 512
	imageQuality = 60
	// ImageTokens is the estimated input cost of one screenshot with its label.
	// A 512-pixel-wide image costs a few hundred tokens on common vision models.
	ImageTokens = 500
	// Caps on one step's fields at each level of detail, in characters.
	fullThought, fullAction, fullError = 1500, 1500, 500
	trimThought, trimAction, trimError = 200, 300, 120
	terseAction, terseURL, terseError  = 120, 120, 80
	maxURL, maxTitle                   = 300, 150
	maxFinalAnswer                     = 2000
	// Caps on a step's accessibility text, in characters: in full, a page's
	// main content; trimmed, its top (headings and navigation). Terse steps
	// show none.
	fullAccessibility, trimAccessibility = 6000, 1000
)

// Levels of detail of one step in the prompt.
const (
	levelFull = iota
	levelTrim
	levelTerse
	levelOmitted
)

// estimateTokens is the rough input-token cost of text: about four characters
// a token (bytes, so non-Latin text is over- rather than under-estimated).
func estimateTokens(s string) int { return (len(s) + 3) / 4 }

// stepView is one step as a judge sees it: an (observation, action, next
// observation) triple.
type stepView struct {
	number             int // 1-based, as the timeline shows it
	url, title         string
	action             json.RawMessage
	thought, err       string
	nextURL, nextTitle string
	last               bool
	screenshot         func(ctx context.Context) ([]byte, error)
	accessibility      func(ctx context.Context) (string, error)
	// ax is the start of the step's accessibility text (fullAccessibility
	// characters at most) and axTotal its whole length, once loaded.
	ax      string
	axTotal int
	text    [levelOmitted]string // the step rendered at each level of detail
	tokens  [levelOmitted]int    // and its estimated cost
}

// viewsOf turns a trajectory into triples: each step's next observation is
// the following step's page.
func viewsOf(steps []eval.TrajectoryStep) []*stepView {
	views := make([]*stepView, len(steps))
	for i, s := range steps {
		// URLs are folded onto one line like every other field, so that none
		// can add a line to the trajectory.
		v := &stepView{number: s.Index + 1, url: oneLine(s.URL), title: s.Title, action: s.Action, thought: s.Thought, err: s.Error,
			screenshot: s.Screenshot, accessibility: s.Accessibility}
		if i+1 < len(steps) {
			v.nextURL, v.nextTitle = oneLine(steps[i+1].URL), steps[i+1].Title
		} else {
			v.last = true
		}
		v.measure()
		views[i] = v
	}
	return views
}

// measure renders the step at every level of detail and estimates the cost.
func (v *stepView) measure() {
	for level := range levelOmitted {
		v.text[level] = v.render(level)
		v.tokens[level] = estimateTokens(v.text[level])
	}
}

// loadAccessibility loads the accessibility text of every step that has one,
// so that the summary can weigh it. A text that cannot be loaded is left out
// (and counted) rather than failing the judgement; only the context's end is
// an error.
func loadAccessibility(ctx context.Context, views []*stepView) (failed int, err error) {
	for _, v := range views {
		if v.accessibility == nil {
			continue
		}
		text, err := v.accessibility(ctx)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err != nil {
			failed++
			continue
		}
		text = strings.TrimSpace(strings.ToValidUTF8(text, "\uFFFD"))
		if text == "" {
			continue
		}
		v.ax, v.axTotal = firstRunes(text, fullAccessibility), utf8.RuneCountInString(text)
		v.measure()
	}
	return failed, nil
}

// axBlock renders the start of an accessibility text, at most limit
// characters, as indented lines under a heading that says how much is shown.
// The indent keeps every line of the page's text inside the step it belongs to.
func (v *stepView) axBlock(limit int) string {
	shown := firstRunes(v.ax, limit)
	n := utf8.RuneCountInString(shown)
	var b strings.Builder
	if n < v.axTotal {
		fmt.Fprintf(&b, "  accessibility tree (the first %d of %d characters):\n", n, v.axTotal)
	} else {
		b.WriteString("  accessibility tree:\n")
	}
	for line := range strings.SplitSeq(shown, "\n") {
		if line = strings.TrimRight(line, " \t\r"); strings.TrimSpace(line) != "" {
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String()
}

// render writes the step at a level of detail, ending with a newline.
func (v *stepView) render(level int) string {
	var b strings.Builder
	if level == levelTerse {
		fmt.Fprintf(&b, "Step %d: %s on %s", v.number, truncate(actionSummary(v.action), terseAction), truncate(v.url, terseURL))
		if v.err != "" {
			fmt.Fprintf(&b, " (failed: %s)", truncate(oneLine(v.err), terseError))
		}
		b.WriteString("\n")
		return b.String()
	}
	thoughtCap, actionCap, errCap := fullThought, fullAction, fullError
	if level == levelTrim {
		thoughtCap, actionCap, errCap = trimThought, trimAction, trimError
	}
	fmt.Fprintf(&b, "Step %d\n", v.number)
	fmt.Fprintf(&b, "  observation: %s\n", page(v.url, v.title))
	if v.ax != "" {
		axCap := fullAccessibility
		if level == levelTrim {
			axCap = trimAccessibility
		}
		b.WriteString(v.axBlock(axCap))
	}
	fmt.Fprintf(&b, "  action: %s\n", truncate(compactJSON(v.action), actionCap))
	if t := strings.TrimSpace(v.thought); t != "" {
		fmt.Fprintf(&b, "  thought: %s\n", truncate(oneLine(t), thoughtCap))
	}
	if v.err != "" {
		fmt.Fprintf(&b, "  error: %s\n", truncate(oneLine(v.err), errCap))
	}
	if v.last {
		b.WriteString("  next observation: none (the episode ended after this step)\n")
	} else {
		fmt.Fprintf(&b, "  next observation: %s\n", page(v.nextURL, v.nextTitle))
	}
	return b.String()
}

// page renders a page as its URL and quoted title.
func page(url, title string) string {
	if url == "" {
		url = "(no URL)"
	}
	if title = strings.TrimSpace(title); title == "" {
		return truncate(url, maxURL)
	}
	return fmt.Sprintf("%s — %q", truncate(url, maxURL), truncate(oneLine(title), maxTitle))
}

// actionSummary renders an action in one line, its raw JSON when it is not a
// protocol action.
func actionSummary(raw json.RawMessage) string {
	var a models.Action
	if err := json.Unmarshal(raw, &a); err != nil || a.Type == "" {
		return oneLine(compactJSON(raw))
	}
	return oneLine(a.Summary())
}

// compactJSON is raw without insignificant whitespace, or "(none)".
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return oneLine(string(raw))
	}
	return b.String()
}

// oneLine folds whitespace runs, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// summary is a trajectory fitted into a token budget: each step's level of
// detail and which steps carry a screenshot.
type summary struct {
	views  []*stepView
	level  []int
	images []int // indexes into views, ascending
}

// omissionTokens is the cost of one "steps … omitted" line.
const omissionTokens = 20

// tokens is the summary's estimated cost.
func (s *summary) tokens() int {
	total, omitting := len(s.images)*ImageTokens, false
	for i, v := range s.views {
		if s.level[i] == levelOmitted {
			if !omitting {
				total += omissionTokens
			}
			omitting = true
			continue
		}
		omitting = false
		total += v.tokens[s.level[i]]
	}
	return total
}

// shown counts the steps not omitted.
func (s *summary) shown() int {
	n := 0
	for _, l := range s.level {
		if l != levelOmitted {
			n++
		}
	}
	return n
}

// shortened reports whether any step is shown with less than full detail.
func (s *summary) shortened() bool {
	for _, l := range s.level {
		if l != levelFull {
			return true
		}
	}
	return false
}

// text renders the kept steps, marking omitted runs.
func (s *summary) text() string {
	var b strings.Builder
	for i := 0; i < len(s.views); i++ {
		if s.level[i] != levelOmitted {
			b.WriteString(s.views[i].text[s.level[i]])
			continue
		}
		j := i
		for j+1 < len(s.views) && s.level[j+1] == levelOmitted {
			j++
		}
		fmt.Fprintf(&b, "… steps %d to %d omitted (%d steps) …\n", s.views[i].number, s.views[j].number, j-i+1)
		i = j
	}
	return b.String()
}

// summarize fits the trajectory into budget tokens. It starts from every step
// in full with up to maxImages screenshots (the last steps', then evenly spaced
// earlier ones), and sheds detail in this order until it fits: screenshots but
// the last; the middle steps' long fields; the middle steps down to one line;
// the last screenshot; middle steps from the centre outwards; the first and last
// steps' long fields. The first and last steps are always kept.
func summarize(views []*stepView, maxImages, budget int) *summary {
	s := &summary{views: views, level: make([]int, len(views)), images: pickImages(views, maxImages)}
	fits := func() bool { return s.tokens() <= budget }
	for len(s.images) > 1 && !fits() {
		s.images = s.images[1:]
	}
	middle := func(level int) {
		for i := 1; i < len(views)-1; i++ {
			s.level[i] = level
		}
	}
	if !fits() {
		middle(levelTrim)
	}
	if !fits() {
		middle(levelTerse)
	}
	if !fits() {
		s.images = nil
	}
	// Omit middle steps from the centre outwards: keep head steps at the start
	// and tail steps at the end, shrinking whichever side is longer.
	head, tail := len(views)/2, len(views)-len(views)/2
	for !fits() && head+tail > 2 && len(views) > 2 {
		if head >= tail {
			head--
			s.level[head] = levelOmitted
		} else {
			tail--
			s.level[len(views)-1-tail] = levelOmitted
		}
	}
	if !fits() && len(views) > 0 {
		s.level[0] = max(s.level[0], levelTrim)
		s.level[len(views)-1] = max(s.level[len(views)-1], levelTrim)
	}
	return s
}

// pickImages chooses up to n steps with screenshots: half of them (rounded
// up) the last such steps, where the outcome shows, the rest evenly spaced
// over the earlier ones.
func pickImages(views []*stepView, n int) []int {
	var candidates []int
	for i, v := range views {
		if v.screenshot != nil {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) <= n {
		return candidates
	}
	if n <= 0 {
		return nil
	}
	lastCount := (n + 1) / 2
	earlier := candidates[:len(candidates)-lastCount]
	spread := n - lastCount
	var picked []int
	for j := range spread {
		picked = append(picked, earlier[(j+1)*len(earlier)/(spread+1)])
	}
	return append(picked, candidates[len(candidates)-lastCount:]...)
}

// ending says how the episode ended: the final answer, the stop reason, or the
// error that cut it short.
func ending(in eval.Input) string {
	switch {
	case in.Final != nil && in.Final.Type == models.ActAnswer:
		// The text is quoted as a JSON string, so that an answer spanning lines
		// cannot pass for more of the trajectory.
		answer := "the agent gave its final answer: " + quoted(truncate(in.Final.Text, maxFinalAnswer))
		if len(in.Final.Response) > 0 {
			answer += " with the structured response " + truncate(compactJSON(in.Final.Response), maxFinalAnswer)
		}
		return answer
	case in.Final != nil && in.Final.Type == models.ActStop:
		reason := strings.TrimSpace(in.Final.Reason)
		if reason == "" {
			reason = "no reason given"
		}
		return "the agent stopped without an answer: " + truncate(oneLine(reason), trimThought)
	case in.ErrorClass != "" || in.ErrorMessage != "":
		msg := "the episode ended without an answer"
		if in.ErrorClass != "" {
			msg += " (" + in.ErrorClass + ")"
		}
		if in.ErrorMessage != "" {
			msg += ": " + truncate(oneLine(in.ErrorMessage), fullError)
		}
		return msg
	}
	return "the episode ended without an answer"
}

// shot is one screenshot ready to send.
type shot struct {
	step    int // 1-based
	dataURL string
}

// loadImages fetches and downscales the chosen screenshots. One that cannot be
// loaded is left out (and counted) rather than failing the judgement; only the
// context's end is an error.
func loadImages(ctx context.Context, s *summary) (shots []shot, failed int, err error) {
	for _, i := range s.images {
		v := s.views[i]
		data, err := v.screenshot(ctx)
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if err == nil {
			data, err = jpegscale.Scale(data, ImageWidth, imageQuality)
		}
		if err != nil {
			failed++
			continue
		}
		shots = append(shots, shot{step: v.number, dataURL: "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(data)})
	}
	return shots, failed, nil
}

// imageLabel introduces a screenshot in the prompt.
func imageLabel(step int) string {
	return fmt.Sprintf("Screenshot of step %d (the page the agent saw before acting):", step)
}
