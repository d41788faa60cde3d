"""Huey 3.5.x with its SQLite storage (scenario f only)."""

from __future__ import annotations

from .base import Adapter

ADAPTER = Adapter(
    name="huey",
    label="Huey (SQLite)",
    dist="huey",
    script="huey_bench.py",
    backend="sqlite",
    requirements=("huey>=3.5,<3.6",),
    defaults="SqliteHuey, one consumer process, consumer defaults (1 thread worker)",
)
