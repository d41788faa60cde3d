"""(g) the ceiling: pgbench running the store's own claim and complete SQL (from
postgres.sql) on the same database; taskq's drain as a fraction of it."""

from __future__ import annotations

from .base import Case, Metric

CASES = (
    Case(
        id="ceiling_10",
        family="ceiling",
        title="(g) pgbench ceiling, batches of 10",
        script_scenario="ceiling",
        subject="taskq",
        peers=(),
        full={"n": 100_000, "batch": 10, "concurrency": 2},
        quick={"n": 2000, "batch": 10, "concurrency": 2},
        metrics=(Metric("jobs_per_s", "pgbench claim+complete, batch 10", "jobs/s"),),
        extra={"compare_with": "drain_default"},
    ),
    Case(
        id="ceiling_32",
        family="ceiling",
        title="(g) pgbench ceiling, batches of 32",
        script_scenario="ceiling",
        subject="taskq",
        peers=(),
        full={"n": 100_000, "batch": 32, "concurrency": 2},
        quick={"n": 2000, "batch": 32, "concurrency": 2},
        metrics=(Metric("jobs_per_s", "pgbench claim+complete, batch 32", "jobs/s"),),
        extra={"compare_with": "drain_32"},
    ),
)
