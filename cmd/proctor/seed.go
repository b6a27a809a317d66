package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"proctor/hiddenbench"
	"proctor/models"
	"proctor/runner/episode"
	"proctor/sandbox"
	"proctor/service"
	"proctor/web"
)

// seed imports the bundled sandbox benchmark (a no-op when unchanged) and points
// its sites at this deployment's own sandbox, so a fresh install has a benchmark
// that runs without any external site. With Chromium at hand it also records and
// imports the sample hidden-tests benchmark, a rebuild of the sandbox shop.
func (p *Program) seed(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("seed")
	hiddenSample := fs.Bool("hidden-sample", true, "also record (in Chromium) and import the sample hidden-tests benchmark "+hiddenbench.Slug)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	ctx = models.WithActor(ctx, models.SystemActor())
	benchmarks := app.benchmarkService()
	res, err := benchmarks.Import(ctx, service.ImportRequest{Format: models.FormatProctor, Slug: sandbox.Slug,
		Dataset: bytes.NewReader(sandbox.Benchmark()), Source: "sandbox/benchmark.jsonl"})
	var parse *service.ParseError
	if errors.As(err, &parse) {
		return fmt.Errorf("bundled sandbox benchmark: %w", parse.Err)
	} else if err != nil {
		return err
	}
	// The sandbox's answers are no secret (its sites are in this repository), so
	// teams may run replay agents on it: the newcomer's first run.
	if err := benchmarks.SetRevealReferences(ctx, sandbox.Slug, true); err != nil {
		return err
	}
	for site, url := range sandbox.SiteURLs(app.Config.BaseURL) {
		if _, err := benchmarks.UpdateSite(ctx, sandbox.Slug, site, url, "", 0); err != nil {
			return fmt.Errorf("configure sandbox site %s: %w", site, err)
		}
	}
	fmt.Fprintf(p.Stdout, "sandbox benchmark %s (version %d, %s); sites at %s/sandbox/\n", importState(res), res.Version.Version, web.Count(res.Version.TaskCount, "task"), app.Config.BaseURL)
	if !*hiddenSample {
		return nil
	}
	return p.seedHiddenSample(ctx, app)
}

// seedHiddenSample records the sample hidden-tests benchmark's reference
// captures from a sandbox shop in Chromium and imports it (a no-op when the
// recording is unchanged). Without a usable Chromium it says why and skips:
// the rest of Proctor works without the sample.
func (p *Program) seedHiddenSample(ctx context.Context, app *App) error {
	// The captures are recorded once: screenshots of the same page may
	// differ in a few pixels between two recordings on a busy machine, and
	// every difference would make a new version of the benchmark.
	if b, err := app.benchmarkService().Benchmark(ctx, hiddenbench.Slug); err == nil && b.CurrentVersion != nil {
		if err := p.configureHiddenSample(ctx, app); err != nil {
			return err
		}
		fmt.Fprintf(p.Stdout, "sample hidden-tests benchmark %s unchanged (version %d, %d task); reference site %s\n",
			hiddenbench.Slug, b.CurrentVersion.Version, b.CurrentVersion.TaskCount, sandbox.SiteURLs(app.Config.BaseURL)[hiddenbench.Site])
		return nil
	} else if err != nil && models.ErrorCode(err) != models.ENOTFOUND {
		return err
	}
	opts := episode.BrowserOptionsFromEnv(p.Getenv)
	if err := opts.Check(); err != nil {
		fmt.Fprintf(p.Stdout, "sample hidden-tests benchmark %s skipped: its reference captures are recorded in Chromium: %v\n", hiddenbench.Slug, err)
		return nil
	}
	b, err := episode.LaunchBrowser(opts)
	if err != nil {
		fmt.Fprintf(p.Stdout, "sample hidden-tests benchmark %s skipped: Chromium does not start: %v\n", hiddenbench.Slug, err)
		return nil
	}
	defer b.Close()
	file, err := hiddenbench.FromSandbox(ctx, b.Playwright())
	if err != nil {
		return fmt.Errorf("sample hidden-tests benchmark: %w", err)
	}
	res, err := app.benchmarkService().Import(ctx, service.ImportRequest{Format: models.FormatProctor, Slug: hiddenbench.Slug,
		Dataset: bytes.NewReader(file), Source: "hiddenbench (recorded from the sandbox shop)"})
	var parse *service.ParseError
	if errors.As(err, &parse) {
		return fmt.Errorf("sample hidden-tests benchmark: %w", parse.Err)
	} else if err != nil {
		return err
	}
	if err := p.configureHiddenSample(ctx, app); err != nil {
		return err
	}
	fmt.Fprintf(p.Stdout, "sample hidden-tests benchmark %s %s (version %d, %d task); reference site %s\n",
		hiddenbench.Slug, importState(res), res.Version.Version, res.Version.TaskCount, sandbox.SiteURLs(app.Config.BaseURL)[hiddenbench.Site])
	return nil
}

// configureHiddenSample reveals the sample's tests and points its reference
// site at this deployment's sandbox shop.
func (p *Program) configureHiddenSample(ctx context.Context, app *App) error {
	// Like the sandbox's, the sample's tests are no secret: the suite is in this
	// repository, so teams may see which tests their rebuild failed and why.
	benchmarks := app.benchmarkService()
	if err := benchmarks.SetRevealReferences(ctx, hiddenbench.Slug, true); err != nil {
		return err
	}
	shop := sandbox.SiteURLs(app.Config.BaseURL)[hiddenbench.Site]
	if _, err := benchmarks.UpdateSite(ctx, hiddenbench.Slug, hiddenbench.Site, shop, "", 0); err != nil {
		return fmt.Errorf("configure site %s of %s: %w", hiddenbench.Site, hiddenbench.Slug, err)
	}
	return nil
}

// importState says whether an import made a new version.
func importState(res models.ImportResult) string {
	if res.Created {
		return "imported"
	}
	return "unchanged"
}
