package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"proctor/bundle"
	"proctor/models"
	"proctor/storage/artifact"
)

// The validation of a submission reads its bundle once: it hashes every
// byte, inspects every file and stores the screenshots and network logs as
// it reads them (bundle.InspectStoring), then writes the ingest plan — the
// run's tasks and steps, pointing at the files stored. The ingest reads the
// plan and writes the run's rows: it never reads the bundle again.

// ingestPlanVersion changes when the plan's meaning does; a plan of another
// version is not used (the ingest reads the bundle instead).
const ingestPlanVersion = 1

// ingestPlan is what the validation leaves for the ingest.
type ingestPlan struct {
	Version int
	// SHA256 is the bundle's, as validated: the plan is used only for the
	// submission validated with it.
	SHA256 string
	// Files are the stored files the run points at, by key, with their sizes.
	Files  map[string]int64
	Ingest models.SubmissionIngest
}

// submissionFilesPrefix holds the files a validation stored.
func submissionFilesPrefix(id int64) string { return models.SubmissionPrefix(id) + "files/" }

// ingestPlanKey is where the validation leaves its ingest plan.
func ingestPlanKey(id int64) string { return models.SubmissionPrefix(id) + "ingest-plan.json" }

// bundleFileKey is the artifact key of a bundle file stored as it was
// validated: submissions/{id}/files/{archive path}, each segment made a valid
// key segment (a path too long for a key is named by its digest).
func bundleFileKey(id int64, archivePath string) string {
	dir := submissionFilesPrefix(id)
	var segs []string
	longSegment := false
	for seg := range strings.SplitSeq(archivePath, "/") {
		if seg != "" {
			seg = keySegment(seg)
			longSegment = longSegment || len(seg) > maxKeySegment
			segs = append(segs, seg)
		}
	}
	key := dir + strings.Join(segs, "/")
	if len(segs) == 0 || longSegment || len(key) > artifact.MaxKeyLen/2 || artifact.ValidateKey(key) != nil {
		key = dir + "f-" + shortDigest(archivePath)
		if ext := path.Ext(archivePath); ext != "" && len(ext) <= 16 {
			key += keySegment(ext)
		}
	}
	return key
}

// fileStore stores a validation's files as the bundle reader hands them
// over, remembering each one's key. Two archive paths that make the same key
// (they differ in a character keys do not take) are told apart by digest.
type fileStore struct {
	r      *Runner
	ctx    context.Context
	id     int64
	stored map[string]string // archive path → key
	used   map[string]bool   // keys
	sizes  map[string]int64  // key → size
}

func (r *Runner) newFileStore(ctx context.Context, id int64) *fileStore {
	return &fileStore{r: r, ctx: ctx, id: id, stored: map[string]string{}, used: map[string]bool{}, sizes: map[string]int64{}}
}

func (fs *fileStore) put(archivePath, contentType string, size int64, content io.Reader) error {
	key := bundleFileKey(fs.id, archivePath)
	if fs.used[key] {
		key = submissionFilesPrefix(fs.id) + "f-" + shortDigest(archivePath) + keySegment(path.Ext(archivePath))
	}
	put := fs.r.artifacts.Put
	if d, ok := fs.r.artifacts.(artifact.Deferred); ok {
		put = d.PutUnsynced // made durable together, before the plan (sync)
	}
	if err := put(fs.ctx, key, content, size, contentType); err != nil {
		return &storeError{err}
	}
	fs.stored[archivePath], fs.used[key], fs.sizes[key] = key, true, size
	return nil
}

// plan builds the ingest plan of a checked bundle and deletes the stored
// files the run does not keep (invalid, unreferenced, or of tasks outside
// the subset).
func (fs *fileStore) plan(bun *bundle.Bundle, catalog bundle.Catalog, sum string) (*ingestPlan, error) {
	inSubset := make(map[string]bool, len(catalog.SubsetTaskIDs))
	for _, id := range catalog.SubsetTaskIDs {
		inSubset[id] = true
	}
	kept := map[string]string{}
	plan := &ingestPlan{Version: ingestPlanVersion, SHA256: sum, Files: map[string]int64{}, Ingest: models.SubmissionIngest{Manifest: bun.Manifest}}
	for _, f := range bun.Files() {
		key, ok := fs.stored[f.Path]
		if ok && inSubset[f.TaskID] {
			kept[f.Path] = key
			plan.Files[key] = fs.sizes[key]
		}
	}
	for _, t := range bun.Tasks {
		if inSubset[t.ID] {
			plan.Ingest.Tasks = append(plan.Ingest.Tasks, uploadedTask(t, kept))
		}
	}
	if err := fs.dropUnkept(plan.Files); err != nil {
		return nil, err
	}
	if err := fs.sync(plan.Files); err != nil {
		return nil, err
	}
	return plan, nil
}

// sync makes the kept files durable, on a store that left it for later:
// they must be on disk before the plan (and the run's rows) point at them.
func (fs *fileStore) sync(keep map[string]int64) error {
	d, ok := fs.r.artifacts.(artifact.Deferred)
	if !ok || len(keep) == 0 {
		return nil
	}
	keys := make([]string, 0, len(keep))
	for key := range keep {
		keys = append(keys, key)
	}
	if err := d.SyncKeys(fs.ctx, keys); err != nil {
		return &storeError{err}
	}
	return nil
}

// dropUnkept deletes the stored files not in keep.
func (fs *fileStore) dropUnkept(keep map[string]int64) error {
	for _, key := range fs.stored {
		if _, ok := keep[key]; !ok {
			if err := fs.r.artifacts.Delete(fs.ctx, key); err != nil {
				return &storeError{err}
			}
		}
	}
	return nil
}

// writeIngestPlan stores the plan under the submission's prefix.
func (r *Runner) writeIngestPlan(ctx context.Context, id int64, plan *ingestPlan) error {
	raw, err := json.Marshal(plan)
	if err != nil {
		return fmt.Errorf("encode the ingest plan: %w", err)
	}
	if err := r.artifacts.Put(ctx, ingestPlanKey(id), bytes.NewReader(raw), int64(len(raw)), "application/json"); err != nil {
		return &storeError{err}
	}
	return nil
}

// errNoPlan: the submission has no usable ingest plan (validated before
// plans were written), so the ingest reads the bundle.
var errNoPlan = errors.New("no ingest plan")

// readIngestPlan reads the plan of a validated submission and checks that
// every file it points at is stored, with its size (one listing).
func (r *Runner) readIngestPlan(ctx context.Context, s *models.Submission) (*ingestPlan, error) {
	rc, _, err := r.artifacts.Get(ctx, ingestPlanKey(s.ID))
	if errors.Is(err, artifact.ErrNotFound) {
		return nil, errNoPlan
	}
	if err != nil {
		return nil, &storeError{err}
	}
	defer rc.Close()
	var plan ingestPlan
	if err := json.NewDecoder(rc).Decode(&plan); err != nil {
		return nil, fmt.Errorf("read the ingest plan: %w", err)
	}
	if plan.Version != ingestPlanVersion || plan.SHA256 != s.SHA256 {
		return nil, errNoPlan
	}
	infos, err := r.artifacts.List(ctx, submissionFilesPrefix(s.ID))
	if err != nil {
		return nil, &storeError{err}
	}
	have := make(map[string]int64, len(infos))
	for _, info := range infos {
		have[info.Key] = info.Size
	}
	missing := 0
	for key, size := range plan.Files {
		if got, ok := have[key]; !ok || got != size {
			missing++
		}
	}
	if missing > 0 {
		return nil, models.Errorf(models.ECONFLICT, "%d of the %d screenshots and network logs stored when the bundle was validated are missing or changed; submit the bundle again.", missing, len(plan.Files))
	}
	return &plan, nil
}
