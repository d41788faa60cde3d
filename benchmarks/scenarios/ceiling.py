"""(g) the ceiling: pgbench running the store's own claim and complete SQL (from
postgres.sql) on the same database, in batches of what one claim of a default worker
takes (its default ``--max-concurrency``, read from taskq); taskq's drain at the defaults
as a fraction of it. One pgbench client is the worker's one claim stream (the target);
two clients are reported for information."""

from __future__ import annotations

from .base import Case, Metric

CASES = (
    Case(
        id="ceiling",
        family="ceiling",
        title="(g) pgbench ceiling, batches of the default claim",
        script_scenario="ceiling",
        subject="taskq",
        peers=(),
        full={"n": 100_000, "batch": 0, "concurrency": 2},
        quick={"n": 2000, "batch": 0, "concurrency": 2},
        metrics=(
            Metric("batch", "pgbench batch (the default worker's claim size)", "jobs"),
            Metric("clients_1.jobs_per_s", "pgbench claim+complete, 1 client", "jobs/s"),
            Metric("clients_2.jobs_per_s", "pgbench claim+complete, 2 clients", "jobs/s"),
        ),
        extra={"compare_with": "drain_default", "ceiling_key": "clients_1.jobs_per_s"},
    ),
)
