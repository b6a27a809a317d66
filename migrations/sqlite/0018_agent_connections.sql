-- proctor:foreign-keys-off
-- Agents that connect to Proctor (agent kind mcp, or an http agent in pull
-- mode) claim their run's episodes instead of being called: the run's
-- waiting attempts are handed out by claims, never queued by offers.
ALTER TABLE runs ADD COLUMN agent_connects BOOLEAN NOT NULL DEFAULT FALSE;

-- One claim of one attempt by a connecting agent. The agent holds it while it
-- renews it (heartbeats and its calls); one that lapses ends the try as an
-- environment failure and the attempt waits for the next claim. The episode
-- token that opens the episode is stored hashed.
CREATE TABLE episode_leases (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    attempt_id   INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    try          BIGINT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    -- claimed: waiting for its episode to start; running: a worker holds the
    -- episode's browser at worker_url; ended: the episode is over (ended_reason).
    status       TEXT NOT NULL,
    worker_url   TEXT NOT NULL DEFAULT '',
    ended_reason TEXT NOT NULL DEFAULT '',
    expires_at   DATETIME NOT NULL,
    created_at   DATETIME NOT NULL,
    updated_at   DATETIME NOT NULL
);
CREATE INDEX episode_leases_attempt ON episode_leases(attempt_id, id);
CREATE INDEX episode_leases_run_status ON episode_leases(run_id, status);

-- Agent kind mcp. SQLite changes a CHECK constraint only by rebuilding the
-- table (with foreign keys off, so that runs and submissions keep pointing
-- at the same agent ids); its triggers are made again, and its id counter
-- keeps its high-water mark, so the id of an agent deleted before never
-- comes back.
CREATE TEMP TABLE agents_seq AS SELECT seq FROM sqlite_sequence WHERE name = 'agents';
CREATE TABLE agents_new (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id            INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    slug               TEXT NOT NULL,
    name               TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    model              TEXT NOT NULL DEFAULT '',
    framework          TEXT NOT NULL DEFAULT '',
    open_source        BOOLEAN NOT NULL DEFAULT FALSE,
    paper_url          TEXT NOT NULL DEFAULT '',
    code_url           TEXT NOT NULL DEFAULT '',
    kind               TEXT NOT NULL CHECK (kind IN ('http', 'mcp', 'openai', 'replay', 'upload')),
    endpoint_url       TEXT NOT NULL DEFAULT '',
    config             TEXT NOT NULL DEFAULT '',
    secrets_ciphertext BLOB,
    secret_names       TEXT NOT NULL DEFAULT '',
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL,
    UNIQUE (team_id, slug)
);
INSERT INTO agents_new (id, team_id, slug, name, description, model, framework, open_source, paper_url, code_url,
        kind, endpoint_url, config, secrets_ciphertext, secret_names, created_at, updated_at)
    SELECT id, team_id, slug, name, description, model, framework, open_source, paper_url, code_url,
        kind, endpoint_url, config, secrets_ciphertext, secret_names, created_at, updated_at FROM agents;
DROP TABLE agents;
ALTER TABLE agents_new RENAME TO agents;
DELETE FROM sqlite_sequence WHERE name = 'agents' AND EXISTS (SELECT 1 FROM agents_seq);
INSERT INTO sqlite_sequence (name, seq) SELECT 'agents', seq FROM agents_seq;
DROP TABLE agents_seq;
CREATE TRIGGER board_agents_update AFTER UPDATE ON agents
WHEN OLD.name IS NOT NEW.name OR OLD.slug IS NOT NEW.slug OR OLD.model IS NOT NEW.model
    OR OLD.open_source IS NOT NEW.open_source OR OLD.team_id IS NOT NEW.team_id
BEGIN
    UPDATE board_versions SET version = version + 1 WHERE benchmark_id = 0;
END;
CREATE TRIGGER board_agents_delete AFTER DELETE ON agents BEGIN
    UPDATE board_versions SET version = version + 1 WHERE benchmark_id = 0;
END;
