-- Submission portal: bundles of trajectories and results run elsewhere,
-- uploaded in parts, validated, then ingested as runs with origin uploaded.
-- Who submitted what and when is written to audit_events (submission.create,
-- part, complete, refused, validated, ingest, failed, discard).

-- submissions holds one uploaded bundle on its way to a run. Its bytes live
-- under the artifact prefix "submissions/{id}/" only. sha256 is the declared
-- digest until validation, then the digest of the bytes received. The parts of
-- an unfinished upload are read from the artifact store (multipart_id), never
-- copied here.
CREATE TABLE submissions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id        INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    agent_id       INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    benchmark_id   INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
    version_id     INTEGER NOT NULL REFERENCES benchmark_versions(id) ON DELETE CASCADE,
    subset_name    TEXT NOT NULL DEFAULT 'full',
    created_by     INTEGER REFERENCES users(id) ON DELETE SET NULL,
    status         TEXT NOT NULL CHECK (status IN ('uploading', 'uploaded', 'validating', 'validated', 'refused',
                                                   'ingesting', 'ingested', 'failed', 'discarded')),
    filename       TEXT NOT NULL,
    size           INTEGER NOT NULL DEFAULT 0,
    sha256         TEXT NOT NULL DEFAULT '',
    part_size      INTEGER NOT NULL DEFAULT 0,
    storage_key    TEXT NOT NULL DEFAULT '',
    multipart_id   TEXT NOT NULL DEFAULT '',
    format         TEXT NOT NULL DEFAULT '' CHECK (format IN ('', 'webarena-verified', 'proctor', 'online-mind2web', 'agentlab')),
    report         TEXT NOT NULL DEFAULT '',
    error          TEXT NOT NULL DEFAULT '',
    progress_done  INTEGER NOT NULL DEFAULT 0,
    progress_total INTEGER NOT NULL DEFAULT 0,
    run_id         INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL,
    validated_at   DATETIME,
    ingested_at    DATETIME
);
-- The team's daily quota and its list of submissions.
CREATE INDEX submissions_team_created ON submissions(team_id, created_at);
-- The administrators' list of every submission, newest first.
CREATE INDEX submissions_created ON submissions(created_at);
CREATE INDEX submissions_run ON submissions(run_id);
-- One bundle becomes at most one run of a team on a benchmark: a second
-- ingest of the same bytes (while the first is ingesting or once it is
-- ingested) violates this index.
CREATE UNIQUE INDEX submissions_ingested_bundle ON submissions(team_id, benchmark_id, sha256)
    WHERE status IN ('ingesting', 'ingested');
