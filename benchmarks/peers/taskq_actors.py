"""The benchmark's actors for ``taskq worker --actors taskq_actors:registry``.

The same no-op body as every peer's: count (drain), or record its start (latency,
recovery) and, in the recovery scenario, block so the job is in flight when its worker
is killed. Idempotent, so that a crashed run is re-queued (the crash rules)."""

from __future__ import annotations

import asyncio

import _common
import _cpu

import taskq

registry = taskq.Registry()
events = _common.Events()


@registry.actor(queue="default", idempotent=True, max_crashes=5)
async def noop(key: str) -> None:
    if events.hold:
        events.write("start", key)
        await asyncio.sleep(events.hold)
    elif events.expect:
        events.hit()
    else:
        events.write("start", key)


# -- the workflow scenarios (_workflows.py): one done line a body, in any process ---------
@registry.actor(queue="default", idempotent=True)
async def wf_step(key: str) -> None:
    _cpu.done()


@registry.actor(queue="default", idempotent=True)
async def wf_fanin() -> None:
    _cpu.done()
