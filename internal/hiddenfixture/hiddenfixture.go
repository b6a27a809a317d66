// Package hiddenfixture writes a graded hidden-tests run straight into a
// database and an artifact store, for the tests of the result pages: a
// hidden-tests benchmark of four tasks on two websites whose suite is the
// sample suite (hiddentest.SandboxShopSuite), a completed run with one
// attempt per task, every test's result row with both runs of the failed
// ones, and the images those runs name (step screenshots, the reference's
// and the candidate's regions and the SSIM map of a visual checkpoint).
// Nothing here goes through the importer's hidden-tests support, the
// submission or the executor, so the result pages are tested on their own.
// WriteRebuilds adds the runs of the sample benchmark's two candidates, the
// copy and the broken rebuild, graded by storage as the hidden-tests job
// records results, for the boards that rank runs by pass rate.
package hiddenfixture

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"io"
	"strings"
	"time"

	"proctor/hiddentest"
	"proctor/importer"
	"proctor/models"
	"proctor/service"
	"proctor/storage"
	"proctor/visual"
)

// The fixture's tasks by external id, in benchmark order. ShopA, ShopB and
// ForumA were tested; ForumB's candidate could not be (no results, counts 0).
const (
	ShopA  = "shop-a"
	ShopB  = "shop-b"
	ForumA = "forum-a"
	ForumB = "forum-b"
)

// ShopsSubset is the benchmark's named subset of ShopA and ShopB.
const ShopsSubset = "shops"

// ImageTest is the test of ShopA whose visual checkpoint failed in both runs:
// its page has step screenshots and the reference, candidate and SSIM-map
// images.
const ImageTest = "b1-home-page"

// FlakyTest is the test of ShopA that failed once and passed when rerun.
const FlakyTest = "b3-cart-survives-restart"

// notPassed are the tests per task that did not pass (every other test of
// the suite passed); ForumB is absent: it was not tested. ForumA failed every
// system test.
func notPassed() map[string]map[string]string {
	return map[string]map[string]string{
		ShopA: {ImageTest: models.HiddenFailed, "b2-cart-read-back": models.HiddenFailed, "sys-restart": models.HiddenErrored},
		ShopB: {"b1-tab-orders": models.HiddenFailed, "req-orders-page": models.HiddenFailed},
		ForumA: {
			"sys-health": models.HiddenFailed, "sys-restart": models.HiddenFailed, "sys-offline-build": models.HiddenFailed,
			"sys-path-traversal": models.HiddenFailed, "sys-no-directory-listing": models.HiddenFailed,
			"sys-no-error-details-get": models.HiddenFailed, "sys-no-error-details-post": models.HiddenFailed,
			"sys-security-headers": models.HiddenFailed,
		},
	}
}

// Putter stores an artifact (artifact.Store does).
type Putter interface {
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
}

// Options choose whose run it is and how visible.
type Options struct {
	Slug    string // the benchmark's slug; "rebuild-bench" when empty
	TeamID  int64
	AgentID int64
	// Published publishes the run.
	Published bool
	// Reveal sets the benchmark's RevealReferences: its tests are shown to
	// everyone who may see a run.
	Reveal bool
	// Files receives the images; nil stores none (the rows still name them).
	Files Putter
	// Cost, tokens and turns of each tested attempt.
	Cost      float64
	TokensIn  int64
	TokensOut int64
	Turns     int
}

// Seed is what Write wrote.
type Seed struct {
	BenchmarkSlug string
	RunID         int64
	// Attempts are the attempt ids by task external id.
	Attempts map[string]int64
	// ImageKeys are the artifact keys of ImageTest's first run's checkpoint:
	// reference, candidate and SSIM map.
	ImageKeys [3]string
}

// Write imports the benchmark (as the system), writes the run, its
// attempts, evaluations and hidden-test results, stores the images, and
// computes the run's leaderboard entries.
func Write(ctx context.Context, db *storage.DB, opt Options) (*Seed, error) {
	if opt.Slug == "" {
		opt.Slug = "rebuild-bench"
	}
	sys := models.WithActor(ctx, models.SystemActor())
	suite, err := hiddentest.Parse(bytes.NewReader(hiddentest.SandboxShopSuite()))
	if err != nil {
		return nil, fmt.Errorf("parse the sample suite: %w", err)
	}
	imported, err := db.ImportBenchmark(sys, opt.Slug, dataset(), opt.Slug+".jsonl", 0)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", opt.Slug, err)
	}
	if err := db.SetRevealReferences(sys, opt.Slug, opt.Reveal); err != nil {
		return nil, fmt.Errorf("reveal references: %w", err)
	}
	g := db.Gorm().WithContext(ctx)
	var tasks []models.Task
	if err := g.Where("version_id = ?", imported.Version.ID).Order("position").Find(&tasks).Error; err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	t0 := now.Add(-30 * time.Minute)
	snap, err := json.Marshal(map[string]any{"name": "Rebuilder", "slug": "rebuilder", "model": "gpt-4o"})
	if err != nil {
		return nil, err
	}
	run := &models.Run{
		TeamID: opt.TeamID, AgentID: opt.AgentID, VersionID: imported.Version.ID, SubsetName: models.SubsetFull,
		Status: models.RunCompleted, Origin: models.OriginUploaded, AgentSnapshot: string(snap), Published: opt.Published,
		CreatedAt: t0, StartedAt: &t0, FinishedAt: &now, TasksTotal: len(tasks), TasksDone: len(tasks), Errors: 1,
		MaxSteps: 30, Parallelism: 1,
	}
	if err := g.Create(run).Error; err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	seed := &Seed{BenchmarkSlug: opt.Slug, RunID: run.ID, Attempts: map[string]int64{}}
	outcomes := notPassed()
	for _, task := range tasks {
		attempt := &models.Attempt{
			RunID: run.ID, TaskID: task.ID, Status: models.AttemptDone, Tries: 1, StartedAt: &t0, FinishedAt: &now,
			Cost: opt.Cost, TokensIn: opt.TokensIn, TokensOut: opt.TokensOut, Steps: opt.Turns, CreatedAt: t0, UpdatedAt: now,
		}
		failing, tested := outcomes[task.ExternalID]
		if !tested {
			attempt.Outcome, attempt.ErrorClass, attempt.ErrorMessage = models.OutcomeError, "environment", "The candidate did not answer."
		}
		if err := g.Create(attempt).Error; err != nil {
			return nil, fmt.Errorf("create attempt: %w", err)
		}
		seed.Attempts[task.ExternalID] = attempt.ID
		if !tested {
			continue
		}
		prefix := fmt.Sprintf("runs/%d/attempts/%d/try-1/hidden", run.ID, attempt.ID)
		var rows []models.HiddenTestResult
		for i, test := range suite.Tests {
			result := models.HiddenPassed
			if r, ok := failing[test.ID]; ok {
				result = r
			}
			row := models.HiddenTestResult{
				AttemptID: attempt.ID, TestID: test.ID, Position: i, Group: test.Group, Level: test.Level,
				Result: result, DurationMS: 800, CreatedAt: now,
			}
			var runs []models.HiddenTestRun
			switch {
			case task.ExternalID == ShopA && test.ID == ImageTest:
				runs, err = imageRuns(ctx, opt.Files, prefix+"/"+test.ID, t0)
				if err != nil {
					return nil, err
				}
				row.Reason = runs[1].Reason
				seed.ImageKeys = [3]string{runs[0].Checkpoints[0].ReferenceKey, runs[0].Checkpoints[0].CandidateKey, runs[0].Checkpoints[0].MapKey}
			case task.ExternalID == ShopA && test.ID == FlakyTest:
				row.Flaky = true
				runs = []models.HiddenTestRun{
					{Result: models.HiddenFailed, Reason: "The cart was empty after the restart.", StartedAt: t0, DurationMS: 400,
						Steps: []models.HiddenTestStep{{Index: 0, Action: "goto", Detail: "/cart", Result: models.HiddenFailed, Reason: "expected 1 item, found 0", DurationMS: 400}}},
					{Result: models.HiddenPassed, StartedAt: t0, DurationMS: 400,
						Steps: []models.HiddenTestStep{{Index: 0, Action: "goto", Detail: "/cart", Result: models.HiddenPassed, DurationMS: 400}}},
				}
			case result == models.HiddenErrored:
				row.Reason = "The restart hook did not answer within 10 s."
				runs = []models.HiddenTestRun{{Result: result, Reason: row.Reason, StartedAt: t0, DurationMS: 10000}, {Result: result, Reason: row.Reason, StartedAt: t0, DurationMS: 10000}}
			case result == models.HiddenFailed:
				row.Reason = fmt.Sprintf("%s: the expected text was not found.", test.ID)
				failed := models.HiddenTestRun{Result: result, Reason: row.Reason, StartedAt: t0, DurationMS: 300,
					Steps: []models.HiddenTestStep{{Index: 0, Action: "check", Result: result, Reason: row.Reason, DurationMS: 300}}}
				runs = []models.HiddenTestRun{failed, failed}
			default:
				runs = []models.HiddenTestRun{{Result: result, StartedAt: t0, DurationMS: 200,
					Steps: []models.HiddenTestStep{{Index: 0, Action: "check", Result: result, DurationMS: 200}}}}
			}
			raw, err := json.Marshal(runs)
			if err != nil {
				return nil, err
			}
			row.Runs = string(raw)
			rows = append(rows, row)
		}
		if err := g.Create(&rows).Error; err != nil {
			return nil, fmt.Errorf("create hidden test results: %w", err)
		}
		summary := models.SummarizeHiddenResults(rows)
		details, err := json.Marshal(summary)
		if err != nil {
			return nil, err
		}
		score := *summary.Overall.Rate()
		outcome := summary.Overall.Outcome(models.DefaultPassThreshold)
		if err := g.Model(attempt).Updates(map[string]any{"outcome": outcome, "score": score}).Error; err != nil {
			return nil, fmt.Errorf("grade attempt: %w", err)
		}
		ev := &models.Evaluation{AttemptID: attempt.ID, Evaluator: models.EvaluatorHiddenTests, EvaluatorVersion: "hidden-tests@1",
			Kind: models.EvaluationCheck, IsPrimary: true, IsCurrent: true, Verdict: outcome, Score: &score, Details: string(details), CreatedAt: now}
		if err := g.Create(ev).Error; err != nil {
			return nil, fmt.Errorf("create evaluation: %w", err)
		}
	}
	if err := service.NewMetrics(db).RefreshRunMetrics(sys, run.ID); err != nil {
		return nil, fmt.Errorf("refresh metrics: %w", err)
	}
	return seed, nil
}

// dataset is the benchmark: four tasks on two websites, each with the
// sample suite as its hidden evaluation spec, and a subset of the shop tasks.
func dataset() *importer.Dataset {
	ds := &importer.Dataset{
		Format: models.FormatProctor, Evaluator: models.EvaluatorHiddenTests, Grades: models.GradesCandidates,
		Name: "Rebuild bench", Description: "Rebuild the reference websites.",
		Sites: []importer.SiteSpec{{Name: "forum", Placeholder: "__FORUM__"}, {Name: "shop", Placeholder: "__SHOP__"}},
	}
	for i, id := range []string{ShopA, ShopB, ForumA, ForumB} {
		site := strings.SplitN(id, "-", 2)[0]
		ds.Tasks = append(ds.Tasks, models.Task{
			ExternalID: id, Position: i, Intent: "Rebuild the " + site + " so that it looks and behaves like the reference.",
			StartURLs: models.JSONStrings{"__" + strings.ToUpper(site) + "__/"}, Sites: models.JSONStrings{site}, SiteKey: site,
			TaskType: "build", Difficulty: "hard", Metadata: "{}", EvalSpec: string(hiddentest.SandboxShopSuite()),
		})
	}
	shops := sha256.Sum256([]byte(`["shop-a","shop-b"]`))
	ds.Subsets = []importer.Subset{{Name: ShopsSubset, Description: "The shop tasks", Checksum: hex.EncodeToString(shops[:]), ExternalIDs: []string{ShopA, ShopB}}}
	sum := sha256.Sum256([]byte(fmt.Sprint(ds.Tasks)))
	ds.Checksum = hex.EncodeToString(sum[:])
	return ds
}

// imageRuns are the two failed runs of ImageTest: a goto and a checkpoint
// step with screenshots, and a visual checkpoint whose candidate region
// differs from the reference's, scored by package visual; the images are
// stored under prefix.
func imageRuns(ctx context.Context, files Putter, prefix string, t0 time.Time) ([]models.HiddenTestRun, error) {
	ref := shopRegion(false)
	cand := shopRegion(true)
	res, err := visual.Compare(cand, ref, visual.Options{})
	if err != nil {
		return nil, fmt.Errorf("compare regions: %w", err)
	}
	var runs []models.HiddenTestRun
	for n := 1; n <= 2; n++ {
		dir := fmt.Sprintf("%s/run-%d", prefix, n)
		reason := fmt.Sprintf("checkpoint product-grid: score %.3f is below the threshold %.2f", res.Score, res.Threshold)
		cp := models.HiddenTestCheckpoint{
			Capture: "product-grid", Score: res.Score, SSIM: res.SSIM, Threshold: res.Threshold, Passed: res.Passed, Reason: reason,
			ReferenceKey: dir + "/product-grid-reference.png", CandidateKey: dir + "/product-grid-candidate.png", MapKey: dir + "/product-grid-ssim.png",
		}
		steps := []models.HiddenTestStep{
			{Index: 0, Action: "goto", Detail: "/", Result: models.HiddenPassed, DurationMS: 250, ScreenshotKey: dir + "/step-000.jpg"},
			{Index: 1, Action: "checkpoint", Detail: "product-grid", Result: models.HiddenFailed, Reason: reason, DurationMS: 120, ScreenshotKey: dir + "/step-001.jpg"},
		}
		if files != nil {
			for key, img := range map[string]image.Image{cp.ReferenceKey: ref, cp.CandidateKey: cand, cp.MapKey: res.Map.Heat()} {
				if err := putPNG(ctx, files, key, img); err != nil {
					return nil, err
				}
			}
			for i, img := range []image.Image{page(cand, false), page(cand, true)} {
				if err := putJPEG(ctx, files, steps[i].ScreenshotKey, img); err != nil {
					return nil, err
				}
			}
		}
		runs = append(runs, models.HiddenTestRun{
			Result: models.HiddenFailed, Reason: reason, StartedAt: t0.Add(time.Duration(n) * time.Minute), DurationMS: 370,
			Steps: steps, Checkpoints: []models.HiddenTestCheckpoint{cp},
		})
	}
	return runs, nil
}

// shopRegion draws a product grid: a header bar and six product cards with
// a picture, a title line and a price line. The candidate's pictures are of
// another colour and shape, as a rebuild with the wrong images has them.
func shopRegion(wrongImages bool) *image.RGBA {
	const w, h = 480, 300
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill := func(r image.Rectangle, c color.Color) {
		draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
	}
	fill(img.Bounds(), color.RGBA{250, 250, 247, 255})
	fill(image.Rect(0, 0, w, 36), color.RGBA{32, 56, 100, 255})
	for i := 0; i < 5; i++ {
		fill(image.Rect(16+i*60, 12, 16+i*60+44, 24), color.RGBA{230, 236, 245, 255})
	}
	for i := 0; i < 6; i++ {
		x, y := 16+(i%3)*156, 52+(i/3)*122
		fill(image.Rect(x, y, x+140, y+110), color.RGBA{255, 255, 255, 255})
		pic := image.Rect(x+8, y+8, x+132, y+62)
		if wrongImages {
			fill(pic, color.RGBA{200, 70, 60, 255})
			fill(image.Rect(x+40, y+20, x+100, y+50), color.RGBA{250, 210, 90, 255})
		} else {
			fill(pic, color.RGBA{90, 150, 200, 255})
			for s := 0; s < 6; s++ {
				fill(image.Rect(x+14+s*20, y+14, x+24+s*20, y+56), color.RGBA{40, 90, 140, 255})
			}
		}
		fill(image.Rect(x+8, y+72, x+110, y+82), color.RGBA{60, 60, 60, 255})
		fill(image.Rect(x+8, y+90, x+60, y+100), color.RGBA{30, 130, 60, 255})
	}
	return img
}

// page is a step's screenshot: the region inside a browser-sized page,
// outlined when the step is the checkpoint.
func page(region image.Image, outlined bool) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 800, 500))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{240, 240, 240, 255}), image.Point{}, draw.Src)
	at := image.Rect(160, 100, 160+region.Bounds().Dx(), 100+region.Bounds().Dy())
	if outlined {
		draw.Draw(img, at.Inset(-4), image.NewUniform(color.RGBA{229, 72, 77, 255}), image.Point{}, draw.Src)
	}
	draw.Draw(img, at, region, region.Bounds().Min, draw.Src)
	return img
}

func putPNG(ctx context.Context, files Putter, key string, img image.Image) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return put(ctx, files, key, buf.Bytes(), "image/png")
}

func putJPEG(ctx context.Context, files Putter, key string, img image.Image) error {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80}); err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return put(ctx, files, key, buf.Bytes(), "image/jpeg")
}

func put(ctx context.Context, files Putter, key string, data []byte, contentType string) error {
	if err := files.Put(ctx, key, bytes.NewReader(data), int64(len(data)), contentType); err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	return nil
}
