-- A platform error's full text, server paths included, for administrators.
-- error_message holds the same error with paths replaced, which is what
-- teams and the public read (pages, API, exports); error_detail is read by
-- one admin-only path only (the attempt's timeline for an administrator).
ALTER TABLE attempts ADD COLUMN error_detail TEXT NOT NULL DEFAULT '';
