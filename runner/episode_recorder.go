package runner

import (
	"context"
	"database/sql"
	"log/slog"

	"proctor/models"
	"proctor/vault"
)

// episodeRecorder is where an episode's text is recorded: its steps, its
// outcome and its log lines. Everything passes through one redactor holding
// the agent's secrets first, so an agent that echoes its token (in a body
// that is not JSON, an error page, a thought, an action, a redirect) never
// has it published with the run, whichever error path quoted it.
type episodeRecorder struct {
	db        EpisodeStore
	attemptID int64
	try       int
	redact    *vault.Redactor
}

func newEpisodeRecorder(db EpisodeStore, attemptID int64, try int, secrets map[string]string) *episodeRecorder {
	return &episodeRecorder{db: db, attemptID: attemptID, try: try, redact: secretsRedactor(secrets)}
}

// secretsRedactor redacts the values of secrets and the extra values.
func secretsRedactor(secrets map[string]string, extra ...string) *vault.Redactor {
	values := extra
	for _, v := range secrets {
		values = append(values, v)
	}
	return vault.NewRedactor(values...)
}

// redactEvaluations removes secrets from what evaluators wrote before it is
// recorded: a judge's rationale or error may quote its endpoint's reply
// (an API key refused) or the agent's words.
func redactEvaluations(red *vault.Redactor, b *models.EvaluationBatch) {
	for _, ev := range append([]*models.Evaluation{b.Primary}, b.Others...) {
		if ev == nil {
			continue
		}
		ev.Details = red.Text(ev.Details)
		for i := range ev.RubricJudgments {
			ev.RubricJudgments[i].Rationale = red.Text(ev.RubricJudgments[i].Rationale)
		}
	}
}

// SaveStep writes the step row of this attempt's try (episode.StepSink),
// with its timings (persist_ms among them) and the time the step ended; a
// superseded try writes nothing and stops (models.ErrTrySuperseded). The
// episode's persister calls it beside the episode's loop.
func (e *episodeRecorder) SaveStep(ctx context.Context, step *models.Step) error {
	step.AttemptID = e.attemptID
	for _, field := range []*string{&step.Action, &step.Thought, &step.URL, &step.Title, &step.Tabs, &step.Error, &step.BlockedRequests} {
		*field = e.redact.Text(*field)
	}
	return e.db.RecordStep(ctx, step, e.try)
}

// finish records the episode's outcome, enqueues its evaluation and queues
// the next episodes (offer).
func (e *episodeRecorder) finish(ctx context.Context, out models.EpisodeOutcome, enqueue func(ctx context.Context, tx *sql.Tx) error,
	offer func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) error {
	out.ErrorMessage = e.redact.Text(out.ErrorMessage)
	out.FinalAnswer = e.redact.Text(out.FinalAnswer)
	return e.db.FinishEpisode(ctx, e.attemptID, e.try, out, enqueue, offer)
}

// logger returns l with the agent's secrets redacted from every line.
func (e *episodeRecorder) logger(l *slog.Logger) *slog.Logger { return e.redact.Logger(l) }
