"""Actors for the workflow tests (``tests.support.workflow_actors:registry``).

Each run of a step appends one JSON line to the file named by ``TASKQ_WF_RECORD`` (an
``O_APPEND`` write: a SIGKILL right after it loses nothing) when it starts and when it
ends, with the step's name, its attempt, its pid and the upstream steps it was given, so
a test sees every run any process made, in the order they started.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import taskq

registry = taskq.Registry()


def record(event: str, **fields: Any) -> None:
    path = os.environ.get("TASKQ_WF_RECORD")
    if not path:
        return
    job = taskq.current_job()
    line = {
        "event": event,
        "step": job.step,
        "workflow": str(job.workflow_id),
        "job": str(job.id),
        "attempt": job.attempt,
        "pid": os.getpid(),
        "at": time.time(),
        **fields,
    }
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def runs(path: Path) -> list[dict[str, Any]]:
    """Every line recorded so far."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _body(tag: str, fail: bool, seconds: float) -> str:
    record("start", upstream=sorted(taskq.current_job().upstream))
    if seconds:
        time.sleep(seconds)
    if fail:
        record("fail")
        raise RuntimeError(f"step {tag} fails on purpose")
    record("end")
    return tag


@registry.actor(max_attempts=1)
def work(tag: str, fail: bool = False, seconds: float = 0.0) -> str:
    """Not idempotent: a crash during it is dead/crashed, never a second run."""
    return _body(tag, fail, seconds)


@registry.actor(max_attempts=1, idempotent=True, max_crashes=10)
def redo(tag: str, fail: bool = False, seconds: float = 0.0) -> str:
    """Idempotent: a crash during it runs it again."""
    return _body(tag, fail, seconds)


@registry.actor(max_attempts=1, idempotent=True, max_crashes=10)
async def nap(tag: str, seconds: float) -> str:
    """Async, idempotent; long enough to be cancelled or killed while it runs."""
    record("start", upstream=sorted(taskq.current_job().upstream))
    await asyncio.sleep(seconds)
    record("end")
    return tag


@registry.actor(max_attempts=1)
def echo_upstream() -> dict[str, Any]:
    """Returns the upstream results it was given."""
    record("start", upstream=sorted(taskq.current_job().upstream))
    return dict(taskq.current_job().upstream)


@registry.actor(max_attempts=1)
def split(n: int, fail_after_adding: bool = False) -> int:
    """Adds ``n`` `work` steps (the last one after the first) to its own workflow."""
    record("start", upstream=sorted(taskq.current_job().upstream))
    fan = taskq.current_job().fan_out
    first = fan.add(work, "p0")
    for i in range(1, n):
        fan.add(work, f"p{i}", after=[first] if i == n - 1 else [])
    if fail_after_adding:
        raise RuntimeError("split fails after adding its steps")
    return n


@registry.actor(max_attempts=1)
def huge(size: int) -> str:
    """A result of ``size`` characters (over the result limit when large)."""
    return "x" * size
