-- taskq 0009: the fan-in of 0007, once per statement instead of once per row.
--
-- 0007's row trigger updated each downstream step and the workflow's row once per
-- ended step. An ack of 200 steps of one group updated the fan-in step's row and the
-- workflow's row 200 times each in one transaction (each update a new row version that
-- the next one had to find): a 1,000-step group cost 2.5x the time of 1,000 plain jobs.
-- Now the row trigger only notes which steps ended (one insert into an unlogged table,
-- read and emptied before the statement ends), and one trigger at the end of the
-- statement does the work for all of them: one update of each downstream step (by how
-- many of its upstream steps ended), one of each workflow. Same rules, same statement,
-- same transaction as before: nothing polls, nothing waits for another transaction.
--
-- For every other job nothing runs: the row trigger's condition is false before any
-- call, and the statement trigger fires only when a row of the statement said so (its
-- condition reads a transaction-local setting that only the row trigger's condition
-- sets; CASE makes sure the setting is only set for a step that ended).

DROP TRIGGER jobs_workflow_step ON jobs;
DROP FUNCTION workflow_step_moved();

-- The steps whose end this statement wrote, until its end (never committed: the
-- statement trigger deletes them). Unlogged: nothing in it outlives a statement.
CREATE UNLOGGED TABLE workflow_ended (
    id uuid NOT NULL
);

-- Each function carries its own search_path (as 0008 gave the others): the schema this
-- migration runs in, whatever the connection's (a transaction pooler keeps none).
CREATE FUNCTION workflow_step_ended() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO workflow_ended (id) VALUES (NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_workflow_step
    AFTER UPDATE OF state ON jobs
    FOR EACH ROW
    WHEN (CASE WHEN NEW.workflow_id IS NOT NULL
                    AND NEW.state IN ('succeeded', 'dead', 'cancelled')
                    AND OLD.state NOT IN ('succeeded', 'dead', 'cancelled')
               THEN set_config('taskq.workflow_steps_ended', 'on', true) = 'on'
               ELSE false END)
    EXECUTE FUNCTION workflow_step_ended();

-- Every step that ended in this statement, in rounds: a success takes one off each
-- step after it (the last makes it due now, its queue notified); a dead or cancelled
-- step cancels the steps after it (`upstream_failed`: their own ends are the next
-- round, so a chain of any length is a loop, never nested calls), except
-- on_failure='run' steps, for which it counts as done; each workflow counts its ended
-- steps and, when none is left, gets its verdict, counted once in workflow_totals.
CREATE FUNCTION workflow_steps_advance() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    channel  text := left('taskq_' || TG_TABLE_SCHEMA, 63);
    ended    uuid[];
    finished uuid[];
    notified bigint;
BEGIN
    PERFORM set_config('taskq.workflow_advancing', 'on', true);
    LOOP
        PERFORM set_config('taskq.workflow_steps_ended', '', true);
        WITH gone AS (DELETE FROM workflow_ended RETURNING id)
        SELECT array_agg(id) INTO ended FROM gone;
        EXIT WHEN ended IS NULL;
        WITH e AS (
            SELECT d.id,
                   count(*) FILTER (WHERE s.state = 'succeeded') AS ok,
                   count(*) FILTER (WHERE s.state <> 'succeeded') AS bad
            FROM jobs s, unnest(s.downstream) AS d(id)
            WHERE s.id = ANY(ended)
            GROUP BY d.id
        ), u AS (
            UPDATE jobs
            SET upstream_left = jobs.upstream_left
                                - (e.ok + CASE WHEN jobs.on_failure = 'run' THEN e.bad ELSE 0 END),
                run_at = CASE WHEN jobs.upstream_left
                                   = e.ok + CASE WHEN jobs.on_failure = 'run' THEN e.bad ELSE 0 END
                              THEN now() ELSE jobs.run_at END
            FROM e
            WHERE jobs.id = e.id AND jobs.state = 'queued' AND jobs.upstream_left > 0
              AND (e.bad = 0 OR jobs.on_failure = 'run')
              AND e.ok + CASE WHEN jobs.on_failure = 'run' THEN e.bad ELSE 0 END > 0
            RETURNING jobs.queue, jobs.upstream_left
        ), c AS (
            UPDATE jobs
            SET state = 'cancelled', finished_at = now(), cancelled_at = now(),
                cancelled_by = 'upstream_failed'
            FROM e
            WHERE jobs.id = e.id AND e.bad > 0 AND jobs.state = 'queued'
              AND jobs.on_failure <> 'run'
            RETURNING jobs.id
        )
        SELECT (SELECT count(pg_notify(channel, r.queue))
                FROM (SELECT DISTINCT queue FROM u WHERE upstream_left = 0) AS r)
               + (SELECT count(*) FROM c)
        INTO notified;
        WITH s AS (
            SELECT workflow_id, count(*) AS n,
                   count(*) FILTER (WHERE state = 'dead') AS dead,
                   count(*) FILTER (WHERE state = 'cancelled') AS cancelled
            FROM jobs WHERE id = ANY(ended)
            GROUP BY workflow_id
        ), w AS (
            UPDATE workflows
            SET steps_left = workflows.steps_left - s.n,
                failed_steps = workflows.failed_steps + s.dead,
                cancelled_steps = workflows.cancelled_steps + s.cancelled
            FROM s
            WHERE workflows.id = s.workflow_id
            RETURNING workflows.id, workflows.steps_left
        )
        SELECT array_agg(id) INTO finished FROM w WHERE steps_left = 0;
        IF finished IS NOT NULL THEN
            WITH f AS (
                UPDATE workflows
                SET finished_at = now(),
                    state = CASE WHEN failed_steps > 0 THEN 'failed'
                                 WHEN cancelled_steps > 0 OR cancelled_at IS NOT NULL
                                     THEN 'cancelled'
                                 ELSE 'succeeded' END
                WHERE id = ANY(finished)
                RETURNING state
            )
            INSERT INTO workflow_totals AS t (state, finished)
            SELECT state, count(*) FROM f GROUP BY state
            ON CONFLICT (state) DO UPDATE SET finished = t.finished + excluded.finished;
        END IF;
    END LOOP;
    PERFORM set_config('taskq.workflow_advancing', '', true);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_workflow_steps
    AFTER UPDATE OF state ON jobs
    FOR EACH STATEMENT
    WHEN (current_setting('taskq.workflow_steps_ended', true) = 'on'
          AND current_setting('taskq.workflow_advancing', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION workflow_steps_advance();
