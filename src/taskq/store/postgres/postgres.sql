-- Every statement the Postgres store sends. Every table and function is named with its
-- schema, {schema}.jobs, filled in once per store (the quoted identifier): no statement
-- depends on a session's search_path, so each runs as well through a transaction pooler
-- (PgBouncer) as on a direct connection. Parameters are psycopg's %(name)s; {channel} is
-- an identifier filled in with psycopg.sql.
-- Re-queued due jobs are announced with pg_notify(%(channel)s, queue) in the same
-- statement; inserts are announced by the jobs_notify_enqueued trigger.

-- name: server_identity
-- description: Who answers a connection: its backend, database and server (start time).
-- Through a pooler the backend pid differs from the one the connection was given at
-- startup (the pooler's own cancel key): that is how the store knows it is pooled.
SELECT pg_backend_pid() AS pid, current_database() AS database,
       (SELECT oid FROM pg_database WHERE datname = current_database())::int8 AS database_oid,
       pg_postmaster_start_time() AS started;

-- name: create_schema
-- description: Create the taskq schema (migrate, under the migration lock).
CREATE SCHEMA IF NOT EXISTS {schema};

-- name: drop_schema
-- description: Drop the taskq schema and everything in it (taskq.testing's per-test schemas).
DROP SCHEMA IF EXISTS {schema} CASCADE;

-- name: use_schema
-- description: Point this migration transaction at the taskq schema.
SET LOCAL search_path = {schema};

-- name: migration_lock
-- description: Serialise concurrent `taskq migrate` runs until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext(%(key)s));

-- name: create_migrations_table
-- description: The record of applied migrations.
CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
    version    text        PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: applied_migrations
-- description: Versions already applied, in order.
SELECT version FROM {schema}.schema_migrations ORDER BY version;

-- name: record_migration
-- description: Mark one migration as applied.
INSERT INTO {schema}.schema_migrations (version) VALUES (%(version)s);

-- name: listen
-- description: Subscribe the listener connection to enqueue notifications.
LISTEN {channel};

-- name: listen_cancels
-- description: Subscribe a worker's cancel listener to cancel requests (payload: a job id).
LISTEN {channel};

-- name: ping
-- description: The cheapest round trip.
SELECT 1;

-- name: now
-- description: The database clock.
SELECT now() AS now;

-- name: enqueue
-- description: Insert a batch of jobs from parallel arrays in one statement.
-- The enqueue blocks name {schema}.jobs: they also run on the caller's own connection
-- (enqueue in the application's transaction), whatever its search_path.
INSERT INTO {schema}.jobs (id, actor, queue, args, kwargs, priority, run_at,
                           max_attempts, max_crashes, idempotent)
SELECT v.id, v.actor, v.queue, v.args::json, v.kwargs::json, v.priority,
       coalesce(v.run_at, now()), v.max_attempts, v.max_crashes, v.idempotent
FROM unnest(%(ids)s::uuid[], %(actors)s::text[], %(queues)s::text[], %(args)s::text[],
            %(kwargs)s::text[], %(priorities)s::int[], %(run_ats)s::timestamptz[],
            %(max_attempts)s::int[], %(max_crashes)s::int[], %(idempotent)s::bool[])
     AS v(id, actor, queue, args, kwargs, priority, run_at, max_attempts, max_crashes,
          idempotent);

-- name: enqueue_copy
-- description: Stream a large batch of jobs due now (COPY: ~3x the unnest insert).
COPY {schema}.jobs (id, actor, queue, args, kwargs, priority, max_attempts, max_crashes,
                    idempotent)
FROM STDIN;

-- name: enqueue_copy_run_at
-- description: Stream a large batch of jobs that each name their run_at.
COPY {schema}.jobs (id, actor, queue, args, kwargs, priority, max_attempts, max_crashes,
                    idempotent, run_at)
FROM STDIN;

-- name: enqueue_columns_copy
-- description: Stream a large batch of jobs that share all but id and arguments, due now.
-- The batch enqueue's path (enqueue_columns): each line is the shared fields, then the
-- job's id and arguments; one COPY on an autocommit connection is one transaction.
COPY {schema}.jobs (actor, queue, priority, max_attempts, max_crashes, idempotent, meta,
                    tags, id, args, kwargs)
FROM STDIN;

-- name: enqueue_columns_copy_run_at
-- description: The same, for a batch that names its run_at.
COPY {schema}.jobs (actor, queue, priority, max_attempts, max_crashes, idempotent, meta,
                    tags, run_at, id, args, kwargs)
FROM STDIN;

-- name: enqueue_one
-- description: Insert one job (single enqueue: one prepared round trip).
INSERT INTO {schema}.jobs (id, actor, queue, args, kwargs, priority, run_at,
                           max_attempts, max_crashes, idempotent)
VALUES (%(id)s, %(actor)s, %(queue)s, %(args)s::json, %(kwargs)s::json, %(priority)s,
        coalesce(%(run_at)s::timestamptz, now()), %(max_attempts)s, %(max_crashes)s,
        %(idempotent)s);

-- name: enqueue_full
-- description: Insert jobs that carry unique keys, meta or tags; a held key inserts nothing.
-- Returns the ids inserted; a job whose key is held (in one of the holder's
-- unique_states) is skipped by ON CONFLICT on jobs_unique_idx, never read-then-written.
-- Tags arrive as one JSON array per job (unnest cannot carry arrays of arrays).
INSERT INTO {schema}.jobs (id, actor, queue, args, kwargs, priority, run_at,
                           max_attempts, max_crashes, idempotent, unique_key,
                           unique_states, meta, tags)
SELECT v.id, v.actor, v.queue, v.args::json, v.kwargs::json, v.priority,
       coalesce(v.run_at, now()), v.max_attempts, v.max_crashes, v.idempotent,
       v.unique_key, v.unique_states, v.meta::json,
       CASE WHEN v.tags IS NOT NULL THEN ARRAY(SELECT json_array_elements_text(v.tags::json)) END
FROM unnest(%(ids)s::uuid[], %(actors)s::text[], %(queues)s::text[], %(args)s::text[],
            %(kwargs)s::text[], %(priorities)s::int[], %(run_ats)s::timestamptz[],
            %(max_attempts)s::int[], %(max_crashes)s::int[], %(idempotent)s::bool[],
            %(unique_keys)s::text[], %(unique_states)s::text[], %(metas)s::text[],
            %(tags)s::text[])
     AS v(id, actor, queue, args, kwargs, priority, run_at, max_attempts, max_crashes,
          idempotent, unique_key, unique_states, meta, tags)
ON CONFLICT (unique_key)
    WHERE unique_key IS NOT NULL AND strpos(unique_states, ',' || state || ',') > 0
    DO NOTHING
RETURNING id;

-- name: enqueue_stage
-- description: A transaction's staging table for large batches with unique keys, meta or tags.
-- COPY into it, then one INSERT ... SELECT ON CONFLICT (enqueue_from_stage): about twice
-- the speed of enqueue_full's unnest for thousands of rows. Dropped at its commit: nothing
-- stays in the session (a transaction pooler hands the session to other clients next).
CREATE TEMP TABLE IF NOT EXISTS taskq_enqueue_stage (
    id uuid, actor text, queue text, args text, kwargs text, priority int,
    run_at timestamptz, max_attempts int, max_crashes int, idempotent bool,
    unique_key text, unique_states text, meta text, tags text
) ON COMMIT DROP;

-- name: enqueue_stage_copy
-- description: Stream a large batch into the staging table.
COPY pg_temp.taskq_enqueue_stage (id, actor, queue, args, kwargs, priority, run_at,
                                  max_attempts, max_crashes, idempotent, unique_key,
                                  unique_states, meta, tags)
FROM STDIN;

-- name: enqueue_from_stage
-- description: Insert the staged batch; a held key inserts nothing (as enqueue_full).
INSERT INTO {schema}.jobs (id, actor, queue, args, kwargs, priority, run_at,
                           max_attempts, max_crashes, idempotent, unique_key,
                           unique_states, meta, tags)
SELECT v.id, v.actor, v.queue, v.args::json, v.kwargs::json, v.priority,
       coalesce(v.run_at, now()), v.max_attempts, v.max_crashes, v.idempotent,
       v.unique_key, v.unique_states, v.meta::json,
       CASE WHEN v.tags IS NOT NULL THEN ARRAY(SELECT json_array_elements_text(v.tags::json)) END
FROM pg_temp.taskq_enqueue_stage AS v
ON CONFLICT (unique_key)
    WHERE unique_key IS NOT NULL AND strpos(unique_states, ',' || state || ',') > 0
    DO NOTHING
RETURNING id;

-- name: unique_holders
-- description: The jobs holding these unique keys now (enqueue's answer to a duplicate).
SELECT unique_key, id FROM {schema}.jobs
WHERE unique_key = ANY(%(keys)s::text[])
  AND strpos(unique_states, ',' || state || ',') > 0;

-- name: connection_identity
-- description: Which server and database a connection reaches, and whether taskq's jobs table is there.
-- The store asks on its own connection and on a caller's (enqueue in the caller's
-- transaction): the same server (port and start time), database and schema, or refused.
SELECT current_database() AS db, current_setting('port') AS port,
       pg_postmaster_start_time() AS started, to_regclass(%(jobs_table)s) IS NOT NULL AS has_jobs;

-- fragment: job_columns
-- description: Every column a Job is read from (store/rows.py reads them by name; JSON as text).
id, actor, queue, args::text, kwargs::text, priority, state, attempt, max_attempts,
crash_count, max_crashes, idempotent, run_at, created_at, started_at, finished_at,
worker_id, lease_expires_at, last_error, dead_reason, result::text AS result,
snooze_count, cancelled_at, cancelled_by, meta::text AS meta, tags, unique_key, late,
blamed_crashes, unproven_crashes, workflow_id, step

-- name: get_job
-- description: One job by id.
SELECT {{job_columns}}
FROM {schema}.jobs WHERE id = %(id)s;

-- name: list_jobs
-- description: Jobs newest first (UUIDv7 ids are time-ordered), optionally by state/queue/tag.
SELECT {{job_columns}}
FROM {schema}.jobs
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(tag)s::text IS NULL OR (tags IS NOT NULL AND tags @> ARRAY[%(tag)s::text]))
ORDER BY id DESC
LIMIT %(limit)s;

-- name: stats
-- description: Number of jobs per state (states without jobs are absent).
SELECT state, count(*) AS count FROM {schema}.jobs GROUP BY state;

-- name: retry_jobs
-- description: Dead or cancelled jobs back to queued now, counters reset, error kept.
-- A job whose unique key another job holds (or a newer job retried with it) stays put,
-- and so does a workflow's step: the steps after it have ended (docs/workflows.md).
WITH moved AS (
    UPDATE {schema}.jobs
    SET state = 'queued', attempt = 0, crash_count = 0, blamed_crashes = 0,
        unproven_crashes = 0, snooze_count = 0, dead_reason = NULL,
        cancelled_at = NULL, cancelled_by = NULL, run_at = now(),
        started_at = NULL, finished_at = NULL, worker_id = NULL, lease_expires_at = NULL
    WHERE id = ANY(%(ids)s::uuid[]) AND state IN ('dead', 'cancelled') AND workflow_id IS NULL
      AND (unique_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM {schema}.jobs h WHERE h.unique_key = jobs.unique_key AND h.id <> jobs.id
            AND (strpos(h.unique_states, ',' || h.state || ',') > 0
                 OR (h.id > jobs.id AND h.id = ANY(%(ids)s::uuid[]) AND h.state IN ('dead', 'cancelled')))))
    RETURNING id, queue
)
SELECT id,
       (SELECT count(pg_notify(%(channel)s, q.queue))
        FROM (SELECT DISTINCT queue FROM moved) AS q) AS notified
FROM moved;

-- name: retry_all_dead
-- description: Every dead job back to queued now; returns how many moved (not workflow steps).
WITH moved AS (
    UPDATE {schema}.jobs
    SET state = 'queued', attempt = 0, crash_count = 0, blamed_crashes = 0,
        unproven_crashes = 0, snooze_count = 0, dead_reason = NULL,
        cancelled_at = NULL, cancelled_by = NULL, run_at = now(),
        started_at = NULL, finished_at = NULL, worker_id = NULL, lease_expires_at = NULL
    WHERE state = 'dead' AND workflow_id IS NULL
      AND (unique_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM {schema}.jobs h WHERE h.unique_key = jobs.unique_key AND h.id <> jobs.id
            AND (strpos(h.unique_states, ',' || h.state || ',') > 0
                 OR (h.id > jobs.id AND h.state = 'dead'))))
    RETURNING queue
)
SELECT count(*) AS count,
       (SELECT count(pg_notify(%(channel)s, q.queue))
        FROM (SELECT DISTINCT queue FROM moved) AS q) AS notified
FROM moved;

-- name: cancel_jobs
-- description: Queued jobs to cancelled.
UPDATE {schema}.jobs SET state = 'cancelled', finished_at = now(), cancelled_at = now(),
                cancelled_by = %(by)s::text
WHERE id = ANY(%(ids)s::uuid[]) AND state = 'queued'
RETURNING id;

-- name: request_cancel
-- description: Cancel jobs: queued ones now; running ones are marked and their workers told.
-- A running job keeps running until its worker stops it (NOTIFY on the cancel channel,
-- payload the job id; workers also poll). Each row says what happened to one job:
-- moved with its new state, or not moved (finished, or a cancel already asked for).
WITH moved AS (
    UPDATE {schema}.jobs
    SET state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,
        finished_at = CASE WHEN state = 'queued' THEN now() ELSE finished_at END,
        cancelled_at = now(), cancelled_by = %(by)s::text
    WHERE id = ANY(%(ids)s::uuid[])
      AND (state = 'queued' OR (state = 'running' AND cancelled_at IS NULL))
    RETURNING id, state
), told AS (
    SELECT count(pg_notify(%(cancel_channel)s, id::text)) AS n
    FROM moved WHERE state = 'running'
)
SELECT j.id, coalesce(m.state, j.state) AS state, m.id IS NOT NULL AS moved,
       (SELECT n FROM told) AS notified
FROM {schema}.jobs j
LEFT JOIN moved m ON m.id = j.id
WHERE j.id = ANY(%(ids)s::uuid[]);

-- name: cancel_requested
-- description: This worker's running jobs whose cancel was asked for.
SELECT id FROM {schema}.jobs
WHERE worker_id = %(worker_id)s AND state = 'running' AND cancelled_at IS NOT NULL;

-- name: advance_next_scheduled
-- description: Make the queued jobs with the earliest future run_at on these queues due
-- now (the clock jump of taskq.testing.drain). Returns their ids. A workflow step that
-- waits for its upstream steps is not scheduled: it is never made due here.
WITH next AS (
    SELECT min(run_at) AS at FROM {schema}.jobs
    WHERE state = 'queued' AND queue = ANY(%(queues)s::text[]) AND run_at > now()
      AND coalesce(upstream_left, 0) = 0
)
UPDATE {schema}.jobs SET run_at = now()
FROM next
WHERE jobs.state = 'queued' AND jobs.queue = ANY(%(queues)s::text[]) AND jobs.run_at = next.at
RETURNING jobs.id;

-- name: actor_configs
-- description: Every recorded actor configuration.
SELECT name, queue, max_attempts, max_crashes, idempotent, cpu_bound, timeout, extra::text
FROM {schema}.actors ORDER BY name;

-- name: actor_configs_lock
-- description: Serialise workers comparing and recording actor configurations (one of
-- several starting at once with the same change sees it) until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext(%(key)s));

-- name: upsert_actor_configs
-- description: Record a batch of actor configurations (insert or overwrite).
INSERT INTO {schema}.actors AS a (name, queue, max_attempts, max_crashes, idempotent, cpu_bound,
                         timeout, extra, updated_at)
SELECT v.name, v.queue, v.max_attempts, v.max_crashes, v.idempotent, v.cpu_bound,
       v.timeout, v.extra::json, now()
FROM unnest(%(names)s::text[], %(queues)s::text[], %(max_attempts)s::int[],
            %(max_crashes)s::int[], %(idempotent)s::bool[], %(cpu_bound)s::bool[],
            %(timeouts)s::float8[], %(extras)s::text[])
     AS v(name, queue, max_attempts, max_crashes, idempotent, cpu_bound, timeout, extra)
ON CONFLICT (name) DO UPDATE
SET queue = excluded.queue, max_attempts = excluded.max_attempts,
    max_crashes = excluded.max_crashes, idempotent = excluded.idempotent,
    cpu_bound = excluded.cpu_bound, timeout = excluded.timeout, extra = excluded.extra,
    updated_at = excluded.updated_at;

-- name: register_worker
-- description: Insert (or refresh) a worker's row.
INSERT INTO {schema}.workers (id, workgroup_instance, worker_label, pid, hostname, queues,
                     started_at, last_seen_at, max_connections)
VALUES (%(id)s, %(workgroup_instance)s, %(worker_label)s, %(pid)s, %(hostname)s,
        %(queues)s::text[], coalesce(%(started_at)s::timestamptz, now()), now(),
        %(max_connections)s::int)
ON CONFLICT (id) DO UPDATE
SET workgroup_instance = excluded.workgroup_instance, worker_label = excluded.worker_label,
    pid = excluded.pid, hostname = excluded.hostname, queues = excluded.queues,
    max_connections = excluded.max_connections,
    last_seen_at = excluded.last_seen_at;

-- name: unregister_worker
-- description: Remove a worker's row (clean exit).
DELETE FROM {schema}.workers WHERE id = %(id)s;

-- name: list_workers
-- description: Every worker row, oldest first.
SELECT id, pid, hostname, queues, worker_label, workgroup_instance, started_at, last_seen_at,
       max_connections, connections
FROM {schema}.workers ORDER BY started_at, id;

-- name: find_worker
-- description: The newest row for (workgroup instance, label): the workgroup's health check.
SELECT id, pid, hostname, queues, worker_label, workgroup_instance, started_at, last_seen_at,
       max_connections, connections
FROM {schema}.workers
WHERE workgroup_instance = %(workgroup_instance)s AND worker_label = %(worker_label)s
ORDER BY last_seen_at DESC
LIMIT 1;

-- name: heartbeat
-- description: Touch the worker row and extend the leases of its running jobs.
-- Rows locked right now are skipped, never waited for: they are being written by the
-- acker's complete (the run is ending) or by a cancel request, and the next beat extends
-- whatever still runs. Waiting made the heartbeat and complete deadlock: each locks the
-- worker's running rows, in different orders.
WITH seen AS (
    UPDATE {schema}.workers
    SET last_seen_at = now(), connections = coalesce(%(connections)s::int, connections)
    WHERE id = %(worker_id)s
), mine AS (
    SELECT id FROM {schema}.jobs
    WHERE worker_id = %(worker_id)s AND state = 'running'
    FOR UPDATE SKIP LOCKED
), extended AS (
    UPDATE {schema}.jobs SET lease_expires_at = now() + make_interval(secs => %(lease)s::float8)
    FROM mine
    WHERE jobs.id = mine.id
    RETURNING 1
)
SELECT count(*) AS extended FROM extended;

-- fragment: start_run
-- description: The SET list of a claim (claim, claim_limited): a new run by %(worker_id)s.
-- A new run also ends any claim a late outcome of an earlier run had (lost_run).
state = 'running', attempt = jobs.attempt + 1, worker_id = %(worker_id)s,
lease_expires_at = now() + make_interval(secs => %(lease)s::float8), started_at = now(),
lost_worker_id = NULL, late = false

-- fragment: claim_answer
-- description: What a claim returns of its `claimed` CTE c (ordered by the statement).
-- commit_mode: a claim whose jobs are all idempotent commits without waiting for its WAL
-- to reach the disk (synchronous_commit off, for this transaction only: one fsync less on
-- the path from enqueue to start). If Postgres crashed before the WAL writer flushed it
-- (at most ~3 x wal_writer_delay), the claim is undone: the jobs are queued again with
-- their attempt, run again (allowed: idempotent), and the first run's outcome is fenced
-- out. A claim holding any non-idempotent job keeps the server's setting: such a job must
-- never run twice, and a durable claim lets its outcome be written after a Postgres
-- restart. A durable write that follows (complete, heartbeat) flushes the claim with it.
c.id, c.actor, c.queue, c.args, c.kwargs, c.attempt, c.max_attempts, c.crash_count,
c.max_crashes, c.idempotent, c.snooze_count, c.run_alone, c.meta, c.workflow,
set_config('synchronous_commit',
           CASE WHEN bool_and(c.idempotent) OVER () THEN 'off'
                ELSE current_setting('synchronous_commit') END,
           true) AS commit_mode

-- fragment: claimed_columns
-- description: The claimed rows' columns (claim, claim_limited), JSON as text.
-- A workflow's step carries [workflow id, step name, how many upstream steps] as one JSON
-- column (NULL for every other job: one column, not three, on the plain job's path). Not
-- the upstream ids: workflow_upstream_results reads them here, by the step's id.
jobs.id, jobs.actor, jobs.queue, jobs.args::text AS args, jobs.kwargs::text AS kwargs,
jobs.attempt, jobs.max_attempts, jobs.crash_count, jobs.max_crashes, jobs.idempotent,
jobs.priority, jobs.run_at, jobs.snooze_count, jobs.run_alone, jobs.meta::text AS meta,
CASE WHEN jobs.workflow_id IS NOT NULL
     THEN json_build_array(jobs.workflow_id, jobs.step, cardinality(jobs.upstream))::text
END AS workflow

-- fragment: claim_picked
-- description: Start a run of each picked job (CTE picked: ids) and return its columns.
UPDATE {schema}.jobs
SET {{start_run}}
FROM picked
WHERE jobs.id = picked.id
RETURNING {{claimed_columns}}

-- name: claim
-- description: Claim up to n due queued jobs in (priority, run_at, id) order, skipping locked rows.
-- One ordered scan of jobs_claim_idx per queue (queue = ANY(...) would sort every queued
-- row); a row locked here but not picked is free again when the statement ends. Paused
-- queues are skipped, and so are limited queues, and every queue while any actor has a
-- limit: those are claimed by claim_limited (the store takes that path when limits exist;
-- this only covers its cached "no limits" going stale, so it may just wait).
-- The actor check is a per-queue EXISTS here, not `actor <> ALL(ARRAY(SELECT ...))` in the
-- scan: the planner cannot estimate that filter, expects one row, and with statistics on
-- jobs sorts every queued row of the queue (11 ms at 5,000 queued) instead of reading
-- jobs_claim_idx in order (0.9 ms).
-- The rows come back in claim order (the server sorts the batch: sorting it in Python,
-- by datetimes and UUIDs, cost more than the rest of decoding it).
WITH open AS MATERIALIZED (  -- once per queue, before any row is locked
    SELECT q.name FROM unnest(%(queues)s::text[]) AS q(name)
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.queues c WHERE c.name = q.name AND c.paused)
      AND NOT EXISTS (SELECT 1 FROM {schema}.limits l WHERE l.kind = 'queue' AND l.name = q.name)
      AND NOT EXISTS (SELECT 1 FROM {schema}.limits l WHERE l.kind = 'actor')
), picked AS (
    SELECT j.id
    FROM open AS q
    CROSS JOIN LATERAL (
        SELECT id, priority, run_at FROM {schema}.jobs
        WHERE state = 'queued'
          AND queue = q.name
          AND run_at <= now()
          AND actor <> ALL(%(exclude_actors)s::text[])
        ORDER BY priority, run_at, id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) AS j
    ORDER BY j.priority, j.run_at, j.id
    LIMIT %(limit)s
), claimed AS (
    {{claim_picked}}
)
SELECT {{claim_answer}}
FROM claimed c
ORDER BY c.priority, c.run_at, c.id;

-- fragment: end_run
-- description: The SET list that ends a run, once for every way a run ends.
-- Used by complete, rescue_worker and rescue_expired as `UPDATE jobs SET ... FROM verdict v`:
-- v.kind is the outcome ('succeeded', 'retry', 'snoozed', 'dead', 'cancelled' or 'crashed'),
-- v.next_state/v.next_reason the state it leads to, v.worker_id the run's worker,
-- v.blamed/v.shared what a crash blames (see crash_outcome, migration 0004_b),
-- v.result/v.error/v.delay its data. A re-queued job forgets its run (worker, start,
-- finish); any other keeps who ran it. A crash remembers whose run it ended
-- (lost_worker_id); an outcome written to a row no longer running is marked late.
-- A snooze gives the attempt back and counts the snooze. A job whose cancel was asked
-- for (cancelled_at set while it ran) ends `cancelled` whatever the outcome: never re-run.
state = CASE WHEN jobs.cancelled_at IS NULL THEN v.next_state ELSE 'cancelled' END,
dead_reason = CASE WHEN jobs.cancelled_at IS NULL THEN v.next_reason END,
crash_count = jobs.crash_count + CASE WHEN v.kind = 'crashed' THEN 1 ELSE 0 END,
blamed_crashes = jobs.blamed_crashes + CASE WHEN v.kind = 'crashed' AND v.blamed
                                          THEN 1 ELSE 0 END,
unproven_crashes = jobs.unproven_crashes
                   + CASE WHEN v.kind = 'crashed' AND NOT (v.blamed AND NOT v.shared)
                          THEN 1 ELSE 0 END,
run_alone = CASE WHEN v.kind <> 'crashed' THEN false
                 WHEN v.blamed AND v.shared THEN true
                 ELSE jobs.run_alone END,
attempt = jobs.attempt - CASE WHEN v.kind = 'snoozed' AND jobs.cancelled_at IS NULL
                              THEN 1 ELSE 0 END,
snooze_count = jobs.snooze_count + CASE WHEN v.kind = 'snoozed' AND jobs.cancelled_at IS NULL
                                        THEN 1 ELSE 0 END,
result = CASE WHEN v.kind = 'succeeded' THEN v.result::json END,
last_error = coalesce(v.error, jobs.last_error),
run_at = CASE WHEN v.next_state = 'queued' AND jobs.cancelled_at IS NULL
              THEN now() + make_interval(secs => v.delay) ELSE jobs.run_at END,
started_at = CASE WHEN v.next_state = 'queued' AND jobs.cancelled_at IS NULL
                  THEN NULL ELSE jobs.started_at END,
finished_at = CASE WHEN v.next_state = 'queued' AND jobs.cancelled_at IS NULL
                   THEN NULL ELSE now() END,
worker_id = CASE WHEN v.next_state = 'queued' AND jobs.cancelled_at IS NULL
                 THEN NULL ELSE v.worker_id END,
lease_expires_at = NULL,
lost_worker_id = CASE WHEN v.kind = 'crashed' THEN v.worker_id END,
late = (jobs.state <> 'running')

-- fragment: lost_run
-- description: The row is still the crash verdict that ended worker w's run of this
-- attempt, and nobody has run the job since (a claim clears lost_worker_id and moves
-- attempt): re-queued and not claimed, or dead by the crash rules. An outcome of that
-- run (not a crash) is still recorded, late (docs/jobs.md, "Late outcomes") -- unless
-- another job holds the row's unique key now: the late write would collide with it.
(jobs.state = 'queued' OR (jobs.state = 'dead' AND jobs.dead_reason IN ('crashed', 'poison')))
AND (jobs.unique_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM {schema}.jobs h WHERE h.unique_key = jobs.unique_key AND h.id <> jobs.id
      AND strpos(h.unique_states, ',' || h.state || ',') > 0))

-- fragment: crash_rule
-- description: The crash rules (crash_outcome) on job row j for a death d (d.blamed, d.shared).
-- max_unblamed is the actor option max_unblamed_crashes (recorded in actors.extra by the
-- workers; 5, taskq.blame.DEFAULT_MAX_UNBLAMED_CRASHES, for an actor never recorded).
{schema}.crash_outcome(j.blamed_crashes, j.unproven_crashes, j.max_crashes, j.idempotent,
              d.blamed, d.shared,
              coalesce((SELECT (a.extra->>'max_unblamed_crashes')::int
                        FROM {schema}.actors a WHERE a.name = j.actor), 5))

-- fragment: crash_verdict
-- description: The verdict columns of a crash of job row j: rule c.rule, death d.
j.worker_id, 'crashed'::text AS kind, NULL::text AS result, 0.0::float8 AS delay,
d.blamed, d.shared,
CASE c.rule WHEN 'queued' THEN 'queued' ELSE 'dead' END AS next_state,
nullif(c.rule, 'queued') AS next_reason

-- name: limits_exist
-- description: Does any limit apply to a claim on these queues? (cached briefly by the store)
SELECT EXISTS (SELECT 1 FROM {schema}.limits
               WHERE kind = 'actor' OR (kind = 'queue' AND name = ANY(%(queues)s::text[])))
       AS found;

-- name: begin
-- description: Open the limited claim's transaction (sent in its pipeline, no round trip of its own).
BEGIN;

-- name: commit
-- description: Commit the limited claim's transaction (the pipeline's last command).
COMMIT;

-- name: rollback
-- description: Abandon a limited claim's transaction after an error.
ROLLBACK;

-- name: limits_lock
-- description: Serialise limited claims until the transaction ends; plan claim_limited once.
-- claim_limited's estimated cost (a subplan per limit row of a never-analysed tiny table)
-- passes jit_above_cost on a big jobs table, and compiling it took 7 s at 1M queued jobs
-- for a 2 ms query: JIT is off for the rest of this transaction. And its custom plans
-- cost 8-18 ms of planning per claim: the prepared statement keeps one generic plan.
-- A generic plan does not know the LIMIT (it assumes a tenth of the rows), so once jobs
-- has statistics it would sort every queued row of a queue rather than read
-- jobs_claim_idx in order: 224 ms a claim at 200,000 queued instead of 1.2 ms. Sorting
-- is off for this transaction too (the few sorts with no index to replace them remain).
SELECT pg_advisory_xact_lock(hashtext(%(key)s)), set_config('jit', 'off', true),
       set_config('plan_cache_mode', 'force_generic_plan', true),
       set_config('enable_sort', 'off', true);

-- name: claim_limited
-- description: The claim under limits: each queue and actor gets at most its room (run under limits_lock).
-- Runs after limits_lock was taken, in its own statement, so its snapshot sees every
-- claim committed before: the running counts and windowed starts it reads are exact.
-- Rate windows use clock_timestamp() (read after the lock), not the transaction's now().
-- A bucket is 1/20 of the period; every bucket overlapping the last period counts.
-- room = min(concurrency - running, rate - starts in the window). Each open queue offers
-- its first n due jobs; of those, each limited actor keeps its room's worth, then each
-- queue its room's worth, then the batch stops at n. Every row also names the limits
-- that were full (`full_limits`); with nothing claimed, one row with a NULL id says it.
WITH wanted AS (
    SELECT q.name FROM unnest(%(queues)s::text[]) AS q(name)
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.queues c WHERE c.name = q.name AND c.paused)
), lim AS (
    SELECT l.kind, l.name, l.concurrency, l.rate, l.rate_period,
           clock_timestamp() - make_interval(secs => l.rate_period * 1.05) AS window_start,
           to_timestamp(floor(extract(epoch FROM clock_timestamp()) / (l.rate_period / 20))
                        * (l.rate_period / 20)) AS bucket
    FROM {schema}.limits l
    WHERE l.kind = 'actor' OR l.name IN (SELECT name FROM wanted)
), room AS (
    SELECT l.kind, l.name,
           least(
               CASE WHEN l.concurrency IS NULL THEN %(limit)s
                    ELSE l.concurrency - (
                        SELECT count(*) FROM {schema}.jobs j
                        WHERE j.state = 'running'
                          AND CASE l.kind WHEN 'queue' THEN j.queue ELSE j.actor END = l.name)
               END,
               CASE WHEN l.rate IS NULL THEN %(limit)s
                    ELSE l.rate - (
                        SELECT coalesce(sum(s.starts), 0) FROM {schema}.limit_starts s
                        WHERE s.kind = l.kind AND s.name = l.name
                          AND s.bucket > l.window_start)
               END
           ) AS room
    FROM lim l
), candidates AS (
    SELECT j.*, q.name AS queue, coalesce(r.room, %(limit)s) AS queue_room
    FROM wanted q
    LEFT JOIN room r ON r.kind = 'queue' AND r.name = q.name
    CROSS JOIN LATERAL (
        SELECT id, actor, priority, run_at FROM {schema}.jobs
        WHERE state = 'queued'
          AND queue = q.name
          AND run_at <= now()
          AND actor <> ALL(%(exclude_actors)s::text[])
          AND actor <> ALL(ARRAY(SELECT name FROM room WHERE kind = 'actor' AND room <= 0))
        ORDER BY priority, run_at, id
        LIMIT CASE WHEN coalesce(r.room, 1) > 0 THEN %(limit)s ELSE 0 END
        FOR UPDATE SKIP LOCKED
    ) AS j
), by_actor AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.actor ORDER BY c.priority, c.run_at, c.id) AS nth
    FROM candidates c
), actor_fits AS (
    SELECT b.* FROM by_actor b
    LEFT JOIN room a ON a.kind = 'actor' AND a.name = b.actor
    WHERE a.room IS NULL OR b.nth <= a.room
), by_queue AS (
    SELECT f.*, row_number() OVER (PARTITION BY f.queue ORDER BY f.priority, f.run_at, f.id) AS qnth
    FROM actor_fits f
), picked AS (
    SELECT k.id FROM by_queue k
    WHERE k.qnth <= k.queue_room
    ORDER BY k.priority, k.run_at, k.id
    LIMIT %(limit)s
), claimed AS (
    {{claim_picked}}
), counted AS (
    INSERT INTO {schema}.limit_starts AS s (kind, name, bucket, starts)
    SELECT l.kind, l.name, l.bucket, count(*)
    FROM claimed c
    JOIN lim l ON l.rate IS NOT NULL
              AND l.name = CASE l.kind WHEN 'queue' THEN c.queue ELSE c.actor END
    GROUP BY l.kind, l.name, l.bucket
    ON CONFLICT (kind, name, bucket) DO UPDATE SET starts = s.starts + excluded.starts
), pruned AS (  -- start buckets that left their window (disjoint from those counted)
    DELETE FROM {schema}.limit_starts s
    USING lim l
    WHERE s.kind = l.kind AND s.name = l.name AND l.rate IS NOT NULL
      AND s.bucket <= l.window_start
), full_limits AS (  -- the limits that had no room: one row even when nothing was claimed
    SELECT array_agg(kind || ':' || name) AS full_limits FROM room WHERE room <= 0
)
SELECT {{claim_answer}}, f.full_limits
FROM full_limits f LEFT JOIN claimed c ON true
ORDER BY c.priority, c.run_at, c.id;

-- name: pause_queue
-- description: Pause or resume a queue (paused queues are skipped by every claim).
INSERT INTO {schema}.queues AS c (name, paused, paused_at, paused_by, updated_at)
VALUES (%(name)s, %(paused)s, CASE WHEN %(paused)s THEN now() END,
        CASE WHEN %(paused)s THEN %(by)s::text END, now())
ON CONFLICT (name) DO UPDATE
SET paused = excluded.paused,
    paused_at = CASE WHEN excluded.paused THEN coalesce(c.paused_at, excluded.paused_at) END,
    paused_by = CASE WHEN excluded.paused THEN coalesce(c.paused_by, excluded.paused_by) END,
    updated_at = excluded.updated_at;

-- name: set_limits
-- description: Set a queue's or an actor's limits (insert or overwrite).
INSERT INTO {schema}.limits AS l (kind, name, concurrency, rate, rate_period, updated_at)
VALUES (%(kind)s, %(name)s, %(concurrency)s, %(rate)s, %(rate_period)s, now())
ON CONFLICT (kind, name) DO UPDATE
SET concurrency = excluded.concurrency, rate = excluded.rate,
    rate_period = excluded.rate_period, updated_at = excluded.updated_at;

-- name: clear_limits
-- description: Remove a queue's or an actor's limits and its counted starts.
WITH gone AS (
    DELETE FROM {schema}.limit_starts WHERE kind = %(kind)s AND name = %(name)s
)
DELETE FROM {schema}.limits WHERE kind = %(kind)s AND name = %(name)s;

-- name: get_limits
-- description: Every limit, by kind and name.
SELECT kind, name, concurrency, rate, rate_period FROM {schema}.limits ORDER BY kind, name;

-- name: queue_depths
-- description: Jobs per queue and state, with the oldest due queued job's wait in seconds.
SELECT queue, state, count(*) AS n,
       extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'queued'
                                                      AND run_at <= now()))::float8 AS oldest_s
FROM {schema}.jobs
GROUP BY queue, state;

-- name: paused_queues
-- description: The names of the paused queues.
SELECT name FROM {schema}.queues WHERE paused ORDER BY name;

-- name: queue_controls
-- description: Every queue row (pause state).
SELECT name, paused, paused_at, paused_by FROM {schema}.queues ORDER BY name;

-- name: complete
-- description: Write a batch of run outcomes, each fenced by (id, attempt, worker, running).
-- An outcome's meta (the job's whole meta, when the run changed it) is saved with it.
-- A late outcome (its run already ended by the crash rules, nobody ran the job since) is
-- still written: see the lost_run fragment.
-- The fence is wrapped in `(...) IS TRUE` on purpose: it keeps the planner from driving
-- the update through jobs_running_idx (worker_id). Once psycopg prepares this statement,
-- the generic plan otherwise scans every running row of the worker per outcome, and a
-- 200-row batch went from 3 ms to 250 ms as running rows piled up (benchmarks showed the
-- drain at concurrency 32 falling to 1/4). Rows are found by primary key instead.
-- The updated rows are also fenced by `id = ANY(ids)`, an index condition the planner
-- costs at the batch's size whatever it knows of the table: on a jobs table it has no
-- statistics for yet (new, bulk-loaded, or autovacuum off) it otherwise hash-joined the
-- batch against a sequential scan of every row: 8 outcomes at 3,000 jobs took 3.1 -
-- 4.7 ms (1.2 ms by the index), and more as the table grew until an ANALYZE.
WITH outcome AS (
    SELECT * FROM unnest(%(ids)s::uuid[], %(attempts)s::int[], %(kinds)s::text[],
                         %(results)s::text[], %(errors)s::text[], %(delays)s::float8[],
                         %(reasons)s::text[], %(metas)s::text[], %(blames)s::bool[])
        AS o(id, attempt, kind, result, error, delay, reason, meta, blamed)
), verdict AS (
    SELECT o.*, %(worker_id)s::uuid AS worker_id, false AS shared,
           CASE o.kind
               WHEN 'retry' THEN 'queued'
               WHEN 'snoozed' THEN 'queued'
               WHEN 'crashed' THEN CASE c.rule WHEN 'queued' THEN 'queued' ELSE 'dead' END
               ELSE o.kind
           END AS next_state,
           CASE o.kind
               WHEN 'dead' THEN coalesce(o.reason, 'failed')
               WHEN 'crashed' THEN nullif(c.rule, 'queued')
           END AS next_reason
    FROM outcome o
    JOIN {schema}.jobs j ON j.id = o.id
    -- one job per pool process: a crashed outcome's death is never shared
    CROSS JOIN LATERAL (SELECT o.blamed, false AS shared) AS d
    CROSS JOIN LATERAL (SELECT CASE WHEN o.kind = 'crashed' THEN {{crash_rule}} END AS rule) AS c
), done AS (
    UPDATE {schema}.jobs
    SET {{end_run}},
        meta = coalesce(v.meta::json, jobs.meta)
    FROM verdict v
    WHERE jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.id = ANY(%(ids)s::uuid[])
      AND ((jobs.worker_id = %(worker_id)s AND jobs.state = 'running')
           OR (v.kind IN ('succeeded', 'retry', 'dead')
               AND jobs.lost_worker_id = %(worker_id)s AND ({{lost_run}}))) IS TRUE
    RETURNING jobs.queue, jobs.state, jobs.run_at
)
SELECT count(*) AS changed,
       (SELECT count(pg_notify(%(channel)s, q.queue))
        FROM (SELECT DISTINCT queue FROM done
              WHERE state = 'queued' AND run_at <= now()) AS q) AS notified
FROM done;

-- name: give_back
-- description: Return claimed jobs to queued without charging the attempt (fenced).
WITH returned AS (
    UPDATE {schema}.jobs
    SET state = CASE WHEN jobs.cancelled_at IS NULL THEN 'queued' ELSE 'cancelled' END,
        attempt = jobs.attempt - 1,
        worker_id = CASE WHEN jobs.cancelled_at IS NULL THEN NULL ELSE jobs.worker_id END,
        lease_expires_at = NULL,
        started_at = CASE WHEN jobs.cancelled_at IS NULL THEN NULL ELSE jobs.started_at END,
        finished_at = CASE WHEN jobs.cancelled_at IS NULL THEN NULL ELSE now() END
    FROM unnest(%(ids)s::uuid[], %(attempts)s::int[]) AS v(id, attempt)
    WHERE jobs.id = v.id AND jobs.attempt = v.attempt
      AND (jobs.worker_id = %(worker_id)s AND jobs.state = 'running') IS TRUE
    RETURNING jobs.queue, jobs.run_at, jobs.state
)
SELECT count(*) AS changed,
       (SELECT count(pg_notify(%(channel)s, q.queue))
        FROM (SELECT DISTINCT queue FROM returned
              WHERE state = 'queued' AND run_at <= now()) AS q) AS notified
FROM returned;

-- name: rescue_worker
-- description: An observed death: crash rules on that worker's running jobs; drop its row.
-- The death is shared when the worker was running more than one job.
WITH gone AS (
    DELETE FROM {schema}.workers WHERE id = %(worker_id)s
), death AS (
    SELECT %(blamed)s::bool AS blamed,
           (SELECT count(*) FROM {schema}.jobs
            WHERE worker_id = %(worker_id)s AND state = 'running') > 1 AS shared
), verdict AS (
    SELECT j.id, %(cause)s::text AS error, {{crash_verdict}}
    FROM {schema}.jobs j
    CROSS JOIN death d
    CROSS JOIN LATERAL (SELECT {{crash_rule}} AS rule) AS c
    WHERE j.worker_id = %(worker_id)s AND j.state = 'running'
), rescued AS (
    UPDATE {schema}.jobs
    SET {{end_run}}
    FROM verdict v
    WHERE jobs.id = v.id AND jobs.worker_id = %(worker_id)s AND jobs.state = 'running'
    RETURNING jobs.id, jobs.actor, jobs.state, jobs.dead_reason, jobs.crash_count, jobs.queue
)
SELECT id, actor, state, dead_reason, crash_count, queue,
       (SELECT count(pg_notify(%(channel)s, q.queue))
        FROM (SELECT DISTINCT queue FROM rescued WHERE state = 'queued') AS q) AS notified
FROM rescued;

-- name: rescue_expired
-- description: Crash rules on running jobs whose lease expired; one sweeper at a time.
-- A lost lease says nothing about the cause: it blames no job.
WITH sweeper AS (
    SELECT pg_try_advisory_xact_lock(hashtext(%(lock_key)s)) AS got
), verdict AS (
    SELECT j.id,
           %(cause)s || ': worker ' || j.worker_id::text
               || coalesce(' on ' || w.hostname || ' (pid ' || w.pid::text || ')', '')
               || ' stopped heartbeating' AS error,
           {{crash_verdict}}
    FROM {schema}.jobs j
    CROSS JOIN sweeper
    LEFT JOIN {schema}.workers w ON w.id = j.worker_id
    CROSS JOIN (SELECT false AS blamed, false AS shared) AS d
    CROSS JOIN LATERAL (SELECT {{crash_rule}} AS rule) AS c
    WHERE sweeper.got AND j.state = 'running' AND j.lease_expires_at < now()
      AND j.worker_id IS DISTINCT FROM %(exclude_worker)s::uuid
), rescued AS (
    UPDATE {schema}.jobs
    SET {{end_run}}
    FROM verdict v
    WHERE jobs.id = v.id AND jobs.worker_id = v.worker_id AND jobs.state = 'running'
      AND jobs.lease_expires_at < now()
    RETURNING jobs.id, jobs.actor, jobs.state, jobs.dead_reason, jobs.crash_count, jobs.queue
)
SELECT id, actor, state, dead_reason, crash_count, queue,
       (SELECT count(pg_notify(%(channel)s, q.queue))
        FROM (SELECT DISTINCT queue FROM rescued WHERE state = 'queued') AS q) AS notified
FROM rescued;

-- name: prune_succeeded
-- description: Delete one batch of succeeded jobs finished before a time.
DELETE FROM {schema}.jobs
WHERE id IN (SELECT id FROM {schema}.jobs
             WHERE state = 'succeeded' AND finished_at < %(before)s
             LIMIT %(batch)s);

-- name: prune_ended
-- description: Delete one batch of jobs in one other end state (dead, cancelled) finished before a time.
DELETE FROM {schema}.jobs
WHERE id IN (SELECT id FROM {schema}.jobs
             WHERE state = %(state)s AND finished_at < %(before)s
             LIMIT %(batch)s);

-- name: prune_workers
-- description: Delete worker rows not seen since a time that hold no running job.
DELETE FROM {schema}.workers w
WHERE w.last_seen_at < %(before)s
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.worker_id = w.id AND j.state = 'running');

-- name: queue_backlog
-- description: Per queue: queued (with its oldest run_at), running and dead counts; each part one scan of a partial index.
SELECT queue, 'queued' AS state, count(*) AS jobs,
       CASE WHEN min(run_at) <= now()
            THEN extract(epoch FROM now() - min(run_at))::float8 ELSE 0.0 END AS oldest_due_age
FROM {schema}.jobs WHERE state = 'queued' GROUP BY queue
UNION ALL
SELECT queue, 'running', count(*), 0.0 FROM {schema}.jobs WHERE state = 'running' GROUP BY queue
UNION ALL
SELECT queue, 'dead', count(*), 0.0 FROM {schema}.jobs WHERE state = 'dead' GROUP BY queue;

-- fragment: job_filter
-- description: The dashboard's job filters (JobFilter); a NULL parameter matches every job.
id < %(before)s::uuid AND id >= %(id_low)s::uuid
  AND (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(actor)s::text IS NULL OR actor = %(actor)s::text)
  AND (%(error)s::text IS NULL OR strpos(lower(last_error), lower(%(error)s::text)) > 0)
  AND (%(tag)s::text IS NULL OR (tags IS NOT NULL AND tags @> ARRAY[%(tag)s::text]))

-- name: browse_jobs
-- description: One page of jobs newest first, filtered, after a keyset cursor (id < before).
SELECT {{job_columns}}
FROM {schema}.jobs
WHERE {{job_filter}}
ORDER BY id DESC
LIMIT %(limit)s;

-- name: search_jobs
-- description: browse_jobs with JSON containment on arguments, keyword arguments or meta, looking at most at the newest `scan` jobs the other filters keep.
SELECT {{job_columns}}
FROM (SELECT * FROM {schema}.jobs WHERE {{job_filter}} ORDER BY id DESC LIMIT %(scan)s) AS jobs
WHERE (%(args)s::jsonb IS NULL OR args::jsonb @> %(args)s::jsonb)
  AND (%(kwargs)s::jsonb IS NULL OR kwargs::jsonb @> %(kwargs)s::jsonb)
  AND (%(meta)s::jsonb IS NULL OR (meta IS NOT NULL AND meta::jsonb @> %(meta)s::jsonb))
ORDER BY id DESC
LIMIT %(limit)s;

-- name: count_jobs
-- description: How many jobs the filters keep, counted up to `cap` (a bulk action's confirmation).
SELECT count(*) AS n FROM (SELECT 1 FROM {schema}.jobs WHERE {{job_filter}} LIMIT %(cap)s) AS kept;

-- name: activity_upto
-- description: Up to which minute queue_minutes holds counts.
SELECT upto FROM {schema}.rollups WHERE name = 'queue_minutes';

-- name: activity_fill
-- description: Count the closed minutes [from, to) per queue and actor, and per queue (actor ''), (succeeded and dead jobs by finish time, failed runs by job_errors.at) into queue_minutes, and move the watermark to `to`.
WITH events AS (
    SELECT date_trunc('minute', finished_at) AS minute, queue, actor, 1 AS s, 0 AS f, 0 AS d
    FROM {schema}.jobs WHERE state = 'succeeded' AND finished_at >= %(from)s AND finished_at < %(to)s
    UNION ALL
    SELECT date_trunc('minute', finished_at), queue, actor, 0, 0, 1
    FROM {schema}.jobs WHERE state = 'dead' AND finished_at >= %(from)s AND finished_at < %(to)s
    UNION ALL
    SELECT date_trunc('minute', e.at), j.queue, j.actor, 0, 1, 0
    FROM {schema}.job_errors AS e JOIN {schema}.jobs AS j ON j.id = e.job_id
    WHERE e.at >= %(from)s AND e.at < %(to)s
), counted AS (
    INSERT INTO {schema}.queue_minutes (minute, queue, actor, succeeded, failed_runs, dead)
    SELECT minute, queue, coalesce(actor, ''), sum(s), sum(f), sum(d) FROM events
    GROUP BY GROUPING SETS ((minute, queue, actor), (minute, queue))
    ON CONFLICT (minute, queue, actor) DO UPDATE
    SET succeeded = excluded.succeeded, failed_runs = excluded.failed_runs, dead = excluded.dead
    RETURNING 1
)
INSERT INTO {schema}.rollups (name, upto) VALUES ('queue_minutes', %(to)s)
ON CONFLICT (name) DO UPDATE SET upto = greatest(rollups.upto, excluded.upto);

-- name: activity_live
-- description: The counts of the minute still open [from, now), per queue and actor, not stored.
SELECT queue, actor, sum(s) AS succeeded, sum(f) AS failed_runs, sum(d) AS dead FROM (
    SELECT queue, actor, 1 AS s, 0 AS f, 0 AS d FROM {schema}.jobs
    WHERE state = 'succeeded' AND finished_at >= %(from)s
    UNION ALL
    SELECT queue, actor, 0, 0, 1 FROM {schema}.jobs WHERE state = 'dead' AND finished_at >= %(from)s
    UNION ALL
    SELECT j.queue, j.actor, 0, 1, 0 FROM {schema}.job_errors AS e JOIN {schema}.jobs AS j ON j.id = e.job_id
    WHERE e.at >= %(from)s
) AS events GROUP BY queue, actor;

-- name: activity_sample
-- description: The backlog's age per queue in this minute: the largest sampled.
INSERT INTO {schema}.queue_minutes (minute, queue, actor, backlog_age)
SELECT %(minute)s, q, '', a FROM unnest(%(queues)s::text[], %(ages)s::float8[]) AS t(q, a)
ON CONFLICT (minute, queue, actor) DO UPDATE
SET backlog_age = greatest(queue_minutes.backlog_age, excluded.backlog_age);

-- name: activity_prune
-- description: Forget the minutes older than the charts show.
DELETE FROM {schema}.queue_minutes WHERE minute < %(before)s;

-- name: activity_read
-- description: The queues' counted minutes (their rows of actor '') since a time, in buckets of `bucket` seconds, oldest first.
SELECT to_timestamp(floor(extract(epoch FROM minute) / %(bucket)s) * %(bucket)s) AS minute,
       queue, '' AS actor, sum(succeeded) AS succeeded, sum(failed_runs) AS failed_runs,
       sum(dead) AS dead, max(backlog_age) AS backlog_age
FROM {schema}.queue_minutes
WHERE actor = '' AND minute >= %(since)s AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
GROUP BY 1, 2 ORDER BY 1, 2;

-- name: activity_read_actors
-- description: The actors' counted minutes since a time, in buckets of `bucket` seconds, per queue and actor, oldest first.
SELECT to_timestamp(floor(extract(epoch FROM minute) / %(bucket)s) * %(bucket)s) AS minute,
       queue, actor, sum(succeeded) AS succeeded, sum(failed_runs) AS failed_runs,
       sum(dead) AS dead, NULL::float8 AS backlog_age
FROM {schema}.queue_minutes
WHERE actor <> '' AND minute >= %(since)s AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;

-- name: job_errors
-- description: Every failed run of one job, oldest first.
SELECT attempt, at, crash, worker_id, error FROM {schema}.job_errors
WHERE job_id = %(id)s ORDER BY at, attempt;

-- name: discard_jobs
-- description: Delete dead or cancelled jobs (their errors go with them).
DELETE FROM {schema}.jobs WHERE id = ANY(%(ids)s::uuid[]) AND state IN ('dead', 'cancelled')
RETURNING id;

-- name: try_lead
-- description: Take or renew the lease on a fleet-wide chore; a row comes back when we hold it.
INSERT INTO {schema}.leaders (name, holder, expires_at)
VALUES (%(name)s, %(holder)s, now() + make_interval(secs => %(seconds)s))
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE leaders.holder = excluded.holder OR leaders.expires_at < now()
RETURNING holder;

-- name: release_lead
-- description: Give up a chore's lease (clean shutdown), so another process takes it now.
DELETE FROM {schema}.leaders WHERE name = %(name)s AND holder = %(holder)s RETURNING name;

-- name: report_workgroup
-- description: Record what a workgroup supervisor says about its children.
INSERT INTO {schema}.workgroups (instance, hostname, pid, children, updated_at)
VALUES (%(instance)s, %(hostname)s, %(pid)s, %(children)s::json, now())
ON CONFLICT (instance) DO UPDATE
SET hostname = excluded.hostname, pid = excluded.pid, children = excluded.children,
    updated_at = excluded.updated_at
RETURNING instance;

-- name: remove_workgroup
-- description: Forget a workgroup that stopped cleanly.
DELETE FROM {schema}.workgroups WHERE instance = %(instance)s RETURNING instance;

-- name: list_workgroups
-- description: Workgroups heard from since a time, newest first.
SELECT instance, hostname, pid, children::text AS children, updated_at FROM {schema}.workgroups
WHERE updated_at >= %(since)s ORDER BY updated_at DESC;

-- name: record_schedules
-- description: Upsert the schedules a worker runs; first_seen_at and last_tick are kept.
INSERT INTO {schema}.schedules AS s (name, actor, cron, timezone, missed, first_seen_at, seen_at)
SELECT v.name, v.actor, v.cron, v.timezone, v.missed, %(now)s, %(now)s
FROM unnest(%(names)s::text[], %(actors)s::text[], %(crons)s::text[],
            %(timezones)s::text[], %(missed)s::text[])
     AS v(name, actor, cron, timezone, missed)
ON CONFLICT (name) DO UPDATE
SET actor = excluded.actor, cron = excluded.cron, timezone = excluded.timezone,
    missed = excluded.missed, seen_at = excluded.seen_at;

-- name: list_schedules
-- description: Every recorded schedule, by name.
SELECT name, actor, cron, timezone, missed, first_seen_at, seen_at, last_tick
FROM {schema}.schedules ORDER BY name;

-- name: mark_schedule_tick
-- description: A schedule's ticks up to this one are done (enqueued or skipped); never back.
UPDATE {schema}.schedules SET last_tick = %(tick)s
WHERE name = %(name)s AND (last_tick IS NULL OR last_tick < %(tick)s);

-- name: autovacuum_state
-- description: Whether autovacuum reaches the jobs table (server settings, the table's own option) and whether this role may VACUUM it.
-- VACUUM needs the table's owner or the database's (a superuser is both), or from
-- Postgres 17 the MAINTAIN privilege; CASE keeps 'MAINTAIN' from older servers.
SELECT current_setting('autovacuum')::bool AS server,
       current_setting('track_counts')::bool AS track_counts,
       (SELECT o.option_value::bool FROM pg_options_to_table(c.reloptions) AS o
        WHERE o.option_name = 'autovacuum_enabled') AS table_enabled,
       CASE WHEN current_setting('server_version_num')::int >= 170000
            THEN has_table_privilege(c.oid, 'MAINTAIN')
            ELSE pg_has_role(c.relowner, 'USAGE') END
       OR pg_has_role(d.datdba, 'USAGE') AS can_vacuum,
       current_user AS role
FROM pg_class AS c, pg_database AS d
WHERE c.oid = '{schema}.jobs'::regclass AND d.datname = current_database();

-- name: vacuumed_within
-- description: Whether the jobs table was vacuumed (by anyone, autovacuum too) within the last seconds.
SELECT coalesce(greatest(last_vacuum, last_autovacuum)
                > now() - make_interval(secs => %(seconds)s::float8), false) AS recent
FROM pg_stat_user_tables WHERE relid = '{schema}.jobs'::regclass;

-- name: vacuum_jobs
-- description: Reclaim the space of the jobs table's dead rows; a warning, not a wait, when another vacuum holds it.
VACUUM (SKIP_LOCKED) {schema}.jobs;

-- name: workflow_insert
-- description: Insert a workflow's row (with its steps, in one transaction: workflow_steps_insert).
-- The workflow blocks that enqueue name {schema}: they also run on the caller's own
-- connection (enqueue_workflow(..., connection=...)), whatever its search_path.
INSERT INTO {schema}.workflows (id, name, steps, steps_left)
VALUES (%(id)s, %(name)s, %(steps)s, %(steps)s);

-- name: workflow_steps_insert
-- description: Insert a workflow's steps from parallel arrays (each step's upstream and downstream ids as one array literal); %(meta)s on every step.
-- A step with no upstream step is due now; the others wait (run_at %(waiting)s, never
-- due) until the success of their last upstream step makes them due (0007_workflows).
INSERT INTO {schema}.jobs (id, actor, queue, args, kwargs, priority, run_at,
                           max_attempts, max_crashes, idempotent, workflow_id, step,
                           upstream, downstream, upstream_left, on_failure, meta)
SELECT v.id, v.actor, v.queue, v.args::json, v.kwargs::json, v.priority,
       CASE WHEN v.upstream_left = 0 THEN now() ELSE %(waiting)s::timestamptz END,
       v.max_attempts, v.max_crashes, v.idempotent, %(workflow_id)s::uuid, v.step,
       v.upstream::uuid[], v.downstream::uuid[], v.upstream_left, v.on_failure,
       %(meta)s::json
FROM unnest(%(ids)s::uuid[], %(actors)s::text[], %(queues)s::text[], %(args)s::text[],
            %(kwargs)s::text[], %(priorities)s::int[], %(max_attempts)s::int[],
            %(max_crashes)s::int[], %(idempotent)s::bool[], %(steps)s::text[],
            %(upstream)s::text[], %(downstream)s::text[], %(upstream_left)s::int[],
            %(on_failure)s::text[])
     AS v(id, actor, queue, args, kwargs, priority, max_attempts, max_crashes, idempotent,
          step, upstream, downstream, upstream_left, on_failure);

-- name: workflow_steps_copy
-- description: Stream a large workflow's steps (COPY: the store's own enqueue_workflow); due-now steps take run_at's default.
COPY {schema}.jobs (id, actor, queue, args, kwargs, priority, max_attempts, max_crashes,
                    idempotent, workflow_id, step, upstream, downstream, upstream_left,
                    on_failure, meta)
FROM STDIN;

-- name: workflow_steps_copy_waiting
-- description: Stream a large workflow's waiting steps (run_at at the end of time).
COPY {schema}.jobs (id, actor, queue, args, kwargs, priority, max_attempts, max_crashes,
                    idempotent, workflow_id, step, upstream, downstream, upstream_left,
                    on_failure, meta, run_at)
FROM STDIN;

-- fragment: workflow_columns
-- description: Every column a WorkflowInfo is read from.
id, name, state, steps, steps_left, failed_steps, cancelled_steps, created_at,
finished_at, cancelled_at, cancelled_by

-- name: workflow_get
-- description: One workflow by id.
SELECT {{workflow_columns}} FROM {schema}.workflows WHERE id = %(id)s;

-- name: workflow_steps
-- description: Every step of a workflow, in the order they were added (UUIDv7 ids).
SELECT id, step, actor, queue, state, upstream_left, upstream, on_failure, attempt,
       dead_reason, cancelled_by, last_error, result::text AS result, created_at,
       started_at, finished_at
FROM {schema}.jobs WHERE workflow_id = %(id)s
ORDER BY id;

-- name: workflow_list
-- description: Workflows newest first (UUIDv7 ids are time-ordered), optionally in one state.
SELECT {{workflow_columns}} FROM {schema}.workflows
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: workflow_upstream_results
-- description: The name and result of each upstream step of this step (as it starts).
-- The ids are read here, by the step's id: a fan-in of 1,000 steps decoded 1,000 UUIDs
-- from its claim and sent them back (37 kB), ~3 ms of the worker's time on its start.
SELECT u.step, u.result::text AS result
FROM {schema}.jobs s
CROSS JOIN LATERAL unnest(s.upstream) AS up(id)
JOIN {schema}.jobs u ON u.id = up.id
WHERE s.id = %(id)s;

-- name: workflow_request_cancel
-- description: Cancel a workflow's steps: queued ones now; running ones are marked and their workers told.
-- As request_cancel, by workflow: a step that a running step's fan-out or an ack made
-- queued while this ran is caught by running it again (the store does).
WITH moved AS (
    UPDATE {schema}.jobs
    SET state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,
        finished_at = CASE WHEN state = 'queued' THEN now() ELSE finished_at END,
        cancelled_at = now(), cancelled_by = %(by)s::text
    WHERE workflow_id = %(id)s
      AND (state = 'queued' OR (state = 'running' AND cancelled_at IS NULL))
    RETURNING id, state
)
SELECT count(*) AS moved,
       (SELECT count(pg_notify(%(cancel_channel)s, id::text))
        FROM moved WHERE state = 'running') AS notified
FROM moved;

-- name: workflow_mark_cancelled
-- description: Record who cancelled a workflow (its verdict, once its steps end, is `cancelled`).
UPDATE {schema}.workflows SET cancelled_at = now(), cancelled_by = %(by)s::text
WHERE id = %(id)s AND cancelled_at IS NULL
RETURNING id;

-- name: workflow_fanout_fence
-- description: Lock a running step that adds steps to its workflow, if this worker still holds its run (fenced).
-- Its meta (as claimed: the run's own changes are written after, with its outcome) goes
-- on every step it adds, as an enqueue's meta goes on every step of a workflow.
SELECT j.workflow_id, j.downstream, j.cancelled_at IS NOT NULL AS cancelling, w.steps,
       j.meta::text AS meta
FROM {schema}.jobs j JOIN {schema}.workflows w ON w.id = j.workflow_id
WHERE j.id = %(id)s AND j.attempt = %(attempt)s AND j.worker_id = %(worker_id)s
  AND j.state = 'running'
FOR UPDATE OF j;

-- name: workflow_fanout_link
-- description: Steps added by a running step: it runs before them, and the steps after it wait for them too.
WITH parent AS (
    UPDATE {schema}.jobs SET downstream = coalesce(downstream, ARRAY[]::uuid[]) || %(added)s::uuid[]
    WHERE id = %(id)s
    RETURNING workflow_id
), after_it AS (
    UPDATE {schema}.jobs
    SET upstream = coalesce(upstream, ARRAY[]::uuid[]) || %(added)s::uuid[],
        upstream_left = upstream_left + cardinality(%(added)s::uuid[])
    WHERE id = ANY(%(downstream)s::uuid[]) AND state = 'queued'
)
UPDATE {schema}.workflows
SET steps = steps + cardinality(%(added)s::uuid[]),
    steps_left = steps_left + cardinality(%(added)s::uuid[])
WHERE id = (SELECT workflow_id FROM parent);

-- name: workflow_totals
-- description: How many workflows ever finished, by state (taskq_workflows_finished_total).
SELECT state, finished FROM {schema}.workflow_totals ORDER BY state;

-- name: prune_workflows
-- description: Delete one batch of finished workflows whose steps are all pruned.
DELETE FROM {schema}.workflows
WHERE id IN (SELECT w.id FROM {schema}.workflows w
             WHERE w.finished_at < %(before)s
               AND NOT EXISTS (SELECT 1 FROM {schema}.jobs j WHERE j.workflow_id = w.id)
             LIMIT %(batch)s);
