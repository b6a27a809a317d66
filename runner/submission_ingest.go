package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/riverqueue/river"

	"proctor/bundle"
	"proctor/models"
	"proctor/service"
	"proctor/storage/artifact"
)

// ingestSubmissionWorker turns a validated bundle into a run: it stores the
// screenshots and network logs under the submission's prefix first, then
// creates the run, its attempts and steps and their evaluation jobs in one
// transaction. Any failure deletes what it stored and marks the submission
// failed: no half-made run is ever left.
type ingestSubmissionWorker struct {
	river.WorkerDefaults[IngestSubmissionArgs]
	r *Runner
}

// Timeout stays under the rescue delay, as for validations.
func (w *ingestSubmissionWorker) Timeout(*river.Job[IngestSubmissionArgs]) time.Duration {
	return submissionJobTimeout(w.r.opts.RescueAfter)
}

// Work ingests the submission; a redelivered job finding the run made does
// nothing, and one finding files of an interrupted try deletes them first.
func (w *ingestSubmissionWorker) Work(ctx context.Context, job *river.Job[IngestSubmissionArgs]) error {
	r := w.r
	ctx = systemContext(ctx)
	s, err := r.db.SubmissionForJob(ctx, job.Args.SubmissionID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	if s.RunID != nil || s.Status != models.SubmissionIngesting {
		return nil
	}
	run, err := r.ingestSubmission(ctx, s)
	if err == nil {
		r.log.Info("submission ingested", "submission_id", s.ID, "run_id", run.ID)
		return nil
	}
	last := job.Attempt >= job.MaxAttempts
	if ctx.Err() != nil && !last {
		return err // shutting down or out of time: the next try starts over
	}
	return r.failIngest(ctx, s, err, last)
}

// failIngest deletes the files an ingest stored and marks the submission
// failed. On the last try it does so even when the job's time ran out (with
// a little time of its own) or a file resists deletion: nothing would try
// again, and the submission would stay ingesting for ever — neither
// discardable nor submittable again.
func (r *Runner) failIngest(ctx context.Context, s *models.Submission, cause error, last bool) error {
	message := ingestFailureMessage(cause)
	if ctx.Err() != nil {
		message = r.lastTryMessage(ctx, "Ingesting the bundle")
		var cancel context.CancelFunc
		ctx, cancel = lastTryContext(ctx)
		defer cancel()
	}
	r.log.Error("submission ingest failed", "submission_id", s.ID, "last_try", last, "error", cause.Error())
	// The run's transaction may have committed as the time ran out: its
	// files are then the run's.
	now, err := r.db.SubmissionForJob(ctx, s.ID)
	if err != nil {
		return errors.Join(cause, err)
	}
	if now.RunID != nil || now.Status != models.SubmissionIngesting {
		return nil
	}
	derr := errors.Join(r.deletePrefix(ctx, submissionTasksPrefix(s.ID)), r.deletePrefix(ctx, submissionFilesPrefix(s.ID)))
	if derr != nil {
		if !last {
			return errors.Join(cause, derr) // retried: the files must go before the submission says failed
		}
		r.log.Error("delete the files of a failed ingest", "submission_id", s.ID, "error", derr.Error())
	}
	if ferr := r.db.FailSubmission(ctx, s.ID, message); ferr != nil && models.ErrorCode(ferr) != models.ECONFLICT {
		return ferr
	}
	return nil
}

// ingestFailureMessage says why an ingest failed without internal details.
func ingestFailureMessage(err error) string {
	var refused *refusal
	var stored *storeError
	switch {
	case errors.As(err, &refused):
		return "The bundle changed since it was validated: " + refused.message
	case errors.As(err, &stored):
		return "Storing the bundle's screenshots and network logs failed; try again later or ask an administrator."
	case models.ErrorCode(err) != models.EINTERNAL:
		return models.ErrorMessage(err)
	}
	return "The ingest failed on an internal error; try again later or ask an administrator."
}

// storeError is a failure of the artifact store while ingesting.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// submissionTasksPrefix holds an ingested submission's task files.
func submissionTasksPrefix(id int64) string { return models.SubmissionPrefix(id) + "tasks/" }

// ingestSubmission creates the run of a validated submission from the plan
// its validation left, whose files are stored already: it writes rows only.
// A submission validated without a plan has its bundle read again.
func (r *Runner) ingestSubmission(ctx context.Context, s *models.Submission) (*models.Run, error) {
	plan, err := r.readIngestPlan(ctx, s)
	if errors.Is(err, errNoPlan) {
		return r.ingestFromBundle(ctx, s)
	}
	if err != nil {
		return nil, err
	}
	// The bar shows the bytes of the run's files, stored already: it is
	// full once the run's rows are written.
	var stored int64
	for _, size := range plan.Files {
		stored += size
	}
	r.newProgressMeter(ctx, s.ID, max(stored, 1))
	return r.db.CreateUploadedRun(ctx, s.ID, plan.Ingest, service.UploadedRunRules(), r.queue.insertUploadedEvaluations)
}

// ingestFromBundle reads the bundle twice — once to list its tasks and
// files, once to store the files it keeps — then creates the run.
func (r *Runner) ingestFromBundle(ctx context.Context, s *models.Submission) (*models.Run, error) {
	if err := r.deletePrefix(ctx, submissionTasksPrefix(s.ID)); err != nil {
		return nil, &storeError{err}
	}
	info, err := r.artifacts.Stat(ctx, s.StorageKey)
	if err != nil {
		return nil, &storeError{err}
	}
	meter := r.newProgressMeter(ctx, s.ID, 2*info.Size)
	b, _, err := r.openBundle(ctx, s.StorageKey, false, nil)
	if err != nil {
		return nil, &storeError{err}
	}
	defer b.Close()
	// The bytes are those validated: the portal alone writes under the
	// submission's key, and an assembled upload takes no more parts. So the
	// screenshots' verdicts are read from the report instead of decoding
	// every image again.
	var earlier models.SubmissionReport
	progress := readProgress(meter.pass(b.size))
	var bun *bundle.Bundle
	if json.Unmarshal([]byte(s.Report), &earlier) == nil {
		bun, err = inspected(bundle.InspectValidated(ctx, b, b.size, r.opts.Submissions.Limits, earlier.InvalidFiles, progress))
	} else {
		bun, err = inspected(bundle.Inspect(ctx, b, b.size, r.opts.Submissions.Limits, progress))
	}
	if err != nil {
		return nil, err
	}
	catalog, declared, err := r.submissionCatalog(ctx, s)
	if err != nil {
		return nil, err
	}
	report := bun.Check(catalog, declared)
	if len(report.Blocking) > 0 {
		return nil, &refusal{strings.Join(report.Blocking, " ")}
	}
	inSubset := make(map[string]bool, len(catalog.SubsetTaskIDs))
	for _, id := range catalog.SubsetTaskIDs {
		inSubset[id] = true
	}
	keep := func(taskID string) bool { return inSubset[taskID] }
	stored := map[string]string{} // archive path → artifact key
	counted := &countingReaderAt{ReaderAt: b, tell: meter.pass(b.size)}
	err = bun.Extract(ctx, counted, b.size, keep, func(f bundle.File, content io.Reader) error {
		key := taskFileKey(s.ID, f.TaskID, f.Path)
		if err := r.artifacts.Put(ctx, key, content, f.Size, f.ContentType); err != nil {
			return &storeError{err}
		}
		stored[f.Path] = key
		return nil
	})
	if err != nil {
		var refused *bundle.RefusedError
		if errors.As(err, &refused) {
			return nil, &refusal{refused.Error()}
		}
		return nil, fmt.Errorf("extract bundle: %w", err)
	}
	in := models.SubmissionIngest{Manifest: bun.Manifest}
	for _, t := range bun.Tasks {
		if inSubset[t.ID] {
			in.Tasks = append(in.Tasks, uploadedTask(t, stored))
		}
	}
	return r.db.CreateUploadedRun(ctx, s.ID, in, service.UploadedRunRules(), r.queue.insertUploadedEvaluations)
}

// uploadedTask is a bundle task as the run stores it: its files by the keys
// they were stored under (a file the bundle reader did not keep, such as a
// screenshot that is not an image, is left out).
func uploadedTask(t *bundle.Task, stored map[string]string) models.UploadedTask {
	out := models.UploadedTask{
		ExternalID: t.ID, NotAttempted: t.NotAttempted, HARKey: stored[t.HAR],
		TokensIn: t.TokensIn, TokensOut: t.TokensOut, Cost: t.Cost, TokensStated: t.TokensStated, CostStated: t.CostStated, DurationMS: t.DurationMS,
		StartedAt: t.StartedAt, ErrorMessage: t.ErrorMessage,
	}
	if len(t.Final) > 0 {
		out.FinalAnswer = string(t.Final)
	}
	for i, st := range t.Steps {
		step := models.Step{
			Index: i, Thought: st.Thought, URL: st.URL, Title: st.Title, Error: st.Error,
			AgentMS: max(st.DurationMS, 0), TokensIn: st.TokensIn, TokensOut: st.TokensOut, Cost: st.Cost,
		}
		if len(st.Action) > 0 {
			step.Action = string(st.Action)
		}
		if st.Screenshot != "" {
			step.ScreenshotKey = stored[st.Screenshot]
		}
		if st.StartedAt != nil {
			step.CreatedAt = *st.StartedAt
		}
		out.Steps = append(out.Steps, step)
	}
	return out
}

// maxKeySegment is the longest segment a task file's key keeps: file
// systems take names of up to 255 bytes, and the local store names a file's
// metadata after it with ".json" added.
const maxKeySegment = 200

// taskFileKey is the artifact key of a bundle file of a task:
// submissions/{id}/tasks/{task}/{archive path}, each segment made a valid
// key segment. A path too long for a key, or with a segment too long for a
// file name, is named by its digest (a task id too long, likewise).
func taskFileKey(id int64, taskID, archivePath string) string {
	task := keySegment(taskID)
	if len(task) > maxKeySegment {
		task = "t-" + shortDigest(taskID)
	}
	dir := submissionTasksPrefix(id) + task + "/"
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
		// The extension tells what the file is; a long one is no extension.
		if ext := path.Ext(archivePath); ext != "" && len(ext) <= 16 {
			key += keySegment(ext)
		}
	}
	return key
}

// shortDigest names s by 96 bits of its SHA-256, in hex.
func shortDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

// keySegment makes s a valid key segment: no control characters or
// backslashes, not "." or "..", not the local store's reserved prefix.
func keySegment(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\\' || r == '/' || !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." || strings.HasPrefix(s, ".proctor-") {
		s = "_" + s
	}
	return s
}
