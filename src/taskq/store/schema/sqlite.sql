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
    result           TEXT, unique_key TEXT, unique_states TEXT, meta TEXT, tags TEXT, snooze_count INTEGER NOT NULL DEFAULT 0, cancelled_at REAL, cancelled_by TEXT, lost_worker_id TEXT, late INTEGER NOT NULL DEFAULT 0, blamed_crashes INTEGER NOT NULL DEFAULT 0, unproven_crashes INTEGER NOT NULL DEFAULT 0, run_alone INTEGER NOT NULL DEFAULT 0,
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

CREATE TABLE queues (
    name       TEXT    PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    paused_at  REAL,
    paused_by  TEXT,
    updated_at REAL    NOT NULL
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
);

CREATE TABLE workgroups (
    instance   TEXT    PRIMARY KEY,
    hostname   TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    children   TEXT    NOT NULL,
    updated_at REAL    NOT NULL
);

CREATE INDEX job_errors_job_idx ON job_errors (job_id, at);

CREATE INDEX jobs_claim_idx ON jobs (queue, priority, run_at, id) WHERE state = 'queued';

CREATE INDEX jobs_dead_idx ON jobs (queue, id) WHERE state = 'dead';

CREATE INDEX jobs_prune_idx ON jobs (finished_at) WHERE state = 'succeeded';

CREATE INDEX jobs_running_idx ON jobs (worker_id) WHERE state = 'running';

CREATE UNIQUE INDEX jobs_unique_idx ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND instr(unique_states, ',' || state || ',') > 0;

CREATE INDEX workers_wg_lookup_idx ON workers (workgroup_instance, worker_label, last_seen_at DESC)
    WHERE workgroup_instance IS NOT NULL;

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
