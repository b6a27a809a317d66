-- Hidden-tests benchmarks are graded by pass rates, as in WebsiteBench. A
-- benchmark version states the pass rate a task needs to succeed
-- (pass_threshold, in (0, 1]; 1, the default, is every test that ran). A
-- test this platform cannot carry out (an offline build: Proctor does not
-- host candidates) is recorded "not_run" and decides nothing. A
-- hidden-tests board's entry counts the tests behind its pass rate, which
-- its success_rate and interval then hold.
ALTER TABLE benchmark_versions ADD COLUMN pass_threshold DOUBLE PRECISION NOT NULL DEFAULT 1
    CHECK (pass_threshold > 0 AND pass_threshold <= 1);

ALTER TABLE leaderboard_entries ADD COLUMN hidden_passed INTEGER;
ALTER TABLE leaderboard_entries ADD COLUMN hidden_ran INTEGER;

ALTER TABLE hidden_test_results DROP CONSTRAINT hidden_test_results_result_check;
ALTER TABLE hidden_test_results ADD CONSTRAINT hidden_test_results_result_check
    CHECK (result IN ('passed', 'failed', 'errored', 'not_run'));
