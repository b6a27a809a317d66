package main

import (
	"bytes"
	"context"
	"fmt"

	"proctor/importer"
	"proctor/models"
	"proctor/sandbox"
)

// seed imports the bundled sandbox benchmark (a no-op when unchanged) and points
// its sites at this deployment's own sandbox, so a fresh install has a benchmark
// that runs without any external site.
func (p *Program) seed(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("seed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	ctx = models.WithActor(ctx, models.SystemActor())
	ds, err := importer.Parse(models.FormatProctor, bytes.NewReader(sandbox.Benchmark()), nil)
	if err != nil {
		return fmt.Errorf("bundled sandbox benchmark: %w", err)
	}
	res, err := app.DB.ImportBenchmark(ctx, sandbox.Slug, ds, "sandbox/benchmark.jsonl")
	if err != nil {
		return err
	}
	// The sandbox's answers are no secret (its sites are in this repository), so
	// teams may run replay agents on it: the newcomer's first run.
	if err := app.DB.SetRevealReferences(ctx, sandbox.Slug, true); err != nil {
		return err
	}
	for site, url := range sandbox.SiteURLs(app.Config.BaseURL) {
		if _, err := app.DB.UpdateSite(ctx, sandbox.Slug, site, url, "", 0); err != nil {
			return fmt.Errorf("configure sandbox site %s: %w", site, err)
		}
	}
	state := "unchanged"
	if res.Created {
		state = "imported"
	}
	fmt.Fprintf(p.Stdout, "sandbox benchmark %s (version %d, %d tasks); sites at %s/sandbox/\n", state, res.Version.Version, res.Version.TaskCount, app.Config.BaseURL)
	return nil
}
