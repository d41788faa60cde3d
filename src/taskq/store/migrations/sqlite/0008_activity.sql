-- taskq 0008: the dashboard's charts over time (see the Postgres migration). Minutes
-- are REAL unix seconds, whole minutes.
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

-- the queue's totals (every actor), and its backlog samples, are the rows of actor '':
-- the charts of the whole store and of a queue read only those
CREATE INDEX queue_minutes_totals_idx ON queue_minutes (minute, queue) WHERE actor = '';

CREATE TABLE rollups (
    name TEXT PRIMARY KEY,
    upto REAL NOT NULL
);

CREATE INDEX job_errors_at_idx ON job_errors (at);
CREATE INDEX jobs_dead_finished_idx ON jobs (finished_at) WHERE state = 'dead';
