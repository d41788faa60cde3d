"""(k) the enqueue a web request pays (issue 26): one job at a time through each system's
synchronous API, on the request's thread: ``taskq.Client.enqueue`` and procrastinate's
``defer`` on the same Postgres, Celery's ``delay()`` on the local Redis. 3 interleaved
runs (a process each) of 1,000 enqueues after 200 untimed ones."""

from __future__ import annotations

from .base import Case, Metric

CASES = (
    Case(
        id="sync_enqueue",
        family="enqueue",
        title="(k) synchronous single enqueue (a web request's)",
        script_scenario="sync_enqueue",
        subject="taskq",
        peers=("procrastinate", "celery"),
        full={"single": 1000, "warmup": 200},
        quick={"single": 100, "warmup": 20},
        metrics=(
            Metric("single_per_s", "sync single enqueue (Client / defer / delay())", "jobs/s"),
            Metric("single_us", "sync single enqueue, per job", "us", False),
        ),
        full_runs=3,
        notes="taskq.Client.enqueue (Postgres, the calling thread), procrastinate's "
        "synchronous Task.defer (app.open(): its SyncPsycopgConnector), Celery's "
        "task.delay() (Redis); 200 untimed calls first.",
    ),
)
