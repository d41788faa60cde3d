"""(d) recovery: the in-flight jobs of a SIGKILLed worker, time until they run again.
Both workers run with concurrency 10 (procrastinate's default of 1 could not hold five
jobs in flight); lease and heartbeat settings are each system's defaults.
Bare: a second idle worker is running; the dead one's jobs come back by lease expiry
(or the peer's equivalent). Workgroup: ``taskq workgroup start`` observes the child's
death and rescues its jobs at once; the replacement child runs them."""

from __future__ import annotations

from .base import Case, Metric

CASES = (
    Case(
        id="recovery_bare",
        family="recovery",
        title="(d) recovery, bare (lease expiry)",
        script_scenario="recovery_bare",
        subject="taskq",
        peers=("pgqueuer", "procrastinate", "dramatiq"),
        full={"inflight": 5, "concurrency": 10, "observe": 90},
        quick=None,
        metrics=(
            Metric("all_s", "bare recovery (all re-run)", "s", higher_is_better=False, digits=2),
        ),
        timeout=400,
    ),
    Case(
        id="recovery_workgroup",
        family="recovery",
        title="(d) recovery, under a workgroup (observed death)",
        script_scenario="recovery_workgroup",
        subject="taskq",
        peers=("pgqueuer", "procrastinate", "dramatiq"),
        full={"inflight": 5, "observe": 60},
        quick={"inflight": 3, "observe": 60},
        metrics=(
            Metric(
                "all_s", "workgroup recovery (all re-run)", "s", higher_is_better=False, digits=3
            ),
        ),
        timeout=300,
    ),
)
