package runner

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"proctor/eval"
	"proctor/models"
	"proctor/runner/agent"
	"proctor/runner/connect"
	"proctor/runner/episode"
)

// episodeWorker runs one attempt's try in the browser.
type episodeWorker struct {
	river.WorkerDefaults[EpisodeArgs]
	r *Runner
}

// Timeout is the run's episode budget plus a grace period for starting the
// browser context, storing the HAR and recording the outcome (half the budget,
// between 15 and 90 seconds). The episode enforces the budget itself; a job
// whose worker died is rescued once it has outlived this.
func (w *episodeWorker) Timeout(job *river.Job[EpisodeArgs]) time.Duration {
	budget := time.Duration(job.Args.MaxSeconds) * time.Second
	if budget <= 0 {
		budget = time.Duration(models.DefaultMaxEpisodeSeconds) * time.Second
	}
	return budget + min(max(budget/2, 15*time.Second), 90*time.Second)
}

// Work claims the attempt, runs the episode and records its outcome with
// the evaluation job and the run's next episodes in one transaction. While
// the run's parallelism, a site's cap or the team's share is full the job
// ends: the episode that frees the room queues the attempt again.
func (w *episodeWorker) Work(ctx context.Context, job *river.Job[EpisodeArgs]) error {
	r := w.r
	ctx = models.WithActor(ctx, models.SystemActor())
	status, spec, err := r.db.ClaimAttempt(ctx, job.Args.AttemptID, r.queue.claimant())
	if err != nil {
		return err
	}
	switch status {
	case models.ClaimHeld:
		// Another live worker runs it; should its lease lapse, this job
		// takes the attempt over.
		return river.JobSnooze(heldSnooze)
	case models.ClaimWait:
		// A connecting agent's claim that cannot start yet: the attempt waits
		// for the next claim.
		return r.db.EndAttemptLeases(ctx, job.Args.AttemptID, 0, "the episode could not start: the run's parallelism, a site's cap or the team's share is full; claim again")
	case models.ClaimFinished:
		return r.db.EndAttemptLeases(ctx, job.Args.AttemptID, 0, "the attempt is finished or its run is over")
	}
	defer r.queue.holdAttempt(spec.Attempt.ID)()
	if spec.Run.AgentConnects {
		// However this try ends, no lease of it or of an earlier try (a
		// worker that died holding it) opens the episode afterwards: the agent
		// is told it is over instead of waiting for it.
		defer func() {
			if err := r.db.EndAttemptLeases(context.WithoutCancel(ctx), spec.Attempt.ID, spec.Try, "the episode is over"); err != nil {
				r.log.Warn("end the episode's leases", "attempt_id", spec.Attempt.ID, "error", err.Error())
			}
		}()
	}
	secrets, err := r.db.AgentSecrets(ctx, spec.Agent.ID)
	if err != nil {
		return fmt.Errorf("agent secrets: %w", err)
	}
	rec := newEpisodeRecorder(r.db, spec.Attempt.ID, spec.Try, secrets)
	log := rec.logger(r.log).With("run_id", spec.Run.ID, "attempt_id", spec.Attempt.ID, "try", spec.Try)
	out, err := r.runEpisode(ctx, spec, secrets, rec, log)
	if err != nil {
		if errors.Is(err, errRunCanceled) {
			// Canceling the run already closed its attempts; the room this
			// episode held goes to other runs' waiting episodes.
			return r.db.OfferEpisodes(context.WithoutCancel(ctx), r.queue.RunEpisodes)
		}
		if errors.Is(err, errLeaseLapsed) || errors.Is(err, errNotClaimed) {
			// The connecting agent is gone: not the agent's failure, nor the
			// attempt's. The attempt waits for the next claim.
			log.Warn("the connecting agent's lease lapsed: the attempt waits for the next claim", "error", err.Error())
			return r.returnClaimed(context.WithoutCancel(ctx), spec)
		}
		if ctx.Err() != nil {
			// Shutting down or the run was canceled: hand the attempt back.
			_ = r.db.ReleaseAttempt(context.WithoutCancel(ctx), spec.Attempt.ID, spec.Try)
			return err
		}
		log.Error("episode failed in the platform", "error", err.Error())
		out.ErrorClass, out.ErrorMessage = models.ErrorClassPlatform, err.Error()
	}
	if out.ErrorClass == models.ErrorClassEnvironment && spec.Try < r.opts.EnvironmentRetries+1 {
		log.Warn("environment error: retrying the attempt", "error", out.ErrorMessage)
		if spec.Run.AgentConnects {
			return r.returnClaimed(ctx, spec)
		}
		if err := r.db.ReleaseAttempt(ctx, spec.Attempt.ID, spec.Try); err != nil {
			return err
		}
		return river.JobSnooze(2 * time.Second)
	}
	return rec.finish(ctx, out, func(ctx context.Context, tx *sql.Tx) error {
		return r.queue.insertEvaluation(ctx, tx, spec.Attempt.ID)
	}, r.queue.RunEpisodes)
}

// returnClaimed hands a connecting agent's attempt back to the claims and
// offers the room it held to other runs.
func (r *Runner) returnClaimed(ctx context.Context, spec *models.EpisodeSpec) error {
	if err := r.db.ReturnClaimedAttempt(ctx, spec.Attempt.ID, spec.Try); err != nil {
		return err
	}
	return r.db.OfferEpisodes(ctx, r.queue.RunEpisodes)
}

// heldSnooze is how long an episode job waits for the live worker running
// its attempt (a job offered twice, or retried after its worker lost track).
const heldSnooze = 2 * time.Second

// runEpisode prepares the agent and the sites, runs the browser episode while
// watching for the run's cancellation, and summarises the result.
func (r *Runner) runEpisode(ctx context.Context, spec *models.EpisodeSpec, secrets map[string]string, rec *episodeRecorder, log *slog.Logger) (models.EpisodeOutcome, error) {
	sites, err := models.ResolveSites(spec.Sites, spec.Namespace)
	if err != nil {
		return models.EpisodeOutcome{ErrorClass: models.ErrorClassEnvironment, ErrorMessage: err.Error()}, nil
	}
	if err := resetSites(ctx, spec); err != nil {
		if ctx.Err() != nil {
			return models.EpisodeOutcome{}, ctx.Err()
		}
		return models.EpisodeOutcome{ErrorClass: models.ErrorClassEnvironment, ErrorMessage: err.Error()}, nil
	}
	callTimeout := time.Duration(spec.Run.MaxAgentCallSeconds) * time.Second
	b, err := r.sharedBrowser()
	if err != nil {
		return models.EpisodeOutcome{}, err
	}
	var ag episode.Agent
	var box *connect.Mailbox
	var lease *models.EpisodeLease
	if spec.Run.AgentConnects {
		box = connect.NewMailbox(spec.Run.ID, spec.Attempt.ID, spec.Try)
		box.NoScreenshot = spec.Agent.Kind == models.AgentHTTP && !agent.PullScreenshots(spec.Agent.Config)
		defer r.hub.Add(box)()
		if lease, err = r.db.StartEpisodeLease(ctx, spec.Attempt.ID, spec.Try, r.episodeURL); err != nil {
			return models.EpisodeOutcome{}, err
		}
		if lease == nil {
			return models.EpisodeOutcome{}, errNotClaimed
		}
		ag = box
	} else {
		called, err := agent.New(agent.Config{
			Kind: spec.Agent.Kind, EndpointURL: spec.Agent.EndpointURL, Model: spec.Agent.Model,
			Secrets: secrets, Settings: spec.Agent.Config,
			ReferenceActions: json.RawMessage(sites.Resolve(spec.Task.ReferenceActions)),
			HTTPClient:       r.agentClient(callTimeout), CallTimeout: callTimeout,
		})
		if err != nil {
			return models.EpisodeOutcome{ErrorClass: models.ErrorClassAgent, ErrorMessage: models.ErrorMessage(err)}, nil
		}
		ag = called
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go r.watchCancellation(ctx, cancel, spec.Run.ID, lease)

	prefix := fmt.Sprintf("runs/%d/attempts/%d/try-%d", spec.Run.ID, spec.Attempt.ID, spec.Try)
	res, err := episode.Run(ctx, b, episode.Episode{
		RunID: spec.Run.ID, AttemptID: spec.Attempt.ID,
		Task: models.StepTask{
			ID: spec.Task.ExternalID, Goal: spec.Task.Intent,
			StartURLs: sites.ResolveAll(spec.Task.StartURLs), Sites: spec.Task.Sites,
		},
		AllowedOrigins: sites.Allowed,
		Proxy:          r.browserProxy(),
		Agent:          ag,
		Budget: episode.Budget{
			MaxSteps: spec.Run.MaxSteps, MaxDuration: time.Duration(spec.Run.MaxEpisodeSeconds) * time.Second,
			MaxAgentCall: callTimeout, MaxCost: spec.Run.MaxCost,
		},
		Artifacts: r.artifacts,
		Prefix:    prefix,
		Probes:    r.pageProbes(spec, sites, log),
		Steps:     rec,
		Logger:    log,
	})
	if box != nil {
		how := endingOf(res, err, context.Cause(ctx))
		box.End(how)
		if endErr := r.db.EndEpisodeLease(context.WithoutCancel(ctx), lease.ID, how); endErr != nil {
			log.Warn("end the episode lease", "error", endErr.Error())
		}
	}
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errLeaseLapsed) {
			return models.EpisodeOutcome{}, cause
		}
		if cause := context.Cause(ctx); errors.Is(cause, errRunCanceled) {
			return models.EpisodeOutcome{}, cause
		}
		// Keep what the episode did record, so the attempt's counts match its steps.
		var partial models.EpisodeOutcome
		if res != nil {
			partial = models.EpisodeOutcome{Steps: res.Steps, TokensIn: res.Usage.InputTokens, TokensOut: res.Usage.OutputTokens,
				Cost: res.Usage.Cost, HARKey: res.HARKey, Duration: res.Duration}
		}
		return partial, err
	}
	final := ""
	if res.Final != nil {
		b, _ := json.Marshal(res.Final)
		final = string(b)
	}
	out := models.EpisodeOutcome{
		Steps: res.Steps, TokensIn: res.Usage.InputTokens, TokensOut: res.Usage.OutputTokens, Cost: res.Usage.Cost,
		ErrorClass: res.ErrorClass, ErrorMessage: res.ErrorMessage, FinalAnswer: final, HARKey: res.HARKey,
		Duration: res.Duration,
	}
	if out.PageStateKey, err = r.storePageState(ctx, prefix, res.PageState); err != nil {
		return out, err
	}
	log.Info("episode finished", "steps", res.Steps, "error_class", res.ErrorClass, "duration_ms", res.Duration.Milliseconds())
	return out, nil
}

// pageProbes are the values the benchmark's evaluator reads from the live
// page at the end of the episode, as its registry record says (original
// WebArena's program_html checks). Other evaluators read none: the probes'
// page loads would land in the HAR that WebArena-Verified checks.
func (r *Runner) pageProbes(spec *models.EpisodeSpec, sites *models.SiteMap, log *slog.Logger) []eval.PageProbe {
	task := spec.Task
	task.EvalSpec = sites.Resolve(task.EvalSpec)
	task.StartURLs = sites.ResolveAll(task.StartURLs)
	probes, err := r.evaluators.Probes(spec.Evaluator, &task)
	if err != nil {
		// The evaluator reports the same spec problem as an error verdict.
		log.Warn("page probes unavailable", "error", err.Error())
		return nil
	}
	return probes
}

// storePageState writes what the episode read from the live page as a JSON
// artifact, before the attempt row points at it. "" when there is none.
func (r *Runner) storePageState(ctx context.Context, prefix string, state *eval.PageState) (string, error) {
	if state == nil {
		return "", nil
	}
	b, err := json.Marshal(state)
	if err != nil {
		return "", fmt.Errorf("encode page state: %w", err)
	}
	key := prefix + "/page_state.json"
	if err := r.artifacts.Put(ctx, key, bytes.NewReader(b), int64(len(b)), "application/json"); err != nil {
		return "", fmt.Errorf("store page state: %w", err)
	}
	return key, nil
}

// errRunCanceled ends episodes of a run that was canceled.
var errRunCanceled = errors.New("the run was canceled")

// errLeaseLapsed ends the episode of a connecting agent that stopped
// renewing its lease; errNotClaimed an episode whose claim lapsed before it
// started.
var (
	errLeaseLapsed = errors.New("the agent's lease on the episode lapsed: it sent no heartbeat or call in time")
	errNotClaimed  = errors.New("no live claim holds this try: its lease lapsed before the episode started")
)

// watchCancellation stops an episode within seconds of its run being
// canceled, or of its connecting agent's lease (when it has one) lapsing.
func (r *Runner) watchCancellation(ctx context.Context, cancel context.CancelCauseFunc, runID int64, lease *models.EpisodeLease) {
	t := time.NewTicker(r.opts.CancelPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			status, err := r.db.RunStatus(ctx, runID)
			if err == nil && status == models.RunCanceled {
				cancel(errRunCanceled)
				return
			}
			if lease == nil {
				continue
			}
			l, err := r.db.EpisodeLease(ctx, lease.ID)
			if err == nil && !l.Live(time.Now()) {
				cancel(errLeaseLapsed)
				return
			}
		}
	}
}

// endingOf says how a connecting agent's episode ended, for the agent.
func endingOf(res *episode.Result, err, cause error) string {
	switch {
	case errors.Is(cause, errRunCanceled):
		return "the run was canceled"
	case errors.Is(cause, errLeaseLapsed):
		return "the lease lapsed: no heartbeat or call came in time"
	case err != nil || res == nil:
		return "the episode failed in the platform; the attempt is retried or reported as a platform error"
	case res.Final != nil && res.Final.Type == models.ActAnswer:
		return "the answer was submitted and will be evaluated"
	case res.Final != nil:
		return "the agent gave up"
	}
	return fmt.Sprintf("it ended (%s): %s", res.ErrorClass, res.ErrorMessage)
}

// siteResetTimeout bounds one site's reset hook.
const siteResetTimeout = 2 * time.Minute

// resetSites calls the reset hook (an HTTP POST to the configured reset URL,
// configured by an administrator) of every site the task uses, so the episode
// starts from the site's initial state. A failed reset is an environment error.
func resetSites(ctx context.Context, spec *models.EpisodeSpec) error {
	client := &http.Client{Timeout: siteResetTimeout}
	for _, s := range spec.Sites {
		if s.ResetURL == "" || !slices.Contains(spec.Task.Sites, s.Name) {
			continue
		}
		target := strings.ReplaceAll(s.ResetURL, EpisodeToken, spec.Namespace)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
		if err != nil {
			return fmt.Errorf("reset of site %s: invalid reset URL: %v", s.Name, err)
		}
		res, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("reset of site %s failed: %v", s.Name, err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
		res.Body.Close()
		if res.StatusCode/100 != 2 {
			return fmt.Errorf("reset of site %s failed: HTTP %d", s.Name, res.StatusCode)
		}
	}
	return nil
}
