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
	"sync/atomic"

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
//
// On a store that defers durability (the local one), a small file is read
// into a buffer, then written by a goroutine of its own while the bundle
// reader goes on to the next file: the store's file creation and copying
// overlap the reading, hashing and checking. At most writeBuffers files are
// held at once. wait ends the writing; it must be called before the stored
// files are used or deleted.
type fileStore struct {
	r      *Runner
	ctx    context.Context
	id     int64
	stored map[string]string // archive path → key
	used   map[string]bool   // keys
	sizes  map[string]int64  // key → size

	writes  chan bufferedWrite // to the writer; nil until the first
	buffers chan []byte        // free buffers, writeBuffers of them
	written chan error         // the writer's first error, once it ends
	failed  atomic.Pointer[error]
}

// bufferedWrite is one file read into a buffer, for the writer.
type bufferedWrite struct {
	key, contentType string
	buf              []byte
}

const (
	// bufferedWriteMax is the largest file written from a buffer; larger
	// ones are streamed into the store as they are read.
	bufferedWriteMax = 4 << 20
	// writeBuffers bounds the files held in memory: one being read, one
	// queued and one being written.
	writeBuffers = 3
)

func (r *Runner) newFileStore(ctx context.Context, id int64) *fileStore {
	return &fileStore{r: r, ctx: ctx, id: id, stored: map[string]string{}, used: map[string]bool{}, sizes: map[string]int64{}}
}

func (fs *fileStore) put(archivePath, contentType string, size int64, content io.Reader) error {
	if err := fs.writeError(); err != nil {
		return err
	}
	key := bundleFileKey(fs.id, archivePath)
	if fs.used[key] {
		key = submissionFilesPrefix(fs.id) + "f-" + shortDigest(archivePath) + keySegment(path.Ext(archivePath))
	}
	d, deferred := fs.r.artifacts.(artifact.Deferred)
	switch {
	case deferred && size >= 0 && size <= bufferedWriteMax:
		// Made durable together, before the plan (sync).
		if err := fs.putBuffered(key, contentType, size, content); err != nil {
			return err
		}
	case deferred:
		if err := d.PutUnsynced(fs.ctx, key, content, size, contentType); err != nil {
			return &storeError{err}
		}
	default:
		if err := fs.r.artifacts.Put(fs.ctx, key, content, size, contentType); err != nil {
			return &storeError{err}
		}
	}
	fs.stored[archivePath], fs.used[key], fs.sizes[key] = key, true, size
	return nil
}

// putBuffered reads the file whole (the bundle reader checks it meanwhile)
// and queues it for the writer.
func (fs *fileStore) putBuffered(key, contentType string, size int64, content io.Reader) error {
	if fs.writes == nil {
		fs.startWriter()
	}
	var buf []byte
	select {
	case buf = <-fs.buffers:
	case <-fs.ctx.Done():
		return fs.ctx.Err()
	}
	buf = buf[:size]
	if _, err := io.ReadFull(content, buf); err != nil {
		fs.buffers <- buf
		return &storeError{fmt.Errorf("artifact: put %q: %w", key, err)}
	}
	fs.writes <- bufferedWrite{key: key, contentType: contentType, buf: buf}
	return nil
}

// startWriter starts the goroutine writing buffered files. After its first
// failure it writes nothing more, and put reports the failure.
func (fs *fileStore) startWriter() {
	fs.writes = make(chan bufferedWrite, 1)
	fs.buffers = make(chan []byte, writeBuffers)
	for range writeBuffers {
		fs.buffers <- make([]byte, 0, bufferedWriteMax)
	}
	fs.written = make(chan error, 1)
	d := fs.r.artifacts.(artifact.Deferred)
	writes, buffers, written := fs.writes, fs.buffers, fs.written
	go func() {
		var first error
		for w := range writes {
			if first == nil {
				err := d.PutUnsynced(fs.ctx, w.key, bytes.NewReader(w.buf), int64(len(w.buf)), w.contentType)
				if err != nil {
					first = &storeError{err}
					fs.failed.Store(&first)
				}
			}
			buffers <- w.buf
		}
		written <- first
	}()
}

// writeError is the writer's failure so far, if any.
func (fs *fileStore) writeError() error {
	if err := fs.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// wait waits for the buffered files to be written and returns the first
// failure. Only the first call waits; put must not be called afterwards.
func (fs *fileStore) wait() error {
	if fs.writes == nil {
		return fs.writeError()
	}
	close(fs.writes)
	fs.writes = nil
	err := <-fs.written
	return err
}

// plan builds the ingest plan of a checked bundle and deletes the stored
// files the run does not keep (invalid, unreferenced, or of tasks outside
// the subset).
func (fs *fileStore) plan(bun *bundle.Bundle, catalog bundle.Catalog, sum string) (*ingestPlan, error) {
	if err := fs.wait(); err != nil {
		return nil, err
	}
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
	if err := fs.wait(); err != nil {
		return err
	}
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
