package bundle

import (
	"fmt"
	"slices"
	"strings"

	"proctor/models"
)

// lowCoverage is the coverage under which Check warns that most of the
// subset will count as failures.
const lowCoverage = 0.5

// check compares a bundle with the catalog and the declaration, from scratch
// each time, so checking again against another subset gives a fresh report.
func check(b *Bundle, c Catalog, d Declared) models.SubmissionReport {
	rep := b.Report
	rep.Manifest = b.Manifest
	rep.Blocking, rep.Warnings = []string{}, append([]string{}, b.inspectWarnings...)

	subsetName := cmpOr(c.Subset, models.SubsetFull)
	all := toSet(c.TaskIDs)
	subsetIDs := c.SubsetTaskIDs
	if subsetIDs == nil {
		subsetIDs = c.TaskIDs
	}
	subset := toSet(subsetIDs)
	inBundle := make(map[string]bool, len(b.Tasks))
	inBenchmark := 0
	// The full lists; the report holds their first maxReportList entries.
	found, notAttempted, missing, unknown, outside := []string{}, []string{}, []string{}, []string{}, []string{}
	var withoutHAR []string
	for _, t := range b.Tasks {
		inBundle[t.ID] = true
		switch {
		case !all[t.ID]:
			unknown = append(unknown, t.ID)
			continue
		case !subset[t.ID]:
			outside = append(outside, t.ID)
		case t.NotAttempted:
			notAttempted = append(notAttempted, t.ID)
		default:
			found = append(found, t.ID)
			if b.Format == models.BundleWebArenaVerified && t.HAR == "" {
				withoutHAR = append(withoutHAR, t.ID)
			}
		}
		inBenchmark++
	}
	for id := range subset {
		if !inBundle[id] {
			missing = append(missing, id)
		}
	}
	slices.SortFunc(missing, compareIDs)
	rep.TasksFound, rep.TasksNotAttempted, rep.TasksMissing = reportIDs(found), reportIDs(notAttempted), reportIDs(missing)
	rep.TasksUnknown, rep.TasksOutside = reportIDs(unknown), reportIDs(outside)
	rep.TasksDuplicated, rep.InvalidFiles = reportIDs(b.duplicated), reportProblems(b.invalidFiles)
	rep.Counts = models.SubmissionReportCounts{TasksFound: len(found), TasksNotAttempted: len(notAttempted),
		TasksMissing: len(missing), TasksUnknown: len(unknown), TasksOutside: len(outside),
		TasksDuplicated: len(b.duplicated), InvalidFiles: len(b.invalidFiles)}

	covered := len(found) + len(notAttempted)
	rep.Coverage = models.BundleCoverage{Benchmark: c.Benchmark, BenchmarkTasks: len(all), Subset: subsetName,
		SubsetTasks: len(subset), Covered: covered}
	if len(subset) > 0 {
		rep.Coverage.Fraction = float64(covered) / float64(len(subset))
	}

	// Blocking: ingesting would make a run that means nothing.
	switch {
	case len(b.Tasks) == 0:
		rep.Blocking = append(rep.Blocking, "the bundle holds no task")
	case inBenchmark == 0:
		rep.Blocking = append(rep.Blocking, fmt.Sprintf("none of the bundle's %d %s is a task of %s: is it for another benchmark?",
			len(b.Tasks), plural(len(b.Tasks), "task", "tasks"), c.Benchmark))
	}
	if b.manifestProblem != "" {
		rep.Blocking = append(rep.Blocking, "manifest.json is unusable: "+b.manifestProblem)
	}
	if m := b.Manifest; m != nil && b.Format == models.BundleProctor {
		if m.Benchmark != "" && d.Benchmark != "" && m.Benchmark != d.Benchmark {
			rep.Blocking = append(rep.Blocking, fmt.Sprintf("manifest.json says benchmark %q, but the submission is for %q", m.Benchmark, d.Benchmark))
		}
		if m.Subset != "" && cmpOr(m.Subset, models.SubsetFull) != cmpOr(d.Subset, models.SubsetFull) {
			rep.Blocking = append(rep.Blocking, fmt.Sprintf("manifest.json says subset %q, but the submission is for %q", m.Subset, cmpOr(d.Subset, models.SubsetFull)))
		}
		if m.Agent != "" && d.Agent != "" && !sameAgent(m.Agent, d.Agent) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("manifest.json names agent %q, but the submission is for %q: the run is filed under %q", m.Agent, d.Agent, d.Agent))
		}
	}

	// Warnings: ingest goes ahead, but the submitter should know.
	if n := len(unknown); n > 0 && inBenchmark > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s not %s of %s and will be ignored: %s", n,
			plural(n, "task is", "tasks are"), plural(n, "a task", "tasks"), c.Benchmark, sample(unknown)))
	}
	if n := len(outside); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s outside the subset %s and will be ignored: %s", n,
			plural(n, "task is", "tasks are"), subsetName, sample(outside)))
	}
	if n := len(b.duplicated); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s more than once; the first copy of each is kept: %s", n,
			plural(n, "task appears", "tasks appear"), sample(b.duplicated)))
	}
	if n := len(missing); n > 0 && inBenchmark > 0 {
		msg := fmt.Sprintf("the bundle covers %d of the %d tasks of the subset %s (%s): the %d absent %s will count as failures",
			covered, len(subset), subsetName, rep.Coverage.PercentText(), n, plural(n, "task", "tasks"))
		if rep.Coverage.Fraction < lowCoverage {
			msg = "low coverage: " + msg
		}
		rep.Warnings = append(rep.Warnings, msg)
	}
	if n := len(withoutHAR); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s no network.har: checks of %s network events will fail: %s", n,
			plural(n, "task has", "tasks have"), plural(n, "its", "their"), sample(withoutHAR)))
	}
	if n := len(b.invalidFiles); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s invalid (listed with the reasons): %s ingested without %s", n,
			plural(n, "file is", "files are"), plural(n, "its task is", "their tasks are"), plural(n, "it", "them")))
	}
	return rep
}

func toSet(ids []string) map[string]bool {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// sample shows the first few ids of a list, each cut to maxShownBytes.
func sample(ids []string) string {
	const shown = 10
	parts := make([]string, 0, min(len(ids), shown)+1)
	for _, id := range ids[:min(len(ids), shown)] {
		parts = append(parts, shorten(id, maxShownBytes))
	}
	if len(ids) > shown {
		return strings.Join(parts, ", ") + fmt.Sprintf(" and %d more", len(ids)-shown)
	}
	return strings.Join(parts, ", ")
}

// reportIDs is a list of ids as the report holds it: the first
// maxReportList, each cut to maxShownBytes, never nil.
func reportIDs(ids []string) []string {
	out := make([]string, 0, min(len(ids), maxReportList))
	for _, id := range ids[:min(len(ids), maxReportList)] {
		out = append(out, shorten(id, maxShownBytes))
	}
	return out
}

// reportProblems is a list of invalid files as the report holds it.
func reportProblems(problems []models.FileProblem) []models.FileProblem {
	out := make([]models.FileProblem, 0, min(len(problems), maxReportList))
	for _, p := range problems[:min(len(problems), maxReportList)] {
		out = append(out, models.FileProblem{Path: shorten(p.Path, maxShownBytes), TaskID: shorten(p.TaskID, maxShownBytes),
			Problem: shorten(p.Problem, maxProblemBytes)})
	}
	return out
}

// sameAgent compares agent names, "team/agent" matching "agent".
func sameAgent(a, b string) bool {
	last := func(s string) string { return strings.ToLower(s[strings.LastIndexByte(s, '/')+1:]) }
	return strings.EqualFold(a, b) || last(a) == last(b)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
