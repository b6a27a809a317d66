package main

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/hiddenbench"
	"proctor/hiddentest"
	"proctor/models"
	"proctor/sandbox"
)

func TestSeed_HiddenSampleNeedsChromium(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env["PLAYWRIGHT_DRIVER_PATH"] = t.TempDir() // holds no driver
	code, stdout, stderr := env.run(t, "", "seed")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "sandbox benchmark imported")
	require.Contains(t, stdout, "sample hidden-tests benchmark sandbox-rebuild skipped: its reference captures are recorded in Chromium: PLAYWRIGHT_DRIVER_PATH=")
	_, err := env.open(t).DB.Benchmark(context.Background(), hiddenbench.Slug, models.BenchmarkScope{})
	require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))

	code, stdout, stderr = env.run(t, "", "seed", "--hidden-sample=false")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "sandbox benchmark unchanged")
	require.NotContains(t, stdout, "hidden-tests")
}

func TestSeed_HiddenSample(t *testing.T) {
	t.Parallel()
	browserOptionsOrSkip(t)
	env := newTestEnv(t)
	env["PLAYWRIGHT_DRIVER_PATH"] = os.Getenv("PLAYWRIGHT_DRIVER_PATH")
	env["PROCTOR_CHROMIUM_PATH"] = os.Getenv("PROCTOR_CHROMIUM_PATH")
	const base = "http://proctor.example.org:8080"
	env["PROCTOR_BASE_URL"] = base
	code, stdout, stderr := env.run(t, "", "seed")
	require.Equal(t, exitOK, code, stderr)
	shop := sandbox.SiteURLs(base)["shop"]
	require.Contains(t, stdout, "sample hidden-tests benchmark sandbox-rebuild imported (version 1, 1 task); reference site "+shop)

	ctx := models.WithActor(context.Background(), models.SystemActor())
	db := env.open(t).DB
	b, err := db.Benchmark(ctx, hiddenbench.Slug, models.BenchmarkScopeFor(models.SystemActor()))
	require.NoError(t, err)
	require.Equal(t, hiddenbench.Name, b.Name)
	require.Equal(t, models.EvaluatorHiddenTests, b.Evaluator)
	require.True(t, b.RevealReferences)
	sites, err := db.ListSites(ctx, hiddenbench.Slug, models.BenchmarkScopeFor(models.ActorFrom(ctx)))
	require.NoError(t, err)
	require.Len(t, sites, 1)
	require.Equal(t, "shop", sites[0].Name)
	require.Equal(t, shop, sites[0].URL)
	task, err := db.TaskByExternalID(ctx, hiddenbench.Slug, hiddenbench.TaskID, models.BenchmarkScopeFor(models.ActorFrom(ctx)))
	require.NoError(t, err)
	caps, err := db.ReferenceCaptures(ctx, task.ID)
	require.NoError(t, err)
	var names []string
	for _, c := range caps {
		names = append(names, c.Name)
	}
	require.Equal(t, hiddentest.SandboxShopSuiteCaptures(), names)

	// Seeding again keeps the recorded captures: nothing changes.
	code, stdout, stderr = env.run(t, "", "seed")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "sample hidden-tests benchmark sandbox-rebuild unchanged (version 1, 1 task)")
}
