"""Claimed jobs waiting for a consumer, and how many more the worker may claim.

A claimed job holds a lease (other workers cannot have it) and, if this process is
killed, is charged a crash: so the worker never holds more claimed-but-unstarted jobs
than it can start soon. ``prefetch`` says how many may wait beyond the free consumers:

* ``0`` (the default): strict, claim only for free consumers: every claimed job starts
  at once, so a SIGKILL never charges a job that had not started;
* ``None`` (``--prefetch auto``): adaptive. None while jobs take longer than ``FAST_JOB`` on average
  (every claimed job starts at once); up to one per consumer while they are faster, so
  a waiting job starts within a few milliseconds and a drain of short jobs is not
  throttled by one claim round trip per ``max_concurrency`` jobs;
* ``N``: always allow N.

``in_flight`` counts jobs claimed and not yet finished (buffered + running).
"""

from __future__ import annotations

import asyncio

from ..jobs import ClaimedJob

FAST_JOB = 0.005  # seconds: average run time under which adaptive prefetch opens
_SMOOTHING = 0.2  # weight of the newest duration in the moving average


class JobBuffer:
    def __init__(self, consumers: int, prefetch: int | None = 0) -> None:
        self.consumers = consumers
        self._prefetch = None if prefetch is None else max(prefetch, 0)
        self.average_duration: float | None = None
        self.in_flight = 0
        self._queue: asyncio.Queue[ClaimedJob] = asyncio.Queue()
        self.get = self._queue.get  # the next claimed job (waits for one): no frame of ours
        self._room = asyncio.Event()
        self._room.set()

    @property
    def limit(self) -> int:
        """How many jobs may be claimed and unfinished at once."""
        if self._prefetch is not None:
            return self.consumers + self._prefetch
        average = self.average_duration
        if average is not None and average <= FAST_JOB:
            return 2 * self.consumers
        return self.consumers

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

    def done(self, duration: float | None = None) -> None:
        """A job left the worker (finished after ``duration`` seconds, or given back)."""
        if duration is not None:
            average = self.average_duration
            self.average_duration = (
                duration if average is None else average + _SMOOTHING * (duration - average)
            )
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
