-- Publishing and moderation: administrators hide runs from the leaderboards
-- with a public reason, and every change to what a leaderboard shows is kept
-- in a public change log.

-- A run is on its benchmark's leaderboards when it is published and not hidden
-- (hidden_at IS NULL). hidden_reason is shown publicly on the run's page.
ALTER TABLE runs ADD COLUMN hidden_at DATETIME;
ALTER TABLE runs ADD COLUMN hidden_reason TEXT NOT NULL DEFAULT '';

-- leaderboard_events is the public change log of a benchmark's leaderboards:
-- one row per change of a published run, written in the transaction of the
-- change itself. subset_name is the run's subset (a full run's changes show on
-- every subset's log). rescore_id names the re-scoring request a "rescored"
-- row belongs to, so a re-scoring of many attempts is logged once per run.
CREATE TABLE leaderboard_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
    subset_name  TEXT NOT NULL,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('added', 'withdrawn', 'hidden', 'unhidden', 'verified', 'reproduced', 'rescored')),
    reason       TEXT NOT NULL DEFAULT '',
    actor_id     INTEGER REFERENCES users(id) ON DELETE SET NULL,
    actor_role   TEXT NOT NULL CHECK (actor_role IN ('team', 'admin', 'system')),
    rescore_id   TEXT NOT NULL DEFAULT '',
    created_at   DATETIME NOT NULL
);
CREATE INDEX leaderboard_events_board ON leaderboard_events(benchmark_id, created_at);
CREATE INDEX leaderboard_events_run ON leaderboard_events(run_id);
CREATE UNIQUE INDEX leaderboard_events_rescore ON leaderboard_events(run_id, rescore_id) WHERE rescore_id <> '';
