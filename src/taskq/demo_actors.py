"""The actors `taskq demo` runs: ordinary work, failures, and runners that die.

Workers import this as ``taskq.demo_actors:registry``. Whether a job misbehaves is
decided by its argument, so every demo run tells the same story; a marker directory
(``TASKQ_DEMO_DIR``) lets a job crash only on its first run.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

import taskq

registry = taskq.Registry()


def _first_time(kind: str, n: int) -> bool:
    """True the first time (kind, n) asks, across processes (an O_EXCL marker file)."""
    directory = Path(os.environ.get("TASKQ_DEMO_DIR", "."))
    try:
        fd = os.open(directory / f"{kind}-{n}.marker", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


@registry.actor(queue="demo", idempotent=True)
def thumbnail(n: int) -> dict[str, int]:
    """Ordinary work: a few milliseconds in a thread."""
    time.sleep(0.005 + (n % 7) * 0.003)
    return {"thumbnail": n}


@registry.actor(
    queue="demo",
    max_attempts=3,
    idempotent=True,
    retry_backoff=taskq.RetryBackoff(initial=0.2, factor=2.0, maximum=1.0),
)
async def fetch_feed(n: int) -> str:
    """Fails now and then: every 10th job fails once, every 40th never succeeds."""
    if n % 40 == 0:
        raise ConnectionError(f"feed {n}: upstream refused the connection")
    if n % 10 == 0 and _first_time("fetch", n):
        raise TimeoutError(f"feed {n}: upstream timed out (will succeed on retry)")
    return f"feed {n} ok"


@registry.actor(queue="demo", idempotent=True)
def flaky_extension(n: int) -> str:
    """Every 50th job kills its whole worker process once (a C extension gone wrong).
    The workgroup sees the exit, rescues that worker's jobs at once and restarts it."""
    if n % 50 == 25 and _first_time("exit", n):
        os._exit(70)
    time.sleep(0.01)
    return "ok"


@registry.actor(queue="demo", cpu_bound=True, idempotent=True)
def render(n: int) -> int:
    """CPU work in the process pool; every 30th page segfaults its pool process once.
    Only that job is charged; the pool replaces the process and keeps serving."""
    if n % 30 == 15 and _first_time("segv", n):
        ctypes.string_at(0)
    return sum(i * i for i in range(20_000 + n))


@registry.actor(queue="demo", cpu_bound=True, idempotent=True)
def poison_pill(n: int) -> None:
    """Kills whatever process runs it, every time: dead/poison after two crashes."""
    os._exit(3)


@registry.actor(queue="demo", idempotent=False)
def charge_card(n: int) -> str:
    """Not idempotent: if its runner dies mid-job it is not re-run (dead/crashed). Order 7
    takes its worker process down with it."""
    if n == 7 and _first_time("charge", n):
        os._exit(70)
    time.sleep(0.02)
    return f"charged order {n}"
