-- Periodic jobs: the schedules workers run, as they recorded them.
--
-- A worker whose registry has schedules upserts their definitions here at start
-- (first_seen_at is kept from the first worker that recorded one: no tick before it is
-- owed) and advances last_tick, never backwards, after each tick it enqueued or skipped.
-- `taskq schedules` lists this table (the next run follows from cron and timezone), so
-- it needs no access to the application's code.

CREATE TABLE schedules (
    name          text        PRIMARY KEY,
    actor         text        NOT NULL,
    cron          text        NOT NULL,
    timezone      text        NOT NULL,
    missed        text        NOT NULL,
    first_seen_at timestamptz NOT NULL,
    seen_at       timestamptz NOT NULL,
    last_tick     timestamptz
);
