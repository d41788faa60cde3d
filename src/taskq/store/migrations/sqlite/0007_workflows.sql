-- taskq 0007: workflows (see the Postgres migration of the same number). The fan-in is
-- decided by triggers in the statement that ends a step, in its transaction (SQLite has
-- one writer at a time, so the count needs no row lock). Times are REAL unix seconds; a
-- trigger has no :now, so it reads the same host clock with julianday().

ALTER TABLE jobs ADD COLUMN workflow_id TEXT;     -- the workflow this step belongs to
ALTER TABLE jobs ADD COLUMN step TEXT;            -- its name, unique in the workflow
ALTER TABLE jobs ADD COLUMN upstream TEXT;        -- JSON array: the steps it runs after
ALTER TABLE jobs ADD COLUMN downstream TEXT;      -- JSON array: the steps after it
ALTER TABLE jobs ADD COLUMN upstream_left INTEGER; -- upstream steps it still waits for
ALTER TABLE jobs ADD COLUMN on_failure TEXT;      -- 'cancel' (the default) or 'run'

CREATE INDEX jobs_workflow_idx ON jobs (workflow_id) WHERE workflow_id IS NOT NULL;

CREATE TABLE workflows (
    id              TEXT    PRIMARY KEY,
    name            TEXT    NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'running'
        CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    steps           INTEGER NOT NULL CHECK (steps >= 1),
    steps_left      INTEGER NOT NULL CHECK (steps_left >= 0),
    failed_steps    INTEGER NOT NULL DEFAULT 0,
    cancelled_steps INTEGER NOT NULL DEFAULT 0,
    created_at      REAL    NOT NULL,
    finished_at     REAL,
    cancelled_at    REAL,
    cancelled_by    TEXT
);

CREATE INDEX workflows_finished_idx ON workflows (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE workflow_totals (
    state    TEXT    PRIMARY KEY,
    finished INTEGER NOT NULL
);

-- The steps one failure takes with it, while its trigger runs (empty otherwise).
CREATE TABLE workflow_cascade (
    id TEXT PRIMARY KEY
);

-- A step succeeded: one upstream fewer for each step after it; the last makes it due.
CREATE TRIGGER jobs_workflow_step_succeeded
    AFTER UPDATE OF state ON jobs
    FOR EACH ROW
    WHEN NEW.workflow_id IS NOT NULL AND NEW.state = 'succeeded'
         AND OLD.state NOT IN ('succeeded', 'dead', 'cancelled')
BEGIN
    UPDATE jobs
    SET upstream_left = upstream_left - 1,
        run_at = CASE WHEN upstream_left = 1
                      THEN (julianday('now') - 2440587.5) * 86400.0 ELSE run_at END
    WHERE id IN (SELECT value FROM json_each(NEW.downstream))
      AND state = 'queued' AND upstream_left > 0;
    UPDATE workflows SET steps_left = steps_left - 1 WHERE id = NEW.workflow_id;
END;

-- A step died or was cancelled: the steps after it will never run (cancelled, by
-- `upstream_failed`), through any depth, except on_failure='run' steps, for which an
-- ended upstream step counts as done. The steps it cancels do not fire this trigger
-- again (SQLite does not re-enter a trigger that is running): they are counted here.
CREATE TRIGGER jobs_workflow_step_failed
    AFTER UPDATE OF state ON jobs
    FOR EACH ROW
    WHEN NEW.workflow_id IS NOT NULL AND NEW.state IN ('dead', 'cancelled')
         AND OLD.state NOT IN ('succeeded', 'dead', 'cancelled')
BEGIN
    DELETE FROM workflow_cascade;
    INSERT INTO workflow_cascade (id)
    WITH RECURSIVE gone (id) AS (
        SELECT j.id FROM json_each(NEW.downstream) AS d JOIN jobs AS j ON j.id = d.value
        WHERE j.state = 'queued' AND j.on_failure <> 'run'
        UNION
        SELECT j.id FROM gone AS g JOIN jobs AS f ON f.id = g.id,
                         json_each(f.downstream) AS d JOIN jobs AS j ON j.id = d.value
        WHERE j.state = 'queued' AND j.on_failure <> 'run'
    )
    SELECT id FROM gone;
    UPDATE jobs
    SET upstream_left = jobs.upstream_left - e.n,
        run_at = CASE WHEN jobs.upstream_left = e.n
                      THEN (julianday('now') - 2440587.5) * 86400.0 ELSE jobs.run_at END
    FROM (SELECT d.value AS id, count(*) AS n
          FROM (SELECT NEW.downstream AS ids
                UNION ALL
                SELECT f.downstream FROM workflow_cascade AS c JOIN jobs AS f ON f.id = c.id)
               AS x, json_each(x.ids) AS d
          GROUP BY d.value) AS e
    WHERE jobs.id = e.id AND jobs.state = 'queued' AND jobs.on_failure = 'run'
      AND jobs.upstream_left > 0;
    UPDATE jobs
    SET state = 'cancelled', finished_at = (julianday('now') - 2440587.5) * 86400.0,
        cancelled_at = (julianday('now') - 2440587.5) * 86400.0,
        cancelled_by = 'upstream_failed'
    WHERE id IN (SELECT id FROM workflow_cascade);
    UPDATE workflows
    SET steps_left = steps_left - 1 - (SELECT count(*) FROM workflow_cascade),
        failed_steps = failed_steps + (NEW.state = 'dead'),
        cancelled_steps = cancelled_steps + (NEW.state = 'cancelled')
                          + (SELECT count(*) FROM workflow_cascade)
    WHERE id = NEW.workflow_id;
    DELETE FROM workflow_cascade;
END;

-- The last step ended: the workflow's verdict, counted once in workflow_totals.
CREATE TRIGGER workflows_finished
    AFTER UPDATE OF steps_left ON workflows
    FOR EACH ROW
    WHEN NEW.steps_left = 0 AND OLD.steps_left > 0
BEGIN
    UPDATE workflows
    SET finished_at = (julianday('now') - 2440587.5) * 86400.0,
        state = CASE WHEN failed_steps > 0 THEN 'failed'
                     WHEN cancelled_steps > 0 OR cancelled_at IS NOT NULL THEN 'cancelled'
                     ELSE 'succeeded' END
    WHERE id = NEW.id;
    INSERT INTO workflow_totals (state, finished)
    SELECT state, 1 FROM workflows WHERE id = NEW.id
    ON CONFLICT (state) DO UPDATE SET finished = finished + 1;
END;
