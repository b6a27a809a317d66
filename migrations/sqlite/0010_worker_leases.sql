-- Every process that works jobs holds a lease, renewed by its heartbeat. Its
-- id is also its River client's id, so the jobs it runs name it. When a lease
-- lapses (or its process is found dead on its own host), its attempts are
-- released and its running jobs offered again, within about a minute.
CREATE TABLE worker_leases (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          BIGINT NOT NULL,
    -- The episodes and hidden-test jobs it runs at once: each team's fair
    -- share is half of the live processes' slots.
    episode_slots BIGINT NOT NULL DEFAULT 0,
    hidden_slots  BIGINT NOT NULL DEFAULT 0,
    started_at   DATETIME NOT NULL,
    heartbeat_at DATETIME NOT NULL
);

-- The lease of the process running an attempt's current try ('' when none).
ALTER TABLE attempts ADD COLUMN worker_id TEXT NOT NULL DEFAULT '';

-- The attempts waiting or running, which claims count (per run, site, team
-- and worker).
CREATE INDEX attempts_active ON attempts (status, run_id) WHERE status IN ('pending', 'running');

-- Artifact folders of tries that a newer try replaced; housekeeping removes
-- them, then the row.
CREATE TABLE superseded_tries (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    prefix     TEXT NOT NULL UNIQUE,
    created_at DATETIME NOT NULL
);
