package service

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"proctor/eval"
	"proctor/importer"
	"proctor/models"
)

// BenchmarkStore is what the benchmark service needs from storage.
type BenchmarkStore interface {
	Leaderboard(ctx context.Context, slug, subset string, q models.LeaderboardQuery, scope models.BenchmarkScope) (*models.Leaderboard, error)
	BoardVersion(ctx context.Context, slug string, scope models.BenchmarkScope) (models.BoardVersion, error)
	ListBenchmarks(ctx context.Context, scope models.BenchmarkScope) ([]models.BenchmarkListItem, error)
	Benchmark(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.Benchmark, error)
	BenchmarkDetail(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.BenchmarkDetail, error)
	BenchmarkSummary(ctx context.Context, slug string, scope models.BenchmarkScope) (*models.BenchmarkSummary, error)
	BrowseTasks(ctx context.Context, slug string, f models.TaskFilter, scope models.BenchmarkScope) (*models.TaskPage, error)
	ListTasks(ctx context.Context, slug string, f models.TaskFilter, scope models.BenchmarkScope) ([]models.Task, int, error)
	TaskByExternalID(ctx context.Context, slug, externalID string, scope models.BenchmarkScope) (*models.Task, error)
	ListSites(ctx context.Context, slug string, scope models.BenchmarkScope) ([]models.Site, error)
	AdminBenchmarks(ctx context.Context) ([]models.AdminBenchmark, error)
	ImportBenchmark(ctx context.Context, slug string, ds *models.Dataset, sourceName string, importedBy int64) (models.ImportResult, error)
	UpdateSite(ctx context.Context, slug, siteName, siteURL, resetURL string, maxConcurrency int) (*models.Site, error)
	SetBenchmarkPublished(ctx context.Context, slug string, published bool) error
	SetRevealReferences(ctx context.Context, slug string, reveal bool) error
	SetBenchmarkJudge(ctx context.Context, slug string, u models.JudgeUpdate) error
	SetBenchmarkEvaluator(ctx context.Context, slug, evaluator string, readingsOf func(evaluator string) []string) error
}

// Benchmarks is the benchmark service: importing a benchmark file as a new
// version, the administrators' settings (publishing, sites, reference
// reveal, judge, grading reading) and every read of a benchmark, its tasks
// and its sites. Unpublished benchmarks exist only for administrators and
// the system; a task's hidden fields and a site's deployment URLs are shown
// to them alone.
type Benchmarks struct {
	store BenchmarkStore
	kinds *eval.Registry
}

// NewBenchmarks returns the benchmark service over store; kinds are the
// evaluators a benchmark file may name and how each checks its tasks.
func NewBenchmarks(store BenchmarkStore, kinds *eval.Registry) *Benchmarks {
	return &Benchmarks{store: store, kinds: kinds}
}

// ImportRequest is a benchmark file to import, as the admin form, the API,
// the CLI and the seed command give it.
type ImportRequest struct {
	// Format is the file's format, one of models.ImportFormats().
	Format string
	// Slug names the benchmark the file becomes the next version of.
	Slug string
	// Dataset is the benchmark file.
	Dataset io.Reader
	// Source is the file's name, recorded on the version.
	Source string
	// Subsets are the named subset files given beside it.
	Subsets []importer.SubsetFile
}

// ParseError is an import refused because its files do not parse: Err is
// the importer's coded error (EINVALID or ETOOLARGE), naming where in the
// files it is. Callers that show a file's name or form field beside the
// message tell it apart from the other refusals with errors.As.
type ParseError struct{ Err error }

// Error returns the importer's message.
func (e *ParseError) Error() string { return e.Err.Error() }

// Unwrap returns the importer's error, so that its code reaches the caller.
func (e *ParseError) Unwrap() error { return e.Err }

// Import is the one path of "parse, then import": administrators and the
// system only (EUNAUTHORIZED / EFORBIDDEN, before a byte is read), it parses
// the files, checks the dataset and writes it through storage as the next
// version of the benchmark in one transaction (a refusal writes nothing).
// Identical input changes nothing and returns Created=false. EINVALID on
// "slug" or "format" for a bad request; a *ParseError for files that do not
// parse; EINVALID for an inconsistent dataset; ECONFLICT when the slug holds
// data of another format.
func (s *Benchmarks) Import(ctx context.Context, req ImportRequest) (models.ImportResult, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return models.ImportResult{}, err
	}
	if !models.ValidSlug(req.Slug) {
		return models.ImportResult{}, models.FieldError("slug", "%q is not a valid benchmark name: use 1 to 64 lower-case letters, digits and hyphens", req.Slug)
	}
	if !slices.Contains(models.ImportFormats(), req.Format) {
		return models.ImportResult{}, models.FieldError("format", "unknown format %q: use one of %s", req.Format, strings.Join(models.ImportFormats(), ", "))
	}
	ds, err := importer.Parse(s.kinds, req.Format, req.Dataset, req.Subsets)
	if err != nil {
		return models.ImportResult{}, &ParseError{Err: err}
	}
	if err := checkDataset(ds); err != nil {
		return models.ImportResult{}, err
	}
	if err := s.checkFormat(ctx, req.Slug, ds.Format); err != nil {
		return models.ImportResult{}, err
	}
	// The version records the caller as its importer (nobody for the system).
	res, err := s.store.ImportBenchmark(ctx, req.Slug, ds, req.Source, models.ActorFrom(ctx).UserID)
	if err != nil {
		return models.ImportResult{}, err
	}
	res.Subsets = len(ds.Subsets)
	return res, nil
}

// checkFormat refuses data of one format as the next version of a benchmark
// holding another (ECONFLICT): its tasks would not compare. Storage checks
// the same again under the benchmark's lock, for imports that race.
func (s *Benchmarks) checkFormat(ctx context.Context, slug, format string) error {
	b, err := s.store.Benchmark(ctx, slug, models.BenchmarkScope{Unpublished: true})
	switch {
	case models.ErrorCode(err) == models.ENOTFOUND:
		return nil
	case err != nil:
		return err
	case b.Format != format:
		return &models.Error{Code: models.ECONFLICT, Field: "format", Message: fmt.Sprintf(
			"benchmark %q holds %s data; %s data cannot become its next version (import it under another name)",
			slug, b.Format, format)}
	}
	return nil
}

// checkDataset refuses a dataset storage could not write whole: no tasks,
// no checksum, a bad subset name or a subset naming a task the dataset lacks.
func checkDataset(ds *models.Dataset) error {
	if ds == nil || len(ds.Tasks) == 0 {
		return models.Errorf(models.EINVALID, "the dataset has no tasks")
	}
	if ds.Checksum == "" {
		return models.Errorf(models.EINVALID, "the dataset has no checksum")
	}
	tasks := make(map[string]bool, len(ds.Tasks))
	for _, t := range ds.Tasks {
		tasks[t.ExternalID] = true
	}
	for _, sub := range ds.Subsets {
		if err := models.ValidateSubsetName(sub.Name); err != nil {
			return models.Errorf(models.EINVALID, "subset %q: %s", sub.Name, models.ErrorMessage(err))
		}
		for _, ext := range sub.ExternalIDs {
			if !tasks[ext] {
				return models.Errorf(models.EINVALID, "subset %q: task id %s is not in the benchmark", sub.Name, ext)
			}
		}
	}
	return nil
}

// scopeOf is what of the benchmarks the caller may see
// (models.BenchmarkScopeFor): every read below passes it to storage.
func scopeOf(ctx context.Context) models.BenchmarkScope {
	return models.BenchmarkScopeFor(models.ActorFrom(ctx))
}

// TaskDefects lists the upstream defects of a task's own evaluation spec
// (flaws of the benchmark's published data that no output can pass), as
// its evaluator's registry record finds them: for administrators only, nil
// for everyone else.
func (s *Benchmarks) TaskDefects(ctx context.Context, slug string, t *models.Task) ([]models.TaskDefect, error) {
	if !models.ActorFrom(ctx).Privileged() || s.kinds == nil {
		return nil, nil
	}
	b, err := s.store.Benchmark(ctx, slug, models.BenchmarkScopeFor(models.ActorFrom(ctx)))
	if err != nil {
		return nil, err
	}
	return s.kinds.Defects(b.Evaluator, t), nil
}

// Leaderboard returns a benchmark's public board for a subset, filtered,
// ranked and sorted by q: published runs only, their precomputed rows.
// ENOTFOUND for an unknown board, or an unpublished benchmark's for anyone
// but administrators.
func (s *Benchmarks) Leaderboard(ctx context.Context, slug, subset string, q models.LeaderboardQuery) (*models.Leaderboard, error) {
	return s.store.Leaderboard(ctx, slug, subset, q, scopeOf(ctx))
}

// BoardVersion returns where the benchmark's boards stand for the caller
// (models.BoardVersion): it moves with every change they show, and carries
// the caller's scope, so a board kept for one caller is served to another
// only when they see the same. ENOTFOUND as Leaderboard for a benchmark the
// caller may not see.
func (s *Benchmarks) BoardVersion(ctx context.Context, slug string) (models.BoardVersion, error) {
	return s.store.BoardVersion(ctx, slug, scopeOf(ctx))
}

// ListBenchmarks returns the benchmarks the caller may see (unpublished ones
// for administrators only), by name, with their current version's counts.
func (s *Benchmarks) ListBenchmarks(ctx context.Context) ([]models.BenchmarkListItem, error) {
	return s.store.ListBenchmarks(ctx, scopeOf(ctx))
}

// Benchmark returns a benchmark with its current version, that version's
// subsets, and its sites (deployment URLs for administrators only).
// ENOTFOUND when missing or, for non-admins, unpublished.
func (s *Benchmarks) Benchmark(ctx context.Context, slug string) (*models.Benchmark, error) {
	return s.store.Benchmark(ctx, slug, scopeOf(ctx))
}

// BenchmarkDetail returns what the benchmark page shows. ENOTFOUND like
// Benchmark.
func (s *Benchmarks) BenchmarkDetail(ctx context.Context, slug string) (*models.BenchmarkDetail, error) {
	return s.store.BenchmarkDetail(ctx, slug, scopeOf(ctx))
}

// BenchmarkSummary counts the current version's tasks by their labels.
// ENOTFOUND like Benchmark.
func (s *Benchmarks) BenchmarkSummary(ctx context.Context, slug string) (*models.BenchmarkSummary, error) {
	return s.store.BenchmarkSummary(ctx, slug, scopeOf(ctx))
}

// BrowseTasks returns one page of the task browser; a task's hidden fields
// (evaluation spec, reference answers and actions) are blank for
// non-admins. ENOTFOUND like Benchmark.
func (s *Benchmarks) BrowseTasks(ctx context.Context, slug string, f models.TaskFilter) (*models.TaskPage, error) {
	return s.store.BrowseTasks(ctx, slug, f, scopeOf(ctx))
}

// ListTasks returns one page of the current version's tasks matching f and
// how many match, hidden fields blank for non-admins. ENOTFOUND like
// Benchmark.
func (s *Benchmarks) ListTasks(ctx context.Context, slug string, f models.TaskFilter) ([]models.Task, int, error) {
	return s.store.ListTasks(ctx, slug, f, scopeOf(ctx))
}

// Task returns a task of the current version by its id in the source file,
// hidden fields blank for non-admins. ENOTFOUND for an unknown task or
// benchmark.
func (s *Benchmarks) Task(ctx context.Context, slug, externalID string) (*models.Task, error) {
	return s.store.TaskByExternalID(ctx, slug, externalID, scopeOf(ctx))
}

// ListSites returns a visible benchmark's sites; their URLs and reset hooks
// are blank for non-admins. ENOTFOUND like Benchmark.
func (s *Benchmarks) ListSites(ctx context.Context, slug string) ([]models.Site, error) {
	return s.store.ListSites(ctx, slug, scopeOf(ctx))
}

// AdminBenchmarks lists every benchmark, published or not, with all its
// versions newest first. Administrators only: EUNAUTHORIZED / EFORBIDDEN.
func (s *Benchmarks) AdminBenchmarks(ctx context.Context) ([]models.AdminBenchmark, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	return s.store.AdminBenchmarks(ctx)
}

// maxSiteConcurrency caps a site's concurrency setting.
const maxSiteConcurrency = 10000

// UpdateSite configures one site of a benchmark: its base URL, its reset
// hook and its concurrency cap (0 = no cap); empty URLs clear the setting.
// Administrators only (EUNAUTHORIZED / EFORBIDDEN); EINVALID naming the
// field for a URL that is not absolute http(s) or a cap out of range;
// ENOTFOUND for an unknown benchmark or site.
func (s *Benchmarks) UpdateSite(ctx context.Context, slug, siteName, siteURL, resetURL string, maxConcurrency int) (*models.Site, error) {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	siteURL, err := checkSiteURL("url", siteURL)
	if err != nil {
		return nil, err
	}
	resetURL, err = checkSiteURL("reset_url", resetURL)
	if err != nil {
		return nil, err
	}
	if maxConcurrency < 0 || maxConcurrency > maxSiteConcurrency {
		return nil, models.FieldError("max_concurrency", "must be between 0 (no cap) and %d, got %d", maxSiteConcurrency, maxConcurrency)
	}
	return s.store.UpdateSite(ctx, slug, siteName, siteURL, resetURL, maxConcurrency)
}

// checkSiteURL accepts "" or an absolute http(s) URL, returned without a
// trailing slash so that placeholders such as __GITLAB__/explore join cleanly.
func checkSiteURL(field, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil
	}
	if _, err := models.ParseHTTPURL(raw, "site URL"); err != nil {
		return "", models.FieldError(field, "%s; a site URL looks like http://shopping.internal:7770", models.ErrorMessage(err))
	}
	return strings.TrimRight(raw, "/"), nil
}

// SetPublished shows or hides a benchmark from non-admins. Administrators
// only (EUNAUTHORIZED / EFORBIDDEN); ENOTFOUND for an unknown slug.
func (s *Benchmarks) SetPublished(ctx context.Context, slug string, published bool) error {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return err
	}
	return s.store.SetBenchmarkPublished(ctx, slug, published)
}

// SetRevealReferences marks whether a benchmark's reference action scripts
// (and a hidden-tests benchmark's tests) are public, so that teams may
// replay them. Administrators and the system only (EUNAUTHORIZED /
// EFORBIDDEN); ENOTFOUND for an unknown slug.
func (s *Benchmarks) SetRevealReferences(ctx context.Context, slug string, reveal bool) error {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return err
	}
	return s.store.SetRevealReferences(ctx, slug, reveal)
}

// SetJudge saves a benchmark's own LLM judge (an empty base URL goes back to
// the server's judge); its key is stored sealed and never follows the judge
// to another host. Administrators only (EUNAUTHORIZED / EFORBIDDEN);
// EINVALID naming the field at fault; ENOTFOUND for an unknown benchmark.
func (s *Benchmarks) SetJudge(ctx context.Context, slug string, u models.JudgeUpdate) error {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return err
	}
	u.BaseURL, u.Model = strings.TrimRight(strings.TrimSpace(u.BaseURL), "/"), strings.TrimSpace(u.Model)
	if u.BaseURL != "" {
		if _, err := models.ParseHTTPURL(u.BaseURL, "judge URL"); err != nil {
			return models.FieldError("judge_base_url", "%q is not an http(s) URL such as https://api.openai.com/v1", u.BaseURL)
		}
		if u.Model == "" {
			return models.FieldError("judge_model", "a model is required with a judge URL")
		}
	} else if u.Model != "" {
		return models.FieldError("judge_base_url", "a judge URL is required with a model")
	}
	if err := s.store.SetBenchmarkJudge(ctx, slug, u); err != nil {
		return fmt.Errorf("set judge of %s: %w", slug, err)
	}
	return nil
}

// SetEvaluator chooses the reading a WebArena-Verified benchmark's attempts
// are graded by from now on. Administrators only (EUNAUTHORIZED /
// EFORBIDDEN); EINVALID on "evaluator" for another kind or benchmark;
// ENOTFOUND for an unknown benchmark.
func (s *Benchmarks) SetEvaluator(ctx context.Context, slug, evaluator string) error {
	if _, err := models.RequireAdmin(ctx); err != nil {
		return err
	}
	return s.store.SetBenchmarkEvaluator(ctx, slug, evaluator, s.kinds.Readings)
}
