-- Agents that connect to Proctor (agent kind mcp, or an http agent in pull
-- mode) claim their run's episodes instead of being called: the run's
-- waiting attempts are handed out by claims, never queued by offers.
ALTER TABLE runs ADD COLUMN agent_connects BOOLEAN NOT NULL DEFAULT FALSE;

-- One claim of one attempt by a connecting agent. The agent holds it while it
-- renews it (heartbeats and its calls); one that lapses ends the try as an
-- environment failure and the attempt waits for the next claim. The episode
-- token that opens the episode is stored hashed.
CREATE TABLE episode_leases (
    id           BIGSERIAL PRIMARY KEY,
    run_id       BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    attempt_id   BIGINT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    try          BIGINT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    -- claimed: waiting for its episode to start; running: a worker holds the
    -- episode's browser at worker_url; ended: the episode is over (ended_reason).
    status       TEXT NOT NULL,
    worker_url   TEXT NOT NULL DEFAULT '',
    ended_reason TEXT NOT NULL DEFAULT '',
    expires_at   TIMESTAMPTZ NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX episode_leases_attempt ON episode_leases(attempt_id, id);
CREATE INDEX episode_leases_run_status ON episode_leases(run_id, status);

-- Agent kind mcp.
ALTER TABLE agents DROP CONSTRAINT agents_kind_check;
ALTER TABLE agents ADD CONSTRAINT agents_kind_check CHECK (kind IN ('http', 'mcp', 'openai', 'replay', 'upload'));
