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
	rep.TasksFound, rep.TasksNotAttempted, rep.TasksMissing = []string{}, []string{}, []string{}
	rep.TasksUnknown, rep.TasksOutside = []string{}, []string{}
	rep.Blocking, rep.Warnings = []string{}, append([]string{}, b.inspectWarnings...)
	if rep.TasksDuplicated == nil {
		rep.TasksDuplicated = []string{}
	}
	if rep.InvalidFiles == nil {
		rep.InvalidFiles = []models.FileProblem{}
	}

	subsetName := cmpOr(c.Subset, models.SubsetFull)
	all := toSet(c.TaskIDs)
	subsetIDs := c.SubsetTaskIDs
	if subsetIDs == nil {
		subsetIDs = c.TaskIDs
	}
	subset := toSet(subsetIDs)
	inBundle := map[string]bool{}
	inBenchmark := 0
	var withoutHAR []string
	for _, t := range b.Tasks {
		inBundle[t.ID] = true
		switch {
		case !all[t.ID]:
			rep.TasksUnknown = append(rep.TasksUnknown, t.ID)
			continue
		case !subset[t.ID]:
			rep.TasksOutside = append(rep.TasksOutside, t.ID)
		case t.NotAttempted:
			rep.TasksNotAttempted = append(rep.TasksNotAttempted, t.ID)
		default:
			rep.TasksFound = append(rep.TasksFound, t.ID)
			if b.Format == models.BundleWebArenaVerified && t.HAR == "" {
				withoutHAR = append(withoutHAR, t.ID)
			}
		}
		inBenchmark++
	}
	for id := range subset {
		if !inBundle[id] {
			rep.TasksMissing = append(rep.TasksMissing, id)
		}
	}
	slices.SortFunc(rep.TasksMissing, compareIDs)

	covered := len(rep.TasksFound) + len(rep.TasksNotAttempted)
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
	if n := len(rep.TasksUnknown); n > 0 && inBenchmark > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s not %s of %s and will be ignored: %s", n,
			plural(n, "task is", "tasks are"), plural(n, "a task", "tasks"), c.Benchmark, sample(rep.TasksUnknown)))
	}
	if n := len(rep.TasksOutside); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s outside the subset %s and will be ignored: %s", n,
			plural(n, "task is", "tasks are"), subsetName, sample(rep.TasksOutside)))
	}
	if n := len(rep.TasksDuplicated); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s more than once; the first copy of each is kept: %s", n,
			plural(n, "task appears", "tasks appear"), sample(rep.TasksDuplicated)))
	}
	if n := len(rep.TasksMissing); n > 0 && inBenchmark > 0 {
		msg := fmt.Sprintf("the bundle covers %d of the %d tasks of the subset %s (%.0f%%): the %d absent %s will count as failures",
			covered, len(subset), subsetName, 100*rep.Coverage.Fraction, n, plural(n, "task", "tasks"))
		if rep.Coverage.Fraction < lowCoverage {
			msg = "low coverage: " + msg
		}
		rep.Warnings = append(rep.Warnings, msg)
	}
	if n := len(withoutHAR); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d %s no network.har: checks of %s network events will fail: %s", n,
			plural(n, "task has", "tasks have"), plural(n, "its", "their"), sample(withoutHAR)))
	}
	if n := len(rep.InvalidFiles); n > 0 {
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

// sample shows the first few ids of a list.
func sample(ids []string) string {
	const shown = 10
	if len(ids) <= shown {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:shown], ", ") + fmt.Sprintf(" and %d more", len(ids)-shown)
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
