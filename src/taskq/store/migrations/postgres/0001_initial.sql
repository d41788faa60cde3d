-- taskq on Postgres: the first schema. Runs with search_path set to the taskq schema
-- (TASKQ_SCHEMA), inside the migration transaction; names carry no schema prefix.

CREATE TABLE jobs (
    id               uuid        PRIMARY KEY,              -- UUIDv7 from the client
    actor            text        NOT NULL,
    queue            text        NOT NULL,
    args             json        NOT NULL,                 -- json, not jsonb: verbatim text
    kwargs           json        NOT NULL,
    priority         integer     NOT NULL DEFAULT 0,       -- lower runs first
    state            text        NOT NULL DEFAULT 'queued',
    attempt          integer     NOT NULL DEFAULT 0,       -- starts of this job
    max_attempts     integer     NOT NULL,
    crash_count      integer     NOT NULL DEFAULT 0,
    max_crashes      integer     NOT NULL,
    idempotent       boolean     NOT NULL,
    run_at           timestamptz NOT NULL DEFAULT now(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    worker_id        uuid,                                 -- who runs / last ran it
    lease_expires_at timestamptz,
    last_error       text,
    dead_reason      text,
    result           json,
    CONSTRAINT jobs_state_check
        CHECK (state IN ('queued', 'running', 'succeeded', 'dead', 'cancelled')),
    CONSTRAINT jobs_dead_reason_check CHECK ((state = 'dead') = (dead_reason IS NOT NULL)),
    CONSTRAINT jobs_attempt_check CHECK (attempt >= 0 AND crash_count >= 0)
) WITH (
    -- A hot update table: leave room on each page for HOT updates (heartbeats touch
    -- only the unindexed lease column) and vacuum it early and often.
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 1
);

-- Claiming: the due queued rows of a queue, in claim order. Stays small however many
-- finished rows the table holds.
CREATE INDEX jobs_claim_idx ON jobs (queue, priority, run_at, id) WHERE state = 'queued';

-- Running rows by worker: heartbeat, rescue of one worker, and the lease sweeper (which
-- scans this small index; lease_expires_at stays unindexed so heartbeats are HOT).
CREATE INDEX jobs_running_idx ON jobs (worker_id) WHERE state = 'running';

-- Pruning succeeded rows by age.
CREATE INDEX jobs_prune_idx ON jobs (finished_at) WHERE state = 'succeeded';

CREATE TABLE workers (
    id                 uuid        PRIMARY KEY,
    workgroup_instance uuid,
    worker_label       text,
    pid                integer     NOT NULL,
    hostname           text        NOT NULL,
    queues             text[]      NOT NULL,
    started_at         timestamptz NOT NULL DEFAULT now(),
    last_seen_at       timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.05);

CREATE INDEX workers_wg_lookup_idx ON workers (workgroup_instance, worker_label, last_seen_at DESC)
    WHERE workgroup_instance IS NOT NULL;

CREATE TABLE actors (
    name         text             PRIMARY KEY,
    queue        text             NOT NULL,
    max_attempts integer          NOT NULL,
    max_crashes  integer          NOT NULL,
    idempotent   boolean          NOT NULL,
    cpu_bound    boolean          NOT NULL,
    timeout      double precision,
    extra        json             NOT NULL DEFAULT '{}',
    updated_at   timestamptz      NOT NULL DEFAULT now()
);

-- The crash rules, in one place: what a runner's death does to a job whose crash count
-- was crash_count. 'queued' (run again), 'poison' or 'crashed' (both dead).
CREATE FUNCTION crash_outcome(crash_count integer, max_crashes integer, idempotent boolean)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN crash_count + 1 >= max_crashes THEN 'poison'
        WHEN idempotent THEN 'queued'
        ELSE 'crashed'
    END
$$;

-- One NOTIFY per enqueue statement (not per row): the distinct queues that got due
-- jobs, on channel 'taskq_<schema>' (cut to 63 bytes, as an identifier is).
CREATE FUNCTION notify_enqueued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(left('taskq_' || TG_TABLE_SCHEMA, 63), q.queue)
    FROM (SELECT DISTINCT queue FROM new_jobs WHERE run_at <= now()) AS q;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_enqueued
    AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION notify_enqueued();
