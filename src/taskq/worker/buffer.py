"""Claimed jobs waiting for a consumer, and how many more the worker may claim.

A claimed job holds a lease and, if this process dies, is charged a crash: so the
fetcher claims only what free consumers can start at once (plus ``prefetch``, off by
default). ``in_flight`` counts jobs claimed and not yet finished (buffered + running).
"""

from __future__ import annotations

import asyncio

from ..jobs import ClaimedJob


class JobBuffer:
    def __init__(self, consumers: int, prefetch: int = 0) -> None:
        self.limit = consumers + max(prefetch, 0)
        self.in_flight = 0
        self._queue: asyncio.Queue[ClaimedJob] = asyncio.Queue()
        self._room = asyncio.Event()
        self._room.set()

    @property
    def free(self) -> int:
        """How many jobs may be claimed now."""
        return self.limit - self.in_flight

    @property
    def waiting(self) -> int:
        """Claimed jobs no consumer has taken yet."""
        return self._queue.qsize()

    def put_many(self, jobs: list[ClaimedJob]) -> None:
        put = self._queue.put_nowait
        for job in jobs:
            put(job)
        self.in_flight += len(jobs)
        if self.free <= 0:
            self._room.clear()

    async def get(self) -> ClaimedJob:
        return await self._queue.get()

    def done(self) -> None:
        """A job left the worker (finished, given back): its slot is free again."""
        self.in_flight -= 1
        if self.free > 0:
            self._room.set()

    async def wait_for_room(self) -> None:
        await self._room.wait()

    def drain(self) -> list[ClaimedJob]:
        """Take every job no consumer has started (shutdown gives them back)."""
        jobs: list[ClaimedJob] = []
        while not self._queue.empty():
            jobs.append(self._queue.get_nowait())
        self.in_flight -= len(jobs)
        if self.free > 0:
            self._room.set()
        return jobs
