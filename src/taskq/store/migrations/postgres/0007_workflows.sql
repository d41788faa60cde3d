-- taskq 0007: workflows, steps that depend on steps (docs/workflows.md).
--
-- A step is a job row with a workflow_id; a job outside a workflow has NULL in every
-- column below and pays nothing for them (nulls take no space, the partial index skips
-- them, the trigger's WHEN is false before any call).
--
-- The fan-in is decided here, in the database, in the statement that ends a step: the
-- jobs_workflow_step trigger runs inside whatever statement moved the step (the acker's
-- complete, a rescue, a cancel) and in its transaction. A step waits as `queued` with
-- run_at at the end of time; upstream_left counts the upstream steps it still waits for.
-- The success of an upstream step takes one off each downstream step's count (a row
-- update, so two upstream steps ending at once are serialised by the row lock and
-- exactly one of them sees the count reach zero); the step whose count reaches zero is
-- made due now and its queue is notified, in that same transaction. No poller, no
-- unlock job: a SIGKILL at any moment leaves either the whole ack or none of it.

ALTER TABLE jobs
    ADD COLUMN workflow_id uuid,            -- the workflow this step belongs to
    ADD COLUMN step text,                   -- its name, unique in the workflow
    ADD COLUMN upstream uuid[],             -- the steps it runs after (`after`)
    ADD COLUMN downstream uuid[],           -- the steps that run after it
    ADD COLUMN upstream_left integer,       -- upstream steps it still waits for
    ADD COLUMN on_failure text;             -- 'cancel' (the default) or 'run'

CREATE INDEX jobs_workflow_idx ON jobs (workflow_id) WHERE workflow_id IS NOT NULL;

-- A workflow: its state and how many of its steps have not ended. `running` until every
-- step has ended, then `failed` if a step died, `cancelled` if one was cancelled (by a
-- person, cancel_workflow, or the upstream_failed rule after a cancel), else `succeeded`.
CREATE TABLE workflows (
    id              uuid        PRIMARY KEY,
    name            text        NOT NULL,
    state           text        NOT NULL DEFAULT 'running'
        CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
    steps           integer     NOT NULL CHECK (steps >= 1),
    steps_left      integer     NOT NULL CHECK (steps_left >= 0),
    failed_steps    integer     NOT NULL DEFAULT 0,
    cancelled_steps integer     NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    cancelled_at    timestamptz,
    cancelled_by    text
);

CREATE INDEX workflows_finished_idx ON workflows (finished_at) WHERE finished_at IS NOT NULL;

-- How many workflows ever finished, by state (taskq_workflows_finished_total): counted by
-- the trigger that finishes each one, so pruning never makes the count go back.
CREATE TABLE workflow_totals (
    state    text   PRIMARY KEY,
    finished bigint NOT NULL
);

-- A step moved (WHEN: it belongs to a workflow and its state changed). Runs once per
-- ended step at trigger depth 1; the steps it cancels itself (depth 2) are counted here.
-- The cascade after a failure is a loop over the frontier, not recursion: a chain of
-- thousands of steps must not nest thousands of trigger calls.
CREATE FUNCTION workflow_step_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    channel  text := left('taskq_' || TG_TABLE_SCHEMA, 63);
    frontier uuid[];
    cascaded integer := 0;
    left_now integer;
    final    text;
    notified bigint;
BEGIN
    IF pg_trigger_depth() > 1
       OR OLD.state IN ('succeeded', 'dead', 'cancelled')
       OR NEW.state NOT IN ('succeeded', 'dead', 'cancelled') THEN
        RETURN NULL;
    END IF;
    IF NEW.state = 'succeeded' THEN
        -- one upstream fewer for each step after it; the last one makes it due now
        WITH u AS (
            UPDATE jobs
            SET upstream_left = upstream_left - 1,
                run_at = CASE WHEN upstream_left = 1 THEN now() ELSE run_at END
            WHERE id = ANY(NEW.downstream) AND state = 'queued' AND upstream_left > 0
            RETURNING queue, upstream_left
        )
        SELECT count(pg_notify(channel, r.queue)) INTO notified
        FROM (SELECT DISTINCT queue FROM u WHERE upstream_left = 0) AS r;
    ELSE
        -- dead or cancelled: the steps after it will never run, except on_failure='run'
        -- steps, for which an ended upstream step counts as done.
        frontier := ARRAY[NEW.id];
        LOOP
            WITH e AS (
                SELECT d.id, count(*) AS n
                FROM jobs f, unnest(f.downstream) AS d(id)
                WHERE f.id = ANY(frontier) GROUP BY d.id
            ), u AS (
                UPDATE jobs
                SET upstream_left = jobs.upstream_left - e.n,
                    run_at = CASE WHEN jobs.upstream_left = e.n THEN now() ELSE jobs.run_at END
                FROM e
                WHERE jobs.id = e.id AND jobs.state = 'queued' AND jobs.on_failure = 'run'
                  AND jobs.upstream_left > 0
                RETURNING jobs.queue, jobs.upstream_left
            ), gone AS (
                UPDATE jobs
                SET state = 'cancelled', finished_at = now(), cancelled_at = now(),
                    cancelled_by = 'upstream_failed'
                FROM e
                WHERE jobs.id = e.id AND jobs.state = 'queued' AND jobs.on_failure <> 'run'
                RETURNING jobs.id
            )
            SELECT (SELECT array_agg(id) FROM gone),
                   (SELECT count(pg_notify(channel, r.queue))
                    FROM (SELECT DISTINCT queue FROM u WHERE upstream_left = 0) AS r)
            INTO frontier, notified;
            EXIT WHEN frontier IS NULL;
            cascaded := cascaded + cardinality(frontier);
        END LOOP;
    END IF;
    UPDATE workflows
    SET steps_left = steps_left - 1 - cascaded,
        failed_steps = failed_steps + CASE WHEN NEW.state = 'dead' THEN 1 ELSE 0 END,
        cancelled_steps = cancelled_steps + cascaded
                          + CASE WHEN NEW.state = 'cancelled' THEN 1 ELSE 0 END
    WHERE id = NEW.workflow_id
    RETURNING steps_left INTO left_now;
    IF left_now = 0 THEN
        UPDATE workflows
        SET finished_at = now(),
            state = CASE WHEN failed_steps > 0 THEN 'failed'
                         WHEN cancelled_steps > 0 OR cancelled_at IS NOT NULL THEN 'cancelled'
                         ELSE 'succeeded' END
        WHERE id = NEW.workflow_id
        RETURNING state INTO final;
        INSERT INTO workflow_totals AS t (state, finished) VALUES (final, 1)
        ON CONFLICT (state) DO UPDATE SET finished = t.finished + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_workflow_step
    AFTER UPDATE OF state ON jobs
    FOR EACH ROW
    WHEN (NEW.workflow_id IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION workflow_step_moved();
