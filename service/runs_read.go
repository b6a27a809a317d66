package service

import (
	"context"
	"strings"

	"proctor/hiddentest"
	"proctor/models"
	"proctor/stats"
	"proctor/storage"
)

// RunReadStore is what the run service reads from storage. The service
// tells storage which runs the caller sees (models.RunScope: their teams',
// or the published ones) and applies the blind-study rule (Access) to what
// it returns.
type RunReadStore interface {
	ListRuns(ctx context.Context, scope models.RunScope, f models.RunFilter) ([]models.RunListItem, int, error)
	TeamRuns(ctx context.Context, scope models.RunScope, teamSlug string, page, perPage int) (*models.TeamRunList, error)
	RunProgress(ctx context.Context, scope models.RunScope, runID int64) (*models.RunProgress, error)
	RunOverview(ctx context.Context, scope models.RunScope, runID int64, f models.AttemptFilter) (*models.RunOverview, error)
	RunAttempts(ctx context.Context, scope models.RunScope, runID int64, page, perPage int) ([]models.AttemptListItem, int, error)
	RunResults(ctx context.Context, scope models.RunScope, runID int64, emit func([]models.RunResult) error) error
	RunReports(ctx context.Context, scope models.RunScope, runID int64) ([]models.MetricsReport, []models.AttemptScope, error)
	RunHiddenResults(ctx context.Context, scope models.RunScope, runID int64) (*models.RunHiddenResults, error)
	AttemptTimeline(ctx context.Context, scope models.RunScope, attemptID int64) (*models.Timeline, error)
	AttemptSteps(ctx context.Context, scope models.RunScope, attemptID int64) (*models.AttemptSteps, error)
	AttemptExpectedAnswer(ctx context.Context, attemptID int64) (*models.ExpectedAnswer, error)
	AttemptHiddenTests(ctx context.Context, scope models.RunScope, attemptID int64, f models.HiddenTestFilter) (*models.AttemptHiddenTests, string, error)
	AttemptHiddenTest(ctx context.Context, scope models.RunScope, attemptID int64, testID string) (*models.AttemptHiddenTest, string, error)
	CompareSource(ctx context.Context, scope models.RunScope, ids []int64) (*storage.CompareSource, error)
	BreakdownBoard(ctx context.Context, bq models.BreakdownQuery, scope models.BenchmarkScope, withheld storage.Withheld) (*models.BreakdownBoard, error)
	TaskMatrix(ctx context.Context, bq models.BreakdownQuery, scope models.BenchmarkScope, withheld storage.Withheld) (*models.TaskMatrix, error)
	CancelRun(ctx context.Context, scope models.RunScope, runID int64, mayManage func(manage bool) error) error
	RunFormOptions(ctx context.Context, scope models.RunScope, teamSlug string) (*models.RunFormOptions, error)
}

// ListRuns returns one page of the runs the caller may see, the results of
// those they annotate blind withheld.
func (s *Runs) ListRuns(ctx context.Context, f models.RunFilter) ([]models.RunListItem, int, error) {
	list, total, err := s.store.ListRuns(ctx, runScope(ctx), f)
	if err != nil {
		return nil, 0, err
	}
	if err := s.withholdListed(ctx, list); err != nil {
		return nil, 0, err
	}
	return list, total, nil
}

// TeamRuns returns one page of a team's runs as ListRuns does.
func (s *Runs) TeamRuns(ctx context.Context, teamSlug string, page, perPage int) (*models.TeamRunList, error) {
	out, err := s.store.TeamRuns(ctx, runScope(ctx), teamSlug, page, perPage)
	if err != nil {
		return nil, err
	}
	if err := s.withholdListed(ctx, out.Runs); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Runs) withholdListed(ctx context.Context, list []models.RunListItem) error {
	ids := make([]int64, len(list))
	for i, r := range list {
		ids[i] = r.ID
	}
	blind, err := s.access.BlindRuns(ctx, ids)
	if err != nil {
		return err
	}
	for i := range list {
		if blind[list[i].ID] {
			list[i].WithholdResults()
		}
	}
	return nil
}

// readRun is nil when the caller may read a run's results: ENOTFOUND for a
// run they may not see, as every run read answers, then EFORBIDDEN when the
// blind-study rule withholds them. Streamed reads check before the first row.
func (s *Runs) readRun(ctx context.Context, runID int64) error {
	if _, err := s.store.VisibleRun(ctx, runScope(ctx), runID); err != nil {
		return err
	}
	return s.access.ReadRuns(ctx, runID)
}

// RunProgress returns a run's live state, its results withheld from an
// annotator of a blind study over its attempts.
func (s *Runs) RunProgress(ctx context.Context, runID int64) (*models.RunProgress, error) {
	p, err := s.store.RunProgress(ctx, runScope(ctx), runID)
	if err != nil {
		return nil, err
	}
	if blind, err := s.access.BlindRun(ctx, runID); err != nil {
		return nil, err
	} else if blind {
		p.WithholdResults()
	}
	return p, nil
}

// RunOverview returns a run's page: its progress, moderation (with what the
// caller may change, moderationRights), facets and one page of attempts; for
// an annotator of a blind study over its attempts the page shows the run but
// withholds its results and attempts.
func (s *Runs) RunOverview(ctx context.Context, runID int64, f models.AttemptFilter) (*models.RunOverview, error) {
	out, err := s.store.RunOverview(ctx, runScope(ctx), runID, f)
	if err != nil {
		return nil, err
	}
	moderationRights(ctx, &out.Moderation, out.Page.CanManage)
	if blind, err := s.access.BlindRun(ctx, runID); err != nil {
		return nil, err
	} else if blind {
		out.WithholdBlind()
	}
	return out, nil
}

// RunAttempts returns one page of a run's attempts; EFORBIDDEN for an
// annotator of a blind study over them.
func (s *Runs) RunAttempts(ctx context.Context, runID int64, page, perPage int) ([]models.AttemptListItem, int, error) {
	if err := s.readRun(ctx, runID); err != nil {
		return nil, 0, err
	}
	return s.store.RunAttempts(ctx, runScope(ctx), runID, page, perPage)
}

// RunResults streams a run's per-task results (the export); EFORBIDDEN for
// an annotator of a blind study over its attempts, before anything is sent.
func (s *Runs) RunResults(ctx context.Context, runID int64, emit func([]models.RunResult) error) error {
	if err := s.readRun(ctx, runID); err != nil {
		return err
	}
	return s.store.RunResults(ctx, runScope(ctx), runID, emit)
}

// RunMetrics returns a run's metrics; EFORBIDDEN for an annotator of a blind
// study over its attempts.
func (s *Runs) RunMetrics(ctx context.Context, runID int64) ([]models.MetricsReport, error) {
	if err := s.readRun(ctx, runID); err != nil {
		return nil, err
	}
	stored, scopes, err := s.store.RunReports(ctx, runScope(ctx), runID)
	if err != nil || stored != nil {
		return stored, err
	}
	return Reports(scopes), nil
}

// RunHiddenResults returns a hidden-tests run's results; EFORBIDDEN for an
// annotator of a blind study over its attempts.
func (s *Runs) RunHiddenResults(ctx context.Context, runID int64) (*models.RunHiddenResults, error) {
	if err := s.readRun(ctx, runID); err != nil {
		return nil, err
	}
	out, err := s.store.RunHiddenResults(ctx, runScope(ctx), runID)
	if err != nil || out == nil {
		return out, err
	}
	tasks := make([]*models.HiddenSummary, len(out.Tasks))
	for i, t := range out.Tasks {
		tasks[i] = t.Summary
	}
	out.PassRate = stats.HiddenPassRate(tasks)
	return out, nil
}

// AttemptTimeline returns an attempt's timeline; EFORBIDDEN when the caller
// annotates the attempt blind. The hidden-test tally of an attempt whose run
// is blind to the caller is left out.
func (s *Runs) AttemptTimeline(ctx context.Context, attemptID int64) (*models.Timeline, error) {
	tl, err := s.store.AttemptTimeline(ctx, runScope(ctx), attemptID)
	if err != nil {
		return nil, err
	}
	if err := s.access.ReadAttempt(ctx, tl.Attempt.ID); err != nil {
		return nil, err
	}
	if blind, err := s.access.BlindRun(ctx, tl.Attempt.RunID); err != nil {
		return nil, err
	} else if blind {
		tl.Hidden = nil
	}
	tl.MayRevealAnswer = models.ActorFrom(ctx).Privileged()
	return tl, nil
}

// AttemptSteps returns an attempt's steps (the timeline's step texts,
// requests and download); EFORBIDDEN when the caller annotates it blind.
func (s *Runs) AttemptSteps(ctx context.Context, attemptID int64) (*models.AttemptSteps, error) {
	as, err := s.store.AttemptSteps(ctx, runScope(ctx), attemptID)
	if err != nil {
		return nil, err
	}
	if err := s.access.ReadAttempt(ctx, as.Attempt.ID); err != nil {
		return nil, err
	}
	as.Unredacted = models.ActorFrom(ctx).Privileged()
	return as, nil
}

// AttemptExpectedAnswer returns the expected answer of an attempt's task,
// which reads the task's hidden fields: EFORBIDDEN when the caller annotates
// the attempt blind, then administrators only (who see every run):
// EUNAUTHORIZED or EFORBIDDEN for anyone else; ENOTFOUND for a missing
// attempt.
func (s *Runs) AttemptExpectedAnswer(ctx context.Context, attemptID int64) (*models.ExpectedAnswer, error) {
	if err := s.access.ReadAttempt(ctx, attemptID); err != nil {
		return nil, err
	}
	if _, err := models.RequireAdmin(ctx); err != nil {
		return nil, err
	}
	return s.store.AttemptExpectedAnswer(ctx, attemptID)
}

// AttemptHiddenTests returns an attempt's hidden-test browser; EFORBIDDEN for
// an annotator of a blind study over its run's attempts.
func (s *Runs) AttemptHiddenTests(ctx context.Context, attemptID int64, f models.HiddenTestFilter) (*models.AttemptHiddenTests, error) {
	out, suite, err := s.store.AttemptHiddenTests(ctx, runScope(ctx), attemptID, f)
	if err != nil {
		return nil, err
	}
	if err := s.access.ReadRuns(ctx, out.RunID); err != nil {
		return nil, err
	}
	titles := testTitles(suite)
	for i := range out.Tests {
		out.Tests[i].Title = titles[out.Tests[i].TestID]
	}
	return out, nil
}

// AttemptHiddenTest returns one hidden test's result for an attempt, under
// the same rule as AttemptHiddenTests.
func (s *Runs) AttemptHiddenTest(ctx context.Context, attemptID int64, testID string) (*models.AttemptHiddenTest, error) {
	out, suite, err := s.store.AttemptHiddenTest(ctx, runScope(ctx), attemptID, testID)
	if err != nil {
		return nil, err
	}
	if err := s.access.ReadRuns(ctx, out.RunID); err != nil {
		return nil, err
	}
	out.Test.Title = testTitles(suite)[out.Test.TestID]
	return out, nil
}

// testTitles maps a hidden-test suite's test ids to their titles; a suite
// that cannot be read names no test (the results keep their ids).
func testTitles(spec string) map[string]string {
	out := map[string]string{}
	if strings.TrimSpace(spec) == "" {
		return out
	}
	suite, err := hiddentest.Parse(strings.NewReader(spec))
	if err != nil {
		return out
	}
	for _, t := range suite.Tests {
		out[t.ID] = t.Title
	}
	return out
}

// BreakdownBoard returns a board broken down by one dimension; a run blind to
// the caller keeps only its overall rate (a group of a few tasks would tell
// their outcomes).
func (s *Runs) BreakdownBoard(ctx context.Context, bq models.BreakdownQuery) (*models.BreakdownBoard, error) {
	return s.store.BreakdownBoard(ctx, bq, scopeOf(ctx), s.access.BlindRuns)
}

// TaskMatrix returns a board's per-task matrix; the outcomes of runs blind
// to the caller are withheld and left out of the tasks' counts.
func (s *Runs) TaskMatrix(ctx context.Context, bq models.BreakdownQuery) (*models.TaskMatrix, error) {
	return s.store.TaskMatrix(ctx, bq, scopeOf(ctx), s.access.BlindRuns)
}

// CancelRun cancels a run. Team members and admins only: ENOTFOUND when the
// caller may not see the run, EUNAUTHORIZED or EFORBIDDEN when they may not
// act for its team, ECONFLICT when it has already finished.
func (s *Runs) CancelRun(ctx context.Context, runID int64) error {
	return s.store.CancelRun(ctx, runScope(ctx), runID, teamManager(ctx))
}

// RunFormOptions returns what the queue-a-run form offers a team. Team
// members and admins only: ENOTFOUND for an unknown team, EUNAUTHORIZED or
// EFORBIDDEN otherwise.
func (s *Runs) RunFormOptions(ctx context.Context, teamSlug string) (*models.RunFormOptions, error) {
	team, err := s.store.TeamBySlug(ctx, teamSlug)
	if err != nil {
		return nil, err
	}
	if _, err := requireRole(ctx, s.store, team.ID, false); err != nil {
		return nil, err
	}
	return s.store.RunFormOptions(ctx, runScope(ctx), teamSlug)
}
