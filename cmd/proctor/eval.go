package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"proctor/eval/verified"
	"proctor/models"
)

// siteFlags collects repeated --site NAME=URL flags.
type siteFlags verified.Sites

// String lists the sites as given, for flag's help text.
func (s *siteFlags) String() string {
	var parts []string
	for name, urls := range *s {
		for _, u := range urls {
			parts = append(parts, name+"="+u)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Set adds one NAME=URL (NAME is a site such as gitlab or its placeholder
// __GITLAB__); a site given twice has several URLs, the first one active.
func (s *siteFlags) Set(v string) error {
	name, u, ok := strings.Cut(v, "=")
	name, u = strings.TrimSpace(name), strings.TrimSpace(u)
	if !ok || name == "" || u == "" {
		return fmt.Errorf("expected NAME=URL, e.g. gitlab=http://localhost:8023")
	}
	if *s == nil {
		*s = siteFlags{}
	}
	key := strings.ToLower(strings.Trim(name, "_"))
	(*s)[key] = append((*s)[key], u)
	return nil
}

// evalCommand is `proctor eval webarena-verified --dataset FILE --outputs DIR
// [--task-ids 1,2,3] [--out FILE.jsonl] [--config FILE] [--site NAME=URL …]`:
// WebArena-Verified's offline evaluation without a database. It reads each
// task's agent_response.json and network.har from DIR/{task_id}, writes
// DIR/{task_id}/eval_result.json in the benchmark's shape, one result a line
// to --out, and prints a summary by site.
func (p *Program) evalCommand(ctx context.Context, args []string) error {
	const usage = "eval webarena-verified --dataset FILE --outputs DIR [--task-ids 1,2,3] [--out FILE.jsonl] [--config FILE] [--site NAME=URL …]"
	fs := flag.NewFlagSet("proctor eval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	dataset := fs.String("dataset", "", "the WebArena-Verified dataset file (webarena-verified.json)")
	outputs := fs.String("outputs", "", "the agent's outputs: one folder per task id holding agent_response.json and network.har")
	taskIDs := fs.String("task-ids", "", "comma-separated task ids to evaluate (default: every task folder in --outputs)")
	out := fs.String("out", "", "also write every result, one JSON object a line, to this file")
	configFile := fs.String("config", "", "a WebArena-Verified config file whose environments give the site URLs")
	var sites siteFlags
	fs.Var(&sites, "site", "a site URL, NAME=URL (repeatable), e.g. gitlab=http://localhost:8023")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	switch {
	case len(positional) != 1:
		return usagef("expected the benchmark name, webarena-verified (usage: proctor %s)", usage)
	case positional[0] != models.EvaluatorWebArenaVerified:
		return usagef("unknown benchmark %q: eval supports webarena-verified", positional[0])
	case *dataset == "":
		return usagef("--dataset is required: the WebArena-Verified dataset file")
	case *outputs == "":
		return usagef("--outputs is required: the folder with one sub-folder per task")
	}
	if st, err := os.Stat(*outputs); err != nil || !st.IsDir() {
		return usagef("--outputs %s is not a folder", *outputs)
	}
	f, err := os.Open(*dataset)
	if err != nil {
		return usagef("--dataset: %v", err)
	}
	tasks, err := verified.ReadDataset(f)
	f.Close()
	if err != nil {
		return err
	}
	byID := make(map[int]verified.DatasetTask, len(tasks))
	for _, t := range tasks {
		byID[t.TaskID] = t
	}
	configured := verified.Sites(sites)
	if *configFile != "" {
		cf, err := verified.ReadSitesConfigFile(*configFile)
		if err != nil {
			return usagef("--config: %v", err)
		}
		for name, urls := range cf {
			if _, given := configured[name]; !given {
				if configured == nil {
					configured = verified.Sites{}
				}
				configured[name] = urls
			}
		}
	}

	ids, err := p.selectTasks(*taskIDs, *outputs, byID)
	if err != nil {
		return err
	}
	var jsonl *bufio.Writer
	var outFile *os.File
	if *out != "" {
		outFile, err = os.Create(*out)
		if err != nil {
			return fmt.Errorf("create --out file: %w", err)
		}
		// Closed with its error checked below; this only releases it on an
		// early return.
		defer outFile.Close()
		jsonl = bufio.NewWriter(outFile)
	}
	results := make([]verified.TaskResult, 0, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := evaluateOutput(ctx, byID[id], filepath.Join(*outputs, strconv.Itoa(id)), configured)
		if err != nil {
			return err
		}
		results = append(results, res)
		if jsonl != nil {
			line, err := json.Marshal(res)
			if err != nil {
				return fmt.Errorf("encode result of task %d: %w", id, err)
			}
			// bufio.Writer keeps the first write error; Flush returns it.
			_, _ = jsonl.Write(append(line, '\n'))
		}
	}
	if jsonl != nil {
		if err := errors.Join(jsonl.Flush(), outFile.Close()); err != nil {
			return fmt.Errorf("write --out file: %w", err)
		}
	}
	p.printEvalSummary(results, byID)
	return nil
}

// selectTasks returns the task ids to evaluate: the --task-ids given (each must
// be a dataset task), or the numeric task folders in the outputs folder, as
// WebArena-Verified's eval-tasks discovers them. Folders of tasks the dataset
// does not have are skipped with a warning.
func (p *Program) selectTasks(list, outputs string, byID map[int]verified.DatasetTask) ([]int, error) {
	var ids []int
	if list != "" {
		var unknown []string
		seen := map[int]bool{}
		for _, s := range strings.Split(list, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			id, err := strconv.Atoi(s)
			if err != nil {
				return nil, usagef("--task-ids: %q is not a task id", s)
			}
			if _, ok := byID[id]; !ok {
				unknown = append(unknown, s)
				continue
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if len(unknown) > 0 {
			return nil, usagef("--task-ids: task %s is not in the dataset", strings.Join(unknown, ", "))
		}
		if len(ids) == 0 {
			return nil, usagef("--task-ids names no task")
		}
		return ids, nil
	}
	entries, err := os.ReadDir(outputs)
	if err != nil {
		return nil, fmt.Errorf("read --outputs: %w", err)
	}
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if !e.IsDir() || err != nil || strconv.Itoa(id) != e.Name() {
			continue
		}
		if _, ok := byID[id]; !ok {
			fmt.Fprintf(p.Stderr, "proctor eval: skipping %s: task %d is not in the dataset\n", filepath.Join(outputs, e.Name()), id)
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, usagef("--outputs %s has no task folders (named by task id); give --task-ids to report missing ones", outputs)
	}
	sort.Ints(ids)
	return ids, nil
}

// evaluateOutput grades one task folder and writes its eval_result.json (when
// the folder exists). A missing or unreadable agent response is an error
// result, not a failure of the command.
func evaluateOutput(ctx context.Context, task verified.DatasetTask, dir string, configured verified.Sites) (verified.TaskResult, error) {
	res, err := verified.GradeFolder(ctx, verified.New(), task, dir, configured)
	if err != nil {
		return res, err
	}
	if st, statErr := os.Stat(dir); statErr == nil && st.IsDir() {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return res, fmt.Errorf("encode result of task %d: %w", task.TaskID, err)
		}
		if err := os.WriteFile(filepath.Join(dir, verified.EvalResultFile), append(b, '\n'), 0o644); err != nil {
			return res, fmt.Errorf("write result of task %d: %w", task.TaskID, err)
		}
	}
	return res, nil
}

// printEvalSummary prints tasks, successes, failures, errors and the success
// rate per site group and overall.
func (p *Program) printEvalSummary(results []verified.TaskResult, byID map[int]verified.DatasetTask) {
	type counts struct{ tasks, success, failure, errs int }
	bySite := map[string]*counts{}
	var total counts
	for _, r := range results {
		key := byID[r.TaskID].SiteKey()
		c := bySite[key]
		if c == nil {
			c = &counts{}
			bySite[key] = c
		}
		for _, x := range []*counts{c, &total} {
			x.tasks++
			switch r.Status {
			case models.OutcomeSuccess:
				x.success++
			case models.OutcomeFailure:
				x.failure++
			default:
				x.errs++
			}
		}
	}
	tw := tabwriter.NewWriter(p.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "site\ttasks\tsuccess\tfailure\terror\tsuccess rate\t")
	row := func(name string, c *counts) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f%%\t\n", name, c.tasks, c.success, c.failure, c.errs, 100*float64(c.success)/float64(max(c.tasks, 1)))
	}
	for _, k := range sortedSiteKeys(bySite) {
		row(k, bySite[k])
	}
	row("total", &total)
	tw.Flush()
}

func sortedSiteKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
