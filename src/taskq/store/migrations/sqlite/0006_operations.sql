-- taskq 0006: what operators look at (metrics, the dashboard). Times are REAL unix
-- seconds; a trigger has no :now, so it reads the same host clock with julianday().

-- Every failed run of a job, kept for its page (see the Postgres migration).
CREATE TABLE job_errors (
    job_id    TEXT    NOT NULL,
    attempt   INTEGER NOT NULL,
    at        REAL    NOT NULL,
    crash     INTEGER NOT NULL,
    worker_id TEXT,
    error     TEXT    NOT NULL
);

CREATE INDEX job_errors_job_idx ON job_errors (job_id, at);

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

CREATE TRIGGER jobs_drop_errors
    AFTER DELETE ON jobs
    FOR EACH ROW
BEGIN
    DELETE FROM job_errors WHERE job_id = OLD.id;
END;

CREATE INDEX jobs_dead_idx ON jobs (queue, id) WHERE state = 'dead';

CREATE TABLE leaders (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at REAL NOT NULL
);

CREATE TABLE workgroups (
    instance   TEXT    PRIMARY KEY,
    hostname   TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    children   TEXT    NOT NULL,
    updated_at REAL    NOT NULL
);
