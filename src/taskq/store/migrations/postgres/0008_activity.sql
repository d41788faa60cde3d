-- taskq 0008: the dashboard's charts over time (docs/operating.md "Charts").
--
-- Finished jobs per minute, queue and actor, counted once a minute has closed from the indexed
-- finish times (succeeded, dead) and failed runs (job_errors.at), and kept two days:
-- a chart of the last day reads at most 1,440 rows a queue and actor, however many jobs the
-- store holds. `rollups` remembers up to which minute they are counted. backlog_age is
-- the age of the oldest due queued job, the largest sampled in that minute (by the
-- backlog-metrics leader and by an open dashboard), in the queue's row of actor '', which
-- also holds the queue's totals.
CREATE TABLE queue_minutes (
    minute      timestamptz      NOT NULL,
    queue       text             NOT NULL,
    actor       text             NOT NULL DEFAULT '',
    succeeded   bigint           NOT NULL DEFAULT 0,
    failed_runs bigint           NOT NULL DEFAULT 0,
    dead        bigint           NOT NULL DEFAULT 0,
    backlog_age double precision,
    PRIMARY KEY (minute, queue, actor)
);

-- the queue's totals (every actor), and its backlog samples, are the rows of actor '':
-- the charts of the whole store and of a queue read only those
CREATE INDEX queue_minutes_totals_idx ON queue_minutes (minute, queue) WHERE actor = '';

CREATE TABLE rollups (
    name text        PRIMARY KEY,
    upto timestamptz NOT NULL
);

-- the minute counts' range scans (succeeded ones use jobs_prune_idx)
CREATE INDEX job_errors_at_idx ON job_errors (at);
CREATE INDEX jobs_dead_finished_idx ON jobs (finished_at) WHERE state = 'dead';
