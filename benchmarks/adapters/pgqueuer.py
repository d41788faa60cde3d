"""PgQueuer 1.6.x: asyncpg + uvloop (its own CLI's set-up), QueueManager.run() defaults."""

from __future__ import annotations

from .base import Adapter

ADAPTER = Adapter(
    name="pgqueuer",
    label="PgQueuer",
    dist="pgqueuer",
    script="pgqueuer_bench.py",
    backend="postgres",
    requirements=("pgqueuer>=1.6,<1.7", "asyncpg>=0.29,<1", "uvloop>=0.19,<1"),
    defaults="QueueManager.run() defaults: batch_size 10, no concurrency cap, "
    "heartbeat_timeout 30 s; asyncpg driver, uvloop; Queries.enqueue (lists for batches)",
    not_applicable={
        "sweep_c1": "n/a: PgQueuer rejects max_concurrent_tasks < 2 x batch_size; with "
        "concurrency_limit=1 on the entrypoint instead it drained ~10 jobs/s "
        "here (it waits for a notification or its dequeue timeout between jobs)",
        "recovery_workgroup": "n/a: no supervisor that rescues an observed death; "
        "recovery is by heartbeat timeout only (the bare figure)",
    },
)
