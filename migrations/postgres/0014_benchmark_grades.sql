-- What a benchmark's evaluator grades, recorded at import from the evaluator
-- registry: agents' runs, or candidate websites (hidden tests). Queries filter
-- on it rather than on evaluator names.
ALTER TABLE benchmarks ADD COLUMN grades TEXT NOT NULL DEFAULT 'agents';
UPDATE benchmarks SET grades = 'candidates' WHERE evaluator = 'hidden-tests';
