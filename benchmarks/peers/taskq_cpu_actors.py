"""The CPU-bound benchmarks' actors.

* ``taskq_cpu_actors:registry``: ``burn`` alone, a ``cpu_bound`` actor with the same job
  body as Celery's and the bare executor's (``_cpu.burn``): the CPU-bound drains.
* ``taskq_cpu_actors:mixed``: the same ``burn`` beside ``io_wait``, an async actor that
  records its start and sleeps (an I/O-bound job): the mixed-work case, one worker with
  both kinds.
"""

from __future__ import annotations

import asyncio

import _common
import _cpu

import taskq

registry = taskq.Registry()
mixed = taskq.Registry()
events = _common.Events()


def _burn(key: str, iterations: int) -> int:
    return _cpu.burn(key, iterations)


burn = registry.actor(queue="default", cpu_bound=True, idempotent=True, name="burn")(_burn)
mixed_burn = mixed.actor(queue="default", cpu_bound=True, idempotent=True, name="burn")(_burn)


@mixed.actor(queue="default", idempotent=True)
async def io_wait(key: str, ms: float) -> None:
    events.write("start", key)
    await asyncio.sleep(ms / 1000.0)
