package main

import (
	"context"
	"fmt"

	"proctor/models"
	"proctor/web"
)

// rescore queues a new evaluation of finished attempts with the evaluators
// configured now: one run, every run of a benchmark, or everything. The
// workers (serve's embedded one or `proctor worker`) do the grading; old
// verdicts stay as history and the runs show a "rescored" note.
func (p *Program) rescore(ctx context.Context, args []string) error {
	const usage = "rescore --run ID | --benchmark SLUG | --all"
	fs, cf := p.quietFlagSet("rescore")
	runID := fs.Int64("run", 0, "re-score one run")
	slug := fs.String("benchmark", "", "re-score every run of a benchmark")
	all := fs.Bool("all", false, "re-score every finished attempt")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	if len(positional) != 0 {
		return usagef("rescore takes no arguments, got %q (usage: proctor %s)", positional[0], usage)
	}
	chosen := 0
	for _, set := range []bool{*runID != 0, *slug != "", *all} {
		if set {
			chosen++
		}
	}
	if chosen != 1 {
		return usagef("choose exactly one of --run, --benchmark and --all (usage: proctor %s)", usage)
	}
	if *runID < 0 {
		return usagef("--run must be a run id, got %d", *runID)
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	ctx = models.WithActor(ctx, models.SystemActor())
	scope := models.RescoreScope{RunID: *runID}
	what := fmt.Sprintf("run %d", *runID)
	switch {
	case *slug != "":
		b, err := app.DB.Benchmark(ctx, *slug, models.BenchmarkScopeFor(models.SystemActor()))
		if err != nil {
			return err
		}
		scope.BenchmarkID, what = b.ID, "benchmark "+b.Slug
	case *all:
		what = "every benchmark"
	}
	run, err := p.newRunner(app, 0, "") // queues only; the workers grade
	if err != nil {
		return err
	}
	n, err := app.runService(run).Rescore(ctx, scope)
	if err != nil {
		return err
	}
	fmt.Fprintf(p.Stdout, "queued %s of %s for re-scoring\n", web.Count(n, "attempt"), what)
	return nil
}
