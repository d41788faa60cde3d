"""What a workgroup supervisor tells the fleet every few seconds.

One task of the supervisor, every ``interval`` seconds:

- **its children** go to the ``workgroups`` table (name, pid, state, restarts, latched,
  last exit cause), which the dashboard shows;
- **the backlog metrics** (``taskq.backlog``): computed once per fleet, by whichever
  process holds the ``backlog-metrics`` lease -- this supervisor, another one, or a
  worker outside a workgroup (``taskq_backlog_leader`` says which one does).

A failing store call is logged once per outage and retried at the next tick.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from uuid import UUID

from ..backlog import REPORT_INTERVAL, BacklogLease
from ..events import (
    WORKGROUP_BACKLOG_METRICS,
    WORKGROUP_FLEET_REPORT_FAILED,
    WORKGROUP_FLEET_REPORT_RECOVERED,
)
from ..exceptions import TaskqError
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..store import Store

log = get_logger(__name__)


class FleetReporter(Stoppable):
    name = "reporter"
    stop_timeout = None  # the tick in hand and the leave are bounded by their timeouts

    def __init__(
        self,
        *,
        instance: UUID,
        store: Callable[[], Awaitable[Store | None]],
        children: Callable[[], list[dict[str, Any]]],
        queues: Iterable[str],
        interval: float = REPORT_INTERVAL,
    ) -> None:
        self._instance = instance
        self._store = store
        self._children = children
        self._interval = interval
        self._failing = False
        self._stopped = StopSignal()
        self._backlog = BacklogLease(
            str(instance),
            queues,
            seconds=interval * 3,
            on_change=lambda leading: log.event(WORKGROUP_BACKLOG_METRICS, leader=leading),
        )

    # -- the part (``lifecycle.Part``) ---------------------------------------------------
    async def run(self) -> None:
        """Tick until stopped; then give the lease back and forget this workgroup."""
        try:
            while not self._stopped:
                await self.tick()
                await self._stopped.sleep(self._interval)
        finally:
            await self._leave()

    async def tick(self) -> None:
        store = await self._store()
        if store is None:
            self._backlog.lead(False)
            return
        try:
            await asyncio.wait_for(self._report(store), self._interval * 2)
        except (TaskqError, OSError, TimeoutError) as exc:
            self._backlog.lead(False)
            if not self._failing:
                log.event(
                    WORKGROUP_FLEET_REPORT_FAILED,
                    error=(exc.message if isinstance(exc, TaskqError) else str(exc))
                    or type(exc).__name__,
                    detail="backlog metrics and the dashboard's view of this workgroup "
                    "pause until the store answers",
                )
            self._failing = True
            return
        if self._failing:
            log.event(WORKGROUP_FLEET_REPORT_RECOVERED)
        self._failing = False

    async def _report(self, store: Store) -> None:
        await store.report_workgroup(
            self._instance, socket.gethostname(), os.getpid(), self._children()
        )
        await self._backlog.report(store)

    async def _leave(self) -> None:
        store = await self._store()
        await self._backlog.leave(store)
        if store is None:
            return
        try:
            await asyncio.wait_for(store.remove_workgroup(self._instance), 5.0)
        except (TaskqError, OSError, TimeoutError):
            pass  # the report ages out on its own
