-- The SQLite schema that taskq's migrations build from zero: a generated snapshot
-- to read, not to apply. Regenerate with `make schema` after changing a migration.

CREATE TABLE actors (
    name         TEXT    PRIMARY KEY,
    queue        TEXT    NOT NULL,
    max_attempts INTEGER NOT NULL,
    max_crashes  INTEGER NOT NULL,
    idempotent   INTEGER NOT NULL,
    cpu_bound    INTEGER NOT NULL,
    timeout      REAL,
    extra        TEXT    NOT NULL DEFAULT '{}',
    updated_at   REAL    NOT NULL
);

CREATE TABLE job_errors (
    job_id    TEXT    NOT NULL,
    attempt   INTEGER NOT NULL,
    at        REAL    NOT NULL,
    crash     INTEGER NOT NULL,
    worker_id TEXT,
    error     TEXT    NOT NULL
);

CREATE TABLE jobs (
    id               TEXT    PRIMARY KEY,
    actor            TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    args             TEXT    NOT NULL,
    kwargs           TEXT    NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    state            TEXT    NOT NULL DEFAULT 'queued'
        CHECK (state IN ('queued', 'running', 'succeeded', 'dead', 'cancelled')),
    attempt          INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     INTEGER NOT NULL,
    crash_count      INTEGER NOT NULL DEFAULT 0 CHECK (crash_count >= 0),
    max_crashes      INTEGER NOT NULL,
    idempotent       INTEGER NOT NULL,
    run_at           REAL    NOT NULL,
    created_at       REAL    NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    worker_id        TEXT,
    lease_expires_at REAL,
    last_error       TEXT,
    dead_reason      TEXT,
    result           TEXT, unique_key TEXT, unique_states TEXT, meta TEXT, tags TEXT, snooze_count INTEGER NOT NULL DEFAULT 0, cancelled_at REAL, cancelled_by TEXT, lost_worker_id TEXT, late INTEGER NOT NULL DEFAULT 0, blamed_crashes INTEGER NOT NULL DEFAULT 0, unproven_crashes INTEGER NOT NULL DEFAULT 0, run_alone INTEGER NOT NULL DEFAULT 0, workflow_id TEXT, step TEXT, upstream TEXT, downstream TEXT, upstream_left INTEGER, on_failure TEXT,
    CHECK ((state = 'dead') = (dead_reason IS NOT NULL))
);

CREATE TABLE leaders (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at REAL NOT NULL
);

CREATE TABLE limit_starts (
    kind   TEXT    NOT NULL,
    name   TEXT    NOT NULL,
    bucket REAL    NOT NULL,
    starts INTEGER NOT NULL,
    PRIMARY KEY (kind, name, bucket)
);

CREATE TABLE limits (
    kind        TEXT    NOT NULL CHECK (kind IN ('queue', 'actor')),
    name        TEXT    NOT NULL,
    concurrency INTEGER CHECK (concurrency >= 1),
    rate        INTEGER CHECK (rate >= 1),
    rate_period REAL    CHECK (rate_period > 0),
    updated_at  REAL    NOT NULL,
    PRIMARY KEY (kind, name),
    CHECK ((rate IS NULL) = (rate_period IS NULL)),
    CHECK (concurrency IS NOT NULL OR rate IS NOT NULL)
);

CREATE TABLE queue_minutes (
    minute      REAL    NOT NULL,
    queue       TEXT    NOT NULL,
    actor       TEXT    NOT NULL DEFAULT '',
    succeeded   INTEGER NOT NULL DEFAULT 0,
    failed_runs INTEGER NOT NULL DEFAULT 0,
    dead        INTEGER NOT NULL DEFAULT 0,
    backlog_age REAL,
    PRIMARY KEY (minute, queue, actor)
);

CREATE TABLE queues (
    name       TEXT    PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    paused_at  REAL,
    paused_by  TEXT,
    updated_at REAL    NOT NULL
);

CREATE TABLE rollups (
    name TEXT PRIMARY KEY,
    upto REAL NOT NULL
);

CREATE TABLE schedules (
    name          TEXT PRIMARY KEY,
    actor         TEXT NOT NULL,
    cron          TEXT NOT NULL,
    timezone      TEXT NOT NULL,
    missed        TEXT NOT NULL,
    first_seen_at REAL NOT NULL,
    seen_at       REAL NOT NULL,
    last_tick     REAL
);

CREATE TABLE schema_migrations (
version    TEXT PRIMARY KEY,
applied_at REAL NOT NULL
);

CREATE TABLE workers (
    id                 TEXT    PRIMARY KEY,
    workgroup_instance TEXT,
    worker_label       TEXT,
    pid                INTEGER NOT NULL,
    hostname           TEXT    NOT NULL,
    queues             TEXT    NOT NULL,  -- JSON array of queue names
    started_at         REAL    NOT NULL,
    last_seen_at       REAL    NOT NULL
, max_connections INTEGER, connections INTEGER);

CREATE TABLE workflow_cascade (
    id TEXT PRIMARY KEY
);

CREATE TABLE workflow_totals (
    state    TEXT    PRIMARY KEY,
    finished INTEGER NOT NULL
);

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

CREATE TABLE workgroups (
    instance   TEXT    PRIMARY KEY,
    hostname   TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    children   TEXT    NOT NULL,
    updated_at REAL    NOT NULL
);

CREATE INDEX job_errors_at_idx ON job_errors (at);

CREATE INDEX job_errors_job_idx ON job_errors (job_id, at);

CREATE INDEX jobs_claim_idx ON jobs (queue, priority, run_at, id) WHERE state = 'queued';

CREATE INDEX jobs_dead_finished_idx ON jobs (finished_at) WHERE state = 'dead';

CREATE INDEX jobs_dead_idx ON jobs (queue, id) WHERE state = 'dead';

CREATE INDEX jobs_prune_idx ON jobs (finished_at) WHERE state = 'succeeded';

CREATE INDEX jobs_running_idx ON jobs (worker_id) WHERE state = 'running';

CREATE UNIQUE INDEX jobs_unique_idx ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND instr(unique_states, ',' || state || ',') > 0;

CREATE INDEX jobs_workflow_idx ON jobs (workflow_id) WHERE workflow_id IS NOT NULL;

CREATE INDEX queue_minutes_totals_idx ON queue_minutes (minute, queue) WHERE actor = '';

CREATE INDEX workers_wg_lookup_idx ON workers (workgroup_instance, worker_label, last_seen_at DESC)
    WHERE workgroup_instance IS NOT NULL;

CREATE INDEX workflows_finished_idx ON workflows (finished_at) WHERE finished_at IS NOT NULL;

CREATE TRIGGER jobs_drop_errors
    AFTER DELETE ON jobs
    FOR EACH ROW
BEGIN
    DELETE FROM job_errors WHERE job_id = OLD.id;
END;

CREATE TRIGGER jobs_record_error
    AFTER UPDATE OF last_error ON jobs
    FOR EACH ROW
    WHEN OLD.state = 'running' AND NEW.state IN ('queued', 'dead')
         AND NEW.last_error IS NOT NULL AND NEW.attempt = OLD.attempt
BEGIN
    INSERT INTO job_errors (job_id, attempt, at, crash, worker_id, error)
    VALUES (NEW.id, NEW.attempt, (julianday('now') - 2440587.5) * 86400.0,
            NEW.crash_count > OLD.crash_count, OLD.worker_id, NEW.last_error);
END;

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
