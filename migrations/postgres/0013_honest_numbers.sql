-- Numbers a page shows are the ones that are known.
--
-- An uploaded attempt whose bundle did not say how many steps it took, how
-- many tokens or how much it cost has those unknown (shown "—", sorted last),
-- not zero; so has a board entry when any attempt it counts has them
-- unknown. Executed attempts always know them.
ALTER TABLE attempts ADD COLUMN steps_unknown BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE attempts ADD COLUMN tokens_unknown BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE attempts ADD COLUMN cost_unknown BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE leaderboard_entries ADD COLUMN steps_unknown BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE leaderboard_entries ADD COLUMN tokens_unknown BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE leaderboard_entries ADD COLUMN cost_unknown BOOLEAN NOT NULL DEFAULT FALSE;

-- An episode that ran out of budget (steps, cost: class budget; time: class
-- timeout) is graded like any other: a failure, with its class saying why,
-- not an error. Attempts recorded as errors before are regraded by their
-- primary verdict, and their runs' totals recounted.
UPDATE attempts SET outcome = 'failure'
WHERE outcome = 'error' AND error_class IN ('budget', 'timeout')
  AND EXISTS (SELECT 1 FROM evaluations e
              WHERE e.attempt_id = attempts.id AND e.is_primary AND e.is_current AND e.verdict = 'failure');
UPDATE runs SET
    failures = (SELECT COUNT(*) FROM attempts a WHERE a.run_id = runs.id AND a.outcome = 'failure'),
    errors = (SELECT COUNT(*) FROM attempts a WHERE a.run_id = runs.id AND a.outcome = 'error')
WHERE id IN (SELECT run_id FROM attempts WHERE error_class IN ('budget', 'timeout'));
