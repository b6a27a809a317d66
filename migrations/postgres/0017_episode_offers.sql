-- Whether an episode job waits in the queue for a pending attempt. A run has
-- at most its parallelism of attempts running or queued; an episode that
-- ends (or a claim that must wait) queues the next. Attempts pending at the
-- upgrade were each queued by the dispatch of old.
ALTER TABLE attempts ADD COLUMN queued BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE attempts SET queued = TRUE WHERE status = 'pending';
