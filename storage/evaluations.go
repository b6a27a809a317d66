package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// RecordEvaluations stores an attempt's evaluations in one transaction: each
// becomes the current one of its kind (older rows stay as history), the
// primary sets the attempt's outcome, the run's totals are refreshed and the
// run completes when its last attempt is done. refresh (may be nil) is called
// inside the transaction with the run's id, to enqueue the recomputation of
// its metrics. It reports whether the run finished. System only.
//
// A first evaluation needs the attempt to be evaluating and a re-scoring needs
// it done; anything else is a redelivered job and records nothing.
func (db *DB) RecordEvaluations(ctx context.Context, attemptID int64, b models.EvaluationBatch, refresh func(ctx context.Context, tx *sql.Tx, runID int64) error) (bool, error) {
	if err := requireQueue(ctx, "records evaluations"); err != nil {
		return false, err
	}
	finished := false
	err := db.tx(ctx, func(tx *gorm.DB) error {
		var a models.Attempt
		if err := lockRow(tx, db.dialect).First(&a, attemptID).Error; err != nil {
			return wrap(err, "attempt")
		}
		rescore := b.RescoreID != ""
		if rescore {
			if a.Status != models.AttemptDone {
				return nil
			}
			var done int64
			if err := tx.Model(&models.Evaluation{}).Where("attempt_id = ? AND rescore_id = ?", a.ID, b.RescoreID).
				Count(&done).Error; err != nil {
				return wrap(err, "evaluations")
			}
			if done > 0 {
				return nil
			}
		} else if a.Status != models.AttemptEvaluating {
			return nil
		}
		// Evaluations of one run are recorded one at a time: each recounts the
		// run's open attempts, and two concurrent transactions could otherwise
		// each see the other's attempt still open, leaving the run unfinished.
		var run models.Run
		if err := lockRow(tx, db.dialect).Select("id, successes, tasks_total, rescore_id, rescore_changed").First(&run, a.RunID).Error; err != nil {
			return wrap(err, "run")
		}
		before := a.Outcome
		now := db.now()
		if err := db.insertEvaluations(tx, &a, b, now); err != nil {
			return err
		}
		updates := map[string]any{"status": models.AttemptDone, "updated_at": now}
		if p := b.Primary; p != nil {
			updates["outcome"], updates["score"] = models.AttemptOutcome(p.Verdict, a.ErrorClass), p.Score
		}
		if err := tx.Model(&a).Updates(updates).Error; err != nil {
			return wrap(err, "attempt")
		}
		var err error
		if finished, err = db.refreshRunTotals(tx, a.RunID); err != nil {
			return err
		}
		if err := tx.Model(&models.Run{}).Where("id = ?", a.RunID).
			Update("evaluations_version", gorm.Expr("evaluations_version + 1")).Error; err != nil {
			return wrap(err, "run")
		}
		if rescore {
			if err := recordRescore(tx, &run, b, before != updates["outcome"] && b.Primary != nil, now); err != nil {
				return err
			}
		}
		if refresh == nil {
			return nil
		}
		stx, err := sqlTx(tx)
		if err != nil {
			return err
		}
		return refresh(ctx, stx, a.RunID)
	})
	return finished, err
}

// recordRescore notes on the run (and, for a published run, on its change
// log) what re-scoring request b changed: the run's successes before the
// request graded its first attempt, and how many attempts' outcomes it has
// changed so far. run holds the run as it was before this attempt's new
// verdict; its totals are already refreshed in tx.
func recordRescore(tx *gorm.DB, run *models.Run, b models.EvaluationBatch, changed bool, now time.Time) error {
	updates := map[string]any{"rescored_at": now, "rescored_with": evaluatorNames(b.Evaluations())}
	n := 0
	if changed {
		n = 1
	}
	if run.RescoreID != b.RescoreID {
		updates["rescore_id"], updates["rescore_successes_before"], updates["rescore_changed"] = b.RescoreID, run.Successes, n
	} else if changed {
		updates["rescore_changed"] = gorm.Expr("rescore_changed + 1")
	}
	if err := tx.Model(&models.Run{}).Where("id = ?", run.ID).Updates(updates).Error; err != nil {
		return wrap(err, "run")
	}
	var after models.Run
	if err := tx.Select("successes, tasks_total, rescore_successes_before, rescore_changed").First(&after, run.ID).Error; err != nil {
		return wrap(err, "run")
	}
	return RecordRescoredEvent(tx, run.ID, b.RescoreID, now, models.RescoreChange{
		SuccessesBefore: after.RescoreSuccessesBefore, SuccessesAfter: &after.Successes, Tasks: &after.TasksTotal,
		ChangedAttempts: after.RescoreChanged, Evaluators: updates["rescored_with"].(string),
	})
}

// insertEvaluations writes the batch's rows: each replaces the current
// evaluation of its kind, and a primary replaces the primary.
func (db *DB) insertEvaluations(tx *gorm.DB, a *models.Attempt, b models.EvaluationBatch, now time.Time) error {
	if b.Primary != nil {
		if err := tx.Model(&models.Evaluation{}).Where("attempt_id = ? AND is_primary = ?", a.ID, true).
			Update("is_primary", false).Error; err != nil {
			return wrap(err, "evaluations")
		}
	}
	for _, ev := range b.Evaluations() {
		if ev.Kind == "" {
			ev.Kind = models.EvaluationCheck
		}
		ev.ID, ev.AttemptID, ev.IsPrimary, ev.IsCurrent = 0, a.ID, ev == b.Primary, true
		ev.Rescore, ev.RescoreID, ev.CreatedAt = b.RescoreID != "", b.RescoreID, now
		if err := tx.Model(&models.Evaluation{}).Where("attempt_id = ? AND kind = ? AND is_current = ?", a.ID, ev.Kind, true).
			Update("is_current", false).Error; err != nil {
			return wrap(err, "evaluations")
		}
		if err := tx.Create(ev).Error; err != nil {
			return wrap(err, "evaluation")
		}
	}
	return nil
}

// evaluatorNames lists evaluators with their versions, for the rescored note:
// "webarena-verified@2", "llm-judge:gpt-4o:trajectory-v1".
func evaluatorNames(evs []*models.Evaluation) string {
	names := make([]string, 0, len(evs))
	for _, ev := range evs {
		n, v := ev.Evaluator, ev.EvaluatorVersion
		switch {
		case v == "", strings.Contains(n, v):
		case strings.HasPrefix(v, n):
			n = v
		default:
			n += "@" + v
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// RescoreAttempts asks for finished attempts to be graded again with the
// evaluators configured now: enqueue is called inside one transaction with
// the attempts' ids and a new request id, and the evaluations it leads to are
// added beside the old ones. It returns how many attempts were queued;
// ENOTFOUND for a run or benchmark that does not exist. Who may re-score is
// the run service's rule.
func (db *DB) RescoreAttempts(ctx context.Context, scope models.RescoreScope, enqueue func(ctx context.Context, tx *sql.Tx, attemptIDs []int64, rescoreID string) error) (int, error) {
	var ids []int64
	err := db.tx(ctx, func(tx *gorm.DB) error {
		// Hidden-tests attempts are graded by running their tests against
		// the candidate website, which a re-scoring does not do: a new
		// candidate run tests again.
		// Only what was graded is graded again: an uploaded run's tasks that
		// its bundle did not attempt are failures by rule, with nothing to
		// grade, and keep their outcome.
		q := tx.Table("attempts a").Where("a.status = ?", models.AttemptDone).
			Joins("JOIN runs r ON r.id = a.run_id").Joins("JOIN benchmark_versions v ON v.id = r.version_id").
			Joins("JOIN benchmarks b ON b.id = v.benchmark_id").Where("b.grades <> ?", models.GradesCandidates).
			Where("EXISTS (SELECT 1 FROM evaluations e WHERE e.attempt_id = a.id)")
		switch {
		case scope.RunID != 0:
			var n int64
			if err := tx.Model(&models.Run{}).Where("id = ?", scope.RunID).Count(&n).Error; err != nil {
				return wrap(err, "run")
			}
			if n == 0 {
				return runNotFound(scope.RunID)
			}
			q = q.Where("a.run_id = ?", scope.RunID)
		case scope.BenchmarkID != 0:
			var n int64
			if err := tx.Model(&models.Benchmark{}).Where("id = ?", scope.BenchmarkID).Count(&n).Error; err != nil {
				return wrap(err, "benchmark")
			}
			if n == 0 {
				return models.Errorf(models.ENOTFOUND, "Benchmark %d not found.", scope.BenchmarkID)
			}
			q = q.Where("v.benchmark_id = ?", scope.BenchmarkID)
		}
		if err := q.Order("a.id").Pluck("a.id", &ids).Error; err != nil {
			return wrap(err, "attempts")
		}
		if len(ids) == 0 {
			return nil
		}
		stx, err := sqlTx(tx)
		if err != nil {
			return err
		}
		id := make([]byte, 12)
		if _, err := rand.Read(id); err != nil {
			return fmt.Errorf("rescore id: %w", err)
		}
		return enqueue(ctx, stx, ids, hex.EncodeToString(id))
	})
	if err != nil {
		return 0, err
	}
	return len(ids), nil
}

// judgeKeyContext binds a benchmark's sealed judge key to its row.
func judgeKeyContext(benchmarkID int64) string { return fmt.Sprintf("benchmark-judge:%d", benchmarkID) }

// openJudgeKey opens a benchmark's sealed judge API key.
func (db *DB) openJudgeKey(benchmarkID int64, sealed string) (string, error) {
	if db.agentSecrets == nil {
		return "", errors.New("no secret vault configured: cannot open the benchmark's judge key")
	}
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return "", fmt.Errorf("benchmark %d judge key: %w", benchmarkID, err)
	}
	plain, err := db.agentSecrets.Open(raw, judgeKeyContext(benchmarkID))
	if err != nil {
		return "", fmt.Errorf("benchmark %d judge key: %w", benchmarkID, err)
	}
	return string(plain), nil
}

// SetBenchmarkJudge saves a benchmark's own judge endpoint as given (checked
// by the benchmark service), sealing its key; a stored key is dropped when
// the judge moves to another host. ENOTFOUND for an unknown benchmark.
func (db *DB) SetBenchmarkJudge(ctx context.Context, slug string, u models.JudgeUpdate) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		var b models.Benchmark
		if err := tx.Where("slug = ?", slug).Take(&b).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return models.Errorf(models.ENOTFOUND, "Benchmark %q not found.", slug)
			}
			return wrap(err, "benchmark")
		}
		updates := map[string]any{"judge_base_url": u.BaseURL, "judge_model": u.Model, "updated_at": db.now()}
		switch {
		case u.BaseURL == "":
			updates["judge_api_key"] = ""
		case u.APIKey == nil && b.JudgeAPIKey != "" && judgeHost(b.JudgeBaseURL) != judgeHost(u.BaseURL):
			// A stored key is never sent to a host it was not given for.
			updates["judge_api_key"] = ""
		case u.APIKey != nil && *u.APIKey == "":
			updates["judge_api_key"] = ""
		case u.APIKey != nil:
			if db.agentSecrets == nil {
				return errors.New("no secret vault configured: cannot seal the judge key")
			}
			sealed, err := db.agentSecrets.Seal([]byte(*u.APIKey), judgeKeyContext(b.ID))
			if err != nil {
				return fmt.Errorf("seal judge key: %w", err)
			}
			updates["judge_api_key"] = base64.StdEncoding.EncodeToString(sealed)
		}
		return wrap(tx.Model(&b).Updates(updates).Error, "benchmark")
	})
}

// judgeHost is the scheme and host of a judge URL, "" when it has none.
func judgeHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// SetBenchmarkEvaluator chooses how a benchmark's attempts are graded from
// now on, among the readings of its evaluator that readingsOf gives (the
// evaluator registry's: for WebArena-Verified, the official evaluator or the
// lenient reading, whose boards say their scores are not official). Stored
// verdicts change only when the runs are re-scored. ENOTFOUND for an unknown
// benchmark; EINVALID on "evaluator" for a benchmark whose evaluator has no
// readings, or a choice not among them. Who may choose is the benchmark
// service's rule.
func (db *DB) SetBenchmarkEvaluator(ctx context.Context, slug, evaluator string, readingsOf func(evaluator string) []string) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		var b models.Benchmark
		if err := tx.Select("id, evaluator").Where("slug = ?", slug).Take(&b).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return models.Errorf(models.ENOTFOUND, "Benchmark %q not found.", slug)
			}
			return wrap(err, "benchmark")
		}
		readings := readingsOf(b.Evaluator)
		if len(readings) == 0 {
			return models.FieldError("evaluator", "benchmark %q is graded by %s: only WebArena-Verified benchmarks have a lenient reading", slug, b.Evaluator)
		}
		if !slices.Contains(readings, evaluator) {
			return models.FieldError("evaluator", "choose %s, not %q", strings.Join(readings, " or "), evaluator)
		}
		return wrap(tx.Model(&models.Benchmark{}).Where("id = ?", b.ID).
			Updates(map[string]any{"evaluator": evaluator, "updated_at": db.now()}).Error, "benchmark")
	})
}
