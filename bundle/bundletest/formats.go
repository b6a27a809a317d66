package bundletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"proctor/models"
)

// PNG is a w×h PNG screenshot: a gradient, so no two sizes encode alike.
func PNG(w, h int) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, gradient(w, h)); err != nil {
		panic(fmt.Sprintf("bundletest: encode PNG: %v", err)) // an in-memory encode cannot fail
	}
	return buf.Bytes()
}

// JPEG is a w×h JPEG screenshot.
func JPEG(w, h int) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, gradient(w, h), &jpeg.Options{Quality: 80}); err != nil {
		panic(fmt.Sprintf("bundletest: encode JPEG: %v", err))
	}
	return buf.Bytes()
}

func gradient(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{R: uint8(x * 255 / max(1, w)), G: uint8(y * 255 / max(1, h)), B: 128, A: 255})
		}
	}
	return img
}

// HAR is a small valid HAR log of n GET entries.
func HAR(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"log":{"version":"1.2","creator":{"name":"bundletest","version":"1"},"entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(harEntry(i, ""))
	}
	b.WriteString("]}}")
	return []byte(b.String())
}

func harEntry(i int, text string) string {
	return fmt.Sprintf(`{"startedDateTime":"2025-10-19T14:40:%02d.000Z","time":12.5,`+
		`"request":{"method":"GET","url":"http://shopping.test/page/%d","httpVersion":"HTTP/1.1","cookies":[],"headers":[],"queryString":[],"headersSize":-1,"bodySize":0},`+
		`"response":{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","cookies":[],"headers":[],"content":{"size":%d,"mimeType":"text/html","text":%q},"redirectURL":"","headersSize":-1,"bodySize":%d},`+
		`"cache":{},"timings":{"send":0,"wait":10,"receive":2.5}}`, i%60, i, len(text), text, len(text))
}

// LargeHAR is a valid HAR of at least size bytes, generated while it is read
// (never held in memory): entries of about 4 KiB of page text each, with
// random ids so it compresses about as well as a real HAR.
func LargeHAR(size int64) func() io.Reader {
	return func() io.Reader { return &harGenerator{size: size, rng: rand.New(rand.NewPCG(uint64(size), 1))} }
}

type harGenerator struct {
	size, written int64
	entries       int
	buf           []byte
	done          bool
	rng           *rand.Rand
	text          strings.Builder
}

func (g *harGenerator) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		if g.done {
			return 0, io.EOF
		}
		switch {
		case g.entries == 0:
			g.buf = []byte(`{"log":{"version":"1.2","creator":{"name":"bundletest","version":"1"},"entries":[`)
		case g.written >= g.size:
			g.buf, g.done = []byte("]}}"), true
			continue
		default:
			g.buf = []byte(",")
		}
		g.text.Reset()
		for range 100 {
			fmt.Fprintf(&g.text, "<p>item %016x costs %d</p>", g.rng.Uint64(), g.rng.IntN(100000))
		}
		g.buf = append(g.buf, harEntry(g.entries, g.text.String())...)
		g.entries++
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	g.written += int64(n)
	return n, nil
}

// DefaultAgentResponse is a WebArena-Verified agent_response.json.
const DefaultAgentResponse = `{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": ["42"], "error_details": null}`

// WAVTask is one task folder of a WebArena-Verified submission.
type WAVTask struct {
	ID       string
	Response string // agent_response.json; DefaultAgentResponse when empty
	HAR      []byte // network.har; HAR(3) when nil
	NoHAR    bool   // write no network.har
	Missing  bool   // write only an empty .missing: the task was not attempted
	Extra    []Entry
}

// WebArenaVerifiedEntries are a WebArena-Verified submission's entries:
// {task_id}/agent_response.json and {task_id}/network.har, or {task_id}/.missing.
func WebArenaVerifiedEntries(tasks ...WAVTask) []Entry {
	var entries []Entry
	for _, task := range tasks {
		entries = append(entries, Entry{Name: task.ID + "/", Type: Dir})
		if task.Missing {
			entries = append(entries, Entry{Name: task.ID + "/.missing"})
			continue
		}
		resp := task.Response
		if resp == "" {
			resp = DefaultAgentResponse
		}
		entries = append(entries, Entry{Name: task.ID + "/agent_response.json", Body: []byte(resp)})
		if !task.NoHAR {
			har := task.HAR
			if har == nil {
				har = HAR(3)
			}
			entries = append(entries, Entry{Name: task.ID + "/network.har", Body: har})
		}
		entries = append(entries, under(task.ID, task.Extra)...)
	}
	return entries
}

// WebArenaVerified writes a WebArena-Verified submission to path (zip or
// tar.gz by its extension) and returns path.
func WebArenaVerified(t testing.TB, path string, tasks ...WAVTask) string {
	t.Helper()
	return Write(t, path, KindOf(path), WebArenaVerifiedEntries(tasks...))
}

// ProctorTask is one task of a Proctor trajectory bundle.
type ProctorTask struct {
	ID string
	// Steps generated steps, each with a 64×40 PNG screenshot
	// (screenshots/NNNN.png) and 100 tokens in, 10 out, cost 0.001.
	Steps      int
	StepsJSONL string // steps.jsonl written as is instead of the generated steps
	Answer     string // answer.json; {"type": "answer", "text": "done"} when empty
	NoAnswer   bool   // write no answer.json
	HAR        bool   // write network.har (HAR(2))
	Missing    bool   // write only an empty .missing
	Extra      []Entry
}

// ProctorManifest is a valid manifest.json for benchmark and subset.
func ProctorManifest(benchmark, subset string) models.BundleManifest {
	maxCost := 2.5
	return models.BundleManifest{
		Format: "proctor-trajectory/1", Agent: "acme/navigator", Model: "gpt-4o",
		AgentFramework: "browser-use 0.8", Benchmark: benchmark, Subset: subset, Date: "2025-10-19",
		Budgets: models.BundleBudgets{MaxSteps: 30, MaxEpisodeSeconds: 600, MaxCost: &maxCost},
	}
}

// ProctorStepLine is one generated steps.jsonl line.
func ProctorStepLine(i int, screenshot string) string {
	line := map[string]any{
		"action":      map[string]any{"type": "click", "target": map[string]any{"element_id": fmt.Sprint(10 + i)}},
		"thought":     fmt.Sprintf("step %d: open the next page", i),
		"url":         fmt.Sprintf("http://shopping.test/page/%d", i),
		"title":       fmt.Sprintf("Page %d", i),
		"started_at":  fmt.Sprintf("2025-10-19T14:40:%02dZ", i%60),
		"duration_ms": 1500,
		"tokens_in":   100,
		"tokens_out":  10,
		"cost":        0.001,
	}
	if screenshot != "" {
		line["screenshot"] = screenshot
	}
	b, err := json.Marshal(line)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ProctorEntries are a Proctor trajectory bundle's entries: manifest.json and
// tasks/{task_id}/{steps.jsonl, screenshots/, answer.json, network.har, .missing}.
func ProctorEntries(m models.BundleManifest, tasks ...ProctorTask) []Entry {
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(err)
	}
	entries := []Entry{{Name: "manifest.json", Body: manifest}, {Name: "tasks/", Type: Dir}}
	for _, task := range tasks {
		dir := "tasks/" + task.ID
		if task.Missing {
			entries = append(entries, Entry{Name: dir + "/.missing"})
			continue
		}
		steps := task.StepsJSONL
		if steps == "" {
			var b strings.Builder
			for i := range task.Steps {
				shot := fmt.Sprintf("screenshots/%04d.png", i)
				entries = append(entries, Entry{Name: dir + "/" + shot, Body: PNG(64, 40)})
				b.WriteString(ProctorStepLine(i, shot) + "\n")
			}
			steps = b.String()
		}
		entries = append(entries, Entry{Name: dir + "/steps.jsonl", Body: []byte(steps)})
		if !task.NoAnswer {
			answer := task.Answer
			if answer == "" {
				answer = `{"type": "answer", "text": "done"}`
			}
			entries = append(entries, Entry{Name: dir + "/answer.json", Body: []byte(answer)})
		}
		if task.HAR {
			entries = append(entries, Entry{Name: dir + "/network.har", Body: HAR(2)})
		}
		entries = append(entries, under(dir, task.Extra)...)
	}
	return entries
}

// Proctor writes a Proctor trajectory bundle to path and returns path.
func Proctor(t testing.TB, path string, m models.BundleManifest, tasks ...ProctorTask) string {
	t.Helper()
	return Write(t, path, KindOf(path), ProctorEntries(m, tasks...))
}

// OM2WTask is one task folder of Online-Mind2Web results.
type OM2WTask struct {
	ID     string
	Steps  int    // actions, thoughts and trajectory/{i}_full_screenshot.png screenshots
	Final  string // final_result_response; "done" when empty
	Result string // result.json written as is instead of the generated one
	Extra  []Entry
}

// OnlineMind2WebEntries are Online-Mind2Web results' entries:
// {task_id}/result.json and {task_id}/trajectory/*.png.
func OnlineMind2WebEntries(tasks ...OM2WTask) []Entry {
	var entries []Entry
	for _, task := range tasks {
		result := task.Result
		if result == "" {
			final := task.Final
			if final == "" {
				final = "done"
			}
			doc := map[string]any{
				"task_id": task.ID, "task": "Find the page of task " + task.ID,
				"final_result_response": final, "action_history": []string{}, "thoughts": []string{},
			}
			var actions, thoughts []string
			for i := range task.Steps {
				actions = append(actions, fmt.Sprintf(`<a href="/page/%d"> -> CLICK`, i))
				thoughts = append(thoughts, fmt.Sprintf("Open page %d.", i))
			}
			if len(actions) > 0 {
				doc["action_history"], doc["thoughts"] = actions, thoughts
			}
			b, err := json.MarshalIndent(doc, "", "    ")
			if err != nil {
				panic(err)
			}
			result = string(b)
		}
		entries = append(entries, Entry{Name: task.ID + "/result.json", Body: []byte(result)})
		for i := range task.Steps {
			entries = append(entries, Entry{Name: fmt.Sprintf("%s/trajectory/%d_full_screenshot.png", task.ID, i), Body: PNG(48, 30)})
		}
		entries = append(entries, under(task.ID, task.Extra)...)
	}
	return entries
}

// OnlineMind2Web writes Online-Mind2Web results to path and returns path.
func OnlineMind2Web(t testing.TB, path string, tasks ...OM2WTask) string {
	t.Helper()
	return Write(t, path, KindOf(path), OnlineMind2WebEntries(tasks...))
}

// AgentLabTask is one AgentLab / BrowserGym experiment folder.
type AgentLabTask struct {
	TaskName  string // BrowserGym task name, e.g. "webarena.310"
	Seed      int
	Steps     int     // actions; Steps+1 screenshots (the last observation has no action)
	Reward    float64 // cum_reward
	ErrMsg    string
	Summary   string // summary_info.json written as is instead of the generated one
	StepsInfo bool   // write steps_info.json (a list of steps; the last sends "done" to the user)
	Pickles   bool   // write the pickles AgentLab saves (exp_args.pkl, step_N.pkl.gz)
	Folder    string // folder name instead of DATE_GenericAgent-gpt-4o_on_TASK_SEED
	Extra     []Entry
}

// AgentLabFolder is the experiment folder name AgentLab gives a task.
func AgentLabFolder(taskName string, seed int) string {
	return fmt.Sprintf("2025-10-19_14-40-00_GenericAgent-gpt-4o_on_%s_%d", taskName, seed)
}

// AgentLabEntries are AgentLab experiment folders: summary_info.json,
// screenshot_step_N.png and optionally steps_info.json.
func AgentLabEntries(tasks ...AgentLabTask) []Entry {
	var entries []Entry
	for _, task := range tasks {
		dir := task.Folder
		if dir == "" {
			dir = AgentLabFolder(task.TaskName, task.Seed)
		}
		summary := task.Summary
		if summary == "" {
			doc := map[string]any{
				"n_steps": task.Steps, "cum_reward": task.Reward, "cum_raw_reward": 0,
				"err_msg": nil, "stack_trace": nil,
				"stats.cum_steps": task.Steps + 1, "stats.cum_input_tokens": 1000 * task.Steps,
				"stats.cum_output_tokens": 100 * task.Steps, "stats.cum_cost": 0.01 * float64(task.Steps),
				"stats.cum_step_elapsed": 2.5 * float64(task.Steps), "stats.cum_agent_elapsed": 1.5 * float64(task.Steps),
				"terminated": true, "truncated": false,
			}
			if task.ErrMsg != "" {
				doc["err_msg"], doc["stack_trace"] = task.ErrMsg, "Traceback (most recent call last):\n  ..."
			}
			b, err := json.MarshalIndent(doc, "", "    ")
			if err != nil {
				panic(err)
			}
			summary = string(b)
		}
		entries = append(entries, Entry{Name: dir + "/", Type: Dir}, Entry{Name: dir + "/summary_info.json", Body: []byte(summary)})
		for i := 0; i <= task.Steps; i++ {
			entries = append(entries, Entry{Name: fmt.Sprintf("%s/screenshot_step_%d.png", dir, i), Body: PNG(40, 25)})
		}
		if task.StepsInfo {
			var steps []map[string]any
			for i := range task.Steps {
				action := fmt.Sprintf("click('%d')", 10+i)
				if i == task.Steps-1 {
					action = `send_msg_to_user("done")`
				}
				steps = append(steps, map[string]any{
					"step": i, "action": action, "reward": 0, "terminated": false, "truncated": false,
					"agent_info": map[string]any{"think": fmt.Sprintf("Step %d.", i)},
					"stats":      map[string]any{"input_tokens": 1000, "output_tokens": 100, "cost": 0.01},
				})
			}
			b, err := json.MarshalIndent(steps, "", "    ")
			if err != nil {
				panic(err)
			}
			entries = append(entries, Entry{Name: dir + "/steps_info.json", Body: b})
		}
		if task.Pickles {
			entries = append(entries, Entry{Name: dir + "/exp_args.pkl", Body: []byte("\x80\x04pickle")})
			for i := 0; i <= task.Steps; i++ {
				entries = append(entries, Entry{Name: fmt.Sprintf("%s/step_%d.pkl.gz", dir, i), Body: []byte("\x1f\x8bnot really")})
			}
		}
		entries = append(entries, under(dir, task.Extra)...)
	}
	return entries
}

// AgentLab writes AgentLab experiment folders to path and returns path.
func AgentLab(t testing.TB, path string, tasks ...AgentLabTask) string {
	t.Helper()
	return Write(t, path, KindOf(path), AgentLabEntries(tasks...))
}

func under(dir string, entries []Entry) []Entry {
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		e.Name = dir + "/" + e.Name
		out = append(out, e)
	}
	return out
}
