// Package hiddenbench builds Proctor's sample hidden-tests benchmark: one
// task asking an agent to rebuild the sandbox shop, graded by the sample
// hidden-test suite (hiddentest.SandboxShopSuite) against reference captures
// recorded from the shop itself in Chromium. The captures are recorded, not
// shipped, because they are screenshots: they must come from the browser that
// will take the candidates' screenshots to compare well with them.
package hiddenbench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mxschmitt/playwright-go"

	"proctor/hiddentest"
	"proctor/importer"
	"proctor/models"
	"proctor/runner/hidden"
	"proctor/sandbox"
)

// The sample benchmark's names.
const (
	Slug   = "sandbox-rebuild"
	Name   = "Sandbox shop rebuild"
	TaskID = "shop-rebuild"
	// Site is the task's reference site: the sandbox shop.
	Site = "shop"
)

// Description is the sample benchmark's description.
const Description = "Rebuild the sandbox shop: an agent explores the shop through a browser and builds a website " +
	"that looks and behaves the same. Hidden request, browser (L1–L3) and system tests with visual checkpoints " +
	"grade the rebuild; submit its base URL as a candidate."

// Intent is the task's instruction to the agent.
const Intent = "Explore the web shop at __SHOP__ through a browser and rebuild it as a website of your own that " +
	"looks and behaves the same: the same pages, navigation tabs, search, filters and sorting, product pages, " +
	"cart, checkout, order history, reviews and admin price changes, with the same texts and layout. Keep every " +
	"visitor's state apart and keep it across a restart. Then submit the rebuild's base URL (and a restart hook) " +
	"as your candidate."

// referenceTime is the sandbox clock while FromSandbox records captures:
// dates the shop prints (an order's date) then do not change the images from
// one day to the next, so recording again gives the same benchmark version.
// Such dates are masked when candidates are compared.
func referenceTime() time.Time { return time.Date(2026, time.January, 15, 12, 0, 0, 0, time.UTC) }

// SampleBenchmark records the sample suite's reference captures by playing
// its journeys in b against the reference shop at referenceBaseURL (a
// "{visitor}" in it is replaced by a fresh namespace for every journey, as
// for candidates: http://host/sandbox/{visitor}/shop), and returns the
// benchmark file in Proctor's JSON Lines format (docs/benchmark-format.md).
// Each capture is taken by the first journey naming it that does not
// restart the site (the reference has no restart hook). A journey that does
// not pass on the reference, played twice, is an error naming it.
func SampleBenchmark(ctx context.Context, b playwright.Browser, referenceBaseURL string) ([]byte, error) {
	raw := hiddentest.SandboxShopSuite()
	suite, err := hiddentest.Parse(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("sample suite: %w", err)
	}
	captures, err := recordCaptures(ctx, b, suite, hidden.Candidate{BaseURL: referenceBaseURL})
	if err != nil {
		return nil, err
	}
	encoded := make(map[string]string, len(captures))
	for name, img := range captures {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			return nil, fmt.Errorf("encode capture %s: %w", name, err)
		}
		encoded[name] = base64.StdEncoding.EncodeToString(buf.Bytes())
	}
	header := map[string]any{
		"proctor_benchmark": importer.ProctorFormatVersion,
		"name":              Name,
		"description":       Description,
		"evaluator":         models.EvaluatorHiddenTests,
	}
	task := map[string]any{
		"id":         TaskID,
		"intent":     Intent,
		"start_urls": []string{models.PlaceholderFor(Site)},
		"sites":      []string{Site},
		"difficulty": models.DifficultyHard,
		"domain":     "e-commerce",
		"eval":       map[string]any{"suite": json.RawMessage(raw), "captures": encoded},
	}
	var out bytes.Buffer
	for _, line := range []any{header, task} {
		enc, err := json.Marshal(line)
		if err != nil {
			return nil, fmt.Errorf("encode the sample benchmark: %w", err)
		}
		out.Write(enc)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// recordCaptures plays, in suite order, each journey that takes a capture not
// yet recorded and does not restart the site, and keeps the region images of
// the captures it takes first.
func recordCaptures(ctx context.Context, b playwright.Browser, suite *hiddentest.Suite, ref hidden.Candidate) (map[string]image.Image, error) {
	want := suite.Captures()
	got := map[string]image.Image{}
	for i := range suite.Tests {
		test := &suite.Tests[i]
		if test.Journey == nil || restarts(test) || !slices.ContainsFunc(test.Checkpoints, func(c hiddentest.Checkpoint) bool {
			return got[c.Capture] == nil
		}) {
			continue
		}
		taken, err := recordJourney(ctx, b, suite, test, ref)
		if err != nil {
			return nil, err
		}
		for name, img := range taken {
			if got[name] == nil {
				got[name] = img
			}
		}
	}
	var missing []string
	for _, name := range want {
		if got[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("record reference captures: %s taken only by journeys that restart the site", strings.Join(missing, ", "))
	}
	return got, nil
}

// recordAttempts is how many times a journey is played on the reference
// before recording gives up: once more after a failure, as hidden tests are
// rerun, since a loaded machine can make a step overrun its time.
const recordAttempts = 2

// recordJourney plays one journey on the reference, recording the region
// images of its checkpoints.
func recordJourney(ctx context.Context, b playwright.Browser, suite *hiddentest.Suite, test *hiddentest.Test, ref hidden.Candidate) (map[string]image.Image, error) {
	var out hidden.Outcome
	for range recordAttempts {
		taken := map[string]image.Image{}
		opts := hidden.JourneyOptionsFor(suite)
		opts.Record = func(name string, img image.Image) { taken[name] = img }
		out = hidden.RunJourney(ctx, b, ref, test, nil, opts)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("record reference captures: %w", err)
		}
		if out.Result == hidden.Passed {
			return taken, nil
		}
	}
	return nil, fmt.Errorf("record reference captures: journey %s %s on the reference site: %s", test.ID, out.Result, out.Reason)
}

// restarts reports whether a journey restarts the site.
func restarts(t *hiddentest.Test) bool {
	return slices.ContainsFunc(t.Journey.Steps, func(s hiddentest.Step) bool { return s.Action == hiddentest.ActionRestart })
}

// FromSandbox records the sample benchmark against a sandbox shop of its own,
// served on a loopback port for the duration of the call with its clock set
// to a fixed day, so that the same build of Proctor and Chromium records
// the same file every time.
func FromSandbox(ctx context.Context, b playwright.Browser) ([]byte, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serve the reference shop: %w", err)
	}
	shop := sandbox.New(sandbox.Options{Now: referenceTime})
	srv := &http.Server{Handler: shop, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln) // ends with ErrServerClosed; a failure before shows in the recording
	}()
	defer func() {
		_ = srv.Close()
		<-served
		_ = shop.Close()
	}()
	base := "http://" + ln.Addr().String() + strings.TrimSuffix(sandbox.PathPrefix, "/") + "/" + hidden.VisitorToken + "/" + Site
	return SampleBenchmark(ctx, b, base)
}
