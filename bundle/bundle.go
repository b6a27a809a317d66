// Package bundle reads submission bundles: trajectories and results run outside
// Proctor, uploaded as zip or tar.gz archives in one of the formats of
// docs/bundle-formats.md. It never extracts to disk and never holds a bundle in
// memory whole: Inspect streams the archive once to check every limit and
// parse every file; InspectStoring does so while handing every screenshot and
// HAR to the caller as it is read (one pass for validating and storing);
// Extract streams it again to hand the kept files to the caller.
package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"proctor/har"
	"proctor/models"
)

// Limits cap what a bundle may hold. Breaking one refuses the whole bundle.
type Limits struct {
	MaxBundleBytes int64   // the archive itself
	MaxFiles       int     // entries, directories included
	MaxFileBytes   int64   // one file, uncompressed
	MaxTotalBytes  int64   // all files, uncompressed
	MaxRatio       float64 // uncompressed ÷ compressed, for the archive and for each zip entry
	MaxJSONBytes   int64   // one JSON or JSON Lines file
	MaxHARBytes    int64   // one HAR
	MaxImagePixels int64   // one screenshot, width × height
	// MaxMetadataBytes caps what an inspection holds in memory: file names,
	// steps (thoughts, actions, URLs), answers and problems. Zero takes the
	// default, as nothing else bounds that memory; a negative value lifts it.
	MaxMetadataBytes int64
}

// DefaultLimits are the server's defaults (config can change them).
func DefaultLimits() Limits {
	return Limits{
		MaxBundleBytes: 8 << 30,
		MaxFiles:       200_000,
		MaxFileBytes:   512 << 20,
		MaxTotalBytes:  32 << 30,
		MaxRatio:       100,
		MaxJSONBytes:   16 << 20,
		MaxHARBytes:    har.MaxBytes,
		MaxImagePixels: 40_000_000,
		// Far above a full WebArena-Verified run with long thoughts (812
		// tasks × 30 steps × 4 KB ≈ 100 MB), far below the server's memory.
		MaxMetadataBytes: defaultMaxMetadataBytes,
	}
}

const defaultMaxMetadataBytes = 256 << 20

// RefusedError refuses a whole bundle: corrupt, of an unknown format, hostile
// (traversal, links, special files, bombs) or over a limit. Path names the
// archive entry at fault ("" for the archive itself).
type RefusedError struct {
	Path   string
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Reason)
}

// Catalog is what the bundle is checked against: the benchmark version's task
// ids and the subset's.
type Catalog struct {
	Benchmark     string
	TaskIDs       []string // every task of the version
	Subset        string   // models.SubsetFull or a named subset
	SubsetTaskIDs []string // the subset's tasks; equal to TaskIDs for the full set
}

// Declared is what the submitter said the bundle is, compared with the
// bundle's own manifest.
type Declared struct {
	Benchmark string
	Subset    string
	Agent     string
}

// Bundle is an inspected bundle: its format, manifest and tasks. It keeps
// only metadata (steps, file names, answers), never file contents.
type Bundle struct {
	Format   string
	Manifest *models.BundleManifest
	Tasks    []*Task // sorted by ID, numerically when ids are numbers
	// Report is filled by Inspect (format, files, bytes, invalid files,
	// duplicates) and completed by Check.
	Report models.SubmissionReport
	files  map[string]fileRef // archive path -> what the ingest keeps

	limits          Limits   // Inspect's, which Extract enforces again
	inspectWarnings []string // Inspect's warnings, which Check keeps
	manifestProblem string   // why a Proctor bundle's manifest is unusable (blocks ingest)
	// Every invalid file and duplicated task, of which the report shows the
	// first maxReportList: Check starts from these each time.
	invalidFiles []models.FileProblem
	duplicated   []string
}

// fileRef is a kept file's place in the bundle.
type fileRef struct {
	taskID      string
	kind        string
	size        int64
	contentType string
}

// Task is one task of a bundle.
type Task struct {
	ID           string
	NotAttempted bool            // .missing marker (WebArena-Verified) or an empty result
	Final        json.RawMessage // the final action as models.Action JSON (answer or stop), or nil
	HAR          string          // archive path of the network log, or ""
	Steps        []Step
	TokensIn     int64
	TokensOut    int64
	Cost         float64
	// TokensStated and CostStated are set when the bundle states the task's
	// tokens or cost (zero included); otherwise they are unknown, not zero.
	TokensStated bool
	CostStated   bool
	DurationMS   int64
	StartedAt    *time.Time
	ErrorMessage string               // the agent's own error, when the bundle records one
	Problems     []models.FileProblem // this task's invalid files
}

// Step is one recorded step.
type Step struct {
	Index      int             // from 0, in order
	Action     json.RawMessage // models.Action JSON (type "recorded" for free-text actions)
	Thought    string
	URL        string
	Title      string
	Screenshot string // archive path, or ""
	StartedAt  *time.Time
	DurationMS int64
	TokensIn   int64
	TokensOut  int64
	Cost       float64
	Error      string
}

// File kinds Extract hands over.
const (
	KindScreenshot = "screenshot"
	KindHAR        = "har"
)

// File is a kept file Extract hands over.
type File struct {
	Path        string
	TaskID      string
	Kind        string // KindScreenshot or KindHAR
	Size        int64
	ContentType string
}

// Inspect reads the archive in r (zip or tar.gz, told apart by content),
// refusing it with a *RefusedError when it breaks a limit or is hostile,
// detects its format, parses every JSON, JSON Lines and HAR file within the
// size limits and checks every screenshot (header and structure, not
// decoded). Per-file problems do not refuse the bundle: they are listed in
// Report.InvalidFiles and on their task.
// progress, when not nil, is told how many compressed bytes were read.
// A canceled or expired ctx stops it promptly with ctx's error.
func Inspect(ctx context.Context, r io.ReaderAt, size int64, lim Limits, progress func(done, total int64)) (*Bundle, error) {
	return inspect(ctx, r, size, lim, nil, nil, progress)
}

// StoreFunc stores a file an inspection may keep (a screenshot or a HAR,
// found by its name) as the inspection reads it: content holds size bytes
// (the archive's claim, which the walk enforces), the path is the file's
// archive path and contentType what its content shows it is. An error stops
// the inspection and is returned as it is, unless the archive's own fault
// (a refusal) caused it.
type StoreFunc func(path, contentType string, size int64, content io.Reader) error

// InspectStoring is Inspect that also hands every screenshot and HAR to
// store while reading it, so that each byte of the archive is read once:
// the files the bundle keeps (Files) are then stored already, and those it
// does not (invalid, unreferenced) are the caller's to delete (Stored lists
// what was handed over).
func InspectStoring(ctx context.Context, r io.ReaderAt, size int64, lim Limits, store StoreFunc, progress func(done, total int64)) (*Bundle, error) {
	if store == nil {
		return nil, errors.New("bundle: InspectStoring without a store")
	}
	return inspect(ctx, r, size, lim, nil, store, progress)
}

func inspect(ctx context.Context, r io.ReaderAt, size int64, lim Limits, knownImages map[string]string, store StoreFunc, progress func(done, total int64)) (*Bundle, error) {
	if lim.MaxMetadataBytes == 0 {
		lim.MaxMetadataBytes = defaultMaxMetadataBytes
	}
	in := newInspector(lim)
	in.images.known = knownImages
	in.store = store
	w, err := walk(ctx, r, size, lim, progress, true, in.visit)
	if err != nil {
		return nil, err
	}
	b, err := in.assemble(ctx)
	if err != nil {
		return nil, err
	}
	b.limits = lim
	b.Report.Files, b.Report.Bytes = len(in.files), w.total
	b.Report.Warnings = append([]string{}, b.inspectWarnings...)
	b.Report.InvalidFiles = reportProblems(b.invalidFiles)
	b.Report.TasksDuplicated = reportIDs(b.duplicated)
	b.Report.Counts = models.SubmissionReportCounts{InvalidFiles: len(b.invalidFiles), TasksDuplicated: len(b.duplicated)}
	return b, nil
}

// Check compares the bundle with the benchmark and what the submitter
// declared, completing and returning Report: tasks found, not attempted,
// missing, unknown, outside the subset, coverage, and the blocking reasons
// (no task of the benchmark found, manifest for another benchmark or subset).
func (b *Bundle) Check(c Catalog, d Declared) models.SubmissionReport {
	b.Report = check(b, c, d)
	return b.Report
}

// Extract streams every kept file (valid screenshots and HARs of tasks in
// keep; a nil keep keeps every task) to fn in archive order; the reader is
// valid until fn returns. Files are those of Files(), with their archive
// paths: Step.Screenshot and Task.HAR name them the same way.
// The archive is walked again with every limit enforced; a kept file whose
// size differs from what Inspect saw means the archive changed in between,
// which is an error. Errors of fn are returned wrapped with the file's path.
func (b *Bundle) Extract(ctx context.Context, r io.ReaderAt, size int64, keep func(taskID string) bool, fn func(f File, content io.Reader) error) error {
	_, err := walk(ctx, r, size, b.limits, nil, false, func(e entry, open func() (io.Reader, error)) error {
		ref, ok := b.files[e.Name]
		if e.Dir || !ok || (keep != nil && !keep(ref.taskID)) {
			return nil
		}
		if e.Size != ref.size {
			return fmt.Errorf("extract %s: the archive changed since it was inspected (%d bytes, then %d)", e.Name, ref.size, e.Size)
		}
		content, err := open()
		if err != nil {
			return err
		}
		f := File{Path: e.Name, TaskID: ref.taskID, Kind: ref.kind, Size: ref.size, ContentType: ref.contentType}
		if err := fn(f, content); err != nil {
			return fmt.Errorf("extract %s: %w", e.Name, err)
		}
		return nil
	})
	return err
}

// Files lists the files Extract hands over, in path order: the valid
// screenshots steps reference and the valid HARs of the bundle's tasks.
func (b *Bundle) Files() []File {
	files := make([]File, 0, len(b.files))
	for p, ref := range b.files {
		files = append(files, File{Path: p, TaskID: ref.taskID, Kind: ref.kind, Size: ref.size, ContentType: ref.contentType})
	}
	slices.SortFunc(files, func(x, y File) int { return strings.Compare(x.Path, y.Path) })
	return files
}
