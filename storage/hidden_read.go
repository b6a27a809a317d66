package storage

import (
	"context"
	"encoding/json"
	"slices"

	"gorm.io/gorm"

	"proctor/models"
)

// Who sees what of hidden tests: whoever may see a run sees each attempt's
// tally (counts per group and level). The tests themselves (ids, titles,
// reasons, steps and images) are the benchmark's hidden material, shown to
// administrators, and to everyone who may see the run only when the
// benchmark reveals its references. The suite is never returned whole.

// hiddenBenchmark is what the hidden-test reads need of a run's benchmark.
type hiddenBenchmark struct {
	Evaluator        string
	Grades           string
	RevealReferences bool
}

// gradesCandidates reports whether the benchmark is graded by hidden tests
// run against candidate websites.
func (b *hiddenBenchmark) gradesCandidates() bool { return b.Grades == models.GradesCandidates }

// benchmarkOfVersion reads the evaluator and reveal flag of a version's benchmark.
func benchmarkOfVersion(q *gorm.DB, versionID int64) (*hiddenBenchmark, error) {
	var rows []hiddenBenchmark
	err := q.Table("benchmarks b").Select("b.evaluator, b.grades, b.reveal_references").
		Joins("JOIN benchmark_versions v ON v.benchmark_id = b.id").Where("v.id = ?", versionID).Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "benchmark")
	}
	if len(rows) != 1 {
		return nil, models.Errorf(models.ENOTFOUND, "Benchmark version %d not found.", versionID)
	}
	return &rows[0], nil
}

// hiddenTally is one count of an attempt's results.
type hiddenTally struct {
	AttemptID int64
	TestGroup string
	Level     int
	Result    string
	Flaky     bool
	N         int
}

// hiddenTaskRow is one attempt of a run with its task's labels.
type hiddenTaskRow struct {
	AttemptID  int64
	TaskID     int64
	ExternalID string
	SiteKey    string
	Status     string
	Outcome    string
}

// runHiddenSummaries tallies the hidden-test results of every attempt of a
// run in one query; attempts without results are absent.
func runHiddenSummaries(q *gorm.DB, runID int64) (map[int64]*models.HiddenSummary, error) {
	var tallies []hiddenTally
	err := q.Table("hidden_test_results h").
		Select("h.attempt_id, h.test_group, h.level, h.result, h.flaky, COUNT(*) AS n").
		Joins("JOIN attempts a ON a.id = h.attempt_id").
		Where("a.run_id = ?", runID).
		Group("h.attempt_id, h.test_group, h.level, h.result, h.flaky").Scan(&tallies).Error
	if err != nil {
		return nil, wrap(err, "hidden test results")
	}
	out := map[int64]*models.HiddenSummary{}
	for _, t := range tallies {
		s := out[t.AttemptID]
		if s == nil {
			s = &models.HiddenSummary{}
			out[t.AttemptID] = s
		}
		for range t.N {
			s.Add(t.TestGroup, t.Level, t.Result, t.Flaky)
		}
	}
	return out, nil
}

// RunHiddenResults returns a hidden-tests run's results for its page: every
// task's tally and pass rates, the version's pass threshold, the mean over
// the tasks and per website (site key), in a fixed number of queries however
// many tasks and tests there are. The run's overall pass rate is left to the
// caller, computed from the tasks' tallies.
// It returns nil without an error for a run of another kind of benchmark.
// ENOTFOUND when the scope does not see the run's attempts.
func (db *DB) RunHiddenResults(ctx context.Context, scope models.RunScope, runID int64) (*models.RunHiddenResults, error) {
	q := db.q(ctx)
	run, _, err := db.runAccess(q, scope, runID, false)
	if err != nil {
		return nil, err
	}
	b, err := benchmarkOfVersion(q, run.VersionID)
	if err != nil {
		return nil, err
	}
	if !b.gradesCandidates() {
		return nil, nil
	}
	var rows []hiddenTaskRow
	err = q.Table("attempts a").Select("a.id AS attempt_id, a.task_id, t.external_id, t.site_key, a.status, a.outcome").
		Joins("JOIN tasks t ON t.id = a.task_id").Where("a.run_id = ?", runID).
		Order("t.position, a.id").Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "run attempts")
	}
	summaries, err := runHiddenSummaries(q, runID)
	if err != nil {
		return nil, err
	}
	out := &models.RunHiddenResults{RunID: runID, CanBrowse: scope.SeesHiddenTests(b.RevealReferences), Tasks: make([]models.HiddenTaskResult, len(rows))}
	all := make([]*models.HiddenSummary, len(rows))
	bySite := map[string][]*models.HiddenSummary{}
	var sites []string
	for i, r := range rows {
		s := summaries[r.AttemptID]
		out.Tasks[i] = models.HiddenTaskResult{
			AttemptID: r.AttemptID, TaskID: r.TaskID, ExternalID: r.ExternalID, SiteKey: r.SiteKey,
			Status: r.Status, Outcome: r.Outcome, Summary: s,
		}
		all[i] = s
		if _, ok := bySite[r.SiteKey]; !ok {
			sites = append(sites, r.SiteKey)
		}
		bySite[r.SiteKey] = append(bySite[r.SiteKey], s)
	}
	out.Mean = models.MeanHiddenRates(all)
	if out.PassThreshold, err = passThresholdOf(q, run.VersionID); err != nil {
		return nil, err
	}
	slices.Sort(sites)
	for _, site := range sites {
		group := bySite[site]
		tested := 0
		for _, s := range group {
			if s != nil {
				tested++
			}
		}
		out.Sites = append(out.Sites, models.HiddenSiteResult{Site: site, Tasks: len(group), Tested: tested, Rates: models.MeanHiddenRates(group)})
	}
	return out, nil
}

// hiddenAttempt is an attempt whose hidden tests the caller may browse.
type hiddenAttempt struct {
	attempt models.Attempt
	task    struct {
		ExternalID string
		SiteKey    string
		EvalSpec   string
	}
}

// hiddenAttemptAccess loads an attempt of a hidden-tests benchmark and its
// task's suite, for a scope that may browse its tests. ENOTFOUND when the
// attempt is missing, its run is not visible, or its benchmark has no hidden
// tests; EUNAUTHORIZED or EFORBIDDEN when the scope sees the run but not the
// benchmark's tests.
func (db *DB) hiddenAttemptAccess(q *gorm.DB, scope models.RunScope, attemptID int64) (*hiddenAttempt, error) {
	notFound := models.Errorf(models.ENOTFOUND, "Attempt %d not found.", attemptID)
	var attempts []models.Attempt
	if err := q.Where("id = ?", attemptID).Limit(1).Find(&attempts).Error; err != nil {
		return nil, wrap(err, "attempt")
	}
	if len(attempts) == 0 {
		return nil, notFound
	}
	out := &hiddenAttempt{attempt: attempts[0]}
	run, _, err := db.runAccess(q, scope, out.attempt.RunID, false)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	b, err := benchmarkOfVersion(q, run.VersionID)
	if err != nil {
		return nil, err
	}
	if !b.gradesCandidates() {
		return nil, models.Errorf(models.ENOTFOUND, "Attempt %d has no hidden tests.", attemptID)
	}
	if !scope.SeesHiddenTests(b.RevealReferences) {
		return nil, scope.HiddenTestsRefused()
	}
	// The suite is read only to name the tests; it never leaves this package.
	var tasks []struct {
		ExternalID string
		SiteKey    string
		EvalSpec   string
	}
	if err := q.Table("tasks").Select("external_id, site_key, eval_spec").Where("id = ?", out.attempt.TaskID).Scan(&tasks).Error; err != nil {
		return nil, wrap(err, "task")
	}
	if len(tasks) != 1 {
		return nil, notFound
	}
	out.task = tasks[0]
	return out, nil
}

// attemptHiddenTally is an attempt's hidden-test tally for its page, nil
// when the benchmark of the run's version has no hidden tests. The caller
// has checked that the scope sees the run.
func attemptHiddenTally(q *gorm.DB, scope models.RunScope, run *models.Run, attemptID int64) (*models.TimelineHiddenTests, error) {
	b, err := benchmarkOfVersion(q, run.VersionID)
	if err != nil || !b.gradesCandidates() {
		return nil, err
	}
	var rows []models.HiddenTestResult
	if err := q.Select("test_group, level, result, flaky").Where("attempt_id = ?", attemptID).Find(&rows).Error; err != nil {
		return nil, wrap(err, "hidden test results")
	}
	return &models.TimelineHiddenTests{Summary: models.SummarizeHiddenResults(rows), CanBrowse: scope.SeesHiddenTests(b.RevealReferences)}, nil
}

// hiddenResultColumns are a result's columns without its runs.
const hiddenResultColumns = "id, attempt_id, test_id, position, test_group, level, result, flaky, reason, duration_ms, created_at"

func hiddenTestView(r models.HiddenTestResult) models.HiddenTestView {
	return models.HiddenTestView{
		TestID: r.TestID, Position: r.Position, Group: r.Group, Level: r.Level,
		Result: r.Result, Flaky: r.Flaky, Reason: r.Reason, DurationMS: r.DurationMS,
	}
}

// AttemptHiddenTests returns an attempt's hidden tests for the test browser:
// its tally over every test and, in suite order, the tests that pass the
// filter with their results and reasons (not their runs nor their titles),
// and the task's hidden-test suite, which names them. EINVALID
// naming the parameter for a bad filter; otherwise the errors of
// hiddenAttemptAccess: ENOTFOUND for a scope that does not see the run,
// EUNAUTHORIZED or EFORBIDDEN for one that sees it but not the tests.
func (db *DB) AttemptHiddenTests(ctx context.Context, scope models.RunScope, attemptID int64, f models.HiddenTestFilter) (*models.AttemptHiddenTests, string, error) {
	if err := f.Validate(); err != nil {
		return nil, "", err
	}
	q := db.q(ctx)
	ha, err := db.hiddenAttemptAccess(q, scope, attemptID)
	if err != nil {
		return nil, "", err
	}
	var rows []models.HiddenTestResult
	if err := q.Select(hiddenResultColumns).Where("attempt_id = ?", attemptID).Order("position, id").Find(&rows).Error; err != nil {
		return nil, "", wrap(err, "hidden test results")
	}
	out := &models.AttemptHiddenTests{
		RunID: ha.attempt.RunID, AttemptID: attemptID, TaskID: ha.task.ExternalID, SiteKey: ha.task.SiteKey,
		Status: ha.attempt.Status, Outcome: ha.attempt.Outcome, Summary: models.SummarizeHiddenResults(rows),
		Filter: f, TotalTests: len(rows), Tests: []models.HiddenTestView{},
	}
	for _, r := range rows {
		if v := hiddenTestView(r); f.Keeps(v) {
			out.Tests = append(out.Tests, v)
		}
	}
	return out, ha.task.EvalSpec, nil
}

// AttemptHiddenTest returns one hidden test of an attempt with both its runs:
// steps with their results, reasons and screenshot keys, and checkpoints
// with the keys of the candidate's, the reference's and the SSIM map's
// images (all stored under the attempt's artifacts). ENOTFOUND for a test
// the attempt has no result of; otherwise the errors of AttemptHiddenTests.
// The test comes without its title; the task's suite, which names it, is
// returned beside it.
func (db *DB) AttemptHiddenTest(ctx context.Context, scope models.RunScope, attemptID int64, testID string) (*models.AttemptHiddenTest, string, error) {
	q := db.q(ctx)
	ha, err := db.hiddenAttemptAccess(q, scope, attemptID)
	if err != nil {
		return nil, "", err
	}
	var rows []models.HiddenTestResult
	if err := q.Where("attempt_id = ? AND test_id = ?", attemptID, testID).Limit(1).Find(&rows).Error; err != nil {
		return nil, "", wrap(err, "hidden test result")
	}
	if len(rows) == 0 {
		return nil, "", models.Errorf(models.ENOTFOUND, "Attempt %d has no result of a test %q.", attemptID, cutText(testID, 80))
	}
	v := hiddenTestView(rows[0])
	if err := json.Unmarshal([]byte(rows[0].Runs), &v.Runs); err != nil {
		return nil, "", wrap(err, "hidden test runs")
	}
	return &models.AttemptHiddenTest{RunID: ha.attempt.RunID, AttemptID: attemptID, TaskID: ha.task.ExternalID, Test: v}, ha.task.EvalSpec, nil
}

// cutText shortens s to n runes for messages.
func cutText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
