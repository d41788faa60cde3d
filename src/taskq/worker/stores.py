"""The worker's stores as a part (``lifecycle.Part``): opened all at once when the worker
starts (the first part: every other part uses them), closed when it stops (the last).

``start`` opens every store concurrently (the first failure is the one error), starts
warming the job store's claim connections (``Store.warm_up``: the fetcher's start and
first claim find them open; not in a workgroup child whose supervisor relays wake-ups)
and meanwhile runs ``ready`` (the worker's checks: the schema, the actor configs); a
store that opened is closed again if anything fails. ``run`` waits for the stop, then
closes them (also when cancelled).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from ..lifecycle import Stoppable, StopSignal
from ..store import Store


class Stores(Stoppable):
    name = "stores"
    stop_timeout = None  # closing is bounded by each store's own timeouts

    def __init__(
        self, stores: Sequence[Store], ready: Callable[[], Awaitable[None]], *, warm_up: bool = True
    ) -> None:
        self.stores = list(stores)
        self._ready = ready
        self._warm = warm_up
        self._warm_up: asyncio.Future[None] | None = None
        self._stopped = StopSignal()

    async def start(self) -> None:
        try:
            opened = await asyncio.gather(*(s.open() for s in self.stores), return_exceptions=True)
            for result in opened:
                if isinstance(result, BaseException):
                    raise result
            if self._warm:
                self._warm_up = asyncio.ensure_future(self.stores[0].warm_up())
            await self._ready()
        except BaseException:
            await self._close()
            raise

    async def run(self) -> None:
        try:
            await self._stopped.wait()
        finally:
            await self._close()

    async def _close(self) -> None:
        if self._warm_up is not None:
            self._warm_up.cancel()  # done long ago, unless the checks failed first
            await asyncio.gather(self._warm_up, return_exceptions=True)
        for store in self.stores:  # closing a store that did not open is a no-op
            await store.close()
