"""The worker's row and its pulse.

At start the worker registers its row (pid, hostname, label, workgroup instance,
queues). Every ``interval`` seconds one ``store.heartbeat`` call touches the row and
extends the leases of all the worker's running jobs. The heartbeat has a Store (a
connection) of its own, so it never queues behind claims and acks; when the store is
unreachable it backs off and retries (logged once per outage), each retry on a freshly
built connection pool: the old pool's own reconnect backoff doubles without bound, and a
heartbeat that comes back seconds after the store did lets leases expire for nothing.
While the heartbeat is in an outage the fetcher claims nothing (``in_outage``).

It registers the row when it starts and removes it when it stops. It is the last part
to stop but the health server: leases are extended while running jobs finish and acks
are flushed, and the row goes last.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import metrics
from ..events import WORKER_UNREGISTER_FAILED
from ..exceptions import StoreError
from ..jobs import WorkerInfo
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..store import Store
from .outage import StoreBackoff

log = get_logger(__name__)


class Heartbeat(Stoppable):
    name = "heartbeat"
    stop_timeout = 10.0  # removing the row through a hanging store

    def __init__(
        self,
        store: Store,
        info: WorkerInfo,
        *,
        interval: float,
        lease: float,
        connections: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.store = store
        self._connections = connections  # the worker's open connections now (Postgres)
        self.info = info
        self.interval = interval
        self.lease = lease
        self.beats = 0
        self._backoff = StoreBackoff("heartbeat", maximum=min(interval, 2.0))
        self._stopped = StopSignal()

    async def start(self) -> None:
        """Register the worker's row."""
        await self.store.register_worker(self.info)

    async def run(self) -> None:
        """Beat until stopped, then remove the row (also when beating broke)."""
        try:
            await self._beat_until_stopped()
        except Exception:
            await self._unregister()
            raise
        await self._unregister()

    async def _beat_until_stopped(self) -> None:
        while not self._stopped:
            try:
                open_now = self._connections()
                if open_now is not None:
                    metrics.store_connections.set(open_now)
                await self.store.heartbeat(self.info.id, self.lease, open_now)
            except StoreError as exc:
                if await self._stopped.sleep(self._backoff.failed(exc)):
                    return
                await self._fresh_connections()
                continue
            self._backoff.succeeded()
            self.beats += 1
            await self._stopped.sleep(self.interval)

    @property
    def in_outage(self) -> bool:
        return self._backoff.in_outage

    async def _fresh_connections(self) -> None:
        try:
            await self.store.reconnect()
        except StoreError:
            pass  # still down: the next beat tries again, after the backoff

    async def _unregister(self) -> None:
        try:
            await self.store.unregister_worker(self.info.id)
        except StoreError as exc:
            log.event(WORKER_UNREGISTER_FAILED, worker_id=str(self.info.id), error=str(exc))
