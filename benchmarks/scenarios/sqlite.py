"""(f) the SQLite store against Huey's SQLite storage: drain 20,000 queued no-op jobs
with one worker process (defaults), and 2,000 one-by-one enqueues."""

from __future__ import annotations

from .base import Case, Metric

CASES = (
    Case(
        id="sqlite_enqueue",
        family="sqlite",
        title="(f) SQLite enqueue",
        script_scenario="enqueue",
        subject="taskq-sqlite",
        peers=("huey",),
        full={"n": 2000, "batch": 1000, "single": 2000},
        quick={"n": 500, "batch": 250, "single": 200},
        metrics=(Metric("single_per_s", "SQLite single enqueue", "jobs/s"),),
    ),
    Case(
        id="sqlite_drain",
        family="sqlite",
        title="(f) SQLite drain",
        script_scenario="drain",
        subject="taskq-sqlite",
        peers=("huey",),
        full={"n": 20_000, "batch": 1000, "concurrency": 0},
        quick={"n": 1000, "batch": 500, "concurrency": 0},
        metrics=(
            Metric("jobs_per_s_with_startup", "SQLite drain, with start-up", "jobs/s"),
            Metric("jobs_per_s", "SQLite drain", "jobs/s"),
        ),
    ),
)
