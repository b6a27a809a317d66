-- A user's active API tokens have distinct names; revoked tokens keep theirs for
-- the record, so the rule only covers rows that are not revoked.
CREATE UNIQUE INDEX api_tokens_user_active_name ON api_tokens(user_id, name) WHERE revoked_at IS NULL;

-- Owner counts ("never leave a team without an owner") and member lists read by team and role.
CREATE INDEX memberships_team_role ON memberships(team_id, role);
