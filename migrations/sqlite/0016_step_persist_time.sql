-- How long storing a step took (its thumbnail made, then its screenshot,
-- thumbnail and accessibility text stored, up to the writing of its row),
-- beside its observe, agent and act times. Persistence runs while the agent
-- thinks about the next step, so it is not part of the step's own time; rows
-- from before this column read 0.
ALTER TABLE steps ADD COLUMN persist_ms INTEGER NOT NULL DEFAULT 0;
