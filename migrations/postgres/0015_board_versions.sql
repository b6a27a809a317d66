-- A board's version: a counter per benchmark that every change to what its
-- leaderboards and their exports show moves on, in the transaction that makes
-- the change, so every server process agrees on it and a rendered board can
-- be kept until it moves. Row 0 is shared by every board: it moves when a
-- team or an agent the boards name is renamed. Triggers keep the counters,
-- whatever code path writes the rows a board reads (storage.boardRows): its
-- entries, its runs (while published, or when published or withdrawn), the
-- benchmark, its versions and subsets, and the agents' and teams' names.
CREATE TABLE board_versions (
    benchmark_id BIGINT PRIMARY KEY,
    version      BIGINT NOT NULL DEFAULT 0
);
INSERT INTO board_versions (benchmark_id, version) VALUES (0, 1);
INSERT INTO board_versions (benchmark_id, version) SELECT id, 1 FROM benchmarks;

CREATE FUNCTION bump_board(bid BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF bid IS NOT NULL THEN
        INSERT INTO board_versions (benchmark_id, version) VALUES (bid, 1)
            ON CONFLICT (benchmark_id) DO UPDATE SET version = board_versions.version + 1;
    END IF;
END $$;

CREATE FUNCTION board_entries_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM bump_board(OLD.benchmark_id);
    ELSE
        PERFORM bump_board(NEW.benchmark_id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER board_entries_changed AFTER INSERT OR UPDATE OR DELETE ON leaderboard_entries
    FOR EACH ROW EXECUTE FUNCTION board_entries_changed();

-- A run counts while it is published: the columns below are those a board
-- reads of it (storage.boardJoinColumns, and published and hidden_at, which
-- decide whether it is on the board).
CREATE FUNCTION board_runs_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM bump_board((SELECT benchmark_id FROM benchmark_versions WHERE id = OLD.version_id));
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.version_id <> OLD.version_id) THEN
        PERFORM bump_board((SELECT benchmark_id FROM benchmark_versions WHERE id = NEW.version_id));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER board_runs_insert AFTER INSERT ON runs
    FOR EACH ROW WHEN (NEW.published) EXECUTE FUNCTION board_runs_changed();
CREATE TRIGGER board_runs_update AFTER UPDATE ON runs
    FOR EACH ROW WHEN ((OLD.published OR NEW.published) AND (
        OLD.published IS DISTINCT FROM NEW.published OR OLD.hidden_at IS DISTINCT FROM NEW.hidden_at OR
        OLD.verified IS DISTINCT FROM NEW.verified OR OLD.origin IS DISTINCT FROM NEW.origin OR
        OLD.subset_name IS DISTINCT FROM NEW.subset_name OR OLD.agent_snapshot IS DISTINCT FROM NEW.agent_snapshot OR
        OLD.finished_at IS DISTINCT FROM NEW.finished_at OR OLD.agent_id IS DISTINCT FROM NEW.agent_id OR
        OLD.team_id IS DISTINCT FROM NEW.team_id OR OLD.version_id IS DISTINCT FROM NEW.version_id OR
        OLD.rescore_successes_before IS DISTINCT FROM NEW.rescore_successes_before OR
        OLD.successes IS DISTINCT FROM NEW.successes OR OLD.tasks_total IS DISTINCT FROM NEW.tasks_total OR
        OLD.rescore_changed IS DISTINCT FROM NEW.rescore_changed OR OLD.rescored_with IS DISTINCT FROM NEW.rescored_with))
    EXECUTE FUNCTION board_runs_changed();
CREATE TRIGGER board_runs_delete AFTER DELETE ON runs
    FOR EACH ROW WHEN (OLD.published) EXECUTE FUNCTION board_runs_changed();

-- The benchmark's name, publication, evaluator, current version and
-- settings; its versions (task counts, pass threshold) and subsets.
CREATE FUNCTION board_benchmarks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM bump_board(OLD.id);
    ELSE
        PERFORM bump_board(NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER board_benchmarks_changed AFTER INSERT OR UPDATE OR DELETE ON benchmarks
    FOR EACH ROW EXECUTE FUNCTION board_benchmarks_changed();

CREATE FUNCTION board_benchmark_versions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM bump_board(OLD.benchmark_id);
    ELSE
        PERFORM bump_board(NEW.benchmark_id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER board_benchmark_versions_changed AFTER INSERT OR UPDATE OR DELETE ON benchmark_versions
    FOR EACH ROW EXECUTE FUNCTION board_benchmark_versions_changed();

CREATE FUNCTION board_subsets_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM bump_board((SELECT benchmark_id FROM benchmark_versions WHERE id = OLD.version_id));
    ELSE
        PERFORM bump_board((SELECT benchmark_id FROM benchmark_versions WHERE id = NEW.version_id));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER board_subsets_changed AFTER INSERT OR UPDATE OR DELETE ON subsets
    FOR EACH ROW EXECUTE FUNCTION board_subsets_changed();

-- Names every board shows: an agent's (when its run's snapshot lacks them)
-- and a team's.
CREATE FUNCTION board_names_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE board_versions SET version = version + 1 WHERE benchmark_id = 0;
    RETURN NULL;
END $$;
CREATE TRIGGER board_agents_update AFTER UPDATE ON agents
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.slug IS DISTINCT FROM NEW.slug OR
        OLD.model IS DISTINCT FROM NEW.model OR OLD.open_source IS DISTINCT FROM NEW.open_source OR
        OLD.team_id IS DISTINCT FROM NEW.team_id)
    EXECUTE FUNCTION board_names_changed();
CREATE TRIGGER board_agents_delete AFTER DELETE ON agents
    FOR EACH ROW EXECUTE FUNCTION board_names_changed();
CREATE TRIGGER board_teams_update AFTER UPDATE ON teams
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.slug IS DISTINCT FROM NEW.slug)
    EXECUTE FUNCTION board_names_changed();
CREATE TRIGGER board_teams_delete AFTER DELETE ON teams
    FOR EACH ROW EXECUTE FUNCTION board_names_changed();
