"""What a workgroup supervisor tells the fleet every few seconds.

One task of the supervisor, every ``interval`` seconds:

- **its children** go to the ``workgroups`` table (name, pid, state, restarts, latched,
  last exit cause), which the dashboard shows;
- **the backlog metrics** (``taskq_queue_jobs{queue,state}``,
  ``taskq_queue_oldest_age_seconds{queue}``) are computed once per fleet: the
  supervisor that holds the ``backlog-metrics`` lease (a row in ``leaders``, renewed each
  tick, taken over by another once it lapses) runs one ``queue_backlog`` query --
  partial-index scans only -- and exports the result, with ``taskq_queue_paused{queue}``
  for the paused queues; the others export nothing
  (``taskq_backlog_leader`` says which one does).

A failing store call is logged once per outage and retried at the next tick.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from uuid import UUID

from .. import metrics
from ..events import (
    WORKGROUP_BACKLOG_METRICS,
    WORKGROUP_FLEET_REPORT_FAILED,
    WORKGROUP_FLEET_REPORT_RECOVERED,
)
from ..exceptions import TaskqError
from ..insight import QueueDepth
from ..logs import get_logger
from ..store import Store

log = get_logger(__name__)

LEASE_NAME = "backlog-metrics"
#: the states ``taskq_queue_jobs`` reports (finished states grow without bound: their
#: rate is ``taskq_jobs_finished_total``)
BACKLOG_STATES = ("queued", "running", "dead")


def export_backlog(depths: Iterable[QueueDepth], known_queues: Iterable[str]) -> None:
    """Replace the backlog gauges with ``depths``; a known queue without jobs reads 0."""
    by_queue = {d.queue: d for d in depths}
    for queue in known_queues:
        by_queue.setdefault(queue, QueueDepth(queue))
    metrics.queue_jobs.clear()
    metrics.queue_oldest_age.clear()
    for queue, depth in sorted(by_queue.items()):
        for state in BACKLOG_STATES:
            metrics.queue_jobs.labels(queue=queue, state=state).set(getattr(depth, state))
        metrics.queue_oldest_age.labels(queue=queue).set(depth.oldest_due_age)


def export_paused(paused: Iterable[str]) -> None:
    """``taskq_queue_paused{queue}``: 1 for each paused queue (a resumed one disappears)."""
    metrics.queue_paused.clear()
    for queue in paused:
        metrics.queue_paused.labels(queue=queue).set(1)


def clear_backlog() -> None:
    metrics.queue_jobs.clear()
    metrics.queue_oldest_age.clear()
    metrics.queue_paused.clear()


class FleetReporter:
    def __init__(
        self,
        *,
        instance: UUID,
        store: Callable[[], Awaitable[Store | None]],
        children: Callable[[], list[dict[str, Any]]],
        queues: Iterable[str],
        interval: float = 5.0,
    ) -> None:
        self._instance = instance
        self._holder = str(instance)
        self._store = store
        self._children = children
        self._queues = tuple(sorted(set(queues)))
        self._interval = interval
        self._failing = False
        self._leading = False

    async def run(self, stop: asyncio.Event) -> None:
        """Tick until ``stop`` is set; then give the lease back and forget this workgroup."""
        try:
            while not stop.is_set():
                await self.tick()
                try:
                    await asyncio.wait_for(stop.wait(), self._interval)
                except TimeoutError:
                    pass
        finally:
            await self._leave()

    async def tick(self) -> None:
        store = await self._store()
        if store is None:
            self._lead(False)
            return
        try:
            await asyncio.wait_for(self._report(store), self._interval * 2)
        except (TaskqError, OSError, TimeoutError) as exc:
            self._lead(False)
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
        leading = await store.try_lead(LEASE_NAME, self._holder, self._interval * 3)
        if leading:
            export_backlog(await store.queue_backlog(), self._queues)
            export_paused(await store.paused_queues())
        self._lead(leading)

    def _lead(self, leading: bool) -> None:
        if leading != self._leading:
            log.event(WORKGROUP_BACKLOG_METRICS, leader=leading)
        self._leading = leading
        metrics.backlog_leader.set(float(leading))
        if not leading:
            clear_backlog()

    async def _leave(self) -> None:
        self._lead(False)
        store = await self._store()
        if store is None:
            return
        try:
            await asyncio.wait_for(store.release_lead(LEASE_NAME, self._holder), 5.0)
            await asyncio.wait_for(store.remove_workgroup(self._instance), 5.0)
        except (TaskqError, OSError, TimeoutError):
            pass  # the lease lapses and the report ages out on their own
