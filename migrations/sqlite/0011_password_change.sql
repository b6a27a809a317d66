-- An account given a one-time password (by `proctor user create` or
-- `proctor user set-password` without --password-stdin) must choose its own
-- at the next sign-in before it can do anything else.
ALTER TABLE users ADD COLUMN must_change_password BOOLEAN NOT NULL DEFAULT FALSE;
