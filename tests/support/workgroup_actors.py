"""Actors for the workgroup tests: real jobs that sleep, shout and do nothing.

``WG_TEST_BREAK_IMPORT=1`` makes importing this module fail (a child that can never
start: the crash-loop test).
"""

from __future__ import annotations

import asyncio
import os
import sys

import taskq

if os.environ.get("WG_TEST_BREAK_IMPORT") == "1":
    raise RuntimeError("workgroup_actors broken on purpose (WG_TEST_BREAK_IMPORT=1)")

registry = taskq.Registry()


@registry.actor(queue="default")
async def nap(seconds: float) -> str:
    """A job that is still running when the test kills its worker (not idempotent)."""
    await asyncio.sleep(seconds)
    return "rested"


@registry.actor(queue="default")
def shout(size: int) -> int:
    """Write one line of ``size`` bytes to stdout."""
    sys.stdout.write("x" * size + "\n")
    sys.stdout.flush()
    return size


@registry.actor(queue="default")
def noop() -> str:
    return "ok"


@registry.actor(queue="email")
def send_email(to: str = "someone@example.com") -> str:
    return to


@registry.actor(queue="report")
def build_report() -> str:
    return "report"


@registry.actor(queue="cleanup")
def cleanup() -> str:
    return "clean"


@registry.actor(queue="default", max_attempts=1)
def fail() -> None:
    """Dead at its first exception (a dead letter for the metrics tests)."""
    raise RuntimeError("failing on purpose")


@registry.actor(queue="default", idempotent=True)
async def held(key: str, release_dir: str) -> str:
    """Runs until the file ``release_dir/key`` exists (idempotent: re-run after a crash)."""
    from pathlib import Path

    while not (Path(release_dir) / key).exists():  # noqa: ASYNC110 (the test writes it)
        await asyncio.sleep(0.02)
    return key


@registry.actor(queue="default", idempotent=True)
def exit_worker(code: int) -> None:
    """Ends the whole worker process with ``os._exit(code)``: a job that kills its runner."""
    os._exit(code)
