"""procrastinate 3.10.x: PsycopgConnector, run_worker_async() defaults."""

from __future__ import annotations

from .base import Adapter

ADAPTER = Adapter(
    name="procrastinate",
    label="procrastinate",
    dist="procrastinate",
    script="procrastinate_bench.py",
    backend="postgres",
    requirements=("procrastinate>=3.10,<3.11", "psycopg[binary,pool]>=3.1,<4"),
    defaults="run_worker_async() defaults: concurrency 1, LISTEN/NOTIFY, 5 s poll; "
    "defer_async / batch_defer_async; sync_enqueue: defer() after app.open()",
    # it never re-runs a dead worker's jobs by itself: 45 s (past its 30 s
    # stalled_worker_timeout) shows that without waiting the full window
    overrides={"recovery_bare": {"observe": 45}},
    max_runs={"recovery_bare": 1},
    not_applicable={
        "recovery_workgroup": "n/a: no supervisor that rescues an observed death",
    },
)
