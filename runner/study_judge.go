package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"proctor/eval/judge"
	"proctor/models"
	"proctor/service"
)

// studyJudgeWorker runs one judge configuration of an agreement study over
// the study's items it has not judged yet.
type studyJudgeWorker struct {
	river.WorkerDefaults[StudyJudgeArgs]
	r *Runner
}

// Tuning of study judge jobs.
const (
	// studyJudgeAttempts is how often a job is tried after failures of the
	// platform (the database, the artifact store); the judge's own failures
	// are verdicts and never fail the job.
	studyJudgeAttempts = 5
	// studyJudgeParallel is how many items one job judges at once; the judge
	// client's concurrency cap still bounds the requests of every job.
	studyJudgeParallel = 4
)

// Timeout matches an evaluation's: a study's judging is cut into slices that
// each end well within it (see Work), so that River never takes a job still
// running for a stuck one.
func (w *studyJudgeWorker) Timeout(*river.Job[StudyJudgeArgs]) time.Duration {
	return evaluationTimeout(w.r.opts.RescueAfter)
}

// Work judges the configuration's unjudged items, saving each verdict as it
// comes, a few items at a time. It stops starting items once a judgement
// might no longer finish within the job's time, and snoozes the job (which
// costs no attempt) to carry on with the rest. A canceled context stops it.
func (w *studyJudgeWorker) Work(ctx context.Context, job *river.Job[StudyJudgeArgs]) error {
	r := w.r
	ctx = models.WithActor(ctx, models.SystemActor())
	view, err := r.db.StudyOverview(ctx, service.StudyGateFor(ctx, service.SeeStudy), job.Args.StudyID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return river.JobCancel(err) // the study is gone
	}
	if err != nil {
		return fmt.Errorf("study %d: %w", job.Args.StudyID, err)
	}
	cfg, ok := studyJudgeNamed(view.Study.Judges, job.Args.Judge)
	if !ok {
		// The configuration was removed after it was queued.
		return river.JobCancel(fmt.Errorf("study %d has no judge configuration %q", job.Args.StudyID, job.Args.Judge))
	}
	items, err := r.db.StudyJudgeWork(ctx, job.Args.StudyID, cfg.Name)
	if err != nil {
		return fmt.Errorf("study %d judge %q: %w", job.Args.StudyID, cfg.Name, err)
	}
	if items, err = w.untried(ctx, job, items); err != nil {
		return err
	}
	if len(items) == 0 {
		return nil
	}
	// The server's judge, with the configuration's model: never an address
	// a study names.
	judges, err := r.judgesFor(models.JudgeSettings{Model: cfg.Model})
	if err != nil {
		return fmt.Errorf("study %d judge %q: %w", job.Args.StudyID, cfg.Name, err)
	}
	run := &studyJudging{r: r, job: job, cfg: cfg, labels: view.Study.Labels, judges: judges}
	// A judgement started before this point finishes (within judgeTimeout)
	// before the job's own time runs out.
	limit := evaluationTimeout(r.opts.RescueAfter)
	sliceEnd := time.Now().Add(limit - judgeTimeout(r.opts.RescueAfter) - limit/10)
	done, err := judgeAll(ctx, items, sliceEnd, run.judgeItem)
	if errors.Is(err, errStudyJudgeChanged) {
		// The owner changed or removed the configuration mid-job: its old
		// verdicts are gone and the new one is judged when queued.
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	r.log.Info("study judged", "study_id", job.Args.StudyID, "judge", cfg.Name, "items", done, "left", len(items)-done)
	if done < len(items) {
		return river.JobSnooze(0)
	}
	return nil
}

// untried leaves out the items this job has already given an error verdict:
// the work list holds them again (a later job retries them), and judging
// them again in every slice could keep a job from ever finishing.
func (w *studyJudgeWorker) untried(ctx context.Context, job *river.Job[StudyJudgeArgs], items []models.StudyItem) ([]models.StudyItem, error) {
	verdicts, err := w.r.db.StudyVerdicts(ctx, service.StudyGateFor(ctx, service.SeeStudy), job.Args.StudyID)
	if err != nil {
		return nil, fmt.Errorf("study %d verdicts: %w", job.Args.StudyID, err)
	}
	tried := map[int64]bool{}
	for _, v := range verdicts {
		if v.Judge == job.Args.Judge && !v.Imported && v.Error != "" && !v.CreatedAt.Before(job.CreatedAt) {
			tried[v.StudyItemID] = true
		}
	}
	out := items[:0:0]
	for _, it := range items {
		if !tried[it.ID] {
			out = append(out, it)
		}
	}
	return out, nil
}

// errStudyJudgeChanged stops a job whose configuration changed under it.
var errStudyJudgeChanged = errors.New("the judge configuration changed")

// studyJudgeNamed finds a configuration by name.
func studyJudgeNamed(configs []models.StudyJudge, name string) (models.StudyJudge, bool) {
	for _, c := range configs {
		if c.Name == name {
			return c, true
		}
	}
	return models.StudyJudge{}, false
}

// studyJudging is one job's judging of a configuration.
type studyJudging struct {
	r      *Runner
	job    *river.Job[StudyJudgeArgs]
	cfg    models.StudyJudge
	labels []string // the study's labels
	judges Judges
}

// judgeAll judges items with studyJudgeParallel workers until they are all
// judged or sliceEnd passes (the first studyJudgeParallel items are always
// started, so that every slice makes progress), and returns how many were.
// The first platform failure (or the context's end) stops it.
func judgeAll(ctx context.Context, items []models.StudyItem, sliceEnd time.Time, judgeItem func(context.Context, models.StudyItem) error) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan models.StudyItem)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		done     int
		firstErr error
	)
	for range min(studyJudgeParallel, len(items)) {
		wg.Go(func() {
			for item := range next {
				if err := judgeItem(ctx, item); err != nil {
					mu.Lock()
					firstErr = firstOf(firstErr, err)
					mu.Unlock()
					cancel(err)
					continue
				}
				mu.Lock()
				done++
				mu.Unlock()
			}
		})
	}
feed:
	for i, item := range items {
		if i >= studyJudgeParallel && time.Now().After(sliceEnd) {
			break
		}
		select {
		case next <- item:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = context.Cause(ctx)
	}
	return done, firstErr
}

// firstOf keeps the first error.
func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// judgeItem judges one item and saves the verdict. A judge that gives no
// verdict (a refusal, a timeout, an off-format reply, a configuration the
// judge cannot use) is an error verdict; the error returned is the
// platform's or the context's.
func (s *studyJudging) judgeItem(ctx context.Context, item models.StudyItem) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := s.r
	verdict := &models.StudyVerdict{StudyID: item.StudyID, StudyItemID: item.ID, Judge: s.cfg.Name, Config: &s.cfg}
	if verdict.StudyID == 0 {
		verdict.StudyID = s.job.Args.StudyID
	}
	spec, err := r.db.EvaluationSpec(ctx, item.AttemptID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		verdict.Error = "the attempt no longer exists"
		return s.save(ctx, verdict)
	}
	if err != nil {
		return fmt.Errorf("attempt %d: %w", item.AttemptID, err)
	}
	in, err := r.evaluationInput(ctx, spec)
	if err != nil {
		if ctx.Err() != nil || s.job.Attempt < s.job.MaxAttempts {
			return fmt.Errorf("attempt %d: %w", item.AttemptID, err)
		}
		// The last try: the item gets an error verdict rather than holding
		// up the rest of the study.
		verdict.Error = "the platform could not read this attempt: " + err.Error()
		return s.save(ctx, verdict)
	}
	limit := judgeTimeout(r.opts.RescueAfter)
	jctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	v, err := s.judges.Labels(jctx, in.Input, judge.LabelOptions{
		Prompt: s.cfg.Prompt, Screenshots: s.cfg.Screenshots, Accessibility: s.cfg.Accessibility, Labels: s.labels,
	})
	verdict.LatencyMS = time.Since(start).Milliseconds()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && jctx.Err() != nil:
		verdict.Error = fmt.Sprintf("the judge did not finish within %s", limit)
	case err != nil:
		if models.ErrorCode(err) == models.EINTERNAL {
			r.log.Error("study judge", "study_id", s.job.Args.StudyID, "judge", s.cfg.Name, "item_id", item.ID, "error", err.Error())
		}
		verdict.Error = "the judge could not be asked: " + models.ErrorMessage(err)
	default:
		verdict.Labels = models.StudyLabels(v.Labels)
		verdict.Rationale, verdict.Error = v.Rationale, v.Error
		verdict.PromptVersion, verdict.PromptSHA256 = v.PromptVersion, v.PromptSHA256
		verdict.TokensIn, verdict.TokensOut, verdict.Cost = v.Usage.InputTokens, v.Usage.OutputTokens, v.Usage.Cost
	}
	return s.save(ctx, verdict)
}

// save stores a verdict.
func (s *studyJudging) save(ctx context.Context, v *models.StudyVerdict) error {
	if v.Error != "" {
		v.Labels = nil
	}
	if err := s.r.db.SaveStudyVerdict(ctx, v, service.CanonicalVerdictLabels); err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return ctx.Err()
		}
		if models.ErrorCode(err) == models.ECONFLICT {
			return fmt.Errorf("%w: %s", errStudyJudgeChanged, models.ErrorMessage(err))
		}
		return fmt.Errorf("save verdict of study item %d: %w", v.StudyItemID, err)
	}
	return nil
}
