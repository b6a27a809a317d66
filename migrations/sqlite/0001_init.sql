-- Proctor's full data model: accounts and teams, agents, benchmarks with versions,
-- tasks, rubrics and subsets, runs with attempts, steps and evaluations, the
-- precomputed leaderboard, and human-vs-judge agreement studies.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    email         TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL DEFAULT '',
    password_hash TEXT NOT NULL,
    is_admin      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL
);

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token   TEXT NOT NULL,
    user_agent   TEXT NOT NULL DEFAULT '',
    ip           TEXT NOT NULL DEFAULT '',
    created_at   DATETIME NOT NULL,
    last_seen_at DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL
);
CREATE INDEX sessions_user_id ON sessions(user_id);
CREATE INDEX sessions_expires_at ON sessions(expires_at);

CREATE TABLE teams (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    slug        TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at  DATETIME NOT NULL,
    updated_at  DATETIME NOT NULL
);

CREATE TABLE memberships (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id    INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    created_at DATETIME NOT NULL,
    UNIQUE (team_id, user_id)
);
CREATE INDEX memberships_user_id ON memberships(user_id);

CREATE TABLE team_invites (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id    INTEGER NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    created_by INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at DATETIME NOT NULL,
    expires_at DATETIME NOT NULL,
    used_at    DATETIME,
    used_by    INTEGER REFERENCES users(id) ON DELETE SET NULL
);
CREATE INDEX team_invites_team_id ON team_invites(team_id);

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME,
    revoked_at   DATETIME
);
CREATE INDEX api_tokens_user_id ON api_tokens(user_id);

CREATE TABLE audit_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER REFERENCES users(id) ON DELETE SET NULL,
    team_id    INTEGER REFERENCES teams(id) ON DELETE SET NULL,
    action     TEXT NOT NULL,
    subject    TEXT NOT NULL DEFAULT '',
    details    TEXT NOT NULL DEFAULT '',
    ip         TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL
);
CREATE INDEX audit_events_created_at ON audit_events(created_at);

CREATE TABLE agents (
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
    kind               TEXT NOT NULL CHECK (kind IN ('http', 'openai', 'replay', 'upload')),
    endpoint_url       TEXT NOT NULL DEFAULT '',
    config             TEXT NOT NULL DEFAULT '',
    secrets_ciphertext BLOB,
    secret_names       TEXT NOT NULL DEFAULT '',
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL,
    UNIQUE (team_id, slug)
);

CREATE TABLE benchmarks (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    slug               TEXT NOT NULL UNIQUE,
    name               TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    format             TEXT NOT NULL,
    evaluator          TEXT NOT NULL,
    current_version_id INTEGER,
    published          BOOLEAN NOT NULL DEFAULT TRUE,
    default_max_steps  INTEGER NOT NULL DEFAULT 30,
    reveal_references BOOLEAN NOT NULL DEFAULT FALSE,
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL
);

CREATE TABLE benchmark_versions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    checksum     TEXT NOT NULL,
    source_name  TEXT NOT NULL DEFAULT '',
    task_count   INTEGER NOT NULL DEFAULT 0,
    rubric_items INTEGER NOT NULL DEFAULT 0,
    imported_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at   DATETIME NOT NULL,
    UNIQUE (benchmark_id, version),
    UNIQUE (benchmark_id, checksum)
);

CREATE TABLE sites (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    benchmark_id    INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    placeholder     TEXT NOT NULL DEFAULT '',
    url             TEXT NOT NULL DEFAULT '',
    reset_url       TEXT NOT NULL DEFAULT '',
    max_concurrency INTEGER NOT NULL DEFAULT 0,
    created_at      DATETIME NOT NULL,
    updated_at      DATETIME NOT NULL,
    UNIQUE (benchmark_id, name)
);

CREATE TABLE tasks (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    version_id        INTEGER NOT NULL REFERENCES benchmark_versions(id) ON DELETE CASCADE,
    external_id       TEXT NOT NULL,
    position          INTEGER NOT NULL,
    intent            TEXT NOT NULL,
    search_text       TEXT NOT NULL DEFAULT '',
    intent_template   TEXT NOT NULL DEFAULT '',
    start_urls        TEXT NOT NULL DEFAULT '[]',
    sites             TEXT NOT NULL DEFAULT '[]',
    site_key          TEXT NOT NULL DEFAULT '',
    task_type         TEXT NOT NULL DEFAULT '',
    difficulty        TEXT NOT NULL DEFAULT '',
    domain            TEXT NOT NULL DEFAULT '',
    attributes        TEXT NOT NULL DEFAULT '[]',
    revision          INTEGER NOT NULL DEFAULT 0,
    modality          TEXT NOT NULL DEFAULT '',
    file_format       TEXT NOT NULL DEFAULT '',
    access_type       TEXT NOT NULL DEFAULT '',
    max_tool_calls    INTEGER NOT NULL DEFAULT 0,
    max_seconds       INTEGER NOT NULL DEFAULT 0,
    metadata          TEXT NOT NULL DEFAULT '',
    eval_spec         TEXT NOT NULL DEFAULT '',
    reference_answers TEXT NOT NULL DEFAULT '',
    reference_actions TEXT NOT NULL DEFAULT '',
    UNIQUE (version_id, external_id)
);
CREATE INDEX tasks_version_position ON tasks(version_id, position);
CREATE INDEX tasks_version_site_key ON tasks(version_id, site_key);

CREATE TABLE task_sites (
    task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    site    TEXT NOT NULL,
    PRIMARY KEY (task_id, site)
);
CREATE INDEX task_sites_site ON task_sites(site);

CREATE TABLE task_attributes (
    task_id   INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    attribute TEXT NOT NULL,
    PRIMARY KEY (task_id, attribute)
);
CREATE INDEX task_attributes_attribute ON task_attributes(attribute);

CREATE TABLE rubric_items (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id      INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    item_key     TEXT NOT NULL,
    position     INTEGER NOT NULL,
    requirement  TEXT NOT NULL,
    verification TEXT NOT NULL DEFAULT '',
    weight       REAL NOT NULL,
    UNIQUE (task_id, item_key)
);

CREATE TABLE subsets (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    version_id  INTEGER NOT NULL REFERENCES benchmark_versions(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    checksum    TEXT NOT NULL,
    task_count  INTEGER NOT NULL,
    created_at  DATETIME NOT NULL,
    UNIQUE (version_id, name)
);

CREATE TABLE subset_tasks (
    subset_id INTEGER NOT NULL REFERENCES subsets(id) ON DELETE CASCADE,
    task_id   INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    PRIMARY KEY (subset_id, task_id)
);
CREATE INDEX subset_tasks_task_id ON subset_tasks(task_id);

CREATE TABLE runs (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id                INTEGER NOT NULL REFERENCES teams(id) ON DELETE RESTRICT,
    agent_id               INTEGER NOT NULL REFERENCES agents(id) ON DELETE RESTRICT,
    version_id             INTEGER NOT NULL REFERENCES benchmark_versions(id) ON DELETE RESTRICT,
    subset_name            TEXT NOT NULL DEFAULT 'full',
    status                 TEXT NOT NULL CHECK (status IN ('queued', 'running', 'evaluating', 'completed', 'failed', 'canceled')),
    origin                 TEXT NOT NULL CHECK (origin IN ('executed', 'uploaded', 'reproduced')),
    agent_snapshot         TEXT NOT NULL DEFAULT '',
    max_steps              INTEGER NOT NULL DEFAULT 30,
    max_episode_seconds    INTEGER NOT NULL DEFAULT 0,
    max_agent_call_seconds INTEGER NOT NULL DEFAULT 0,
    max_cost               REAL,
    parallelism            INTEGER NOT NULL DEFAULT 1,
    notes                  TEXT NOT NULL DEFAULT '',
    published              BOOLEAN NOT NULL DEFAULT FALSE,
    verified               BOOLEAN NOT NULL DEFAULT FALSE,
    created_by             INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at             DATETIME NOT NULL,
    started_at             DATETIME,
    finished_at            DATETIME,
    rescored_at            DATETIME,
    tasks_total            INTEGER NOT NULL DEFAULT 0,
    tasks_done             INTEGER NOT NULL DEFAULT 0,
    successes              INTEGER NOT NULL DEFAULT 0,
    failures               INTEGER NOT NULL DEFAULT 0,
    errors                 INTEGER NOT NULL DEFAULT 0,
    score_sum              REAL NOT NULL DEFAULT 0,
    steps_sum              INTEGER NOT NULL DEFAULT 0,
    tokens_in              INTEGER NOT NULL DEFAULT 0,
    tokens_out             INTEGER NOT NULL DEFAULT 0,
    cost                   REAL NOT NULL DEFAULT 0
);
CREATE INDEX runs_team_id ON runs(team_id, created_at);
CREATE INDEX runs_version_id ON runs(version_id);
CREATE INDEX runs_agent_id ON runs(agent_id);

CREATE TABLE attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    task_id       INTEGER NOT NULL REFERENCES tasks(id) ON DELETE RESTRICT,
    status        TEXT NOT NULL,
    outcome       TEXT NOT NULL DEFAULT '',
    error_class   TEXT NOT NULL DEFAULT '',
    error_message TEXT NOT NULL DEFAULT '',
    score         REAL,
    steps         INTEGER NOT NULL DEFAULT 0,
    tokens_in     INTEGER NOT NULL DEFAULT 0,
    tokens_out    INTEGER NOT NULL DEFAULT 0,
    cost          REAL NOT NULL DEFAULT 0,
    started_at    DATETIME,
    finished_at   DATETIME,
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    final_answer  TEXT NOT NULL DEFAULT '',
    har_key       TEXT NOT NULL DEFAULT '',
    tries         INTEGER NOT NULL DEFAULT 0,
    namespace     TEXT NOT NULL DEFAULT '',
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL,
    UNIQUE (run_id, task_id)
);
CREATE INDEX attempts_task_id ON attempts(task_id);

CREATE TABLE steps (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_id       INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    step_index       INTEGER NOT NULL,
    action           TEXT NOT NULL DEFAULT '',
    thought          TEXT NOT NULL DEFAULT '',
    url              TEXT NOT NULL DEFAULT '',
    title            TEXT NOT NULL DEFAULT '',
    tabs             TEXT NOT NULL DEFAULT '',
    screenshot_key   TEXT NOT NULL DEFAULT '',
    thumbnail_key    TEXT NOT NULL DEFAULT '',
    ax_tree_key      TEXT NOT NULL DEFAULT '',
    error            TEXT NOT NULL DEFAULT '',
    blocked_requests TEXT NOT NULL DEFAULT '',
    observe_ms       INTEGER NOT NULL DEFAULT 0,
    agent_ms         INTEGER NOT NULL DEFAULT 0,
    act_ms           INTEGER NOT NULL DEFAULT 0,
    tokens_in        INTEGER NOT NULL DEFAULT 0,
    tokens_out       INTEGER NOT NULL DEFAULT 0,
    cost             REAL NOT NULL DEFAULT 0,
    created_at       DATETIME NOT NULL,
    UNIQUE (attempt_id, step_index)
);

CREATE TABLE evaluations (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    attempt_id        INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    evaluator         TEXT NOT NULL,
    evaluator_version TEXT NOT NULL DEFAULT '',
    is_primary        BOOLEAN NOT NULL DEFAULT FALSE,
    inputs_checksum   TEXT NOT NULL DEFAULT '',
    verdict           TEXT NOT NULL CHECK (verdict IN ('success', 'failure', 'error')),
    score             REAL,
    judge_score       INTEGER CHECK (judge_score BETWEEN 1 AND 5),
    details           TEXT NOT NULL DEFAULT '',
    created_at        DATETIME NOT NULL
);
CREATE INDEX evaluations_attempt_id ON evaluations(attempt_id, created_at);

CREATE TABLE rubric_judgments (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    evaluation_id  INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
    rubric_item_id INTEGER NOT NULL REFERENCES rubric_items(id) ON DELETE CASCADE,
    passed         BOOLEAN NOT NULL,
    rationale      TEXT NOT NULL DEFAULT '',
    UNIQUE (evaluation_id, rubric_item_id)
);

CREATE TABLE leaderboard_entries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    benchmark_id  INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
    version_id    INTEGER NOT NULL REFERENCES benchmark_versions(id) ON DELETE CASCADE,
    subset_name   TEXT NOT NULL,
    restricted    BOOLEAN NOT NULL DEFAULT FALSE,
    tasks         INTEGER NOT NULL,
    successes     INTEGER NOT NULL,
    success_rate  REAL NOT NULL,
    ci_low        REAL NOT NULL,
    ci_high       REAL NOT NULL,
    judge_score   REAL,
    rubric_score  REAL,
    perfect_rate  REAL,
    efficiency    REAL,
    mean_steps    REAL NOT NULL DEFAULT 0,
    cost_per_task REAL NOT NULL DEFAULT 0,
    tokens        INTEGER NOT NULL DEFAULT 0,
    computed_at   DATETIME NOT NULL,
    UNIQUE (run_id, subset_name)
);
CREATE INDEX leaderboard_entries_board ON leaderboard_entries(benchmark_id, subset_name, success_rate);

CREATE TABLE studies (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE RESTRICT,
    name             TEXT NOT NULL,
    description      TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('draft', 'open', 'closed')),
    sources          TEXT NOT NULL DEFAULT '',
    sampling         TEXT NOT NULL DEFAULT '',
    seed             INTEGER NOT NULL DEFAULT 0,
    sample_size      INTEGER NOT NULL DEFAULT 0,
    overlap_fraction REAL NOT NULL DEFAULT 0,
    blind            BOOLEAN NOT NULL DEFAULT TRUE,
    label_schema     TEXT NOT NULL DEFAULT '',
    judge_configs    TEXT NOT NULL DEFAULT '',
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL
);

CREATE TABLE study_items (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    attempt_id INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    stratum    TEXT NOT NULL DEFAULT '',
    UNIQUE (study_id, attempt_id)
);

CREATE TABLE study_annotators (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    invited_at  DATETIME NOT NULL,
    accepted_at DATETIME,
    UNIQUE (study_id, user_id)
);

CREATE TABLE assignments (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    study_item_id INTEGER NOT NULL REFERENCES study_items(id) ON DELETE CASCADE,
    user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'done', 'skipped', 'flagged')),
    reason        TEXT NOT NULL DEFAULT '',
    assigned_at   DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL,
    UNIQUE (study_item_id, user_id)
);
CREATE INDEX assignments_user_id ON assignments(user_id, status);

CREATE TABLE annotations (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    assignment_id  INTEGER NOT NULL UNIQUE REFERENCES assignments(id) ON DELETE CASCADE,
    success        TEXT NOT NULL DEFAULT '',
    score          INTEGER CHECK (score BETWEEN 1 AND 5),
    side_effect    TEXT NOT NULL DEFAULT '',
    looping        TEXT NOT NULL DEFAULT '',
    optimality     INTEGER CHECK (optimality BETWEEN 1 AND 4),
    rubric_labels  TEXT NOT NULL DEFAULT '',
    time_spent_ms  INTEGER NOT NULL DEFAULT 0,
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL
);
