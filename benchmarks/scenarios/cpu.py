"""(j) CPU-bound work (issue 24): 3,000 queued jobs of ~2 ms of CPU, and of ~0.1 ms, drained
by one worker at its defaults (taskq: the ``cpu_bound`` actor's process pool of
``os.cpu_count()`` processes; Celery: prefork at its default concurrency), beside the
ceiling: a bare ``ProcessPoolExecutor(os.cpu_count())`` mapping the same function. The job
body is ``peers/_cpu.py``'s ``burn``: a pure-Python loop, and one line a job to count it
(the jobs run in several processes)."""

from __future__ import annotations

from .base import Case, Metric

TARGET_JOBS = 3000
PEERS = ("celery", "executor")


def _metrics(what: str) -> tuple[Metric, ...]:
    return (
        Metric("jobs_per_s_with_startup", f"CPU drain {what}, with start-up", "jobs/s"),
        Metric("jobs_per_s_after_1s", f"CPU drain {what}, after its first second", "jobs/s"),
        Metric("jobs_per_s", f"CPU drain {what}", "jobs/s"),
        Metric("startup_ms", f"CPU drain {what}: start-up to first job", "ms", False),
        Metric("cpu_ms_per_job", f"CPU drain {what}: CPU per job body", "ms", False, digits=2),
    )


def _case(id: str, work_ms: float, what: str) -> Case:
    return Case(
        id=id,
        family="cpu",
        title=f"(j) CPU-bound drain, 3,000 jobs of ~{work_ms:g} ms",
        script_scenario="cpu_drain",
        subject="taskq",
        peers=PEERS,
        full={"n": TARGET_JOBS, "batch": 1000, "work_ms": work_ms},
        quick={"n": 300, "batch": 300, "work_ms": work_ms},
        metrics=_metrics(what),
    )


CASES = (_case("cpu_drain", 2.0, "3,000 x 2 ms"), _case("cpu_drain_short", 0.1, "3,000 x 0.1 ms"))
