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

``CpuShare`` bounds the jobs of ``cpu_bound`` actors among them in a worker that also
runs other actors: a pool of N processes runs N and holds N more in their pipes
(procpool's pipelining), so more than ``CPU_SHARE`` x N claimed would only hold consumers
(and leases) that the other actors' jobs need while the pool is saturated. The share is
``CPU_SHARE`` x N, and never more than half the consumers plus one (a worker with many
pool processes and few consumers needs ``--max-concurrency`` raised to feed them). Above
``CPU_LOW`` x N (one running a process) the fetcher leaves the cpu actors out of its
claims, so a claim woken by the other actors' new jobs finds them behind a cpu backlog;
when the pool has worked its jobs down to that mark the fetcher is nudged to top them
up to the share. Few, larger top-ups, because the other actors' jobs wait behind every
claim: a mark of 2 x N (running and piped) kept the pipes full but claimed twice as
often: I/O p50 3.8x idle instead of 2.4x, p99 116-385 ms instead of 53-76 ms, for ~20%
more cpu throughput while the other actors have work. A worker of cpu actors only has
no share: every consumer may hold one, and it claims in batches (``refill_at``, the
``cpu_refill`` mark): not while it holds more than ``CPU_REFILL`` x N (a job running and
the next in its pipe for each process), then as many as the consumers take. One claim a
job (a claim per freed consumer) cost the worker ~0.13 ms of CPU a job, a third of its
own, and Postgres as much; the pool does not wait for a claim while each process has its
next job in its pipe (a claim takes ~1 ms, a process's job in the pipe lasts as long as
the job). The mark was 2 x N + 2 until 2026-12-05: the two more made each claim two jobs
smaller for the same consumers (4 instead of 6 with 2 processes), and 2 ms jobs drained
~6% slower. Its default consumers (``config.default_concurrency``) leave room for claims
of up to ``CPU_BATCH_PACED`` or N + 2 jobs above that mark, and a mixed worker's default
gives the cpu share its 3 x N: so a pool of many processes (8, 32) is fed without
``--max-concurrency``.

At its default consumers, a worker of cpu actors only sizes each claim by its pool's pace
(``ClaimPace``): the jobs the pool finished in ``CLAIM_AHEAD`` since the last claim, at
least ``CPU_BATCH`` (or N + 2) and at most the consumers free above the refill mark. A
claim costs the worker and Postgres ~1 ms of CPU whatever its size: for jobs of ~2 ms,
claims of 12 instead of 6 took the transactions a job 0.28 -> 0.21 and ~3% more jobs a
second; for jobs of 10 ms and more the claim stays at 6, so a worker does not hold more
long jobs that an idle worker could have run. An explicit ``--max-concurrency`` claims
every free consumer, as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ..jobs import ClaimedJob

FAST_JOB = 0.005  # seconds: average run time under which adaptive prefetch opens
_SMOOTHING = 0.2  # weight of the newest duration in the moving average
CPU_SHARE = 3  # x pool processes: cpu jobs claimed at most (running, piped, waiting)
CPU_LOW = 1  # x pool processes: claim cpu jobs again at this many (one running each)
CPU_REFILL = 2  # x pool processes: a worker of cpu actors only claims at this many
CPU_BATCH = 6  # jobs a claim of a worker of cpu actors only takes at least (its default)
CPU_BATCH_PACED = 12  # ... and at most, while its pool's pace asks for more (ClaimPace)
CLAIM_AHEAD = 0.02  # seconds: a paced claim takes what the pool finished in this long


def cpu_refill(processes: int, limit: int) -> int | None:
    """``refill_at`` of a worker of cpu actors only with ``processes`` pool processes and
    ``limit`` consumers: None where batches would be of one job anyway."""
    mark = CPU_REFILL * processes
    return mark if mark < limit - 1 else None


class ClaimPace:
    """How many jobs a claim of a worker of cpu actors only takes above its refill mark:
    ``low`` until the pool's pace is known, then the jobs it finished in ``CLAIM_AHEAD``
    since the last claim, between ``low`` and ``high``."""

    def __init__(self, low: int, high: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.low = low
        self.high = max(low, high)
        self.batch = low
        self._clock = clock
        self._last: tuple[float, int] | None = None  # (when, jobs finished) at the last claim

    @classmethod
    def for_pool(cls, processes: int, consumers: int, refill_at: int) -> ClaimPace:
        room = consumers - refill_at
        return cls(min(room, max(CPU_BATCH, processes + 2)), room)

    def claiming(self, finished: int) -> int:
        """A claim is being sent, ``finished`` jobs having left the worker so far: the
        batch for it, from the pace since the last one (a wait for jobs between them
        slows the pace: the batch falls back towards ``low``)."""
        now = self._clock()
        if self._last is not None:
            since, before = self._last
            elapsed, done = now - since, finished - before
            if elapsed > 0 and done > 0:
                ahead = round(done / elapsed * CLAIM_AHEAD)
                self.batch = max(self.low, min(self.high, ahead))
        self._last = (now, finished)
        return self.batch


class CpuShare:
    """How many claimed jobs are of ``cpu_bound`` actors, against the pool's marks."""

    def __init__(self, actors: frozenset[str], processes: int, consumers: int) -> None:
        self.actors = actors
        # never more than about half the consumers: the others are the other actors'
        self.high = max(1, min(CPU_SHARE * processes, consumers // 2 + 1))
        self.low = min(CPU_LOW * processes, self.high - 1)
        self.in_flight = 0
        self.on_room: Callable[[], None] | None = None  # the fetcher's nudge

    @property
    def full(self) -> bool:
        """Above the low mark: the pool runs and pipes a job per process already; claims
        leave the cpu actors out (a nudge at the low mark claims them again)."""
        return self.in_flight > self.low

    def room(self, free: int) -> int:
        """How many jobs one claim may take while the cpu actors are claimable."""
        return min(free, self.high - self.in_flight)

    def left(self, count: int) -> None:
        before = self.in_flight
        self.in_flight -= count
        if before > self.low >= self.in_flight and self.on_room is not None:
            self.on_room()


class JobBuffer:
    def __init__(
        self,
        consumers: int,
        prefetch: int | None = 0,
        cpu: CpuShare | None = None,
        refill_at: int | None = None,
        pace: ClaimPace | None = None,
    ) -> None:
        self.consumers = consumers
        self.cpu = cpu
        #: claim again only once at most this many are in flight (None: when one is free)
        self.refill_at = refill_at
        #: with ``refill_at``: claims sized by the pool's pace, not every free consumer
        self.pace = pace if refill_at is not None else None
        self.finished = 0  # jobs that left the worker (finished or given back)
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
        consumers = self.consumers
        pace = self.pace
        if pace is not None:
            assert self.refill_at is not None
            consumers = min(consumers, self.refill_at + pace.batch)
        if self._prefetch is not None:
            return consumers + self._prefetch
        average = self.average_duration
        if average is not None and average <= FAST_JOB:
            return 2 * consumers
        return consumers

    def claim_size(self) -> int:
        """How many jobs the claim about to be sent may take (``free``, after a paced
        worker's batch is sized by the pace since its last claim)."""
        if self.pace is not None:
            self.pace.claiming(self.finished)
        return self.free

    @property
    def free(self) -> int:
        """How many jobs may be claimed now."""
        return self.limit - self.in_flight

    @property
    def may_claim(self) -> bool:
        """A claim is due: room for a job, and (``refill_at``) down to the refill mark."""
        refill_at = self.refill_at
        return self.limit > self.in_flight and (refill_at is None or self.in_flight <= refill_at)

    @property
    def waiting(self) -> int:
        """Claimed jobs no consumer has taken yet."""
        return self._queue.qsize()

    def put_many(self, jobs: list[ClaimedJob]) -> None:
        put = self._queue.put_nowait
        for job in jobs:
            put(job)
        self.in_flight += len(jobs)
        cpu = self.cpu
        if cpu is not None:
            cpu.in_flight += sum(1 for job in jobs if job.actor in cpu.actors)
        if not self.may_claim:
            self._room.clear()

    def done(self, duration: float | None = None, job: ClaimedJob | None = None) -> None:
        """``job`` left the worker (finished after ``duration`` seconds, or given back)."""
        if duration is not None:
            average = self.average_duration
            self.average_duration = (
                duration if average is None else average + _SMOOTHING * (duration - average)
            )
        self.in_flight -= 1
        self.finished += 1
        if self.may_claim:
            self._room.set()
        cpu = self.cpu
        if cpu is not None and job is not None and job.actor in cpu.actors:
            cpu.left(1)

    async def wait_for_room(self) -> None:
        await self._room.wait()

    def drain(self) -> list[ClaimedJob]:
        """Take every job no consumer has started (shutdown gives them back)."""
        jobs: list[ClaimedJob] = []
        while not self._queue.empty():
            jobs.append(self._queue.get_nowait())
        self.in_flight -= len(jobs)
        if self.may_claim:
            self._room.set()
        if self.cpu is not None:
            self.cpu.left(sum(1 for job in jobs if job.actor in self.cpu.actors))
        return jobs
