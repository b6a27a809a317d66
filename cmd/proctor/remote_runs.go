package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"proctor/api"
	"proctor/internal/apiclient"
	"proctor/models"
)

// Environment variables of the remote verbs (submit, runs, queue); the flags
// --server and --token override them.
const (
	envServer = "PROCTOR_SERVER"
	envToken  = "PROCTOR_TOKEN"
)

// remoteFlags name the server a remote verb talks to and its API token.
type remoteFlags struct {
	server, token string
}

// remoteFlagSet is a quiet flag set (mistakes come back as usage errors) with
// --server and --token; remote verbs take none of the local data flags.
func (p *Program) remoteFlagSet(name string) (*flag.FlagSet, *remoteFlags) {
	fs := flag.NewFlagSet("proctor "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	rf := &remoteFlags{}
	fs.StringVar(&rf.server, "server", "", "the server's URL, e.g. https://proctor.example.org ("+envServer+")")
	fs.StringVar(&rf.token, "token", "", "an API token from your account page ("+envToken+"; prefer the variable: flags show in process lists)")
	return fs, rf
}

// client builds the API client from the flags, falling back on the
// environment. The token is never printed, not even in errors.
func (p *Program) client(rf *remoteFlags, needToken bool) (*apiclient.Client, error) {
	server := cmpOr(rf.server, p.Getenv(envServer))
	token := cmpOr(rf.token, p.Getenv(envToken))
	if server == "" {
		return nil, usagef("no server: pass --server URL or set %s", envServer)
	}
	if needToken && token == "" {
		return nil, usagef("no API token: set %s (or pass --token); create one on your account page", envToken)
	}
	c, err := apiclient.New(server, token)
	if err != nil {
		return nil, usagef("--server: %v", err)
	}
	return c, nil
}

func cmpOr(a, b string) string {
	if a = strings.TrimSpace(a); a != "" {
		return a
	}
	return strings.TrimSpace(b)
}

// parseID reads a positive numeric id argument.
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usagef("%s must be a positive number, got %q", what, s)
	}
	return id, nil
}

// runs is `proctor runs list | show | wait | publish`.
func (p *Program) runs(ctx context.Context, args []string) error {
	const usage = "runs list [--team T] [--benchmark B] [--status S] [--json] | runs show ID [--json] | runs wait ID [--timeout D] [--interval D] | runs publish ID"
	if len(args) == 0 {
		return usagef("expected a subcommand (usage: proctor %s)", usage)
	}
	switch args[0] {
	case "list":
		return p.runsList(ctx, args[1:])
	case "show":
		return p.runsShow(ctx, args[1:])
	case "wait":
		return p.runsWait(ctx, args[1:])
	case "publish":
		return p.runsPublish(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(p.Stderr, "Usage: proctor %s\n", usage)
		return flag.ErrHelp
	}
	return usagef("unknown subcommand %q (usage: proctor %s)", args[0], usage)
}

// runStatuses are the statuses --status accepts.
func runStatuses() []string {
	return []string{models.RunQueued, models.RunRunning, models.RunEvaluating, models.RunCompleted, models.RunFailed, models.RunCanceled}
}

// runsList prints the runs the token's user may see, newest first. The server
// filters by team; the benchmark and status filters read page after page
// until --limit runs match.
func (p *Program) runsList(ctx context.Context, args []string) error {
	const usage = "runs list [--team T] [--benchmark B] [--status S] [--limit N] [--json]"
	fs, rf := p.remoteFlagSet("runs list")
	team := fs.String("team", "", "only this team's runs (its slug)")
	benchmark := fs.String("benchmark", "", "only runs of this benchmark (its slug)")
	status := fs.String("status", "", "only runs in this status: "+strings.Join(runStatuses(), ", "))
	limit := fs.Int("limit", 50, "at most this many runs (0: all)")
	asJSON := fs.Bool("json", false, "print the runs as a JSON array")
	positional, err := p.parseInterspersed(fs, usage, args)
	switch {
	case err != nil:
		return err
	case len(positional) != 0:
		return usagef("runs list takes no arguments, got %q (usage: proctor %s)", positional[0], usage)
	case *status != "" && !slices.Contains(runStatuses(), *status):
		return usagef("--status %q is not a run status: use one of %s", *status, strings.Join(runStatuses(), ", "))
	case *limit < 0:
		return usagef("--limit must be 0 (all) or more, got %d", *limit)
	}
	c, err := p.client(rf, false)
	if err != nil {
		return err
	}
	items := []api.RunItem{}
	for page := 1; ; page++ {
		res, err := c.ListRuns(ctx, apiclient.RunFilter{Team: *team, Page: page, PerPage: 200})
		if err != nil {
			return err
		}
		for _, r := range res.Items {
			if (*benchmark == "" || r.Benchmark == *benchmark) && (*status == "" || r.Status == *status) {
				items = append(items, r)
			}
		}
		if *limit > 0 && len(items) >= *limit {
			items = items[:*limit]
			break
		}
		if !res.HasMore || len(res.Items) == 0 {
			break
		}
	}
	if *asJSON {
		return writeJSON(p.Stdout, items)
	}
	if len(items) == 0 {
		fmt.Fprintln(p.Stdout, "no runs")
		return nil
	}
	tw := tabwriter.NewWriter(p.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tORIGIN\tTEAM\tAGENT\tBENCHMARK\tSUBSET\tDONE\tSUCCESSES\tCREATED")
	for _, r := range items {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\n", r.ID, r.Status, r.Origin, r.Team, r.Agent,
			r.Benchmark, r.Subset, r.TasksDone, r.TasksTotal, r.Successes, r.CreatedAt.Local().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

// runsShow prints one run's state; --json prints the server's answer as is.
func (p *Program) runsShow(ctx context.Context, args []string) error {
	const usage = "runs show ID [--json]"
	fs, rf := p.remoteFlagSet("runs show")
	asJSON := fs.Bool("json", false, "print the server's JSON")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	id, err := oneRunID(positional, usage)
	if err != nil {
		return err
	}
	c, err := p.client(rf, false)
	if err != nil {
		return err
	}
	if *asJSON {
		var raw json.RawMessage
		if err := c.Get(ctx, fmt.Sprintf("/runs/%d", id), nil, &raw); err != nil {
			return err
		}
		return writeJSON(p.Stdout, raw)
	}
	r, err := c.Run(ctx, id)
	if err != nil {
		return err
	}
	p.printRun(c, r)
	if r.Origin == models.OriginCandidates {
		return p.printHiddenSummary(ctx, c, r.ID)
	}
	return nil
}

// printRun writes a run's state as aligned lines.
func (p *Program) printRun(c *apiclient.Client, r *api.RunState) {
	tw := tabwriter.NewWriter(p.Stdout, 0, 4, 2, ' ', 0)
	published := ""
	if r.Published {
		published = ", published"
	}
	fmt.Fprintf(tw, "Run %d\t%s (%s%s)\n", r.ID, r.Status, r.Origin, published)
	fmt.Fprintf(tw, "Team\t%s (%s)\n", r.Team, r.TeamName)
	fmt.Fprintf(tw, "Agent\t%s (%s)\n", r.Agent, r.AgentName)
	fmt.Fprintf(tw, "Benchmark\t%s, subset %s\n", r.Benchmark, r.Subset)
	fmt.Fprintf(tw, "Progress\t%s\n", runProgressLine(r))
	if len(r.ErrorsByClass) > 0 {
		classes := make([]string, 0, len(r.ErrorsByClass))
		for class, n := range r.ErrorsByClass {
			classes = append(classes, fmt.Sprintf("%s %d", class, n))
		}
		slices.Sort(classes)
		fmt.Fprintf(tw, "Errors\t%s\n", strings.Join(classes, ", "))
	}
	fmt.Fprintf(tw, "Usage\t%d steps, %d tokens in, %d out, cost %.2f\n", r.Steps, r.TokensIn, r.TokensOut, r.Cost)
	fmt.Fprintf(tw, "Created\t%s\n", r.CreatedAt.Local().Format(time.DateTime))
	if r.FinishedAt != nil {
		fmt.Fprintf(tw, "Finished\t%s\n", r.FinishedAt.Local().Format(time.DateTime))
	} else if r.ETASeconds != nil {
		fmt.Fprintf(tw, "ETA\t%s\n", (time.Duration(*r.ETASeconds) * time.Second).String())
	}
	fmt.Fprintf(tw, "URL\t%s\n", c.URL(cmpOr(r.URL, fmt.Sprintf("/runs/%d", r.ID))))
	tw.Flush()
}

// runProgressLine is a run's progress in one line.
func runProgressLine(r *api.RunState) string {
	return fmt.Sprintf("%d of %d done, %d successes, %d failures, %d errors", r.Done, r.TasksTotal, r.Successes, r.Failures, r.Errors)
}

// waitOptions say how long and how often to poll.
type waitOptions struct {
	timeout  time.Duration // 0: no limit
	interval time.Duration
}

func (w *waitOptions) register(fs *flag.FlagSet) {
	fs.DurationVar(&w.timeout, "timeout", 0, "give up waiting after this long, e.g. 2h (exit code 7; 0: no limit)")
	fs.DurationVar(&w.interval, "interval", 5*time.Second, "how often to ask the server")
}

func (w *waitOptions) check() error {
	if w.timeout < 0 {
		return usagef("--timeout must not be negative, got %s", w.timeout)
	}
	if w.interval < 100*time.Millisecond {
		return usagef("--interval must be at least 100ms, got %s", w.interval)
	}
	return nil
}

// deadline bounds ctx by the timeout, if any.
func (w *waitOptions) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if w.timeout == 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, w.timeout)
}

// runsWait waits for a run to finish: exit 0 when it completed, 6 when it
// failed or was canceled, 7 at --timeout.
func (p *Program) runsWait(ctx context.Context, args []string) error {
	const usage = "runs wait ID [--timeout D] [--interval D] [--json]"
	fs, rf := p.remoteFlagSet("runs wait")
	var wo waitOptions
	wo.register(fs)
	asJSON := fs.Bool("json", false, "print the finished run's JSON")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	id, err := oneRunID(positional, usage)
	if err != nil {
		return err
	}
	if err := wo.check(); err != nil {
		return err
	}
	c, err := p.client(rf, false)
	if err != nil {
		return err
	}
	waitCtx, cancel := wo.deadline(ctx)
	defer cancel()
	r, err := p.waitRun(ctx, waitCtx, c, id, wo)
	return p.reportWaited(ctx, c, r, err, *asJSON)
}

// reportWaited prints the run a wait ended with (its JSON, or its status,
// progress, for a hidden-tests run its pass rates, and URL) when it finished
// or the wait timed out, and passes err on.
func (p *Program) reportWaited(ctx context.Context, c *apiclient.Client, r *api.RunState, err error, asJSON bool) error {
	if r == nil || (err != nil && !errors.As(err, new(*codedError))) {
		return err
	}
	if asJSON {
		if jerr := writeJSON(p.Stdout, r); jerr != nil {
			return jerr
		}
		return err
	}
	fmt.Fprintf(p.Stdout, "run %d %s: %s\n", r.ID, r.Status, runProgressLine(r))
	if r.Origin == models.OriginCandidates && ctx.Err() == nil {
		if herr := p.printHiddenSummary(ctx, c, r.ID); herr != nil && err == nil {
			err = herr
		}
	}
	fmt.Fprintln(p.Stdout, c.URL(cmpOr(r.URL, fmt.Sprintf("/runs/%d", r.ID))))
	return err
}

// waitRun polls a run until it finishes, telling stderr each change of its
// progress. ctx is the command's (an interruption), waitCtx adds --timeout.
// The run comes back with exit code 6 when it failed or was canceled, and
// the last state seen with exit code 7 at the timeout.
func (p *Program) waitRun(ctx, waitCtx context.Context, c *apiclient.Client, id int64, wo waitOptions) (*api.RunState, error) {
	var last *api.RunState
	lastLine := ""
	for {
		r, err := c.Run(waitCtx, id)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return last, fmt.Errorf("interrupted while waiting for run %d", id)
			case waitCtx.Err() != nil:
				return last, timedOut(id, last, wo.timeout)
			}
			return last, err
		}
		last = r
		finished := r.Finished || (models.Run{Status: r.Status}).Finished()
		// The final state is the caller's to print, once.
		if line := r.Status + ": " + runProgressLine(r); line != lastLine && !finished {
			fmt.Fprintf(p.Stderr, "run %d %s\n", id, line)
			lastLine = line
		}
		if finished {
			if !r.Successful() {
				return r, withExitCode(exitRunFailed, fmt.Errorf("run %d %s", id, r.Status))
			}
			return r, nil
		}
		select {
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return r, fmt.Errorf("interrupted while run %d is %s", id, r.Status)
			}
			return r, timedOut(id, r, wo.timeout)
		case <-time.After(wo.interval):
		}
	}
}

// runsPublish puts a completed run on its benchmark's leaderboards.
func (p *Program) runsPublish(ctx context.Context, args []string) error {
	const usage = "runs publish ID [--json]"
	fs, rf := p.remoteFlagSet("runs publish")
	asJSON := fs.Bool("json", false, "print the run's publication state as JSON")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	id, err := oneRunID(positional, usage)
	if err != nil {
		return err
	}
	c, err := p.client(rf, true)
	if err != nil {
		return err
	}
	m, err := c.PublishRun(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(p.Stdout, m)
	}
	where := "it is public"
	if m.OnLeaderboard {
		where = "it is on the leaderboards"
	}
	fmt.Fprintf(p.Stdout, "run %d published: %s\n%s\n", m.ID, where, c.URL(cmpOr(m.URL, fmt.Sprintf("/runs/%d", m.ID))))
	return nil
}

// writeJSON prints v indented, one document per call.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// isTerminal reports whether w is a terminal, where progress redraws one line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// oneRunID is the single run ID a runs subcommand takes.
func oneRunID(positional []string, usage string) (int64, error) {
	if len(positional) != 1 {
		return 0, usagef("expected exactly one run ID (usage: proctor %s)", usage)
	}
	return parseID("the run ID", positional[0])
}

// timedOut is the error of a wait that ran out of time, whether the time ran
// out between two polls or during one; last is the run as last seen, if ever.
func timedOut(id int64, last *api.RunState, timeout time.Duration) error {
	if last == nil {
		return withExitCode(exitTimedOut, fmt.Errorf("run %d did not finish within %s", id, timeout))
	}
	return withExitCode(exitTimedOut, fmt.Errorf("run %d is still %s after %s (%s)", id, last.Status, timeout, runProgressLine(last)))
}
