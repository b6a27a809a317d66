package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"proctor/bundle"
	"proctor/models"
	"proctor/service"
	"proctor/storage/artifact"
)

// validateSubmissionWorker checks an assembled bundle before anything of it
// is kept: its SHA-256, every limit, every file, and its tasks against the
// benchmark. A refused bundle's bytes are deleted.
type validateSubmissionWorker struct {
	river.WorkerDefaults[ValidateSubmissionArgs]
	r *Runner
}

// Timeout stays under the rescue delay, so that River never hands a
// validation still reading a large bundle to a second worker.
func (w *validateSubmissionWorker) Timeout(*river.Job[ValidateSubmissionArgs]) time.Duration {
	return submissionJobTimeout(w.r.opts.RescueAfter)
}

// submissionJobTimeout is a submission job's time limit for a rescue delay.
func submissionJobTimeout(rescueAfter time.Duration) time.Duration {
	return rescueAfter * 3 / 4
}

// refusal is a bundle's problem: the submission is refused with its message.
type refusal struct{ message string }

func (e *refusal) Error() string { return e.message }

// Work validates the submission. A refusal deletes every byte under the
// submission's prefix and marks it refused with the message; a failure of
// the platform is retried, and on the last try refuses the bundle saying so.
func (w *validateSubmissionWorker) Work(ctx context.Context, job *river.Job[ValidateSubmissionArgs]) error {
	r := w.r
	ctx = systemContext(ctx)
	s, ok, err := r.db.StartSubmissionValidation(ctx, job.Args.SubmissionID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return river.JobCancel(err)
	}
	if err != nil || !ok {
		return err
	}
	err = r.validateSubmission(ctx, s)
	if err == nil {
		return nil
	}
	last := job.Attempt >= job.MaxAttempts
	var refused *refusal
	var stored *storeError
	switch {
	case errors.As(err, &refused):
	case !last:
		return err
	case ctx.Err() != nil:
		r.log.Error("submission validation ran out of time on its last try", "submission_id", s.ID, "error", err.Error())
		refused = &refusal{r.lastTryMessage(ctx, "Validating the bundle")}
	case errors.As(err, &stored):
		r.log.Error("submission validation could not store the bundle's files on its last try", "submission_id", s.ID, "error", err.Error())
		refused = &refusal{"Storing the bundle's screenshots and network logs failed; submit it again later or ask an administrator."}
	default:
		r.log.Error("submission validation failed on its last try", "submission_id", s.ID, "error", err.Error())
		refused = &refusal{"Proctor could not read the bundle back from its storage; submit it again."}
	}
	if ctx.Err() != nil {
		// Out of time, or the worker stopping: the refusal is recorded all
		// the same, or the submission would stay validating for ever.
		var cancel context.CancelFunc
		ctx, cancel = lastTryContext(ctx)
		defer cancel()
	}
	r.log.Info("submission refused", "submission_id", s.ID, "reason", refused.message)
	return r.refuseSubmission(ctx, s, refused.message, last)
}

// lastTryCleanup is how long a submission job whose context ended on its
// last try has left to delete what it stored and record why it gave up.
const lastTryCleanup = time.Minute

// lastTryContext is ctx without its end, for lastTryCleanup more.
func lastTryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), lastTryCleanup)
}

// lastTryMessage says why a submission job gave up on its last try when its
// context ended: its time ran out, or the worker stopped. what is the job,
// as the message's subject.
func (r *Runner) lastTryMessage(ctx context.Context, what string) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("%s took too long: its last try did not finish within the %s a try may take. Submit the bundle again later, or ask an administrator to give submission jobs more time.",
			what, roughDuration(submissionJobTimeout(r.opts.RescueAfter)))
	}
	return what + " was interrupted on its last try, as the worker stopped; submit the bundle again."
}

// roughDuration writes a job's time limit in minutes, or seconds under one.
func roughDuration(d time.Duration) string {
	switch {
	case d >= 2*time.Minute:
		return fmt.Sprintf("%d minutes", int(d.Round(time.Minute)/time.Minute))
	case d >= time.Minute:
		return "minute"
	}
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " seconds"
}

// validateSubmission hashes, inspects and checks the bundle, and stores the
// report; a *refusal is the bundle's fault.
func (r *Runner) validateSubmission(ctx context.Context, s *models.Submission) error {
	info, err := r.artifacts.Stat(ctx, s.StorageKey)
	if errors.Is(err, artifact.ErrNotFound) {
		return &refusal{"The bundle's bytes are no longer in storage; submit it again."}
	}
	if err != nil {
		return err
	}
	if s.Size > 0 && info.Size != s.Size {
		return &refusal{fmt.Sprintf("the assembled bundle has %d bytes, but the upload declared %d: a part is missing or was sent twice", info.Size, s.Size)}
	}
	limits := r.opts.Submissions.Limits
	if info.Size > limits.MaxBundleBytes {
		return &refusal{fmt.Sprintf("the bundle is %d bytes, over the bundle size limit of %d bytes", info.Size, limits.MaxBundleBytes)}
	}
	// A try before may have stored files: they go first.
	if err := r.deletePrefix(ctx, submissionFilesPrefix(s.ID)); err != nil {
		return err
	}
	meter := r.newProgressMeter(ctx, s.ID, info.Size)
	b, hashed, err := r.openHashedBundle(ctx, s.StorageKey)
	if errors.Is(err, artifact.ErrNotFound) {
		return &refusal{"The bundle's bytes are no longer in storage; submit it again."}
	}
	if err != nil {
		return err
	}
	defer b.Close()
	// One pass: every byte is hashed, inspected and, for the screenshots and
	// network logs, stored as it is read.
	files := r.newFileStore(ctx, s.ID)
	defer files.wait() //nolint:errcheck // every path that keeps files checks it first
	bun, inspectErr := bundle.InspectStoring(ctx, b, b.size, limits, files.put, readProgress(meter.pass(b.size)))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	sum, err := hashed.sum(ctx)
	if err != nil {
		return err
	}
	// A bundle damaged on its way is said to be so before anything its
	// damage may have caused.
	if s.SHA256 != "" && sum != s.SHA256 {
		return &refusal{fmt.Sprintf("the assembled bundle's SHA-256 is %s, but the upload declared %s: a part was corrupted or mixed up", sum, s.SHA256)}
	}
	bun, err = inspected(bun, inspectErr)
	if err != nil {
		return err
	}
	catalog, declared, err := r.submissionCatalog(ctx, s)
	if err != nil {
		return err
	}
	report := bun.Check(catalog, declared)
	report.SHA256 = sum
	if report.Format == "" {
		report.Format = bun.Format
	}
	if report.FormatName == "" {
		report.FormatName = models.BundleFormatName(report.Format)
	}
	if len(report.Blocking) > 0 {
		// Never ingested: nothing stored is kept.
		if err := files.dropUnkept(nil); err != nil {
			return err
		}
	} else {
		plan, err := files.plan(bun, catalog, sum)
		if err != nil {
			return err
		}
		if err := r.writeIngestPlan(ctx, s.ID, plan); err != nil {
			return err
		}
	}
	_, err = r.db.FinishSubmissionValidation(ctx, s.ID, report, service.DuplicateBundleError)
	if models.ErrorCode(err) == models.ECONFLICT {
		return nil // discarded meanwhile: nothing to report
	}
	return err
}

// inspected runs one of the bundle reader's inspections, turning its
// refusals into ours.
func inspected(b *bundle.Bundle, err error) (*bundle.Bundle, error) {
	var refused *bundle.RefusedError
	if errors.As(err, &refused) {
		return nil, &refusal{refused.Error()}
	}
	if err != nil {
		return nil, fmt.Errorf("inspect bundle: %w", err)
	}
	return b, nil
}

// readProgress adapts a pass's progress to the bundle reader's.
func readProgress(progress func(int64)) func(done, total int64) {
	return func(done, _ int64) { progress(done) }
}

// submissionCatalog is what a submission's bundle is checked against.
func (r *Runner) submissionCatalog(ctx context.Context, s *models.Submission) (bundle.Catalog, bundle.Declared, error) {
	slug, taskIDs, subsetIDs, err := r.db.SubmissionCatalog(ctx, s)
	if err != nil {
		return bundle.Catalog{}, bundle.Declared{}, err
	}
	view, err := r.db.SubmissionByID(ctx, s.ID, 0) // the queue reads every team's
	if err != nil {
		return bundle.Catalog{}, bundle.Declared{}, err
	}
	return bundle.Catalog{Benchmark: slug, TaskIDs: taskIDs, Subset: s.SubsetName, SubsetTaskIDs: subsetIDs},
		bundle.Declared{Benchmark: slug, Subset: s.SubsetName, Agent: view.TeamSlug + "/" + view.AgentSlug}, nil
}

// refuseSubmission deletes every byte of a submission, then marks it refused
// with the message. Deleting first means a failure in between is retried
// and finds nothing left to read, which refuses the bundle again; on the
// last try (no retry), a failed deletion is logged and the bundle refused.
func (r *Runner) refuseSubmission(ctx context.Context, s *models.Submission, message string, last bool) error {
	if err := r.deleteSubmissionBytes(ctx, s); err != nil {
		if !last {
			return err
		}
		r.log.Error("delete a refused bundle", "submission_id", s.ID, "error", err.Error())
	}
	err := r.db.RefuseSubmission(ctx, s.ID, message)
	if models.ErrorCode(err) == models.ECONFLICT {
		return nil // discarded meanwhile: its bytes are gone all the same
	}
	return err
}

// deleteSubmissionBytes removes an unfinished upload's parts and every
// artifact under the submission's prefix.
func (r *Runner) deleteSubmissionBytes(ctx context.Context, s *models.Submission) error {
	return service.DeleteSubmissionBytes(ctx, r.artifacts, s)
}

// deletePrefix removes every artifact whose key starts with prefix.
func (r *Runner) deletePrefix(ctx context.Context, prefix string) error {
	return artifact.DeletePrefix(ctx, r.artifacts, prefix)
}
