"""(j) CPU-bound work and (k) mixed work (issue 24): 3,000 queued jobs of ~2 ms of CPU, and
of ~0.1 ms, drained by one worker at its defaults (taskq: the ``cpu_bound`` actor's process pool of
``os.cpu_count()`` processes; Celery: prefork at its default concurrency), beside the
ceiling: a bare ``ProcessPoolExecutor(os.cpu_count())`` mapping the same function. The job
body is ``peers/_cpu.py``'s ``burn``: a pure-Python loop, and one line a job to count it
(the jobs run in several processes). Mixed work: one taskq worker with an async I/O
actor and a ``cpu_bound`` one; I/O jobs (5 ms of sleep) 20 ms apart, enqueue -> start
latency to the idle worker, then again while a backlog of CPU jobs saturates the pool."""

from __future__ import annotations

from .base import Case, Metric

TARGET_JOBS = 3000
MIXED_IO_JOBS = 200
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


CASES = (
    _case("cpu_drain", 2.0, "3,000 x 2 ms"),
    _case("cpu_drain_short", 0.1, "3,000 x 0.1 ms"),
    Case(
        id="mixed",
        family="mixed",
        title="(k) mixed work: I/O job latency with and without a CPU backlog",
        script_scenario="mixed",
        subject="taskq",
        peers=(),
        full={"n": MIXED_IO_JOBS, "interval": 0.02, "backlog": 4000, "work_ms": 2.0, "io_ms": 5.0},
        quick={"n": 30, "interval": 0.02, "backlog": 600, "work_ms": 2.0, "io_ms": 5.0},
        metrics=(
            Metric("idle.p50_ms", "mixed: I/O latency p50, idle worker", "ms", False, 2),
            Metric("busy.p50_ms", "mixed: I/O latency p50, pool saturated", "ms", False, 2),
            Metric("idle.p99_ms", "mixed: I/O latency p99, idle worker", "ms", False, 2),
            Metric("busy.p99_ms", "mixed: I/O latency p99, pool saturated", "ms", False, 2),
            Metric("p50_ratio", "mixed: I/O p50 saturated / idle", "x", False, 2),
            Metric(
                "idle_enqueue.p50_ms", "mixed: of it the enqueue call, p50, idle", "ms", False, 2
            ),
            Metric(
                "busy_enqueue.p50_ms",
                "mixed: of it the enqueue call, p50, pool saturated",
                "ms",
                False,
                2,
            ),
            Metric("backlog_left_after_io", "mixed: CPU jobs still queued after", "jobs"),
        ),
    ),
)
