// Command proctor is Proctor's one binary: the web server with an embedded
// worker, migrations, benchmark import and admin verbs. main only wires.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"proctor/models"
)

func main() {
	ctx, stop := signalContext()
	defer stop()
	p := &Program{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	os.Exit(p.Run(ctx, os.Args[1:]))
}

// signalContext ends on SIGINT or SIGTERM, starting the graceful shutdown.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Program is the whole command line program, parameterised so tests can run it
// in-process with their own environment, streams and a free port.
type Program struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Ready, when set, receives the server's base URL once it listens.
	Ready chan<- string
}

// Exit codes scripts can rely on (docs/cli.md).
const (
	exitOK          = 0
	exitError       = 1 // the command failed
	exitUsage       = 2 // bad flags or arguments
	exitNotFound    = 3 // the named thing does not exist
	exitConflict    = 4 // it already exists or the state forbids the change
	exitRefused     = 5 // the server refused the bundle, or its validation report blocks the ingest
	exitRunFailed   = 6 // the run finished, but failed or was canceled
	exitTimedOut    = 7 // waiting ended at --timeout before the run or submission finished
	exitAuth        = 8 // the server refused the token (401) or the permission (403)
	exitInterrupted = 9 // an upload was interrupted: the same command resumes it
)

// codedError is an error with the exit code it ends the program with, for
// outcomes no error code of models names (a refused bundle, a failed run).
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// withExitCode makes err end the program with code.
func withExitCode(code int, err error) error { return &codedError{code: code, err: err} }

type command struct {
	name    string
	summary string
	run     func(p *Program, ctx context.Context, args []string) error
}

func (p *Program) commands() []command {
	return []command{
		{"serve", "run the web UI, the JSON API and an embedded worker", (*Program).serve},
		{"worker", "run queued jobs only: worker [--browsers N]", (*Program).worker},
		{"migrate", "apply database and queue migrations, then exit", (*Program).migrate},
		{"seed", "import the bundled sandbox benchmark and point its sites at this server", (*Program).seed},
		{"import", "import a benchmark: import --format FORMAT --name SLUG FILE [--subset NAME=FILE …]", (*Program).importBenchmark},
		{"benchmark", "inspect benchmarks: benchmark list | benchmark show SLUG [--json]", (*Program).benchmark},
		{"eval", "grade agent outputs offline: eval webarena-verified --dataset FILE --outputs DIR [--task-ids 1,2,3] [--out FILE.jsonl]", (*Program).evalCommand},
		{"agreement", "human vs LLM-judge agreement, offline: agreement --human HUMAN.csv [--judge JUDGE.csv|.jsonl …] [--skip-bad-rows] [--json] [--csv OUT.csv]", (*Program).agreementCommand},
		{"rescore", "grade finished attempts again: rescore --run ID | --benchmark SLUG | --all", (*Program).rescore},
		{"user", "manage users: user create [--admin] [--password-stdin] EMAIL | user set-password [--admin] [--password-stdin] EMAIL | user list", (*Program).user},
		{"submit", "upload a results bundle to a server: submit --server URL --token T --benchmark B [--subset S] --agent [TEAM/]AGENT [--no-ingest] [--wait] BUNDLE", (*Program).submit},
		{"runs", "follow runs on a server: runs list | runs show ID | runs wait ID | runs publish ID", (*Program).runs},
		{"queue", "queue a run on a server: queue --team T --agent A --benchmark B [--subset S] [--wait]", (*Program).queue},
		{"candidates", "submit candidate websites of a hidden-tests benchmark: candidates submit --file candidates.json [--team T --agent A --benchmark B] [--wait]", (*Program).candidates},
	}
}

// Run executes one subcommand and returns the process exit code.
func (p *Program) Run(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		p.usage(p.Stdout)
		return exitOK
	}
	for _, c := range p.commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(p, ctx, args[1:])
		if err == nil {
			return exitOK
		}
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(p.Stderr, "proctor %s: %s\n", c.name, oneLine(err))
		return exitCodeOf(err)
	}
	fmt.Fprintf(p.Stderr, "proctor: unknown command %q (run \"proctor help\")\n", args[0])
	return exitUsage
}

// exitCodeOf maps a command's error to its exit code: a code the command
// chose, a usage mistake, or the code of the application error.
func exitCodeOf(err error) int {
	var coded *codedError
	if errors.As(err, &coded) {
		return coded.code
	}
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	switch models.ErrorCode(err) {
	case models.ENOTFOUND:
		return exitNotFound
	case models.ECONFLICT:
		return exitConflict
	case models.EINVALID:
		return exitUsage
	case models.EUNAUTHORIZED, models.EFORBIDDEN:
		return exitAuth
	}
	return exitError
}

func (p *Program) usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: proctor COMMAND [flags]")
	fmt.Fprintln(w)
	for _, c := range p.commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Settings come from PROCTOR_* environment variables (see README.md); flags override them.")
	fmt.Fprintln(w, "submit, runs, queue and candidates talk to a server: PROCTOR_SERVER and PROCTOR_TOKEN, or --server and --token (docs/cli.md).")
}

// usageError marks a mistake in the command line itself.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// oneLine renders an error for the terminal: the client-safe message for
// application errors (with the field), the full chain otherwise; config
// errors keep one line per bad value.
func oneLine(err error) string {
	var me *models.Error
	if errors.As(err, &me) && me.Code != models.EINTERNAL {
		if me.Field != "" {
			return me.Field + ": " + me.Message
		}
		return me.Message
	}
	return strings.TrimSpace(err.Error())
}
