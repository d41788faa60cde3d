"""(a) enqueue 20,000 jobs in batches of 1,000 and 2,000 one at a time; (b) drain 20,000
queued no-op jobs with one worker process, at the system's default concurrency and at 32:
with start-up (worker process spawned -> queue empty, what issue 13 judges) and without
(first job started -> queue empty)."""

from __future__ import annotations

from .base import Case, Metric

PG_PEERS = ("pgqueuer", "procrastinate", "dramatiq", "celery")

CASES = (
    Case(
        id="enqueue",
        family="enqueue",
        title="(a) enqueue",
        script_scenario="enqueue",
        subject="taskq",
        peers=PG_PEERS,
        full={"n": 20_000, "batch": 1000, "single": 2000},
        quick={"n": 1000, "batch": 250, "single": 200},
        metrics=(
            Metric("batch_per_s", "batch enqueue (1,000/round trip)", "jobs/s"),
            Metric("single_per_s", "single enqueue", "jobs/s"),
        ),
        notes="Dramatiq has no batch enqueue (no batch figure; its send() loop is in the "
        "JSON as send_loop_per_s).",
    ),
    Case(
        id="drain_default",
        family="drain",
        title="(b) drain, default concurrency",
        script_scenario="drain",
        subject="taskq",
        peers=PG_PEERS,
        full={"n": 20_000, "batch": 1000, "concurrency": 0},
        quick={"n": 1000, "batch": 500, "concurrency": 0},
        metrics=(
            Metric("jobs_per_s_with_startup", "drain, default conc., with start-up", "jobs/s"),
            Metric("jobs_per_s", "drain, default concurrency", "jobs/s"),
            Metric("startup_ms", "worker start-up to first job", "ms", False),
        ),
    ),
    Case(
        id="drain_32",
        family="drain",
        title="(b) drain, concurrency 32",
        script_scenario="drain",
        subject="taskq",
        peers=PG_PEERS,
        full={"n": 20_000, "batch": 1000, "concurrency": 32},
        quick={"n": 1000, "batch": 500, "concurrency": 32},
        metrics=(
            Metric("jobs_per_s_with_startup", "drain, concurrency 32, with start-up", "jobs/s"),
            Metric("jobs_per_s", "drain, concurrency 32", "jobs/s"),
        ),
    ),
)

SWEEP_CONCURRENCY = (1, 4, 10, 32, 64)

#: drain throughput against concurrency (the plot); smaller drains, one run each
SWEEP = tuple(
    Case(
        id=f"sweep_c{c}",
        family="sweep",
        title=f"drain sweep, concurrency {c}",
        script_scenario="drain",
        subject="taskq",
        peers=PG_PEERS,
        full={"n": 5000, "batch": 1000, "concurrency": c},
        quick=None,
        metrics=(Metric("jobs_per_s", f"drain 5,000, concurrency {c}", "jobs/s"),),
        full_runs=1,
        extra={"concurrency": c},
    )
    for c in SWEEP_CONCURRENCY
)
