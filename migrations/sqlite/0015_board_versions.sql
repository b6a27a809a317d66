-- A board's version: a counter per benchmark that every change to what its
-- leaderboards and their exports show moves on, in the transaction that makes
-- the change, so every server process agrees on it and a rendered board can
-- be kept until it moves. Row 0 is shared by every board: it moves when a
-- team or an agent the boards name is renamed. Triggers keep the counters,
-- whatever code path writes the rows a board reads (storage.boardRows): its
-- entries, its runs (while published, or when published or withdrawn), the
-- benchmark, its versions and subsets, and the agents' and teams' names.
CREATE TABLE board_versions (
    benchmark_id INTEGER PRIMARY KEY,
    version      INTEGER NOT NULL DEFAULT 0
);
INSERT INTO board_versions (benchmark_id, version) VALUES (0, 1);
INSERT INTO board_versions (benchmark_id, version) SELECT id, 1 FROM benchmarks WHERE true;

CREATE TRIGGER board_entries_insert AFTER INSERT ON leaderboard_entries BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (NEW.benchmark_id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_entries_update AFTER UPDATE ON leaderboard_entries BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (NEW.benchmark_id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_entries_delete AFTER DELETE ON leaderboard_entries BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (OLD.benchmark_id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;

-- A run counts while it is published: the columns below are those a board
-- reads of it (storage.boardJoinColumns, and published and hidden_at, which
-- decide whether it is on the board).
CREATE TRIGGER board_runs_insert AFTER INSERT ON runs WHEN NEW.published BEGIN
    INSERT INTO board_versions (benchmark_id, version)
        SELECT benchmark_id, 1 FROM benchmark_versions WHERE id = NEW.version_id
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_runs_update AFTER UPDATE ON runs
WHEN (OLD.published OR NEW.published) AND (
    OLD.published IS NOT NEW.published OR OLD.hidden_at IS NOT NEW.hidden_at OR
    OLD.verified IS NOT NEW.verified OR OLD.origin IS NOT NEW.origin OR
    OLD.subset_name IS NOT NEW.subset_name OR OLD.agent_snapshot IS NOT NEW.agent_snapshot OR
    OLD.finished_at IS NOT NEW.finished_at OR OLD.agent_id IS NOT NEW.agent_id OR
    OLD.team_id IS NOT NEW.team_id OR OLD.version_id IS NOT NEW.version_id OR
    OLD.rescore_successes_before IS NOT NEW.rescore_successes_before OR
    OLD.successes IS NOT NEW.successes OR OLD.tasks_total IS NOT NEW.tasks_total OR
    OLD.rescore_changed IS NOT NEW.rescore_changed OR OLD.rescored_with IS NOT NEW.rescored_with)
BEGIN
    INSERT INTO board_versions (benchmark_id, version)
        SELECT benchmark_id, 1 FROM benchmark_versions WHERE id IN (OLD.version_id, NEW.version_id)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_runs_delete AFTER DELETE ON runs WHEN OLD.published BEGIN
    INSERT INTO board_versions (benchmark_id, version)
        SELECT benchmark_id, 1 FROM benchmark_versions WHERE id = OLD.version_id
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;

-- The benchmark's name, publication, evaluator, current version and
-- settings; its versions (task counts, pass threshold) and subsets.
CREATE TRIGGER board_benchmarks_insert AFTER INSERT ON benchmarks BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (NEW.id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_benchmarks_update AFTER UPDATE ON benchmarks BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (NEW.id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_benchmarks_delete AFTER DELETE ON benchmarks BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (OLD.id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_versions_insert AFTER INSERT ON benchmark_versions BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (NEW.benchmark_id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_versions_update AFTER UPDATE ON benchmark_versions BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (NEW.benchmark_id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_versions_delete AFTER DELETE ON benchmark_versions BEGIN
    INSERT INTO board_versions (benchmark_id, version) VALUES (OLD.benchmark_id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_subsets_insert AFTER INSERT ON subsets BEGIN
    INSERT INTO board_versions (benchmark_id, version)
        SELECT benchmark_id, 1 FROM benchmark_versions WHERE id = NEW.version_id
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_subsets_update AFTER UPDATE ON subsets BEGIN
    INSERT INTO board_versions (benchmark_id, version)
        SELECT benchmark_id, 1 FROM benchmark_versions WHERE id IN (OLD.version_id, NEW.version_id)
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER board_subsets_delete AFTER DELETE ON subsets BEGIN
    INSERT INTO board_versions (benchmark_id, version)
        SELECT benchmark_id, 1 FROM benchmark_versions WHERE id = OLD.version_id
        ON CONFLICT (benchmark_id) DO UPDATE SET version = version + 1;
END;

-- Names every board shows: an agent's (when its run's snapshot lacks them)
-- and a team's.
CREATE TRIGGER board_agents_update AFTER UPDATE ON agents
WHEN OLD.name IS NOT NEW.name OR OLD.slug IS NOT NEW.slug OR OLD.model IS NOT NEW.model
    OR OLD.open_source IS NOT NEW.open_source OR OLD.team_id IS NOT NEW.team_id
BEGIN
    UPDATE board_versions SET version = version + 1 WHERE benchmark_id = 0;
END;
CREATE TRIGGER board_agents_delete AFTER DELETE ON agents BEGIN
    UPDATE board_versions SET version = version + 1 WHERE benchmark_id = 0;
END;
CREATE TRIGGER board_teams_update AFTER UPDATE ON teams
WHEN OLD.name IS NOT NEW.name OR OLD.slug IS NOT NEW.slug
BEGIN
    UPDATE board_versions SET version = version + 1 WHERE benchmark_id = 0;
END;
CREATE TRIGGER board_teams_delete AFTER DELETE ON teams BEGIN
    UPDATE board_versions SET version = version + 1 WHERE benchmark_id = 0;
END;
