-- Periodic jobs: the schedules workers run, as they recorded them (see the Postgres
-- migration of the same number). Times are REAL unix seconds, as everywhere here.

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
