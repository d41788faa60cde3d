"""(i) the pruning soak: a producer enqueues 5,000 jobs/s, paced by the clock, for 10
minutes while one ``taskq worker --keep-succeeded 60`` (its other defaults) drains and
prunes; the jobs table's size, dead tuples and backlog are sampled every 10 s. It runs on
a server with autovacuum (a throwaway cluster when the bench server has it off).
``--quick``: 20 s at 200 jobs/s, retention 2 s, a prune pass every 4 s (shape only)."""

from __future__ import annotations

from .base import Case, Metric

#: what issue 13 asks for; a run at other settings is reported, not judged
TARGET_RATE = 5000
TARGET_DURATION_S = 600

CASES = (
    Case(
        id="soak",
        family="soak",
        title="(i) pruning soak: sustained enqueue, drain and prune",
        script_scenario="soak",
        subject="taskq",
        peers=(),
        full={
            "rate": TARGET_RATE,
            "duration": TARGET_DURATION_S,
            "interval": 10,
            "batch": 5000,
            "retention": 60,
        },
        quick={
            "rate": 200,
            "duration": 20,
            "interval": 2,
            "batch": 200,
            "retention": 2,
            "prune_interval": 4,
        },
        metrics=(
            Metric("enqueue_per_s", "soak: enqueued", "jobs/s"),
            Metric("drain_per_s", "soak: finished", "jobs/s"),
            Metric("backlog.ref", "soak: queued backlog at 30% of the run", "jobs", False),
            Metric("backlog.end", "soak: queued backlog, last tenth", "jobs", False),
            Metric("start.total_mib", "soak: jobs table at the start", "MiB", False, 1),
            Metric("ref.total_mib", "soak: jobs table at 30% of the run", "MiB", False, 1),
            Metric("size.end_mib", "soak: jobs table, last tenth (max)", "MiB", False, 1),
            Metric("end.heap_mib", "soak: heap at the end", "MiB", False, 1),
            Metric("end.index_mib", "soak: indexes at the end", "MiB", False, 1),
            Metric("start.n_dead_tup", "soak: dead tuples at the start", "rows", False),
            Metric("end.n_dead_tup", "soak: dead tuples at the end", "rows", False),
            Metric("end.n_live_tup", "soak: live tuples at the end", "rows", False),
        ),
        timeout=TARGET_DURATION_S + 300,
        full_runs=1,
        default_server=True,
    ),
)
