"""taskq itself, on Postgres and on SQLite: the project's interpreter, the real
``taskq worker`` command. The settings named are read from taskq's own defaults."""

from __future__ import annotations

from taskq.worker.config import DEFAULT_ASYNC_CONCURRENCY, WORKER_DEFAULTS

from .base import Adapter

ADAPTER = Adapter(
    name="taskq",
    label="taskq",
    dist="taskq",
    script="taskq_bench.py",
    backend="postgres",
    defaults=f"taskq worker defaults: --max-concurrency {DEFAULT_ASYNC_CONCURRENCY} "
    f"(all-async registry), heartbeat {WORKER_DEFAULTS.heartbeat_interval:g} s, "
    f"lease {WORKER_DEFAULTS.lease:g} s; AsyncClient.enqueue_many / enqueue",
)

SQLITE_ADAPTER = Adapter(
    name="taskq-sqlite",
    label="taskq (SQLite)",
    dist="taskq",
    script="taskq_bench.py",
    backend="sqlite",
    defaults="taskq worker defaults on the SQLite store (one file); taskq.Client (synchronous, "
    "as Huey's API) enqueue_many / enqueue",
)
