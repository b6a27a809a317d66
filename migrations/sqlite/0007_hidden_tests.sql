-- Hidden-tests benchmarks (WebsiteBench style). A task's reference captures
-- (reference_captures) are the screenshots its visual checkpoints compare
-- with; like the suite in the task's eval_spec they are never served to
-- teams. A candidate run's attempts each name the website the team submitted
-- (hidden_candidates), and every hidden test leaves one result row
-- (hidden_test_results) holding both runs of a test that was run again.

CREATE TABLE reference_captures (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    png     BLOB NOT NULL,
    sha256  TEXT NOT NULL,
    width   INTEGER NOT NULL,
    height  INTEGER NOT NULL,
    UNIQUE (task_id, name)
);

CREATE TABLE hidden_candidates (
    attempt_id  INTEGER PRIMARY KEY REFERENCES attempts(id) ON DELETE CASCADE,
    base_url    TEXT NOT NULL,
    restart_url TEXT NOT NULL DEFAULT '',
    health_url  TEXT NOT NULL DEFAULT '',
    created_at  DATETIME NOT NULL
);

CREATE TABLE hidden_test_results (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_id  INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    test_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    test_group  TEXT NOT NULL CHECK (test_group IN ('request', 'browser', 'system')),
    level       INTEGER NOT NULL DEFAULT 0,
    result      TEXT NOT NULL CHECK (result IN ('passed', 'failed', 'errored')),
    flaky       BOOLEAN NOT NULL DEFAULT FALSE,
    reason      TEXT NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    runs        TEXT NOT NULL DEFAULT '[]',
    created_at  DATETIME NOT NULL,
    UNIQUE (attempt_id, test_id)
);

ALTER TABLE leaderboard_entries ADD COLUMN hidden_overall REAL;
ALTER TABLE leaderboard_entries ADD COLUMN hidden_request REAL;
ALTER TABLE leaderboard_entries ADD COLUMN hidden_browser REAL;
ALTER TABLE leaderboard_entries ADD COLUMN hidden_system REAL;
