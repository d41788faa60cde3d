"""(c) enqueue-to-start latency: 1,000 jobs 20 ms apart to an idle worker; each job
records its start time; latency = start - the moment enqueue was called. 1,000 and not
200 (issue 6 to round 2): the p99 of 200 samples is the second largest, so one stall of
the machine decided it (taskq/PgQueuer p99 ratios of 0.73 and 0.95 for the same code)."""

from __future__ import annotations

from .base import Case, Metric

CASES = (
    Case(
        id="latency",
        family="latency",
        title="(c) enqueue -> start latency",
        script_scenario="latency",
        subject="taskq",
        peers=("pgqueuer", "procrastinate", "dramatiq", "celery"),
        full={"n": 1000, "interval": 0.02},
        quick={"n": 30, "interval": 0.02},
        metrics=(
            Metric("p50_ms", "latency p50", "ms", higher_is_better=False, digits=2),
            Metric("p99_ms", "latency p99", "ms", higher_is_better=False, digits=2),
        ),
    ),
)
