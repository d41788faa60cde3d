"""The backlog part: a worker outside a workgroup reports the fleet's backlog metrics
when it holds the ``backlog-metrics`` lease (``taskq.backlog``).

Every ``interval`` seconds it takes or renews the lease (held for three intervals) and,
while it holds it, exports ``taskq_queue_jobs``, ``taskq_queue_oldest_age_seconds`` and
``taskq_queue_paused`` at its ``/metrics`` (``metrics.BARE_WORKER``), with
``taskq_backlog_leader`` 1; the fleet's other workers and supervisors export nothing. A
workgroup's children do not run it: their supervisor competes for the lease instead.

A store that does not answer is logged once per outage (``store-unavailable``, part
``backlog``); the lease is then given up at once (nothing stale is exported) and lapses
for another process to take. Stopped, it gives the lease back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..backlog import REPORT_INTERVAL, BacklogLease
from ..events import BACKLOG_METRICS
from ..exceptions import TaskqError
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..store import Store
from .outage import StoreBackoff

log = get_logger(__name__)


class BacklogReporter(Stoppable):
    name = "backlog"
    stop_timeout = 10.0  # a report in hand, then giving the lease back

    def __init__(
        self, store: Store, holder: str, queues: Iterable[str], *, interval: float = REPORT_INTERVAL
    ) -> None:
        self._store = store
        self._interval = interval
        self._lease = BacklogLease(
            holder,
            queues,
            seconds=interval * 3,
            on_change=lambda leading: log.event(BACKLOG_METRICS, leader=leading, holder=holder),
        )
        self._outage = StoreBackoff(self.name)
        self._stopped = StopSignal()

    async def run(self) -> None:
        try:
            while not self._stopped:
                await self.report()
                await self._stopped.sleep(self._interval)
        finally:
            await self._lease.leave(self._store)

    async def report(self) -> None:
        """One report: take or renew the lease, export the backlog while held."""
        try:
            await asyncio.wait_for(self._lease.report(self._store), self._interval * 2)
        except (TaskqError, OSError, TimeoutError) as exc:
            self._lease.lead(False)
            self._outage.failed(exc)
            return
        self._outage.succeeded()
