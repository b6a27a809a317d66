-- Hidden-tests benchmarks are graded by pass rates, as in WebsiteBench. A
-- benchmark version states the pass rate a task needs to succeed
-- (pass_threshold, in (0, 1]; 1, the default, is every test that ran). A
-- test this platform cannot carry out (an offline build: Proctor does not
-- host candidates) is recorded "not_run" and decides nothing. A
-- hidden-tests board's entry counts the tests behind its pass rate, which
-- its success_rate and interval then hold.
ALTER TABLE benchmark_versions ADD COLUMN pass_threshold REAL NOT NULL DEFAULT 1
    CHECK (pass_threshold > 0 AND pass_threshold <= 1);

ALTER TABLE leaderboard_entries ADD COLUMN hidden_passed INTEGER;
ALTER TABLE leaderboard_entries ADD COLUMN hidden_ran INTEGER;

-- SQLite cannot change a CHECK constraint in place: the results table is
-- copied into one that also accepts not_run. No other table refers to it.
CREATE TABLE hidden_test_results_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_id  INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    test_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    test_group  TEXT NOT NULL CHECK (test_group IN ('request', 'browser', 'system')),
    level       INTEGER NOT NULL DEFAULT 0,
    result      TEXT NOT NULL CHECK (result IN ('passed', 'failed', 'errored', 'not_run')),
    flaky       BOOLEAN NOT NULL DEFAULT FALSE,
    reason      TEXT NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    runs        TEXT NOT NULL DEFAULT '[]',
    created_at  DATETIME NOT NULL,
    UNIQUE (attempt_id, test_id)
);
INSERT INTO hidden_test_results_new
    (id, attempt_id, test_id, position, test_group, level, result, flaky, reason, duration_ms, runs, created_at)
    SELECT id, attempt_id, test_id, position, test_group, level, result, flaky, reason, duration_ms, runs, created_at
    FROM hidden_test_results;
DROP TABLE hidden_test_results;
ALTER TABLE hidden_test_results_new RENAME TO hidden_test_results;
