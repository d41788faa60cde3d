-- Control of running work: paused queues, fleet-wide limits, snoozes, and cancelling a
-- running job. Times are REAL unix seconds.

-- snooze_count: times the job snoozed (taskq.Snooze); no attempt is charged for those.
-- cancelled_at / cancelled_by: when and by whom a cancel was asked for. On a running job
-- they mean "cancel requested": the run that holds it ends `cancelled`, whatever it does.
ALTER TABLE jobs ADD COLUMN snooze_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cancelled_at REAL;
ALTER TABLE jobs ADD COLUMN cancelled_by TEXT;

-- One row per queue an operator has acted on. A paused queue is skipped by every claim.
CREATE TABLE queues (
    name       TEXT    PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    paused_at  REAL,
    paused_by  TEXT,
    updated_at REAL    NOT NULL
);

-- Fleet-wide limits of a queue or an actor: at most `concurrency` running jobs, at most
-- `rate` starts in any `rate_period` seconds (claims are serialised by BEGIN IMMEDIATE).
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

-- The starts a rate limit counts, per bucket of 1/20 of its period (a sliding window
-- read in O(20) rows): a claim adds its starts to the current bucket and counts every
-- bucket that overlaps the last period, so it never lets more than `rate` start in any
-- window of `rate_period` (it may hold a start back by up to one bucket).
CREATE TABLE limit_starts (
    kind   TEXT    NOT NULL,
    name   TEXT    NOT NULL,
    bucket REAL    NOT NULL,
    starts INTEGER NOT NULL,
    PRIMARY KEY (kind, name, bucket)
);
