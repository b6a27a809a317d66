package bundle

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"proctor/models"
)

// ProctorFormatVersion is the manifest format the Proctor trajectory bundle
// declares (docs/bundle-formats.md).
const ProctorFormatVersion = "proctor-trajectory/1"

// inspector gathers what the walk reads: every file name and the records of
// the files whose names give them a role.
type inspector struct {
	lim     Limits
	files   []string // regular files, archive order
	records map[string]*record
	images  *imageChecks
	meta    metadata  // what files and records hold, against lim.MaxMetadataBytes
	store   StoreFunc // InspectStoring's, or nil
}

func newInspector(lim Limits) *inspector {
	return &inspector{lim: lim, records: map[string]*record{}, images: newImageChecks(lim.MaxImagePixels),
		meta: metadata{limit: lim.MaxMetadataBytes}}
}

func (in *inspector) visit(e entry, open func() (io.Reader, error)) error {
	if err := in.meta.add(int64(len(e.Name)) + nameOverhead); err != nil {
		return err
	}
	if e.Dir {
		return nil
	}
	in.files = append(in.files, e.Name)
	if ignoredName(e.Name) {
		return nil
	}
	ro := roleOf(e.Name)
	if ro == roleOther {
		return nil
	}
	r, err := open()
	if err != nil {
		return err
	}
	rec := &record{path: e.Name, role: ro, size: e.Size}
	in.records[e.Name] = rec
	if err := in.parse(rec, r); err != nil {
		return err
	}
	return in.meta.add(rec.retainedBytes())
}

// layout is the bundle's files seen from its root (the archive's, or the
// single folder that wraps everything).
type layout struct {
	root  string   // "" or "folder/"
	paths []string // relative to root, sorted, archiver litter left out
}

func (l layout) full(rel string) string { return l.root + rel }

// detect finds the format of the files at the archive's root or, failing
// that, inside the single folder that wraps them all.
func detect(files []string) (string, layout) {
	var paths []string
	for _, f := range files {
		if !ignoredName(f) {
			paths = append(paths, f)
		}
	}
	slices.Sort(paths)
	l := layout{paths: paths}
	if format := detectAt(paths); format != "" || len(paths) == 0 {
		return format, l
	}
	top, _, ok := strings.Cut(paths[0], "/")
	if !ok {
		return "", l
	}
	wrapped := make([]string, 0, len(paths))
	for _, p := range paths {
		rest, ok := strings.CutPrefix(p, top+"/")
		if !ok {
			return "", l
		}
		wrapped = append(wrapped, rest)
	}
	if format := detectAt(wrapped); format != "" {
		return format, layout{root: top + "/", paths: wrapped}
	}
	return "", l
}

// detectAt applies the formats' signatures in models.BundleFormats order.
func detectAt(paths []string) string {
	found := map[string]bool{}
	for _, p := range paths {
		parts := strings.Split(p, "/")
		switch {
		case p == "manifest.json":
			found[models.BundleProctor] = true
		case len(parts) != 2:
		case parts[1] == "agent_response.json" || parts[1] == ".missing" || parts[1] == "network.har":
			found[models.BundleWebArenaVerified] = true
		case parts[1] == "result.json":
			found[models.BundleOnlineMind2Web] = true
		case parts[1] == "summary_info.json":
			found[models.BundleAgentLab] = true
		}
	}
	for _, f := range models.BundleFormats() {
		if found[f] {
			return f
		}
	}
	return ""
}

// unknownFormat refuses a bundle whose layout is none of the formats.
func unknownFormat(files []string) error {
	var shown []string
	for _, f := range files {
		if !ignoredName(f) && len(shown) < 3 {
			shown = append(shown, f)
		}
	}
	found := "the archive holds no file"
	if len(shown) > 0 {
		for i := range shown {
			shown[i] = shorten(shown[i], maxShownBytes)
		}
		found = "found " + strings.Join(shown, ", ")
		if len(files) > len(shown) {
			found += ", …"
		}
	}
	return refuse("", "no known bundle format: expected manifest.json with tasks/{task_id}/ (%s), "+
		"{task_id}/agent_response.json (%s), {task_id}/result.json (%s) or experiment folders with summary_info.json (%s); %s",
		models.BundleFormatName(models.BundleProctor), models.BundleFormatName(models.BundleWebArenaVerified),
		models.BundleFormatName(models.BundleOnlineMind2Web), models.BundleFormatName(models.BundleAgentLab), found)
}

// assembly builds a Bundle from an inspector's records.
type assembly struct {
	in    *inspector
	l     layout
	b     *Bundle
	tasks map[string]*Task
	used  map[string]bool // relative paths the format reads
	cut   map[string]bool // archive paths of used files whose text was cut
	pace  pacer
}

// assemble builds the bundle from what the walk read. Its loops run over
// every path and task, so they stop on ctx's end and on the metadata limit.
func (in *inspector) assemble(ctx context.Context) (*Bundle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	format, l := detect(in.files)
	if format == "" {
		return nil, unknownFormat(in.files)
	}
	a := newAssembly(ctx, in, format, l)
	if err := a.read(); err != nil {
		return nil, err
	}
	b := a.b
	for _, t := range a.tasks {
		b.Tasks = append(b.Tasks, t)
	}
	slices.SortFunc(b.Tasks, func(x, y *Task) int { return compareIDs(x.ID, y.ID) })
	var ignored []string
	for _, p := range l.paths {
		if !a.used[p] {
			ignored = append(ignored, l.full(p))
		}
	}
	if len(ignored) > 0 {
		b.inspectWarnings = append(b.inspectWarnings, fmt.Sprintf("%d %s not part of the %s layout and %s ignored: %s",
			len(ignored), plural(len(ignored), "file is", "files are"), models.BundleFormatName(format),
			plural(len(ignored), "was", "were"), examples(ignored)))
	}
	if len(a.cut) > 0 {
		cut := slices.Sorted(maps.Keys(a.cut))
		b.inspectWarnings = append(b.inspectWarnings, fmt.Sprintf("%d %s text (a thought, URL, title or error) longer than %s, "+
			"kept cut to that length: %s", len(cut), plural(len(cut), "file has", "files have"), humanBytes(maxTextBytes), examples(cut)))
	}
	rep := &b.Report
	rep.Format, rep.FormatName, rep.Manifest = format, models.BundleFormatName(format), b.Manifest
	for _, t := range b.Tasks {
		rep.Steps += len(t.Steps)
	}
	for _, f := range b.files {
		switch f.kind {
		case KindScreenshot:
			rep.Screenshots++
		case KindHAR:
			rep.HARs++
		}
	}
	slices.SortFunc(b.invalidFiles, func(x, y models.FileProblem) int { return strings.Compare(x.Path, y.Path) })
	slices.SortFunc(b.duplicated, compareIDs)
	b.duplicated = slices.Compact(b.duplicated)
	if err := cmp.Or(a.pace.err, ctx.Err()); err != nil {
		return nil, err
	}
	return b, nil
}

func newAssembly(ctx context.Context, in *inspector, format string, l layout) *assembly {
	return &assembly{in: in, l: l, tasks: map[string]*Task{}, used: map[string]bool{}, cut: map[string]bool{},
		b: &Bundle{Format: format, files: map[string]fileRef{}}, pace: pacer{ctx: ctx}}
}

// read reads the tasks of the bundle's format.
func (a *assembly) read() error {
	switch a.b.Format {
	case models.BundleWebArenaVerified:
		return a.webArenaVerified()
	case models.BundleProctor:
		return a.proctor()
	case models.BundleOnlineMind2Web:
		return a.onlineMind2Web()
	case models.BundleAgentLab:
		return a.agentLab()
	}
	return nil
}

// examples names the first three paths of a list, for a message.
func examples(paths []string) string {
	shown := make([]string, 0, 3)
	for _, p := range paths[:min(3, len(paths))] {
		shown = append(shown, shorten(p, maxShownBytes))
	}
	example := strings.Join(shown, ", ")
	if len(paths) > 3 {
		example += ", …"
	}
	return example
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// compareIDs orders task ids numerically when both are numbers, else as text.
func compareIDs(a, b string) int {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// record returns the record of a relative path, marking it used.
func (a *assembly) record(rel string) *record {
	rec := a.in.records[a.l.full(rel)]
	if rec != nil {
		a.used[rel] = true
		if rec.cut {
			a.cut[rec.path] = true
		}
	}
	return rec
}

// retain counts n more bytes the bundle holds; past the metadata limit, the
// refusal ends the assembly at its next round.
func (a *assembly) retain(n int64) {
	if err := a.in.meta.add(n); err != nil {
		a.pace.fail(err)
	}
}

func (a *assembly) task(id string) *Task {
	t := a.tasks[id]
	if t == nil {
		t = &Task{ID: id}
		a.tasks[id] = t
	}
	return t
}

// problem lists an invalid file, on the report and on its task.
func (a *assembly) problem(t *Task, fullPath, problem string) {
	fp := models.FileProblem{Path: fullPath, Problem: shorten(problem, maxProblemBytes)}
	if t != nil {
		fp.TaskID = t.ID
		t.Problems = append(t.Problems, fp)
	}
	a.b.invalidFiles = append(a.b.invalidFiles, fp)
	a.retain(int64(len(fp.Problem)) + problemOverhead)
}

// valid returns rec when it is usable, listing its problem otherwise.
func (a *assembly) valid(t *Task, rec *record) *record {
	if rec == nil {
		return nil
	}
	if rec.problem != "" {
		a.problem(t, rec.path, rec.problem)
		return nil
	}
	return rec
}

// keepHAR makes a valid HAR the task's network log.
func (a *assembly) keepHAR(t *Task, rec *record) {
	if rec = a.valid(t, rec); rec != nil {
		t.HAR = rec.path
		a.b.files[rec.path] = fileRef{taskID: t.ID, kind: KindHAR, size: rec.size, contentType: rec.contentType}
	}
}

// keepScreenshot returns the archive path of a valid screenshot, kept for
// the task, or "" (its problem is listed once, where the file is used).
func (a *assembly) keepScreenshot(t *Task, rec *record) string {
	if rec == nil || rec.role != roleImage || rec.problem != "" {
		return ""
	}
	a.b.files[rec.path] = fileRef{taskID: t.ID, kind: KindScreenshot, size: rec.size, contentType: rec.contentType}
	return rec.path
}

// webArenaVerified reads {task_id}/agent_response.json, {task_id}/network.har
// and {task_id}/.missing.
func (a *assembly) webArenaVerified() error {
	for _, p := range a.l.paths {
		if err := a.pace.next(); err != nil {
			return err
		}
		id, base, ok := strings.Cut(p, "/")
		if !ok || strings.Contains(base, "/") {
			continue
		}
		switch base {
		case "agent_response.json", "network.har", ".missing":
			a.task(id)
		}
	}
	for id, t := range a.tasks {
		if err := a.pace.next(); err != nil {
			return err
		}
		missing, resp, har := a.record(id+"/.missing"), a.record(id+"/agent_response.json"), a.record(id+"/network.har")
		if missing != nil {
			t.NotAttempted = true
			if resp != nil || har != nil {
				a.problem(t, missing.path, "the task also has agent_response.json or network.har: .missing marks it not attempted, so they are ignored")
			}
			continue
		}
		switch {
		case resp == nil:
			a.problem(t, a.l.full(id+"/agent_response.json"), "missing: the task has a network.har but no answer")
		case resp.answerText:
			// Graded as the text it holds, as the official evaluator reads
			// such a file: a failure saying why, unless it holds a code block.
			a.problem(t, resp.path, resp.problem+"; it is graded as the text it holds")
			t.Final = resp.raw
		default:
			if resp = a.valid(t, resp); resp != nil {
				t.Final = resp.raw
			}
		}
		a.keepHAR(t, har)
	}
	return nil
}

// proctor reads manifest.json and tasks/{task_id}/.
func (a *assembly) proctor() error {
	a.proctorManifest()
	taskPaths := map[string][]string{} // task id -> its paths, read once
	for _, p := range a.l.paths {
		if err := a.pace.next(); err != nil {
			return err
		}
		rest, ok := strings.CutPrefix(p, "tasks/")
		if !ok {
			continue
		}
		if id, _, ok := strings.Cut(rest, "/"); ok {
			a.task(id)
			taskPaths[id] = append(taskPaths[id], p)
		}
	}
	for id, t := range a.tasks {
		if err := a.pace.next(); err != nil {
			return err
		}
		dir := "tasks/" + id + "/"
		if a.record(dir+".missing") != nil {
			t.NotAttempted = true
			for _, p := range taskPaths[id] {
				a.used[p] = true // nothing else of a task not attempted is read
			}
			continue
		}
		if answer := a.valid(t, a.record(dir+"answer.json")); answer != nil {
			t.Final = answer.raw
		}
		a.keepHAR(t, a.record(dir+"network.har"))
		steps := a.valid(t, a.record(dir+"steps.jsonl"))
		if steps == nil {
			continue
		}
		for _, sl := range steps.steps {
			if err := a.pace.next(); err != nil {
				return err
			}
			st := sl.step
			if sl.screenshot != "" {
				st.Screenshot = a.proctorScreenshot(t, dir, steps.path, sl)
			}
			t.Steps = append(t.Steps, st)
			t.TokensIn += st.TokensIn
			t.TokensOut += st.TokensOut
			t.Cost += st.Cost
			t.TokensStated = t.TokensStated || sl.tokensStated
			t.CostStated = t.CostStated || sl.costStated
			t.DurationMS += st.DurationMS
			if t.StartedAt == nil && st.StartedAt != nil {
				t.StartedAt = st.StartedAt
			}
		}
	}
	for _, p := range a.l.paths {
		if err := a.pace.next(); err != nil {
			return err
		}
		if rest, ok := strings.CutPrefix(p, "tasks/"); ok && a.in.records[a.l.full(p)] != nil && roleOf(p) == roleImage {
			if id, _, _ := strings.Cut(rest, "/"); a.tasks[id] != nil && !a.used[p] {
				// A screenshot no step references is not read, but a broken one is still reported.
				if rec := a.in.records[a.l.full(p)]; rec.problem != "" {
					a.used[p] = true
					a.problem(a.tasks[id], rec.path, rec.problem)
				}
			}
		}
	}
	return nil
}

// proctorScreenshot resolves a step's screenshot, relative to the task's
// folder (a bare name is also looked up in screenshots/).
func (a *assembly) proctorScreenshot(t *Task, dir, stepsPath string, sl stepLine) string {
	clean, isDir, reason := cleanName(sl.screenshot)
	if reason != "" || isDir || clean == "" {
		a.problem(t, stepsPath, fmt.Sprintf("line %d: screenshot %q must be a file name relative to the task's folder", sl.line, shorten(sl.screenshot, maxShownBytes)))
		return ""
	}
	rel := dir + clean
	if a.in.records[a.l.full(rel)] == nil && !strings.Contains(clean, "/") {
		rel = dir + "screenshots/" + clean
	}
	rec := a.in.records[a.l.full(rel)]
	switch {
	case rec == nil || rec.role != roleImage:
		a.problem(t, stepsPath, fmt.Sprintf("line %d: screenshot %s is not in the bundle", sl.line, shorten(clean, maxShownBytes)))
		return ""
	case rec.problem != "":
		if !a.used[rel] {
			a.problem(t, rec.path, rec.problem)
		}
		a.used[rel] = true
		return ""
	}
	a.used[rel] = true
	return a.keepScreenshot(t, rec)
}

// proctorManifest reads manifest.json strictly.
func (a *assembly) proctorManifest() {
	rec := a.record("manifest.json")
	fail := func(problem string) {
		a.b.manifestProblem = problem
		a.problem(nil, a.l.full("manifest.json"), problem)
	}
	if rec == nil {
		fail("missing: a Proctor trajectory bundle starts with manifest.json")
		return
	}
	if rec.problem != "" {
		fail(rec.problem)
		return
	}
	var m models.BundleManifest
	if err := decodeStrict(rec.raw, &m); err != nil {
		fail(err.Error())
		return
	}
	switch {
	case m.Format == "":
		fail(fmt.Sprintf("format is required: %q", ProctorFormatVersion))
		return
	case m.Format != ProctorFormatVersion:
		fail(fmt.Sprintf("format %q is not supported: this server reads %q", shorten(m.Format, maxShownBytes), ProctorFormatVersion))
		return
	case m.Budgets.MaxSteps < 0 || m.Budgets.MaxEpisodeSeconds < 0 || m.Budgets.MaxCost != nil && *m.Budgets.MaxCost < 0:
		fail("budgets cannot be negative")
		return
	}
	if problem := manifestFieldsProblem(&m); problem != "" {
		fail(problem)
		return
	}
	if m.Date != "" {
		if _, err := time.Parse(time.RFC3339, m.Date); err != nil {
			if _, err := time.Parse(time.DateOnly, m.Date); err != nil {
				fail(fmt.Sprintf("date %q must be RFC 3339 or YYYY-MM-DD", m.Date))
				return
			}
		}
	}
	a.b.Manifest = &m
}

// manifestField is a text field of a manifest with its cap: manifests are
// shown on the run's page and the public leaderboard.
type manifestField struct {
	name     string
	value    string
	maxChars int
	multi    bool // may hold line breaks and tabs
}

func manifestFields(m *models.BundleManifest) []manifestField {
	return []manifestField{
		{"agent", m.Agent, 200, false},
		{"model", m.Model, 200, false},
		{"agent_framework", m.AgentFramework, 200, false},
		{"benchmark", m.Benchmark, 100, false},
		{"subset", m.Subset, 100, false},
		{"date", m.Date, 64, false},
		{"notes", m.Notes, 2000, true},
	}
}

// manifestFieldsProblem says which text field of a manifest, read from a
// Proctor manifest.json or derived from AgentLab's folder names, is too long
// or holds control characters; "" when none is.
func manifestFieldsProblem(m *models.BundleManifest) string {
	for _, f := range manifestFields(m) {
		if n := utf8.RuneCountInString(f.value); n > f.maxChars {
			return fmt.Sprintf("%s is %d characters long, over the limit of %d", f.name, n, f.maxChars)
		}
		if strings.ContainsFunc(f.value, func(r rune) bool {
			return unicode.IsControl(r) && (!f.multi || r != '\n' && r != '\r' && r != '\t')
		}) {
			if f.multi {
				return fmt.Sprintf("%s holds a control character other than a line break or tab", f.name)
			}
			return fmt.Sprintf("%s holds a control character (such as a line break): it must be one line", f.name)
		}
	}
	return ""
}

// onlineMind2Web reads {task_id}/result.json and {task_id}/trajectory/*.
func (a *assembly) onlineMind2Web() error {
	shots := map[string][]string{} // task folder -> screenshot paths
	for _, p := range a.l.paths {
		if err := a.pace.next(); err != nil {
			return err
		}
		parts := strings.Split(p, "/")
		switch {
		case len(parts) == 2 && parts[1] == "result.json":
			a.task(parts[0])
		case len(parts) == 3 && parts[1] == "trajectory" && roleOf(p) == roleImage:
			shots[parts[0]] = append(shots[parts[0]], p)
		}
	}
	for id, t := range a.tasks {
		if err := a.pace.next(); err != nil {
			return err
		}
		res := a.valid(t, a.record(id+"/result.json"))
		paths := shots[id]
		slices.SortFunc(paths, compareNumbered)
		if res == nil {
			continue
		}
		r := res.result
		if r.taskID != "" && r.taskID != id {
			a.problem(t, res.path, fmt.Sprintf("task_id %q differs from its folder %q: the folder names the task",
				shorten(r.taskID, maxShownBytes), shorten(id, maxShownBytes)))
		}
		for i := range max(len(r.actions), len(paths)) {
			if err := a.pace.next(); err != nil {
				return err
			}
			st := Step{Index: i}
			if i < len(r.actions) {
				st.Action = r.actions[i]
			} else {
				st.Action, _ = recordedJSON(models.Action{Type: models.ActRecorded})
				a.retain(stepOverhead) // a screenshot's step, which no action of the file counted
			}
			if i < len(r.thoughts) {
				st.Thought = r.thoughts[i]
			}
			if i < len(paths) {
				rec := a.record(paths[i])
				if rec != nil && rec.problem != "" {
					a.problem(t, rec.path, rec.problem)
				}
				st.Screenshot = a.keepScreenshot(t, rec)
			}
			t.Steps = append(t.Steps, st)
		}
		t.Final = r.final
		t.NotAttempted = len(t.Steps) == 0 && r.final == nil
	}
	return nil
}

// compareNumbered orders file names by the first number in their base name
// ("2_full_screenshot.png" before "10_full_screenshot.png"), then by name.
func compareNumbered(x, y string) int {
	nx, okx := firstNumber(path.Base(x))
	ny, oky := firstNumber(path.Base(y))
	switch {
	case okx && oky && nx != ny:
		if nx < ny {
			return -1
		}
		return 1
	case okx && !oky:
		return -1
	case !okx && oky:
		return 1
	}
	return strings.Compare(x, y)
}

func firstNumber(s string) (int64, bool) {
	start := strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' })
	if start < 0 {
		return 0, false
	}
	end := start
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(s[start:end], 10, 64)
	return n, err == nil
}

// agentLabFolder matches AgentLab's experiment folder names:
// "{date}_{time}_{agent}_on_{task_name}_{seed}", optionally "_{n}" after a
// re-run. The task name is lazy so the seed is what trails.
func agentLabFolder() *regexp.Regexp {
	return regexp.MustCompile(`^(?:\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}_)?(.*?)_on_(.+?)(?:_\d+){0,2}$`)
}

// agentLabTaskID is the task id of a BrowserGym task name: the name without
// its benchmark prefix ("webarena.310" -> "310", "workarena.servicenow.x" ->
// "servicenow.x"); a name without a dot is its own id.
func agentLabTaskID(taskName string) string {
	if _, rest, ok := strings.Cut(taskName, "."); ok && rest != "" {
		return rest
	}
	return taskName
}

// agentLab reads experiment folders holding summary_info.json.
func (a *assembly) agentLab() error {
	folderRE := agentLabFolder()
	shotRE := regexp.MustCompile(`^screenshot_step_(\d+)\.(?i:png|jpe?g)$`)
	var folders []string
	contents := map[string][]string{} // folder -> the paths inside, read once
	for _, p := range a.l.paths {
		if err := a.pace.next(); err != nil {
			return err
		}
		folder, base, ok := strings.Cut(p, "/")
		if !ok {
			continue
		}
		contents[folder] = append(contents[folder], p)
		if base == "summary_info.json" {
			folders = append(folders, folder)
		}
	}
	seenFrom := map[string]string{}
	agents := map[string]bool{}
	for _, folder := range folders { // sorted: the first folder of a task wins
		if err := a.pace.next(); err != nil {
			return err
		}
		summaryRec := a.record(folder + "/summary_info.json")
		var summary *agentLabSummary
		if summaryRec.problem == "" {
			summary = summaryRec.summary
		}
		id := ""
		m := folderRE.FindStringSubmatch(folder)
		switch {
		case summary != nil && summary.taskID != "":
			id = summary.taskID
		case summary != nil && summary.taskName != "":
			id = agentLabTaskID(summary.taskName)
		case m != nil:
			id = agentLabTaskID(m[2])
		}
		if m != nil {
			agents[m[1]] = true
		}
		if id == "" {
			a.problem(nil, summaryRec.path, `cannot tell the task: name the folder "{agent}_on_{task_name}_{seed}" as AgentLab does, or add "task_name" to summary_info.json`)
			continue
		}
		if first, dup := seenFrom[id]; dup {
			a.b.duplicated = append(a.b.duplicated, id)
			a.problem(a.tasks[id], summaryRec.path, fmt.Sprintf("task %s is already in %s: this folder is ignored",
				shorten(id, maxShownBytes), shorten(a.l.full(first), maxShownBytes)))
			continue
		}
		seenFrom[id] = folder
		t := a.task(id)
		if a.valid(t, summaryRec) == nil {
			continue
		}
		t.TokensIn, t.TokensOut, t.Cost, t.DurationMS = summary.tokensIn, summary.tokensOut, summary.cost, summary.durationMS
		t.TokensStated, t.CostStated = summary.tokensStated, summary.costStated
		t.ErrorMessage = summary.errMsg
		if err := a.agentLabSteps(t, folder, contents[folder], shotRE); err != nil {
			return err
		}
	}
	if len(agents) == 1 {
		for agent := range agents {
			// A name the caps refuse is left out: it only labels the report.
			if m := (models.BundleManifest{Agent: agent, AgentFramework: "AgentLab"}); manifestFieldsProblem(&m) == "" {
				a.b.Manifest = &m
			}
		}
	}
	return nil
}

// agentLabSteps pairs screenshot_step_N with step N of steps_info.json;
// paths are the folder's.
func (a *assembly) agentLabSteps(t *Task, folder string, paths []string, shotRE *regexp.Regexp) error {
	shots := map[int]string{}
	indexes := map[int]bool{}
	prefix := folder + "/"
	for _, p := range paths {
		if err := a.pace.next(); err != nil {
			return err
		}
		base := strings.TrimPrefix(p, prefix)
		if m := shotRE.FindStringSubmatch(base); m != nil {
			n, err := strconv.Atoi(m[1])
			if err == nil && n < 1<<20 {
				shots[n] = p
				indexes[n] = true
			}
		}
	}
	infos := map[int]agentLabStep{}
	if rec := a.valid(t, a.record(folder+"/steps_info.json")); rec != nil {
		for _, si := range rec.stepsInfo {
			if si.index < 1<<20 {
				infos[si.index] = si
				indexes[si.index] = true
			}
		}
	}
	order := make([]int, 0, len(indexes))
	for i := range indexes {
		order = append(order, i)
	}
	slices.Sort(order)
	for _, i := range order {
		if err := a.pace.next(); err != nil {
			return err
		}
		si, ok := infos[i]
		st := Step{Index: len(t.Steps), Thought: si.think, URL: si.url, Error: si.errMsg, TokensIn: si.tokensIn,
			TokensOut: si.tokensOut, Cost: si.cost, StartedAt: si.startedAt, DurationMS: si.durationMS, Action: si.action}
		if !ok {
			st.Action, _ = recordedJSON(models.Action{Type: models.ActRecorded})
			a.retain(stepOverhead) // a screenshot's step, which steps_info.json did not count
		}
		if p, ok := shots[i]; ok {
			rec := a.record(p)
			if rec != nil && rec.problem != "" {
				a.problem(t, rec.path, rec.problem)
			}
			st.Screenshot = a.keepScreenshot(t, rec)
		}
		t.Steps = append(t.Steps, st)
		if t.StartedAt == nil {
			t.StartedAt = st.StartedAt
		}
		if si.final != nil {
			t.Final = si.final
		}
	}
	return nil
}

// agentLabFinal reads BrowserGym's final actions: send_msg_to_user("...")
// answers, report_infeasible("...") gives up.
func agentLabFinal(action string) (json.RawMessage, bool) {
	action = strings.TrimSpace(action)
	for _, fn := range []struct {
		name string
		make func(string) models.Action
	}{
		{"send_msg_to_user(", func(s string) models.Action { return models.Action{Type: models.ActAnswer, Text: s} }},
		{"report_infeasible(", func(s string) models.Action { return models.Action{Type: models.ActStop, Reason: s} }},
	} {
		arg, ok := strings.CutPrefix(action, fn.name)
		if !ok {
			continue
		}
		arg, ok = strings.CutSuffix(strings.TrimSpace(arg), ")")
		if !ok {
			return nil, false
		}
		text, ok := pythonString(strings.TrimSpace(arg))
		if !ok || text == "" {
			return nil, false
		}
		raw, err := recordedJSON(fn.make(text))
		return raw, err == nil
	}
	return nil, false
}

// pythonString reads a Python string literal in single or double quotes
// with the common escapes.
func pythonString(lit string) (string, bool) {
	if len(lit) < 2 || (lit[0] != '"' && lit[0] != '\'') || lit[len(lit)-1] != lit[0] {
		return "", false
	}
	body := lit[1 : len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 == len(body) {
			b.WriteByte(c)
			continue
		}
		i++
		switch body[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		default:
			b.WriteByte(body[i])
		}
	}
	return b.String(), true
}
