-- taskq 0006: what operators look at (metrics, the dashboard).

-- Every failed run of a job, kept for its page: an exception (retried or dead) or a
-- runner's death (crash = true). Written by a trigger, so every path that records an
-- error (the acker's batch, a workgroup's rescue, the lease sweeper) fills it without
-- a word in the hot-path statements. A give-back (attempt - 1) is not a failed run.
CREATE TABLE job_errors (
    job_id    uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt   integer     NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    crash     boolean     NOT NULL,
    worker_id uuid,
    error     text        NOT NULL
);

CREATE INDEX job_errors_job_idx ON job_errors (job_id, at);

CREATE FUNCTION record_job_error() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_errors (job_id, attempt, crash, worker_id, error)
    VALUES (NEW.id, NEW.attempt, NEW.crash_count > OLD.crash_count, OLD.worker_id,
            NEW.last_error);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_record_error
    AFTER UPDATE OF last_error ON jobs
    FOR EACH ROW
    WHEN (OLD.state = 'running' AND NEW.state IN ('queued', 'dead')
          AND NEW.last_error IS NOT NULL AND NEW.attempt = OLD.attempt)
    EXECUTE FUNCTION record_job_error();

-- Dead letters by queue, newest first: the backlog metric's dead count and the
-- dashboard's dead-letter page (stays small however many finished rows there are).
CREATE INDEX jobs_dead_idx ON jobs (queue, id) WHERE state = 'dead';

-- The dashboard's tag filter (tags @> ARRAY[tag]): only tagged rows are indexed.
CREATE INDEX jobs_tags_idx ON jobs USING gin (tags) WHERE tags IS NOT NULL;

-- One holder at a time for fleet-wide chores (the backlog metrics): a lease row.
CREATE TABLE leaders (
    name       text        PRIMARY KEY,
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- What each workgroup supervisor reports about its children, for the dashboard.
CREATE TABLE workgroups (
    instance   uuid        PRIMARY KEY,
    hostname   text        NOT NULL,
    pid        integer     NOT NULL,
    children   json        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
