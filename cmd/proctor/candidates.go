package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"proctor/api"
)

// maxCandidatesFile caps the candidates file; the server takes JSON bodies
// of at most 1 MiB.
const maxCandidatesFile = 1 << 20

// candidates is `proctor candidates submit`.
func (p *Program) candidates(ctx context.Context, args []string) error {
	const usage = "candidates submit --file candidates.json [--team T] [--agent A] [--benchmark B] [--subset S] [--notes TEXT] [--wait] [--timeout D] [--json]"
	if len(args) == 0 {
		return usagef("expected a subcommand (usage: proctor %s)", usage)
	}
	switch args[0] {
	case "submit":
		return p.candidatesSubmit(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(p.Stderr, "Usage: proctor %s\n", usage)
		return flag.ErrHelp
	}
	return usagef("unknown subcommand %q (usage: proctor %s)", args[0], usage)
}

// candidatesSubmit submits candidate websites of a hidden-tests benchmark
// (POST /api/v1/candidate-runs) from a JSON file, prints the run's id and
// URL, and with --wait waits for its grading like `proctor runs wait`.
// Flags override the file's team, agent, benchmark, subset and notes.
func (p *Program) candidatesSubmit(ctx context.Context, args []string) error {
	const usage = "candidates submit --file candidates.json [--team T] [--agent A] [--benchmark B] [--subset S] [--notes TEXT] [--wait] [--timeout D] [--interval D] [--json]"
	fs, rf := p.remoteFlagSet("candidates submit")
	file := fs.String("file", "", "the candidates as JSON: a request object (team, agent, benchmark, subset, candidates) or an array of candidates; - reads standard input")
	team := fs.String("team", "", "the team whose agent built the candidates (its slug; overrides the file's)")
	agent := fs.String("agent", "", "the agent's slug, or TEAM/AGENT (overrides the file's)")
	benchmark := fs.String("benchmark", "", "the hidden-tests benchmark's slug (overrides the file's)")
	subset := fs.String("subset", "", "a named subset (overrides the file's; default: every task)")
	notes := fs.String("notes", "", "notes shown on the run's page (overrides the file's)")
	wait := fs.Bool("wait", false, "wait for the grading to finish (exit 0 completed, 6 failed or canceled, 7 timed out)")
	var wo waitOptions
	wo.register(fs)
	asJSON := fs.Bool("json", false, "print the created (with --wait: the finished) run as JSON")
	positional, err := p.parseInterspersed(fs, usage, args)
	switch {
	case err != nil:
		return err
	case len(positional) != 0:
		return usagef("candidates submit takes no arguments, got %q (usage: proctor %s)", positional[0], usage)
	case *file == "":
		return usagef("--file is required (usage: proctor %s)", usage)
	}
	if err := wo.check(); err != nil {
		return err
	}
	req, err := p.readCandidates(*file)
	if err != nil {
		return err
	}
	for _, o := range []struct {
		flag string
		dst  *string
	}{{*team, &req.TeamSlug}, {*agent, &req.AgentSlug}, {*benchmark, &req.BenchmarkSlug}, {*subset, &req.Subset}, {*notes, &req.Notes}} {
		if o.flag != "" {
			*o.dst = o.flag
		}
	}
	if t, a, ok := strings.Cut(req.AgentSlug, "/"); ok {
		if *team != "" && *team != t {
			return usagef("--agent %s names team %q, but --team is %q", req.AgentSlug, t, *team)
		}
		req.TeamSlug, req.AgentSlug = t, a
	}
	switch {
	case req.TeamSlug == "":
		return usagef("no team: pass --team (or --agent TEAM/AGENT), or set \"team\" in the file")
	case req.AgentSlug == "":
		return usagef("no agent: pass --agent, or set \"agent\" in the file")
	case req.BenchmarkSlug == "":
		return usagef("no benchmark: pass --benchmark, or set \"benchmark\" in the file")
	case len(req.Candidates) == 0:
		return usagef("%s lists no candidates", *file)
	}
	c, err := p.client(rf, true)
	if err != nil {
		return err
	}
	run, err := c.SubmitCandidates(ctx, req)
	if err != nil {
		return err
	}
	return p.announceRun(ctx, c, run, fmt.Sprintf("submitted run %d (%s)", run.ID, plural(run.TasksTotal, "candidate")), *wait, *asJSON, wo)
}

// readCandidates reads the candidates file strictly: unknown fields are
// refused, so a misspelt hook is not silently dropped.
func (p *Program) readCandidates(name string) (api.CandidateRunRequest, error) {
	var req api.CandidateRunRequest
	var r io.Reader
	if name == "-" {
		r = p.Stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return req, usagef("--file: %v", err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxCandidatesFile+1))
	if err != nil {
		return req, fmt.Errorf("read %s: %w", name, err)
	}
	if len(raw) > maxCandidatesFile {
		return req, usagef("%s is larger than %d bytes, the most the server takes", name, maxCandidatesFile)
	}
	raw = bytes.TrimSpace(raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if len(raw) > 0 && raw[0] == '[' {
		err = dec.Decode(&req.Candidates)
	} else {
		err = dec.Decode(&req)
	}
	if err != nil {
		var syntax *json.SyntaxError
		switch {
		case errors.As(err, &syntax):
			return req, usagef("%s is not valid JSON (at byte %d)", name, syntax.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return req, usagef("%s is not valid JSON (it ends too early)", name)
		}
		return req, usagef("%s: %s", name, strings.TrimPrefix(err.Error(), "json: "))
	}
	return req, nil
}
