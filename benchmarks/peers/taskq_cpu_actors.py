"""The CPU-bound benchmark's actors: ``taskq worker --actors taskq_cpu_actors:registry``.

``burn`` is the same job body as Celery's and the bare executor's (``_cpu.burn``), a
``cpu_bound`` actor: it runs in the worker's process pool. ``io_wait`` is an async
actor that records its start and sleeps (the I/O-bound side of the mixed-work case).
"""

from __future__ import annotations

import asyncio

import _common
import _cpu

import taskq

registry = taskq.Registry()
events = _common.Events()


@registry.actor(queue="default", cpu_bound=True, idempotent=True)
def burn(key: str, iterations: int) -> int:
    return _cpu.burn(key, iterations)


@registry.actor(queue="default", idempotent=True)
async def io_wait(key: str, ms: float) -> None:
    events.write("start", key)
    await asyncio.sleep(ms / 1000.0)
