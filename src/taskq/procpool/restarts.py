"""When does a slot replace its process, and when may the next one start?

* ``recycle_reason`` after each job a process survived: ``max_tasks`` (it ran
  ``max_tasks_per_child`` jobs) or ``max_memory`` (its RSS is over
  ``max_memory_per_child_mib``), else None.
* ``may_start`` waits while the breaker holds restarts back (open, or half-open with a
  process already alive: half-open lets exactly one process start).
* ``pause`` applies the slot's own ``RestartPolicy`` (taskq/restart.py) after a process
  that failed (died, failed its initializers): a backoff delay with full jitter, or, when
  the policy gives up, the breaker trips. A process retired for any other reason (a
  recycle, a timeout, a cancel) is replaced at once, with no delay and nothing counted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from ..events import PROCESS_POOL_RESTART_SCHEDULED, PROCESS_POOL_SLOT_GAVE_UP
from ..logs import get_logger
from . import process
from .breaker import BreakerState, PoolBreaker
from .changes import Changes
from .config import PoolConfig
from .slot import Slot

log = get_logger(__name__)

BREAKER_RECHECK = 0.25  # seconds between breaker checks of a slot waiting to restart


def recycle_reason(config: PoolConfig, slot: Slot) -> str | None:
    """Why the slot's process should be replaced now, between jobs (None: keep it)."""
    limit, memory = config.max_tasks_per_child, config.max_memory_per_child_mib
    if limit is not None and slot.tasks_done >= limit:
        return "max_tasks"
    if memory is not None and slot.pid is not None:
        rss = process.rss_mib(slot.pid)
        if rss is not None and rss > memory:
            return "max_memory"
    return None


class RestartGate:
    def __init__(
        self,
        breaker: PoolBreaker,
        changes: Changes,
        *,
        closing: Callable[[], bool],
        processes_alive: Callable[[], int],
    ) -> None:
        self._breaker = breaker
        self._changes = changes
        self._closing = closing
        self._processes_alive = processes_alive

    async def may_start(self, held: Callable[[], None]) -> bool:
        """True once a process may start; False if the pool closes first. ``held`` is
        called each time the breaker holds the start back."""
        while not self._closing():
            state = self._breaker.state
            if state is BreakerState.CLOSED or (
                state is BreakerState.HALF_OPEN and self._processes_alive() == 0
            ):
                return True
            held()
            await self._changes.wait(BREAKER_RECHECK)
        return False

    async def pause(self, slot: Slot) -> bool:
        """Wait the backoff delay the slot's last retirement calls for. True when the
        slot's policy gave up (the breaker is tripped; the slot needs a fresh policy)."""
        retirement = slot.retirement
        if retirement is None or not retirement.failure:
            return False
        decision = slot.policy.on_failure()
        if decision.give_up:
            log.event(
                PROCESS_POOL_SLOT_GAVE_UP,
                slot=slot.index,
                recent_failures=decision.recent,
                detail="restart limit reached; the breaker opens",
            )
            self._breaker.trip()
            return True
        log.event(
            PROCESS_POOL_RESTART_SCHEDULED,
            slot=slot.index,
            delay=decision.delay,
            consecutive_failures=decision.attempt,
            reason=retirement.reason,
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._until_closing(), timeout=decision.delay)
        return False

    async def _until_closing(self) -> None:
        while not self._closing():
            await self._changes.wait()
