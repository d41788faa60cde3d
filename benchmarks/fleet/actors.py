"""The fleet benchmark's one actor: it writes its job's id to its process's runs file.

``FLEET_RUNS_DIR`` names the directory (one file per worker process, opened once, each
run one ``write`` of one line), so the benchmark can count every job's runs afterwards:
a job run twice (a lease that expired during an outage, an ack lost) shows up twice.
"""

from __future__ import annotations

import os

import taskq

registry = taskq.Registry()
QUEUE = "fleet"
_fd: int | None = None


def _runs_file() -> int:
    global _fd
    if _fd is None:
        path = os.path.join(os.environ["FLEET_RUNS_DIR"], f"{os.getpid()}.runs")
        _fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    return _fd


@registry.actor(queue=QUEUE, idempotent=False)
async def tick() -> None:
    """Record this run (an async actor: the run itself costs next to nothing)."""
    os.write(_runs_file(), f"{taskq.current_job().id}\n".encode())
