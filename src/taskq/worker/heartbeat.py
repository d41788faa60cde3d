"""The worker's row and its pulse.

At start the worker registers its row (pid, hostname, label, workgroup instance,
queues). Every ``interval`` seconds one ``store.heartbeat`` call touches the row and
extends the leases of all the worker's running jobs. The heartbeat has a Store (a
connection) of its own, so it never queues behind claims and acks; when the store is
unreachable it backs off and retries (logged once per outage).
"""

from __future__ import annotations

import asyncio

from ..exceptions import StoreError
from ..jobs import WorkerInfo
from ..logs import get_logger
from ..store import Store
from .outage import StoreBackoff

log = get_logger(__name__)


class Heartbeat:
    def __init__(self, store: Store, info: WorkerInfo, *, interval: float, lease: float) -> None:
        self.store = store
        self.info = info
        self.interval = interval
        self.lease = lease
        self.beats = 0
        self._backoff = StoreBackoff("heartbeat", maximum=min(interval, 2.0))

    async def register(self) -> None:
        await self.store.register_worker(self.info)

    async def run(self) -> None:
        while True:
            try:
                await self.store.heartbeat(self.info.id, self.lease)
            except StoreError as exc:
                await asyncio.sleep(self._backoff.failed(exc))
                continue
            self._backoff.succeeded()
            self.beats += 1
            await asyncio.sleep(self.interval)

    async def unregister(self) -> None:
        try:
            await self.store.unregister_worker(self.info.id)
        except StoreError as exc:
            log.warning("worker-unregister-failed", worker=str(self.info.id), error=str(exc))
