-- What a re-scoring changed. A run keeps its latest re-scoring request
-- (rescore_id), its successes before that request graded its first attempt
-- (rescore_successes_before) and how many attempts' outcomes the request
-- changed (rescore_changed). A published run's "rescored" change-log entry
-- keeps the same for its own request: successes before and after, the run's
-- task count, the attempts whose outcome changed, and the evaluators that
-- graded them (e.g. webarena-verified@2), so the public log says which runs
-- changed and by how much long after later re-scorings.
ALTER TABLE runs ADD COLUMN rescore_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN rescore_successes_before INTEGER;
ALTER TABLE runs ADD COLUMN rescore_changed INTEGER NOT NULL DEFAULT 0;

ALTER TABLE leaderboard_events ADD COLUMN successes_before INTEGER;
ALTER TABLE leaderboard_events ADD COLUMN successes_after INTEGER;
ALTER TABLE leaderboard_events ADD COLUMN tasks INTEGER;
ALTER TABLE leaderboard_events ADD COLUMN changed_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE leaderboard_events ADD COLUMN evaluators TEXT NOT NULL DEFAULT '';
