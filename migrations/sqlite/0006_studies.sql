-- Human vs LLM-judge agreement studies. A study samples finished attempts of
-- its source runs and benchmarks (study_items), invites annotators
-- (study_annotators), gives each item to one or more of them when it opens
-- (study_assignments, which also hold their labels and the labels imported
-- from files) and keeps every judge configuration's verdicts
-- (study_verdicts). Everything of a study goes when the study goes.

-- The first schema reserved tables for studies that no code ever wrote; they
-- are replaced by the model below.
DROP TABLE annotations;
DROP TABLE assignments;
DROP TABLE study_annotators;
DROP TABLE study_items;
DROP TABLE studies;

-- run_ids and benchmark_ids are the sources as JSON arrays; labels the asked
-- labels and judges the judge configurations, as JSON. item_count is what the
-- sources gave of the sample_size asked for.
CREATE TABLE studies (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id           INTEGER NOT NULL REFERENCES users(id) ON DELETE RESTRICT,
    name               TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL CHECK (status IN ('draft', 'open', 'closed')),
    run_ids            TEXT NOT NULL DEFAULT '[]',
    benchmark_ids      TEXT NOT NULL DEFAULT '[]',
    sampling           TEXT NOT NULL CHECK (sampling IN ('random', 'stratified')),
    stratify_by        TEXT NOT NULL DEFAULT '' CHECK (stratify_by IN ('', 'outcome', 'agent', 'site', 'difficulty')),
    seed               INTEGER NOT NULL DEFAULT 0,
    sample_size        INTEGER NOT NULL,
    item_count         INTEGER NOT NULL DEFAULT 0,
    overlap_fraction   REAL NOT NULL DEFAULT 0 CHECK (overlap_fraction BETWEEN 0 AND 1),
    overlap_annotators INTEGER NOT NULL DEFAULT 2,
    blind              BOOLEAN NOT NULL DEFAULT TRUE,
    labels             TEXT NOT NULL DEFAULT '[]',
    judges             TEXT NOT NULL DEFAULT '[]',
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL,
    opened_at          DATETIME,
    closed_at          DATETIME
);
-- The owner's studies, newest first.
CREATE INDEX studies_owner_created ON studies(owner_id, created_at);

-- One sampled attempt; position is its place in the sample (1-based).
CREATE TABLE study_items (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    stratum    TEXT NOT NULL DEFAULT '',
    UNIQUE (study_id, attempt_id),
    UNIQUE (study_id, position)
);
-- Whether an attempt is in a blind study its viewer annotates (BlindAttempt).
CREATE INDEX study_items_attempt ON study_items(attempt_id);

CREATE TABLE study_annotators (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    invited_by INTEGER NOT NULL REFERENCES users(id),
    invited_at DATETIME NOT NULL,
    UNIQUE (study_id, user_id)
);
-- The studies a user annotates.
CREATE INDEX study_annotators_user ON study_annotators(user_id);

-- An item given to an annotator (user_id), with their labels as a JSON object;
-- position is its place in the annotator's queue. Imported labels have no
-- user: user_id is NULL and annotator_name names the file's annotator, one row
-- per item and name, which a later import of the same name replaces.
CREATE TABLE study_assignments (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id       INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    study_item_id  INTEGER NOT NULL REFERENCES study_items(id) ON DELETE CASCADE,
    user_id        INTEGER REFERENCES users(id) ON DELETE CASCADE,
    annotator_name TEXT NOT NULL DEFAULT '',
    position       INTEGER NOT NULL DEFAULT 0,
    status         TEXT NOT NULL CHECK (status IN ('pending', 'done', 'skipped', 'flagged')),
    reason         TEXT NOT NULL DEFAULT '',
    labels         TEXT NOT NULL DEFAULT '{}',
    time_spent_ms  INTEGER NOT NULL DEFAULT 0,
    submitted_at   DATETIME,
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL,
    UNIQUE (study_item_id, user_id)
);
CREATE UNIQUE INDEX study_assignments_imported ON study_assignments(study_item_id, annotator_name) WHERE user_id IS NULL;
-- An annotator's queue in a study, in order; progress by annotator.
CREATE INDEX study_assignments_queue ON study_assignments(study_id, user_id, position);
-- Whether a user has an unfinished assignment of an attempt (BlindAttempt).
CREATE INDEX study_assignments_user_status ON study_assignments(user_id, status);

-- A judge's labels for an item: a study judge configuration's (imported
-- false) or a judge named in an imported file. A judge judging an item again
-- replaces its row.
CREATE TABLE study_verdicts (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id       INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    study_item_id  INTEGER NOT NULL REFERENCES study_items(id) ON DELETE CASCADE,
    judge          TEXT NOT NULL,
    imported       BOOLEAN NOT NULL DEFAULT FALSE,
    labels         TEXT NOT NULL DEFAULT '{}',
    rationale      TEXT NOT NULL DEFAULT '',
    error          TEXT NOT NULL DEFAULT '',
    prompt_version TEXT NOT NULL DEFAULT '',
    prompt_sha256  TEXT NOT NULL DEFAULT '',
    tokens_in      INTEGER NOT NULL DEFAULT 0,
    tokens_out     INTEGER NOT NULL DEFAULT 0,
    cost           REAL NOT NULL DEFAULT 0,
    latency_ms     INTEGER NOT NULL DEFAULT 0,
    created_at     DATETIME NOT NULL,
    UNIQUE (study_item_id, judge)
);
-- A study's verdicts by judge (the overview's per-judge totals, judge work).
CREATE INDEX study_verdicts_study_judge ON study_verdicts(study_id, judge);
