-- Every statement the SQLite store runs. Parameters are sqlite3's :name style; the
-- store passes the clock as :now (REAL unix seconds) so one host clock rules all times.
-- Lists (queues, excluded actors, ids) arrive as JSON arrays read with json_each.

-- name: begin_immediate
-- description: Start a write transaction, taking the database's write lock now.
BEGIN IMMEDIATE;

-- name: commit
-- description: Commit the current transaction.
COMMIT;

-- name: rollback
-- description: Abandon the current transaction.
ROLLBACK;

-- name: journal_mode_wal
-- description: Readers and one writer at once, across processes (persistent in the file).
PRAGMA journal_mode = WAL;

-- name: synchronous_normal
-- description: Durable at checkpoints; safe with WAL.
PRAGMA synchronous = NORMAL;

-- name: data_version
-- description: Changes when another connection commits to the file.
PRAGMA data_version;

-- name: create_migrations_table
-- description: The record of applied migrations.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    TEXT PRIMARY KEY,
    applied_at REAL NOT NULL
);

-- name: applied_migrations
-- description: Versions already applied, in order.
SELECT version FROM schema_migrations ORDER BY version;

-- name: record_migration
-- description: Mark one migration as applied.
INSERT INTO schema_migrations (version, applied_at) VALUES (:version, :now);

-- name: ping
-- description: The cheapest query.
SELECT 1;

-- name: enqueue
-- description: Insert one job (run in a batch inside one transaction).
INSERT INTO jobs (id, actor, queue, args, kwargs, priority, run_at, created_at,
                  max_attempts, max_crashes, idempotent)
VALUES (:id, :actor, :queue, :args, :kwargs, :priority, coalesce(:run_at, :now), :now,
        :max_attempts, :max_crashes, :idempotent);

-- name: enqueue_columns
-- description: Insert one job of a batch given as columns (executemany, one row a tuple).
-- Positional: each row is a tuple, cheaper to build and bind than a dict per job.
INSERT INTO jobs (id, args, kwargs, actor, queue, priority, run_at, created_at,
                  max_attempts, max_crashes, idempotent, meta, tags)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: enqueue_full
-- description: Insert one job that carries a unique key, meta or tags; a held key inserts nothing.
-- The write lock (BEGIN IMMEDIATE, or the caller's transaction) makes the batch's
-- inserts and the holder lookup below one serial step; ON CONFLICT on jobs_unique_idx
-- skips a job whose key is held.
INSERT INTO jobs (id, actor, queue, args, kwargs, priority, run_at, created_at,
                  max_attempts, max_crashes, idempotent, unique_key, unique_states, meta, tags)
VALUES (:id, :actor, :queue, :args, :kwargs, :priority, coalesce(:run_at, :now), :now,
        :max_attempts, :max_crashes, :idempotent, :unique_key, :unique_states, :meta, :tags)
ON CONFLICT (unique_key)
    WHERE unique_key IS NOT NULL AND instr(unique_states, ',' || state || ',') > 0
    DO NOTHING;

-- name: unique_holders
-- description: The jobs holding these unique keys now (enqueue's answer to a duplicate).
SELECT unique_key, id FROM jobs
WHERE unique_key IN (SELECT value FROM json_each(:keys))
  AND instr(unique_states, ',' || state || ',') > 0;

-- name: database_file
-- description: The file behind a connection's main database (a caller's connection must be the store's).
SELECT file FROM pragma_database_list WHERE name = 'main';

-- fragment: job_columns
-- description: Every column a Job is read from (store/rows.py reads them by name; JSON stored as text).
id, actor, queue, args, kwargs, priority, state, attempt, max_attempts,
crash_count, max_crashes, idempotent, run_at, created_at, started_at, finished_at,
worker_id, lease_expires_at, last_error, dead_reason, result, snooze_count,
cancelled_at, cancelled_by, meta, tags, unique_key, late,
blamed_crashes, unproven_crashes, workflow_id, step

-- name: get_job
-- description: One job by id.
SELECT {{job_columns}}
FROM jobs WHERE id = :id;

-- name: list_jobs
-- description: Jobs newest first (UUIDv7 ids are time-ordered), optionally by state/queue/tag.
SELECT {{job_columns}}
FROM jobs
WHERE (:state IS NULL OR state = :state) AND (:queue IS NULL OR queue = :queue)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value = :tag))
ORDER BY id DESC
LIMIT :limit;

-- name: stats
-- description: Number of jobs per state (states without jobs are absent).
SELECT state, count(*) AS count FROM jobs GROUP BY state;

-- name: retry_jobs
-- description: Dead or cancelled jobs back to queued now, counters reset, error kept.
-- A job whose unique key another job holds (or a newer job retried with it) stays put,
-- and so does a workflow's step: the steps after it have ended (docs/workflows.md).
UPDATE jobs
SET state = 'queued', attempt = 0, crash_count = 0, blamed_crashes = 0,
    unproven_crashes = 0, snooze_count = 0, dead_reason = NULL,
    cancelled_at = NULL, cancelled_by = NULL, run_at = :now,
    started_at = NULL, finished_at = NULL, worker_id = NULL, lease_expires_at = NULL
WHERE id IN (SELECT value FROM json_each(:ids)) AND state IN ('dead', 'cancelled')
  AND workflow_id IS NULL
  AND (unique_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM jobs h WHERE h.unique_key = jobs.unique_key AND h.id <> jobs.id
        AND (instr(h.unique_states, ',' || h.state || ',') > 0
             OR (h.id > jobs.id AND h.id IN (SELECT value FROM json_each(:ids)) AND h.state IN ('dead', 'cancelled')))))
RETURNING id;

-- name: retry_all_dead
-- description: Every dead job back to queued now (not workflow steps).
UPDATE jobs
SET state = 'queued', attempt = 0, crash_count = 0, blamed_crashes = 0,
    unproven_crashes = 0, snooze_count = 0, dead_reason = NULL,
    cancelled_at = NULL, cancelled_by = NULL, run_at = :now,
    started_at = NULL, finished_at = NULL, worker_id = NULL, lease_expires_at = NULL
WHERE state = 'dead' AND workflow_id IS NULL
  AND (unique_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM jobs h WHERE h.unique_key = jobs.unique_key AND h.id <> jobs.id
        AND (instr(h.unique_states, ',' || h.state || ',') > 0
             OR (h.id > jobs.id AND h.state = 'dead'))));

-- name: cancel_jobs
-- description: Queued jobs to cancelled.
UPDATE jobs SET state = 'cancelled', finished_at = :now, cancelled_at = :now,
                cancelled_by = :by
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'queued'
RETURNING id;

-- name: job_states
-- description: The state of each of these jobs, and whether a cancel was asked for.
SELECT id, state, cancelled_at IS NOT NULL AS cancel_asked FROM jobs
WHERE id IN (SELECT value FROM json_each(:ids));

-- name: request_cancel
-- description: Cancel jobs: queued ones now; running ones are marked (their workers poll).
UPDATE jobs
SET state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,
    finished_at = CASE WHEN state = 'queued' THEN :now ELSE finished_at END,
    cancelled_at = :now, cancelled_by = :by
WHERE id IN (SELECT value FROM json_each(:ids))
  AND (state = 'queued' OR (state = 'running' AND cancelled_at IS NULL))
RETURNING id, state;

-- name: cancel_requested
-- description: This worker's running jobs whose cancel was asked for.
SELECT id FROM jobs
WHERE worker_id = :worker_id AND state = 'running' AND cancelled_at IS NOT NULL;

-- name: advance_next_scheduled
-- description: Make the queued jobs with the earliest future run_at on these queues due
-- now (the clock jump of taskq.testing.drain). Returns their ids. A workflow step that
-- waits for its upstream steps is not scheduled: it is never made due here.
UPDATE jobs SET run_at = :now
WHERE state = 'queued' AND queue IN (SELECT value FROM json_each(:queues))
  AND coalesce(upstream_left, 0) = 0
  AND run_at = (SELECT min(run_at) FROM jobs
                WHERE state = 'queued' AND queue IN (SELECT value FROM json_each(:queues))
                  AND run_at > :now AND coalesce(upstream_left, 0) = 0)
RETURNING id;

-- name: actor_configs
-- description: Every recorded actor configuration.
SELECT name, queue, max_attempts, max_crashes, idempotent, cpu_bound, timeout, extra
FROM actors ORDER BY name;

-- name: upsert_actor_config
-- description: Record one actor configuration (insert or overwrite).
INSERT INTO actors (name, queue, max_attempts, max_crashes, idempotent, cpu_bound, timeout,
                    extra, updated_at)
VALUES (:name, :queue, :max_attempts, :max_crashes, :idempotent, :cpu_bound, :timeout,
        :extra, :now)
ON CONFLICT (name) DO UPDATE
SET queue = excluded.queue, max_attempts = excluded.max_attempts,
    max_crashes = excluded.max_crashes, idempotent = excluded.idempotent,
    cpu_bound = excluded.cpu_bound, timeout = excluded.timeout, extra = excluded.extra,
    updated_at = excluded.updated_at;

-- name: register_worker
-- description: Insert (or refresh) a worker's row.
INSERT INTO workers (id, workgroup_instance, worker_label, pid, hostname, queues,
                     started_at, last_seen_at, max_connections)
VALUES (:id, :workgroup_instance, :worker_label, :pid, :hostname, :queues,
        coalesce(:started_at, :now), :now, :max_connections)
ON CONFLICT (id) DO UPDATE
SET workgroup_instance = excluded.workgroup_instance, worker_label = excluded.worker_label,
    pid = excluded.pid, hostname = excluded.hostname, queues = excluded.queues,
    max_connections = excluded.max_connections,
    last_seen_at = excluded.last_seen_at;

-- name: unregister_worker
-- description: Remove a worker's row (clean exit).
DELETE FROM workers WHERE id = :id;

-- name: list_workers
-- description: Every worker row, oldest first.
SELECT id, pid, hostname, queues, worker_label, workgroup_instance, started_at, last_seen_at,
       max_connections, connections
FROM workers ORDER BY started_at, id;

-- name: find_worker
-- description: The newest row for (workgroup instance, label): the workgroup's health check.
SELECT id, pid, hostname, queues, worker_label, workgroup_instance, started_at, last_seen_at,
       max_connections, connections
FROM workers
WHERE workgroup_instance = :workgroup_instance AND worker_label = :worker_label
ORDER BY last_seen_at DESC
LIMIT 1;

-- name: touch_worker
-- description: Heartbeat, part 1: the worker is alive.
UPDATE workers SET last_seen_at = :now, connections = coalesce(:connections, connections)
WHERE id = :worker_id;

-- name: extend_leases
-- description: Heartbeat, part 2: extend the leases of the worker's running jobs.
UPDATE jobs SET lease_expires_at = :now + :lease
WHERE worker_id = :worker_id AND state = 'running';

-- fragment: start_run
-- description: The SET list of a claim (claim, claim_ids): a new run by :worker_id.
-- A new run also ends any claim a late outcome of an earlier run had (lost_run).
state = 'running', attempt = jobs.attempt + 1, worker_id = :worker_id,
lease_expires_at = :now + :lease, started_at = :now, lost_worker_id = NULL, late = 0

-- name: claim
-- description: Claim up to n due queued jobs in (priority, run_at, id) order.
-- Paused queues are skipped, and so are queues and actors with limits: when limits
-- apply, the store claims through limit_rooms / claim_candidates / claim_ids instead.
UPDATE jobs
SET {{start_run}}
WHERE id IN (
    SELECT id FROM jobs
    WHERE state = 'queued'
      AND queue IN (SELECT value FROM json_each(:queues))
      AND queue NOT IN (SELECT name FROM queues WHERE paused)
      AND queue NOT IN (SELECT name FROM limits WHERE kind = 'queue')
      AND run_at <= :now
      AND actor NOT IN (SELECT value FROM json_each(:exclude_actors))
      AND actor NOT IN (SELECT name FROM limits WHERE kind = 'actor')
    ORDER BY priority, run_at, id
    LIMIT :limit
)
RETURNING id, actor, queue, args, kwargs, attempt, max_attempts, crash_count, max_crashes,
          idempotent, priority, run_at, snooze_count, meta, run_alone,
          CASE WHEN workflow_id IS NOT NULL
               THEN json_array(workflow_id, step, json_array_length(upstream)) END AS workflow;

-- name: limits_exist
-- description: Does any limit apply to a claim on these queues?
SELECT EXISTS (SELECT 1 FROM limits
               WHERE kind = 'actor' OR (kind = 'queue'
                                        AND name IN (SELECT value FROM json_each(:queues))))
       AS found;

-- name: prune_limit_starts
-- description: Forget the start buckets that left every rate limit's window.
DELETE FROM limit_starts
WHERE EXISTS (SELECT 1 FROM limits l
              WHERE l.kind = limit_starts.kind AND l.name = limit_starts.name
                AND l.rate IS NOT NULL
                AND limit_starts.bucket <= :now - l.rate_period * 1.05);

-- name: limit_rooms
-- description: How many more jobs each limit that applies lets start now (may be <= 0).
SELECT l.kind, l.name,
       min(CASE WHEN l.concurrency IS NULL THEN :limit
                ELSE l.concurrency - (
                    SELECT count(*) FROM jobs j
                    WHERE j.state = 'running'
                      AND CASE l.kind WHEN 'queue' THEN j.queue ELSE j.actor END = l.name)
           END,
           CASE WHEN l.rate IS NULL THEN :limit
                ELSE l.rate - (
                    SELECT coalesce(sum(s.starts), 0) FROM limit_starts s
                    WHERE s.kind = l.kind AND s.name = l.name
                      AND s.bucket > :now - l.rate_period * 1.05)
           END) AS room
FROM limits l
WHERE l.kind = 'actor' OR l.name IN (SELECT value FROM json_each(:queues));

-- name: unpaused_queues
-- description: Which of these queues are not paused.
SELECT value AS name FROM json_each(:queues)
WHERE value NOT IN (SELECT name FROM queues WHERE paused);

-- name: claim_candidates
-- description: A queue's first due queued jobs in claim order.
SELECT id, queue, actor, priority, run_at FROM jobs
WHERE state = 'queued' AND queue = :queue AND run_at <= :now
  AND actor NOT IN (SELECT value FROM json_each(:exclude_actors))
ORDER BY priority, run_at, id
LIMIT :limit;

-- name: claim_ids
-- description: Claim the picked jobs (the limited claim's last step).
UPDATE jobs
SET {{start_run}}
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'queued'
RETURNING id, actor, queue, args, kwargs, attempt, max_attempts, crash_count, max_crashes,
          idempotent, priority, run_at, snooze_count, meta, run_alone,
          CASE WHEN workflow_id IS NOT NULL
               THEN json_array(workflow_id, step, json_array_length(upstream)) END AS workflow;

-- name: count_limit_starts
-- description: Add the claimed jobs to the current start bucket (1/20 period) of each rate limit they fall under.
INSERT INTO limit_starts (kind, name, bucket, starts)
SELECT l.kind, l.name, CAST(:now / (l.rate_period / 20) AS INTEGER) * (l.rate_period / 20), count(*)
FROM jobs j
JOIN limits l ON l.rate IS NOT NULL
             AND l.name = CASE l.kind WHEN 'queue' THEN j.queue ELSE j.actor END
WHERE j.id IN (SELECT value FROM json_each(:ids))
GROUP BY l.kind, l.name, l.rate_period
ON CONFLICT (kind, name, bucket) DO UPDATE SET starts = limit_starts.starts + excluded.starts;

-- name: pause_queue
-- description: Pause or resume a queue (paused queues are skipped by every claim).
INSERT INTO queues (name, paused, paused_at, paused_by, updated_at)
VALUES (:name, :paused, CASE WHEN :paused THEN :now END, CASE WHEN :paused THEN :by END, :now)
ON CONFLICT (name) DO UPDATE
SET paused = excluded.paused,
    paused_at = CASE WHEN excluded.paused THEN coalesce(queues.paused_at, excluded.paused_at) END,
    paused_by = CASE WHEN excluded.paused THEN coalesce(queues.paused_by, excluded.paused_by) END,
    updated_at = excluded.updated_at;

-- name: set_limits
-- description: Set a queue's or an actor's limits (insert or overwrite).
INSERT INTO limits (kind, name, concurrency, rate, rate_period, updated_at)
VALUES (:kind, :name, :concurrency, :rate, :rate_period, :now)
ON CONFLICT (kind, name) DO UPDATE
SET concurrency = excluded.concurrency, rate = excluded.rate,
    rate_period = excluded.rate_period, updated_at = excluded.updated_at;

-- name: clear_limits
-- description: Remove a queue's or an actor's limits.
DELETE FROM limits WHERE kind = :kind AND name = :name;

-- name: clear_limit_starts
-- description: Forget a removed limit's counted starts.
DELETE FROM limit_starts WHERE kind = :kind AND name = :name;

-- name: get_limits
-- description: Every limit, by kind and name.
SELECT kind, name, concurrency, rate, rate_period FROM limits ORDER BY kind, name;

-- name: queue_depths
-- description: Jobs per queue and state, with the oldest due queued job's wait in seconds.
SELECT queue, state, count(*) AS n,
       :now - min(CASE WHEN state = 'queued' AND run_at <= :now THEN run_at END) AS oldest_s
FROM jobs
GROUP BY queue, state;

-- name: paused_queues
-- description: The names of the paused queues.
SELECT name FROM queues WHERE paused ORDER BY name;

-- name: queue_controls
-- description: Every queue row (pause state).
SELECT name, paused, paused_at, paused_by FROM queues ORDER BY name;

-- name: due_job_exists
-- description: Is any job due on these queues? (the cheap check behind wait_for_jobs)
SELECT EXISTS (
    SELECT 1 FROM jobs
    WHERE state = 'queued' AND queue IN (SELECT value FROM json_each(:queues))
      AND run_at <= :now
) AS due;

-- fragment: end_run
-- description: The SET list that ends a run, once for every way a run ends.
-- Used as `UPDATE jobs SET ... FROM (...) AS v`: v.kind is the outcome ('succeeded',
-- 'retry', 'snoozed', 'dead', 'cancelled' or 'crashed'), v.next_state/v.next_reason the state it
-- leads to, v.worker_id the run's worker, v.blamed/v.shared what a crash blames
-- (crash_run), v.result/v.error/v.delay its data. A re-queued
-- job forgets its run. A crash remembers whose run it ended (lost_worker_id); an outcome
-- written to a row no longer running is marked late.
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
run_alone = CASE WHEN v.kind <> 'crashed' THEN 0
                 WHEN v.blamed AND v.shared THEN 1
                 ELSE jobs.run_alone END,
attempt = jobs.attempt - CASE WHEN v.kind = 'snoozed' AND jobs.cancelled_at IS NULL
                              THEN 1 ELSE 0 END,
snooze_count = jobs.snooze_count + CASE WHEN v.kind = 'snoozed' AND jobs.cancelled_at IS NULL
                                        THEN 1 ELSE 0 END,
result = CASE WHEN v.kind = 'succeeded' THEN v.result END,
last_error = coalesce(v.error, jobs.last_error),
run_at = CASE WHEN v.next_state = 'queued' AND jobs.cancelled_at IS NULL
              THEN :now + v.delay ELSE jobs.run_at END,
started_at = CASE WHEN v.next_state = 'queued' AND jobs.cancelled_at IS NULL
                  THEN NULL ELSE jobs.started_at END,
finished_at = CASE WHEN v.next_state = 'queued' AND jobs.cancelled_at IS NULL
                   THEN NULL ELSE :now END,
worker_id = CASE WHEN v.next_state = 'queued' AND jobs.cancelled_at IS NULL
                 THEN NULL ELSE v.worker_id END,
lease_expires_at = NULL,
lost_worker_id = CASE WHEN v.kind = 'crashed' THEN v.worker_id END,
late = (jobs.state <> 'running')

-- fragment: run_fence
-- description: Only the run the caller holds: same id, attempt and worker, still running.
jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.worker_id = v.worker_id
  AND jobs.state = 'running'

-- fragment: lost_run
-- description: The row is still the crash verdict that ended this worker's run of this
-- attempt, and nobody has run the job since (a claim clears lost_worker_id and moves
-- attempt): re-queued and not claimed, or dead by the crash rules. An outcome of that
-- run (not a crash) is still recorded, late (docs/jobs.md, "Late outcomes") -- unless
-- another job holds the row's unique key now: the late write would collide with it.
jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.lost_worker_id = v.worker_id
  AND (jobs.state = 'queued' OR (jobs.state = 'dead' AND jobs.dead_reason IN ('crashed', 'poison')))
  AND (jobs.unique_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM jobs h WHERE h.unique_key = jobs.unique_key AND h.id <> jobs.id
        AND instr(h.unique_states, ',' || h.state || ',') > 0))

-- name: finish_runs
-- description: Write a batch of outcomes that are not crashes (succeeded/retry/snoozed/dead/
-- cancelled), each fenced, in one statement. :outcomes is a JSON array of
-- [id, attempt, kind, result, error, delay, reason, meta] (no two with the same id and
-- attempt); one statement for the batch instead of one per outcome (the per-outcome
-- statements cost the drain 1.6x in complete time, docs/benchmarks.md).
-- An outcome's meta (the job's whole meta, when the run changed it) is saved with it.
-- A late outcome (its run already ended by the crash rules) is still written: lost_run.
UPDATE jobs
SET {{end_run}},
    meta = coalesce(v.meta, jobs.meta)
FROM (SELECT o.*, :worker_id AS worker_id, 0 AS blamed, 0 AS shared,
             CASE o.kind WHEN 'retry' THEN 'queued' WHEN 'snoozed' THEN 'queued'
                         ELSE o.kind END AS next_state,
             CASE o.kind WHEN 'dead' THEN coalesce(o.reason, 'failed') END AS next_reason
      FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS attempt,
                   json_extract(value, '$[2]') AS kind, json_extract(value, '$[3]') AS result,
                   json_extract(value, '$[4]') AS error, json_extract(value, '$[5]') AS delay,
                   json_extract(value, '$[6]') AS reason, json_extract(value, '$[7]') AS meta
            FROM json_each(:outcomes)) AS o) AS v
WHERE ({{run_fence}})
   OR (v.kind IN ('succeeded', 'retry', 'dead') AND {{lost_run}});

-- name: crash_run
-- description: The crash rules on one run, fenced: requeue, dead/crashed or dead/poison.
-- :blamed: the death points at a job (taskq.blame); :shared: the runner ran other jobs
-- too. A blame poisons only a job that died alone (after a shared blame the job is re-run
-- before a second blame can poison it); max_unblamed_crashes unproven deaths (the actor
-- option in actors.extra; 5, taskq.blame.DEFAULT_MAX_UNBLAMED_CRASHES, if never recorded)
-- make it poison too, so an unreadable cause cannot loop.
UPDATE jobs
SET {{end_run}}
FROM (SELECT id, :attempt AS attempt, :worker_id AS worker_id, 'crashed' AS kind,
             NULL AS result,
             :error AS error, 0.0 AS delay, :blamed AS blamed, :shared AS shared,
             CASE rule WHEN 'queued' THEN 'queued' ELSE 'dead' END AS next_state,
             nullif(rule, 'queued') AS next_reason
      FROM (SELECT j.id,
                   CASE WHEN :blamed AND NOT :shared AND j.blamed_crashes + 1 >= j.max_crashes
                            THEN 'poison'
                        WHEN j.unproven_crashes
                             + CASE WHEN :blamed AND NOT :shared THEN 0 ELSE 1 END
                             >= coalesce((SELECT json_extract(a.extra, '$.max_unblamed_crashes')
                                          FROM actors a WHERE a.name = j.actor), 5)
                            THEN 'poison'
                        WHEN j.idempotent THEN 'queued'
                        ELSE 'crashed' END AS rule
            FROM jobs j WHERE j.id = :id)) AS v
WHERE {{run_fence}}
RETURNING jobs.id, jobs.actor, jobs.state, jobs.dead_reason, jobs.crash_count, jobs.queue;

-- name: give_back
-- description: Return one claimed job to queued without charging the attempt (fenced).
UPDATE jobs
SET state = CASE WHEN cancelled_at IS NULL THEN 'queued' ELSE 'cancelled' END,
    attempt = attempt - 1,
    worker_id = CASE WHEN cancelled_at IS NULL THEN NULL ELSE worker_id END,
    lease_expires_at = NULL,
    started_at = CASE WHEN cancelled_at IS NULL THEN NULL ELSE started_at END,
    finished_at = CASE WHEN cancelled_at IS NULL THEN NULL ELSE :now END
WHERE id = :id AND attempt = :attempt AND worker_id = :worker_id AND state = 'running';

-- name: running_of_worker
-- description: The runs a worker holds (rescue of an observed death).
SELECT id, attempt, worker_id FROM jobs WHERE worker_id = :worker_id AND state = 'running';

-- name: expired_runs
-- description: Runs whose lease expired (the sweeper), with their worker's host and pid if its row is left.
SELECT j.id, j.attempt, j.worker_id, w.hostname, w.pid
FROM jobs j LEFT JOIN workers w ON w.id = j.worker_id
WHERE j.state = 'running' AND j.lease_expires_at < :now
  AND j.worker_id IS NOT :exclude_worker;

-- name: prune_succeeded
-- description: Delete one batch of succeeded jobs finished before a time.
DELETE FROM jobs
WHERE id IN (SELECT id FROM jobs
             WHERE state = 'succeeded' AND finished_at < :before
             LIMIT :batch);

-- name: prune_ended
-- description: Delete one batch of jobs in one other end state (dead, cancelled) finished before a time.
DELETE FROM jobs
WHERE id IN (SELECT id FROM jobs
             WHERE state = :state AND finished_at < :before
             LIMIT :batch);

-- name: prune_workers
-- description: Delete worker rows not seen since a time that hold no running job.
DELETE FROM workers
WHERE last_seen_at < :before
  AND NOT EXISTS (SELECT 1 FROM jobs
                  WHERE jobs.worker_id = workers.id AND jobs.state = 'running');

-- name: queue_backlog
-- description: Per queue: queued (with its oldest run_at), running and dead counts; each part one scan of a partial index.
SELECT queue, 'queued' AS state, count(*) AS jobs,
       CASE WHEN min(run_at) <= :now THEN :now - min(run_at) ELSE 0.0 END AS oldest_due_age
FROM jobs WHERE state = 'queued' GROUP BY queue
UNION ALL
SELECT queue, 'running', count(*), 0.0 FROM jobs WHERE state = 'running' GROUP BY queue
UNION ALL
SELECT queue, 'dead', count(*), 0.0 FROM jobs WHERE state = 'dead' GROUP BY queue;

-- fragment: job_filter
-- description: The dashboard's job filters (JobFilter); a NULL parameter matches every job.
id < :before AND id >= :id_low
  AND (:state IS NULL OR state = :state)
  AND (:queue IS NULL OR queue = :queue)
  AND (:actor IS NULL OR actor = :actor)
  AND (:error IS NULL OR instr(lower(last_error), lower(:error)) > 0)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value = :tag))

-- name: browse_jobs
-- description: One page of jobs newest first, filtered, after a keyset cursor (id < before).
SELECT {{job_columns}}
FROM jobs
WHERE {{job_filter}}
ORDER BY id DESC
LIMIT :limit;

-- name: browse_dead_in_queue
-- description: browse_jobs for one queue's dead jobs: the state and queue written out, so that SQLite walks jobs_dead_idx (queue, id), however few they are among many finished jobs (a parameter's state or queue would hide the partial index).
SELECT {{job_columns}}
FROM jobs
WHERE state = 'dead' AND queue = :queue AND id < :before AND id >= :id_low
  AND (:actor IS NULL OR actor = :actor)
  AND (:error IS NULL OR instr(lower(last_error), lower(:error)) > 0)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value = :tag))
ORDER BY id DESC
LIMIT :limit;

-- name: search_jobs
-- description: browse_jobs with JSON containment (taskq_json_contains, as jsonb's @>) on arguments, keyword arguments or meta, looking at most at the newest `scan` jobs the other filters keep.
SELECT {{job_columns}}
FROM (SELECT * FROM jobs WHERE {{job_filter}} ORDER BY id DESC LIMIT :scan) AS jobs
WHERE (:args IS NULL OR taskq_json_contains(args, :args))
  AND (:kwargs IS NULL OR taskq_json_contains(kwargs, :kwargs))
  AND (:meta IS NULL OR (meta IS NOT NULL AND taskq_json_contains(meta, :meta)))
ORDER BY id DESC
LIMIT :limit;

-- name: count_jobs
-- description: How many jobs the filters keep, counted up to `cap` (a bulk action's confirmation).
SELECT count(*) AS n FROM (SELECT 1 FROM jobs WHERE {{job_filter}} LIMIT :cap);

-- name: count_dead_in_queue
-- description: count_jobs for one queue's dead jobs, through jobs_dead_idx (as browse_dead_in_queue).
SELECT count(*) AS n FROM (
    SELECT 1 FROM jobs
    WHERE state = 'dead' AND queue = :queue AND id < :before AND id >= :id_low
      AND (:actor IS NULL OR actor = :actor)
      AND (:error IS NULL OR instr(lower(last_error), lower(:error)) > 0)
      AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(jobs.tags) WHERE value = :tag))
    LIMIT :cap
);

-- name: activity_upto
-- description: Up to which minute queue_minutes holds counts.
SELECT upto FROM rollups WHERE name = 'queue_minutes';

-- name: activity_fill
-- description: Count the closed minutes [from, to) per queue and actor, and per queue (actor ''), (succeeded and dead jobs by finish time, failed runs by job_errors.at) into queue_minutes.
INSERT INTO queue_minutes (minute, queue, actor, succeeded, failed_runs, dead)
SELECT minute, queue, actor, sum(s), sum(f), sum(d) FROM (
    SELECT CAST(finished_at / 60 AS INTEGER) * 60.0 AS minute, queue, actor, 1 AS s, 0 AS f, 0 AS d
    FROM jobs WHERE state = 'succeeded' AND finished_at >= :from AND finished_at < :to
    UNION ALL
    SELECT CAST(finished_at / 60 AS INTEGER) * 60.0, queue, actor, 0, 0, 1
    FROM jobs WHERE state = 'dead' AND finished_at >= :from AND finished_at < :to
    UNION ALL
    SELECT CAST(e.at / 60 AS INTEGER) * 60.0, j.queue, j.actor, 0, 1, 0
    FROM job_errors AS e JOIN jobs AS j ON j.id = e.job_id
    WHERE e.at >= :from AND e.at < :to
) AS events WHERE true GROUP BY minute, queue, actor
UNION ALL
SELECT minute, queue, '', sum(s), sum(f), sum(d) FROM (
    SELECT CAST(finished_at / 60 AS INTEGER) * 60.0 AS minute, queue, 1 AS s, 0 AS f, 0 AS d
    FROM jobs WHERE state = 'succeeded' AND finished_at >= :from AND finished_at < :to
    UNION ALL
    SELECT CAST(finished_at / 60 AS INTEGER) * 60.0, queue, 0, 0, 1
    FROM jobs WHERE state = 'dead' AND finished_at >= :from AND finished_at < :to
    UNION ALL
    SELECT CAST(e.at / 60 AS INTEGER) * 60.0, j.queue, 0, 1, 0
    FROM job_errors AS e JOIN jobs AS j ON j.id = e.job_id
    WHERE e.at >= :from AND e.at < :to
) AS totals WHERE true GROUP BY minute, queue
ON CONFLICT (minute, queue, actor) DO UPDATE
SET succeeded = excluded.succeeded, failed_runs = excluded.failed_runs, dead = excluded.dead;

-- name: activity_mark
-- description: queue_minutes holds counts up to `to`.
INSERT INTO rollups (name, upto) VALUES ('queue_minutes', :to)
ON CONFLICT (name) DO UPDATE SET upto = max(rollups.upto, excluded.upto);

-- name: activity_live
-- description: The counts of the minute still open [from, now), per queue and actor, not stored.
SELECT queue, actor, sum(s) AS succeeded, sum(f) AS failed_runs, sum(d) AS dead FROM (
    SELECT queue, actor, 1 AS s, 0 AS f, 0 AS d FROM jobs
    WHERE state = 'succeeded' AND finished_at >= :from
    UNION ALL
    SELECT queue, actor, 0, 0, 1 FROM jobs WHERE state = 'dead' AND finished_at >= :from
    UNION ALL
    SELECT j.queue, j.actor, 0, 1, 0 FROM job_errors AS e JOIN jobs AS j ON j.id = e.job_id
    WHERE e.at >= :from
) GROUP BY queue, actor;

-- name: activity_sample
-- description: The backlog's age per queue in this minute: the largest sampled (`ages`: a JSON object queue -> seconds).
INSERT INTO queue_minutes (minute, queue, actor, backlog_age)
SELECT :minute, key, '', value FROM json_each(:ages) WHERE true
ON CONFLICT (minute, queue, actor) DO UPDATE
SET backlog_age = max(coalesce(queue_minutes.backlog_age, 0), excluded.backlog_age);

-- name: activity_prune
-- description: Forget the minutes older than the charts show.
DELETE FROM queue_minutes WHERE minute < :before;

-- name: activity_read
-- description: The queues' counted minutes (their rows of actor '') since a time, in buckets of `bucket` seconds, oldest first.
SELECT CAST(minute / :bucket AS INTEGER) * :bucket AS minute, queue, '' AS actor,
       sum(succeeded) AS succeeded, sum(failed_runs) AS failed_runs, sum(dead) AS dead,
       max(backlog_age) AS backlog_age
FROM queue_minutes
WHERE actor = '' AND minute >= :since AND (:queue IS NULL OR queue = :queue)
GROUP BY 1, 2 ORDER BY 1, 2;

-- name: activity_read_actors
-- description: The actors' counted minutes since a time, in buckets of `bucket` seconds, per queue and actor, oldest first.
SELECT CAST(minute / :bucket AS INTEGER) * :bucket AS minute, queue, actor,
       sum(succeeded) AS succeeded, sum(failed_runs) AS failed_runs, sum(dead) AS dead,
       NULL AS backlog_age
FROM queue_minutes
WHERE actor <> '' AND minute >= :since AND (:queue IS NULL OR queue = :queue)
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;

-- name: job_errors
-- description: Every failed run of one job, oldest first.
SELECT attempt, at, crash, worker_id, error FROM job_errors
WHERE job_id = :id ORDER BY at, attempt;

-- name: discard_jobs
-- description: Delete dead or cancelled jobs (their errors go with them, by trigger).
DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(:ids))
  AND state IN ('dead', 'cancelled')
RETURNING id;

-- name: try_lead
-- description: Take or renew the lease on a fleet-wide chore; a row comes back when we hold it.
INSERT INTO leaders (name, holder, expires_at) VALUES (:name, :holder, :now + :seconds)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE leaders.holder = excluded.holder OR leaders.expires_at < :now
RETURNING holder;

-- name: release_lead
-- description: Give up a chore's lease (clean shutdown), so another process takes it now.
DELETE FROM leaders WHERE name = :name AND holder = :holder RETURNING name;

-- name: report_workgroup
-- description: Record what a workgroup supervisor says about its children.
INSERT INTO workgroups (instance, hostname, pid, children, updated_at)
VALUES (:instance, :hostname, :pid, :children, :now)
ON CONFLICT (instance) DO UPDATE
SET hostname = excluded.hostname, pid = excluded.pid, children = excluded.children,
    updated_at = excluded.updated_at
RETURNING instance;

-- name: remove_workgroup
-- description: Forget a workgroup that stopped cleanly.
DELETE FROM workgroups WHERE instance = :instance RETURNING instance;

-- name: list_workgroups
-- description: Workgroups heard from since a time, newest first.
SELECT instance, hostname, pid, children, updated_at FROM workgroups
WHERE updated_at >= :since ORDER BY updated_at DESC;

-- name: record_schedule
-- description: Upsert one schedule a worker runs; first_seen_at and last_tick are kept.
INSERT INTO schedules (name, actor, cron, timezone, missed, first_seen_at, seen_at)
VALUES (:name, :actor, :cron, :timezone, :missed, :now, :now)
ON CONFLICT (name) DO UPDATE
SET actor = excluded.actor, cron = excluded.cron, timezone = excluded.timezone,
    missed = excluded.missed, seen_at = excluded.seen_at;

-- name: list_schedules
-- description: Every recorded schedule, by name.
SELECT name, actor, cron, timezone, missed, first_seen_at, seen_at, last_tick
FROM schedules ORDER BY name;

-- name: mark_schedule_tick
-- description: A schedule's ticks up to this one are done (enqueued or skipped); never back.
UPDATE schedules SET last_tick = :tick
WHERE name = :name AND (last_tick IS NULL OR last_tick < :tick);

-- name: workflow_insert
-- description: Insert a workflow's row (with its steps, in one transaction).
INSERT INTO workflows (id, name, steps, steps_left, created_at)
VALUES (:id, :name, :steps, :steps, :now);

-- name: workflow_steps_insert
-- description: Insert one step of a workflow (executemany, one row a tuple).
-- A step with no upstream step is due now; the others wait (run_at at the end of time)
-- until the success of their last upstream step makes them due (0007_workflows).
INSERT INTO jobs (id, actor, queue, args, kwargs, priority, run_at, created_at,
                  max_attempts, max_crashes, idempotent, workflow_id, step, upstream,
                  downstream, upstream_left, on_failure, meta)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- fragment: workflow_columns
-- description: Every column a WorkflowInfo is read from.
id, name, state, steps, steps_left, failed_steps, cancelled_steps, created_at,
finished_at, cancelled_at, cancelled_by

-- name: workflow_get
-- description: One workflow by id.
SELECT {{workflow_columns}} FROM workflows WHERE id = :id;

-- name: workflow_steps
-- description: Every step of a workflow, in the order they were added (UUIDv7 ids).
SELECT id, step, actor, queue, state, upstream_left, upstream, on_failure, attempt,
       dead_reason, cancelled_by, last_error, result, created_at, started_at, finished_at
FROM jobs WHERE workflow_id = :id
ORDER BY id;

-- name: workflow_list
-- description: Workflows newest first (UUIDv7 ids are time-ordered), optionally in one state.
SELECT {{workflow_columns}} FROM workflows
WHERE (:state IS NULL OR state = :state)
ORDER BY id DESC
LIMIT :limit;

-- name: workflow_upstream_results
-- description: The name and result of each upstream step of this step (as it starts).
SELECT step, result FROM jobs
WHERE id IN (SELECT value FROM json_each((SELECT upstream FROM jobs WHERE id = :id)));

-- name: workflow_request_cancel
-- description: Cancel a workflow's steps: queued ones now; running ones are marked (their workers poll).
UPDATE jobs
SET state = CASE WHEN state = 'queued' THEN 'cancelled' ELSE state END,
    finished_at = CASE WHEN state = 'queued' THEN :now ELSE finished_at END,
    cancelled_at = :now, cancelled_by = :by
WHERE workflow_id = :id
  AND (state = 'queued' OR (state = 'running' AND cancelled_at IS NULL));

-- name: workflow_mark_cancelled
-- description: Record who cancelled a workflow (its verdict, once its steps end, is `cancelled`).
UPDATE workflows SET cancelled_at = :now, cancelled_by = :by
WHERE id = :id AND cancelled_at IS NULL;

-- name: workflow_fanout_fence
-- description: A running step that adds steps to its workflow, if this worker still holds its run (fenced).
-- Its meta (as claimed: the run's own changes are written after, with its outcome) goes
-- on every step it adds, as an enqueue's meta goes on every step of a workflow.
SELECT j.workflow_id, j.downstream, j.cancelled_at IS NOT NULL AS cancelling, w.steps, j.meta
FROM jobs j JOIN workflows w ON w.id = j.workflow_id
WHERE j.id = :id AND j.attempt = :attempt AND j.worker_id = :worker_id
  AND j.state = 'running';

-- name: workflow_fanout_parent
-- description: Steps added by a running step run after it.
UPDATE jobs
SET downstream = (SELECT json_group_array(value)
                  FROM (SELECT value FROM json_each(coalesce(jobs.downstream, '[]'))
                        UNION ALL SELECT value FROM json_each(:added)))
WHERE id = :id;

-- name: workflow_fanout_after
-- description: The steps after a running step wait for the steps it added too.
UPDATE jobs
SET upstream = (SELECT json_group_array(value)
                FROM (SELECT value FROM json_each(coalesce(jobs.upstream, '[]'))
                      UNION ALL SELECT value FROM json_each(:added))),
    upstream_left = upstream_left + json_array_length(:added)
WHERE id IN (SELECT value FROM json_each(:downstream)) AND state = 'queued';

-- name: workflow_fanout_count
-- description: A workflow holds the steps a running step added.
UPDATE workflows
SET steps = steps + json_array_length(:added), steps_left = steps_left + json_array_length(:added)
WHERE id = :id;

-- name: workflow_totals
-- description: How many workflows ever finished, by state (taskq_workflows_finished_total).
SELECT state, finished FROM workflow_totals ORDER BY state;

-- name: prune_workflows
-- description: Delete one batch of finished workflows whose steps are all pruned.
DELETE FROM workflows
WHERE id IN (SELECT w.id FROM workflows w
             WHERE w.finished_at < :before
               AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.workflow_id = w.id)
             LIMIT :batch);
