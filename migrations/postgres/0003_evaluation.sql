-- Evaluation: several evaluators per attempt (the benchmark's primary check, an
-- LLM trajectory judge, a rubric judge), re-scoring that keeps history, judging
-- cost, live-page state for original WebArena checks, per-benchmark judges and
-- precomputed metrics on leaderboard rows.

-- kind groups an attempt's evaluations: check (deterministic), judge (LLM
-- trajectory judge with a 1–5 score) or rubric (LLM rubric judge). is_current
-- marks the newest evaluation of each kind; older rows stay as history.
ALTER TABLE evaluations ADD COLUMN kind TEXT NOT NULL DEFAULT 'check' CHECK (kind IN ('check', 'judge', 'rubric'));
ALTER TABLE evaluations ADD COLUMN is_current BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE evaluations ADD COLUMN rescore BOOLEAN NOT NULL DEFAULT FALSE;
-- The re-scoring request that made the row, so a redelivered job records nothing twice.
ALTER TABLE evaluations ADD COLUMN rescore_id TEXT NOT NULL DEFAULT '';
ALTER TABLE evaluations ADD COLUMN tokens_in BIGINT NOT NULL DEFAULT 0;
ALTER TABLE evaluations ADD COLUMN tokens_out BIGINT NOT NULL DEFAULT 0;
ALTER TABLE evaluations ADD COLUMN cost DOUBLE PRECISION NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX evaluations_current ON evaluations(attempt_id, kind) WHERE is_current;

-- The step numbers a judge cited as evidence, as a JSON array.
ALTER TABLE rubric_judgments ADD COLUMN evidence_steps TEXT NOT NULL DEFAULT '[]';

-- What the runner read from the live page at the end of the episode (JSON artifact).
ALTER TABLE attempts ADD COLUMN page_state_key TEXT NOT NULL DEFAULT '';

-- A benchmark may name its own judge; the key is sealed with the server's secret key.
ALTER TABLE benchmarks ADD COLUMN judge_base_url TEXT NOT NULL DEFAULT '';
ALTER TABLE benchmarks ADD COLUMN judge_model TEXT NOT NULL DEFAULT '';
ALTER TABLE benchmarks ADD COLUMN judge_api_key TEXT NOT NULL DEFAULT '';

-- What the last re-scoring used, shown beside rescored_at.
ALTER TABLE runs ADD COLUMN rescored_with TEXT NOT NULL DEFAULT '';
-- evaluations_version counts the run's recorded evaluations; metrics_version is
-- the count its metrics were computed at, so a metrics job knows whether it is
-- needed without comparing clocks.
ALTER TABLE runs ADD COLUMN evaluations_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN metrics_version BIGINT NOT NULL DEFAULT 0;

-- The full metrics of the row (intervals, error classes, breakdowns by site,
-- domain, difficulty, attribute, task type and intent template) as JSON.
ALTER TABLE leaderboard_entries ADD COLUMN metrics TEXT NOT NULL DEFAULT '{}';
ALTER TABLE leaderboard_entries ADD COLUMN judged BIGINT NOT NULL DEFAULT 0;
