"""taskq itself, on Postgres and on SQLite: the project's interpreter, the real
``taskq worker`` command."""

from __future__ import annotations

from .base import Adapter

ADAPTER = Adapter(
    name="taskq",
    label="taskq",
    dist="taskq",
    script="taskq_bench.py",
    backend="postgres",
    defaults="taskq worker defaults: --max-concurrency 64 (all-async registry), "
    "heartbeat 2 s, lease 10 s; AsyncClient.enqueue_many / enqueue",
)

SQLITE_ADAPTER = Adapter(
    name="taskq-sqlite",
    label="taskq (SQLite)",
    dist="taskq",
    script="taskq_bench.py",
    backend="sqlite",
    defaults="taskq worker defaults on the SQLite store (one file)",
)
