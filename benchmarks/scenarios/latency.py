"""(c) enqueue-to-start latency: 200 jobs 20 ms apart to an idle worker; each job records
its start time; latency = start - the moment enqueue was called."""

from __future__ import annotations

from .base import Case, Metric

CASES = (
    Case(
        id="latency",
        family="latency",
        title="(c) enqueue -> start latency",
        script_scenario="latency",
        subject="taskq",
        peers=("pgqueuer", "procrastinate", "dramatiq"),
        full={"n": 200, "interval": 0.02},
        quick={"n": 30, "interval": 0.02},
        metrics=(
            Metric("p50_ms", "latency p50", "ms", higher_is_better=False, digits=2),
            Metric("p99_ms", "latency p99", "ms", higher_is_better=False, digits=2),
        ),
    ),
)
