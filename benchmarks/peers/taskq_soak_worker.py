"""The soak's worker: ``taskq worker``'s defaults, as a user who keeps succeeded jobs
briefly would run it. Retention has no command-line flag; it is a ``WorkerConfig``
field (docs/worker.md), so the process is the same ``taskq.worker.main.run`` that
``taskq worker`` calls, with ``retention_succeeded`` (and, for the quick run only, a
shorter ``prune_interval``) from $BENCH_RETENTION / $BENCH_PRUNE_INTERVAL; logging set
up as the CLI sets it."""

from __future__ import annotations

import os
import sys

from taskq import logs
from taskq.worker.config import WORKER_DEFAULTS, WorkerConfig
from taskq.worker.main import run

logs.configure()  # as `taskq worker` does: TASKQ_LOG_FORMAT=json (the harness sets it)
sys.exit(
    run(
        WorkerConfig(
            actors="taskq_actors:registry",
            retention_succeeded=float(os.environ["BENCH_RETENTION"]),
            prune_interval=float(
                os.environ.get("BENCH_PRUNE_INTERVAL", WORKER_DEFAULTS.prune_interval)
            ),
        )
    )
)
