"""The fetcher: claim batches sized to free capacity, wake on NOTIFY, poll as fallback.

Loop: wait until a consumer is free; claim up to ``buffer.claim_size()`` due jobs in one call;
hand them to the consumers. A full batch means there may be more: claim again as soon
as there is room. A short batch means the queue is drained: wait for
``wait_for_jobs`` (LISTEN/NOTIFY on Postgres; in a workgroup with ``TASKQ_PG_DSN_DIRECT``,
the supervisor's relay, ``worker/relay.py``) or ``poll_interval``, whichever comes first
(delayed jobs and retries become due without a notification).

In a worker whose actors are not all ``cpu_bound``, the cpu jobs are bounded among the
claimed ones (``buffer.CpuShare``): at its mark the cpu actors are left out of the claims,
so the other actors' jobs still find consumers while the pool is saturated; when the pool
has worked its share down, a nudge ends the fetcher's wait for new jobs and it claims
again. A claim with the cpu actors left out reads past the whole cpu backlog (on
Postgres, every queued job of theirs ahead in claim order): it is made only for news (a
notification since the last claim that took all it saw, or a claim that came back full)
or once a poll interval, never just because a top-up of the share came back full.

The fetcher is the first part to stop. It is not cancelled in the middle of a claim (a
claim that committed but was never received would leave jobs running under this worker
until their lease expires): ``stop`` wakes it and it ends after the call in hand, or is
cancelled once ``stop_timeout`` (one lease, at least 5 s) has passed, so a store that
hangs does not hang the shutdown. When it ends, the jobs it claimed that no consumer has
started are given back (no attempt charged).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar
from uuid import UUID

from .. import metrics
from ..events import JOBS_GIVEN_BACK
from ..exceptions import StoreError
from ..jobs import ClaimedJob
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..store import Store
from ..wakeups import Wakeups
from .buffer import JobBuffer
from .outage import StoreBackoff

log = get_logger(__name__)

T = TypeVar("T")

MAX_BATCH = 1000
BACKLOG_PAUSE = 0.05


class Fetcher(Stoppable):
    name = "fetcher"

    def __init__(
        self,
        store: Store,
        worker_id: UUID,
        queues: Sequence[str],
        buffer: JobBuffer,
        give_back: Callable[[list[ClaimedJob]], None],
        *,
        lease: float,
        poll_interval: float,
        excluded_actors: Callable[[], Sequence[str]] = tuple,
        can_claim: Callable[[], bool] = lambda: True,
        wakeups: Wakeups | None = None,
    ) -> None:
        self._store = store
        self._wakeups: Wakeups = store if wakeups is None else wakeups
        self._worker_id = worker_id
        self._queues = list(queues)
        self._buffer = buffer
        self._give_back = give_back
        self._lease = lease
        self._poll_interval = poll_interval
        self._excluded_actors = excluded_actors
        self._can_claim = can_claim
        self._stopped = StopSignal()
        self._waiting: asyncio.Task[Any] | None = None  # this part's task, while it waits
        self._nudged = asyncio.Event()  # the pool has room for cpu jobs again
        if buffer.cpu is not None:
            buffer.cpu.on_room = self._nudged.set
        self._backoff = StoreBackoff("fetcher")
        self.claims = 0
        self.stop_timeout = max(lease, 5.0)

    async def start(self) -> None:
        """Open the wake-up channel (Postgres: LISTEN) before the first claim: a job
        enqueued between that claim and the first wait still wakes the fetcher."""
        try:
            await self._wakeups.wait_for_jobs(self._queues, 0.0)
        except StoreError:
            pass  # the claim loop backs off through the outage

    async def run(self) -> None:
        try:
            await self._claim_until_stopped()
        finally:  # stopped, cut short or broken: what no consumer started goes back
            unstarted = self._buffer.drain()
            if unstarted:
                self._give_back(unstarted)
                log.event(JOBS_GIVEN_BACK, count=len(unstarted), why="claimed, not started")

    def stop(self, *, hurry: bool = False) -> None:
        """Stop claiming: a wait in hand ends now; a claim in hand is let finish."""
        self._stopped.set(hurry=hurry)
        waiting, self._waiting = self._waiting, None  # cancelled once, however often asked
        if waiting is not None:
            waiting.cancel()

    async def _claim_until_stopped(self) -> None:
        buffer = self._buffer
        cpu = buffer.cpu
        woken = False  # just back from waiting for jobs: every consumer is idle
        # a job may be due that no claim has seen: the last claim came back full, or a
        # wait ended for news (a notification, the poll) rather than the pool's nudge
        news = True
        loop = asyncio.get_running_loop()
        seen_all = loop.time()  # when the last claim that came back short began
        while not self._stopped:
            if not buffer.may_claim:
                await self._until(buffer.wait_for_room(), timeout=self._poll_interval)
                continue
            if not self._can_claim():  # acknowledgements are backing up: let them drain
                await self._until(asyncio.sleep(BACKLOG_PAUSE))
                continue
            if not woken:
                await asyncio.sleep(0)  # let consumers that are finishing right now free slots
            limit = min(buffer.claim_size(), MAX_BATCH)
            excluded = self._excluded_actors()
            if cpu is not None:
                self._nudged.clear()  # this claim sees the share as it is now
                if cpu.full:
                    quiet = self._poll_interval - (loop.time() - seen_all)
                    if not news and quiet > 0:  # the others' jobs were all taken: wait
                        news = await self._wait_for_jobs(quiet)
                        continue
                    excluded = [*excluded, *cpu.actors]
                else:
                    limit = cpu.room(limit)
            began = loop.time()
            try:
                claim = await self._store.claim(
                    self._worker_id, self._queues, limit, self._lease, excluded
                )
            except StoreError as exc:
                await self._until(asyncio.sleep(self._backoff.failed(exc)))
                continue
            self._backoff.succeeded()
            self.claims += 1
            for (kind, name), waits in claim.limit_waits.items():
                metrics.limit_waits.labels(kind, name).inc(waits)
            jobs = claim.jobs
            if jobs:
                metrics.jobs_claimed.inc(len(jobs))
                buffer.put_many(jobs)
            woken = len(jobs) < limit
            if woken:  # this claim saw every due job it could take
                seen_all = began
                if jobs:
                    await asyncio.sleep(0)  # the consumers start these before the wait is set up
                news = await self._wait_for_jobs(self._poll_interval)

    async def _wait_for_jobs(self, timeout: float) -> bool:
        """Until news of jobs, ``timeout`` (the poll: a delayed job may be due), or (a
        mixed worker) the pool's nudge. False only for the nudge alone: the pool has room
        for cpu jobs again and nothing says the other actors have a new job since the
        last claim that took all it saw; a mixed worker whose pool is saturated then
        claims no more with the cpu actors left out until news or the poll (such a claim
        reads past the whole cpu backlog, to find nothing)."""
        waiting = self._wakeups.wait_for_jobs(self._queues, timeout)
        try:
            if self._buffer.cpu is None:
                await self._until(waiting, timeout=timeout + 1.0)
                return True
            nudged_only = await self._until(self._jobs_or_room(waiting), timeout=timeout + 1.0)
            return nudged_only is not True
        except StoreError as exc:
            await self._until(asyncio.sleep(self._backoff.failed(exc)))
            return True

    async def _jobs_or_room(self, waiting: Coroutine[Any, Any, Any]) -> bool:
        """Until new jobs (``waiting``) or the pool's room for cpu jobs (a nudge: the
        claims left them out), whichever comes first; True when it was the nudge alone.
        Both tasks end here."""
        if self._nudged.is_set():  # the pool made room while the last claim ran
            waiting.close()
            return True
        jobs = asyncio.ensure_future(waiting)
        room = asyncio.ensure_future(self._nudged.wait())
        try:
            await asyncio.wait((jobs, room), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (jobs, room):
                task.cancel()
            await asyncio.gather(jobs, room, return_exceptions=True)
        failed = jobs.exception() if jobs.done() and not jobs.cancelled() else None
        if failed is not None:
            raise failed  # a StoreError: the caller backs off
        return not (jobs.done() and not jobs.cancelled())

    async def _until(
        self, awaitable: Coroutine[Any, Any, T], timeout: float | None = None
    ) -> T | None:
        """Await ``awaitable`` (for at most ``timeout`` seconds) unless ``stop`` comes
        first: ``stop`` cancels this wait, and only a wait (never a claim). Awaited in this
        task, with no task of its own: a notification resumes the claim loop at once. Its
        value, or None when it timed out or was stopped."""
        if self._stopped:
            awaitable.close()
            return None
        task = asyncio.current_task()
        assert task is not None
        self._waiting = task
        try:
            async with asyncio.timeout(timeout):
                return await awaitable
        except TimeoutError:
            return None
        except asyncio.CancelledError:
            if not self._stopped or task.uncancel() > 0:
                raise  # not (only) our stop: a cancel from outside
            return None
        finally:
            self._waiting = None
