package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"proctor/api"
	"proctor/internal/apiclient"
	"proctor/web"
)

// queue is `proctor queue`: it queues an executed run of a team's agent on a
// server (POST /api/v1/runs), prints its id and URL, and with --wait waits
// for it like `proctor runs wait`.
func (p *Program) queue(ctx context.Context, args []string) error {
	const usage = "queue --team T --agent A --benchmark B [--subset S] [--max-steps N] [--max-episode-seconds N] [--max-agent-call-seconds N] [--max-cost X] [--parallelism N] [--notes TEXT] [--wait] [--timeout D] [--json]"
	fs, rf := p.remoteFlagSet("queue")
	var req api.RunInput
	fs.StringVar(&req.Team, "team", "", "the team that runs the agent (its slug)")
	fs.StringVar(&req.Agent, "agent", "", "the agent's slug, or TEAM/AGENT")
	fs.StringVar(&req.Benchmark, "benchmark", "", "the benchmark's slug")
	fs.StringVar(&req.Subset, "subset", "", "a named subset (default: every task)")
	fs.IntVar(&req.MaxSteps, "max-steps", 0, "steps per episode (default: the server's)")
	fs.IntVar(&req.MaxEpisodeSeconds, "max-episode-seconds", 0, "seconds per episode (default: the server's)")
	fs.IntVar(&req.MaxAgentCallSeconds, "max-agent-call-seconds", 0, "seconds per agent call (default: the server's)")
	fs.Func("max-cost", "stop an episode past this cost (default: no limit)", func(v string) error {
		cost, err := strconv.ParseFloat(v, 64)
		if err != nil || cost <= 0 {
			return fmt.Errorf("expected a positive number")
		}
		req.MaxCost = &cost
		return nil
	})
	fs.IntVar(&req.Parallelism, "parallelism", 0, "episodes at once (default: 1)")
	fs.StringVar(&req.Notes, "notes", "", "notes shown on the run's page")
	wait := fs.Bool("wait", false, "wait for the run to finish (exit 0 completed, 6 failed or canceled, 7 timed out)")
	var wo waitOptions
	wo.register(fs)
	asJSON := fs.Bool("json", false, "print the queued (with --wait: the finished) run as JSON")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	if team, agent, ok := strings.Cut(req.Agent, "/"); ok {
		if req.Team != "" && req.Team != team {
			return usagef("--agent %s names team %q, but --team is %q", req.Agent, team, req.Team)
		}
		req.Team, req.Agent = team, agent
	}
	switch {
	case len(positional) != 0:
		return usagef("queue takes no arguments, got %q (usage: proctor %s)", positional[0], usage)
	case req.Team == "":
		return usagef("--team is required (or --agent TEAM/AGENT)")
	case req.Agent == "":
		return usagef("--agent is required")
	case req.Benchmark == "":
		return usagef("--benchmark is required")
	}
	if err := wo.check(); err != nil {
		return err
	}
	c, err := p.client(rf, true)
	if err != nil {
		return err
	}
	run, err := c.QueueRun(ctx, req)
	if err != nil {
		return err
	}
	return p.announceRun(ctx, c, run, fmt.Sprintf("queued run %d (%s)", run.ID, web.Count(run.TasksTotal, "task")), *wait, *asJSON, wo)
}

// announceRun says what was created (the run as JSON with --json) and its
// address; with wait it says so on stderr instead and waits for the run
// like `proctor runs wait`.
func (p *Program) announceRun(ctx context.Context, c *apiclient.Client, run *api.Run, what string, wait, asJSON bool, wo waitOptions) error {
	url := c.URL(cmpOr(run.URL, fmt.Sprintf("/runs/%d", run.ID)))
	if !wait {
		if asJSON {
			return writeJSON(p.Stdout, run)
		}
		fmt.Fprintf(p.Stdout, "%s\n%s\n", what, url)
		return nil
	}
	fmt.Fprintf(p.Stderr, "%s: %s\n", what, url)
	waitCtx, cancel := wo.deadline(ctx)
	defer cancel()
	finished, err := p.waitRun(ctx, waitCtx, c, run.ID, wo)
	return p.reportWaited(ctx, c, finished, err, asJSON)
}
