"""cpu_bound actors for the worker's end-to-end CPU-pool tests (a registry of their own,
so the other worker tests do not start a process pool)."""

from __future__ import annotations

import os
import time

from taskq import Registry, RetryBackoff
from tests.support.worker_actors import record

registry = Registry()


@registry.actor(cpu_bound=True, idempotent=True)
def cpu_square(x: int) -> int:
    record("run", f"square{x}")
    return x * x


@registry.actor(cpu_bound=True, idempotent=True, max_crashes=2)
def cpu_exit_idempotent(key: str) -> None:
    record("start", key)
    os._exit(3)


@registry.actor(cpu_bound=True, idempotent=False)
def cpu_exit_once(key: str) -> None:
    record("start", key)
    os._exit(3)


@registry.actor(
    cpu_bound=True, max_attempts=2, retry_backoff=RetryBackoff(initial=0.01, maximum=0.05)
)
def cpu_raises(key: str) -> None:
    record("run", key)
    raise KeyError(key)


@registry.actor(cpu_bound=True, idempotent=True)
def cpu_nap(ms: float) -> None:
    """Keep a pool process busy for ``ms`` milliseconds."""
    time.sleep(ms / 1000.0)


@registry.actor(cpu_bound=True, idempotent=True)
def cpu_hold(release: str) -> str:
    """Keep a pool process busy until the file ``release`` exists (at most 60 s)."""
    deadline = time.monotonic() + 60.0
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.01)
    return release


@registry.actor(cpu_bound=True, idempotent=False)
def cpu_held_once(key: str, release: str) -> int:
    """Not idempotent (a crash makes it dead): records its start, then keeps its pool
    process busy until the file ``release`` exists (at most 60 s); returns that pid."""
    record("start", key)
    deadline = time.monotonic() + 60.0
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.01)
    return os.getpid()


@registry.actor
async def ping(key: str) -> str:
    """Not cpu_bound: keeps running while the pool's breaker is open."""
    return key
