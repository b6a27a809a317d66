package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"proctor/importer"
	"proctor/models"
	"proctor/service"
	"proctor/web"
)

// subsetArg is one --subset NAME=FILE.
type subsetArg struct{ name, path string }

// subsetFlags collects repeated --subset NAME=FILE flags.
type subsetFlags []subsetArg

// String lists the subsets as given, for flag's help text.
func (s *subsetFlags) String() string {
	parts := make([]string, len(*s))
	for i, a := range *s {
		parts[i] = a.name + "=" + a.path
	}
	return strings.Join(parts, ",")
}

// Set adds one NAME=FILE; a value without both parts is refused.
func (s *subsetFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	name, path = strings.TrimSpace(name), strings.TrimSpace(path)
	if !ok || name == "" || path == "" {
		return fmt.Errorf("expected NAME=FILE, e.g. hard=webarena-verified-hard.json")
	}
	*s = append(*s, subsetArg{name: name, path: path})
	return nil
}

// quietFlagSet returns a flag set whose mistakes come back as one-line usage
// errors (Run prints them) instead of the flag package's multi-line output;
// parseInterspersed prints the help for -h.
func (p *Program) quietFlagSet(name string) (*flag.FlagSet, *commonFlags) {
	fs, cf := p.newFlagSet(name)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs, cf
}

// parseInterspersed parses flags placed before, between and after positional
// arguments (Go's flag package stops at the first positional one) and returns the
// positional arguments. Everything after "--" is positional. -h prints usage and
// the flags, and returns flag.ErrHelp.
func (p *Program) parseInterspersed(fs *flag.FlagSet, usage string, args []string) ([]string, error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprintf(p.Stderr, "Usage: proctor %s\n\nFlags may come before or after the arguments.\n\nFlags:\n", usage)
			fs.SetOutput(p.Stderr)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
			return nil, flag.ErrHelp
		}
	}
	var positional []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// importBenchmark is `proctor import --format FORMAT --name SLUG FILE [--subset NAME=FILE …]`.
// Flags may come before or after FILE. The files are opened before the database;
// the benchmark service parses them and writes the version in one transaction,
// so a bad file changes nothing.
func (p *Program) importBenchmark(ctx context.Context, args []string) error {
	const usage = "import --format FORMAT --name SLUG FILE [--subset NAME=FILE …]"
	fs, cf := p.quietFlagSet("import")
	format := fs.String("format", "", "input format: "+strings.Join(models.ImportFormats(), ", "))
	slug := fs.String("name", "", "the benchmark's slug, e.g. webarena-verified")
	var subsets subsetFlags
	fs.Var(&subsets, "subset", "a named subset file, NAME=FILE (repeatable)")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	switch {
	case len(positional) != 1:
		return usagef("expected exactly one FILE argument, got %d (usage: proctor %s)", len(positional), usage)
	case *format == "":
		return usagef("--format is required: one of %s", strings.Join(models.ImportFormats(), ", "))
	case !slices.Contains(models.ImportFormats(), *format):
		return usagef("unknown format %q: use one of %s", *format, strings.Join(models.ImportFormats(), ", "))
	case *slug == "":
		return usagef("--name is required: the benchmark's slug, e.g. %s", *format)
	case !models.ValidSlug(*slug):
		return usagef("--name %q is not a valid slug: use 1 to 64 lower-case letters, digits and hyphens", *slug)
	}
	file := positional[0]
	req, closeFiles, err := openImportFiles(*format, *slug, file, subsets)
	if err != nil {
		return err
	}
	defer closeFiles()

	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	res, err := app.benchmarkService().Import(models.WithActor(ctx, models.SystemActor()), req)
	var parse *service.ParseError
	if errors.As(err, &parse) {
		return prefixError(file, parse.Err)
	} else if err != nil {
		return err
	}
	if !res.Created {
		fmt.Fprintf(p.Stdout, "%s unchanged (version %d, checksum %s)\n", *slug, res.Version.Version, shortChecksum(res.Version.Checksum))
		return nil
	}
	fmt.Fprintf(p.Stdout, "imported %s version %d: %s, %s\n", *slug, res.Version.Version, web.Count(res.Version.TaskCount, "task"), web.Count(res.Subsets, "subset"))
	return nil
}

// openImportFiles opens the benchmark file and the subset files as an import
// request; closeFiles closes them. On error nothing is left open.
func openImportFiles(format, slug, file string, subsets subsetFlags) (service.ImportRequest, func(), error) {
	var opened []*os.File
	closeFiles := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	f, err := openInput(file)
	if err != nil {
		return service.ImportRequest{}, nil, err
	}
	opened = append(opened, f)
	req := service.ImportRequest{Format: format, Slug: slug, Dataset: f, Source: filepath.Base(file)}
	for _, s := range subsets {
		sf, err := openInput(s.path)
		if err != nil {
			closeFiles()
			return service.ImportRequest{}, nil, prefixError("--subset "+s.name, err)
		}
		opened = append(opened, sf)
		req.Subsets = append(req.Subsets, importer.SubsetFile{Name: s.name, R: sf})
	}
	return req, closeFiles, nil
}

// prefixError puts where into the client-safe message of an application error
// (the part Run prints), keeping its code and cause.
func prefixError(where string, err error) error {
	var me *models.Error
	if !errors.As(err, &me) {
		return fmt.Errorf("%s: %w", where, err)
	}
	cp := *me
	cp.Message = where + ": " + me.Message
	return &cp
}

// openInput opens a regular file for reading; EINVALID naming the file otherwise.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		reason := "cannot be read"
		switch {
		case errors.Is(err, os.ErrNotExist):
			reason = "no such file"
		case errors.Is(err, os.ErrPermission):
			reason = "permission denied"
		}
		return nil, &models.Error{Code: models.EINVALID, Message: fmt.Sprintf("%s: %s", path, reason), Err: err}
	}
	if st, err := f.Stat(); err != nil || st.IsDir() {
		f.Close()
		return nil, models.Errorf(models.EINVALID, "%s: not a regular file", path)
	}
	return f, nil
}

// shortChecksum abbreviates a checksum for one-line messages.
func shortChecksum(sum string) string {
	if len(sum) <= 12 {
		return sum
	}
	return sum[:12] + "…"
}

// benchmark is `proctor benchmark list | show`.
func (p *Program) benchmark(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("expected a subcommand: list or show SLUG [--json]")
	}
	switch args[0] {
	case "list":
		return p.benchmarkList(ctx, args[1:])
	case "show":
		return p.benchmarkShow(ctx, args[1:])
	}
	return usagef("unknown subcommand %q: expected list or show", args[0])
}

func (p *Program) benchmarkList(ctx context.Context, args []string) error {
	fs, cf := p.quietFlagSet("benchmark list")
	positional, err := p.parseInterspersed(fs, "benchmark list", args)
	if err != nil {
		return err
	}
	if len(positional) != 0 {
		return usagef("benchmark list takes no arguments, got %q", positional[0])
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	list, err := app.benchmarkService().ListBenchmarks(models.WithActor(ctx, models.SystemActor()))
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(p.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLUG\tNAME\tVERSION\tTASKS\tSUBSETS")
	for _, b := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", b.Slug, b.Name, b.Version, b.Tasks, b.Subsets)
	}
	return tw.Flush()
}

func (p *Program) benchmarkShow(ctx context.Context, args []string) error {
	fs, cf := p.quietFlagSet("benchmark show")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	positional, err := p.parseInterspersed(fs, "benchmark show SLUG [--json]", args)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return usagef("expected exactly one SLUG argument, got %d", len(positional))
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	sum, err := app.benchmarkService().BenchmarkSummary(models.WithActor(ctx, models.SystemActor()), positional[0])
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(p.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	return writeSummary(p.Stdout, sum)
}

// writeSummary prints a summary for people: facts, then one block per breakdown.
func writeSummary(w io.Writer, s *models.BenchmarkSummary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "benchmark\t%s (%s)\n", s.Slug, s.Name)
	fmt.Fprintf(tw, "format\t%s\n", s.Format)
	fmt.Fprintf(tw, "version\t%d\n", s.Version)
	fmt.Fprintf(tw, "checksum\t%s\n", s.Checksum)
	fmt.Fprintf(tw, "tasks\t%d\n", s.Tasks)
	fmt.Fprintf(tw, "rubric items\t%d\n", s.RubricItems)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range []struct {
		title  string
		counts map[string]int
	}{
		{"by site", s.BySite}, {"by task type", s.ByTaskType}, {"by difficulty", s.ByDifficulty},
		{"by domain", s.ByDomain}, {"by attribute", s.ByAttribute},
	} {
		writeCounts(w, b.title, b.counts)
	}
	if len(s.Subsets) == 0 {
		fmt.Fprintln(w, "\nsubsets: none besides full")
		return nil
	}
	for _, sub := range s.Subsets {
		writeCounts(w, fmt.Sprintf("subset %s (%s) by site", sub.Name, web.Count(sub.Tasks, "task")), sub.BySite)
	}
	return nil
}

// writeCounts prints one breakdown, largest first; nothing when it is empty.
func writeCounts(w io.Writer, title string, counts map[string]int) {
	if len(counts) == 0 {
		return
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	kw, nw := 0, 0
	for _, k := range keys {
		kw = max(kw, len(k))
		nw = max(nw, len(fmt.Sprint(counts[k])))
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-*s  %*d\n", kw, k, nw, counts[k])
	}
}
