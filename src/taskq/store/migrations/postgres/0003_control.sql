-- Control of running work: paused queues, fleet-wide limits, snoozes, and cancelling a
-- running job. Runs with search_path set to the taskq schema.

-- snooze_count: times the job snoozed (taskq.Snooze); no attempt is charged for those.
-- cancelled_at / cancelled_by: when and by whom a cancel was asked for. On a running job
-- they mean "cancel requested": the run that holds it ends `cancelled`, whatever it does.
ALTER TABLE jobs
    ADD COLUMN snooze_count integer NOT NULL DEFAULT 0,
    ADD COLUMN cancelled_at timestamptz,
    ADD COLUMN cancelled_by text;

-- One row per queue an operator has acted on. A paused queue is skipped by every claim.
CREATE TABLE queues (
    name       text        PRIMARY KEY,
    paused     boolean     NOT NULL DEFAULT false,
    paused_at  timestamptz,
    paused_by  text,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Fleet-wide limits of a queue or an actor: at most `concurrency` running jobs, at most
-- `rate` starts in any `rate_period` seconds. Claims that touch a limited queue or actor
-- run one at a time (an advisory lock), so the counts they read cannot race.
CREATE TABLE limits (
    kind        text             NOT NULL CHECK (kind IN ('queue', 'actor')),
    name        text             NOT NULL,
    concurrency integer          CHECK (concurrency >= 1),
    rate        integer          CHECK (rate >= 1),
    rate_period double precision CHECK (rate_period > 0),
    updated_at  timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, name),
    CHECK ((rate IS NULL) = (rate_period IS NULL)),
    CHECK (concurrency IS NOT NULL OR rate IS NOT NULL)
);

-- The starts a rate limit counts, per bucket of 1/20 of its period (a sliding window
-- read in O(20) rows): a claim adds its starts to the current bucket and counts every
-- bucket that overlaps the last period, so it never lets more than `rate` start in any
-- window of `rate_period` (it may hold a start back by up to one bucket).
CREATE TABLE limit_starts (
    kind   text        NOT NULL,
    name   text        NOT NULL,
    bucket timestamptz NOT NULL,
    starts integer     NOT NULL,
    PRIMARY KEY (kind, name, bucket)
);
