"""Cancelling running jobs: which of this worker's runs to stop, and the part that learns it.

``client.cancel(id)`` on a running job marks it in the store (``cancelled_at``,
``cancelled_by``) and, on Postgres, announces it (NOTIFY). The ``CancelWatcher`` part
asks the store which of this worker's running jobs have a cancel requested: at once
when a notification arrives (its own LISTEN, or the workgroup supervisor's relay), and
every ``poll`` seconds while jobs run (the only way on SQLite, the fallback on
Postgres). ``Cancels`` then stops each such run the way its runner can be stopped:

* async: the consumer task awaiting it is cancelled; the job's ``CancelledError`` may
  run cleanup, and if it is still running ``grace`` seconds later it is cancelled again
  (logged each time);
* cpu_bound: its pool process is killed (``CpuRunner.cancel``): not a crash, no breaker;
* sync: ``taskq.current_job().cancel_requested`` turns True (a thread cannot be
  stopped from outside); the job is recorded cancelled when it returns.

Whatever the run then returns, its outcome is ``cancelled`` (the store agrees: a run
whose cancel was requested always ends ``cancelled``, never re-queued). A job claimed
but not started yet when its cancel arrives is not started at all.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from uuid import UUID

from ..events import JOB_CANCEL_FAILED, JOB_CANCEL_OVERDUE, JOB_CANCEL_REQUESTED
from ..exceptions import StoreError
from ..jobs import ClaimedJob
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..store import Store
from ..wakeups import Wakeups
from .outage import StoreBackoff

log = get_logger(__name__)

DEFAULT_GRACE = 5.0  # seconds an async job's cleanup gets before it is cancelled again
POLL = {"postgres": 1.0, "sqlite": 0.25}  # seconds between looks while jobs run
EARLY_MAX = 10_000  # cancels for claimed, not yet started jobs kept at most


@dataclass(slots=True)
class _Run:
    job: ClaimedJob
    runner: str  # async | sync | cpu
    stop: Callable[[], Awaitable[object] | None]
    requested_at: float | None = None
    stops: int = 0  # times stop() was called


class Cancels:
    """The runs of this worker and how to stop each; what the watcher tells them."""

    def __init__(self, grace: float = DEFAULT_GRACE) -> None:
        self.grace = grace
        self._runs: dict[UUID, _Run] = {}
        self._early: set[UUID] = set()

    @property
    def running(self) -> bool:
        return bool(self._runs)

    def started(
        self, job: ClaimedJob, runner: str, stop: Callable[[], Awaitable[object] | None]
    ) -> bool:
        """A run begins; True if its cancel already arrived (then do not run it)."""
        if self._early and job.id in self._early:
            self._early.discard(job.id)
            return True
        self._runs[job.id] = _Run(job, runner, stop)
        return False

    def finished(self, job_id: UUID) -> _Run | None:
        """A run ended; its record (``requested_at`` set if it was asked to stop)."""
        return self._runs.pop(job_id, None)

    async def request(self, job_ids: Iterable[UUID]) -> list[UUID]:
        """Stop these runs (ids this worker does not run are kept for when it starts
        them: a claimed job waiting for a consumer). Returns the runs stopped now."""
        stopped = []
        for job_id in job_ids:
            run = self._runs.get(job_id)
            if run is None:
                if len(self._early) < EARLY_MAX:
                    self._early.add(job_id)
                continue
            if run.requested_at is not None:
                continue
            run.requested_at = time.monotonic()
            log.event(
                JOB_CANCEL_REQUESTED,
                job=str(job_id),
                actor=run.job.actor,
                queue=run.job.queue,
                runner=run.runner,
            )
            await self._stop(run)
            stopped.append(job_id)
        return stopped

    async def nudge_overdue(self) -> None:
        """An async job still running ``grace`` seconds after it was cancelled: again."""
        now = time.monotonic()
        for job_id, run in list(self._runs.items()):
            if run.runner != "async" or run.requested_at is None:
                continue
            if now - run.requested_at >= self.grace * run.stops:
                log.event(
                    JOB_CANCEL_OVERDUE,
                    job=str(job_id),
                    actor=run.job.actor,
                    seconds=round(now - run.requested_at, 1),
                    note="its cleanup outlived the grace: cancelled again",
                )
                await self._stop(run)

    def forget_early(self, still_requested: set[UUID]) -> None:
        """Drop early cancels of jobs no longer running here (given back, rescued)."""
        self._early &= still_requested

    @staticmethod
    async def _stop(run: _Run) -> None:
        run.stops += 1
        try:
            result = run.stop()
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # a runner that cannot be stopped must not stop the watcher
            log.event(
                JOB_CANCEL_FAILED,
                job=str(run.job.id),
                actor=run.job.actor,
                error=f"{type(exc).__name__}: {exc}",
                exc_info=exc,
            )


class CancelWatcher(Stoppable):
    """The worker part that learns of cancel requests and hands them to ``Cancels``."""

    name = "cancel-watcher"
    stop_timeout = 5.0  # a query or a listen in hand

    def __init__(
        self,
        store: Store,
        worker_id: UUID,
        cancels: Cancels,
        *,
        poll: float | None = None,
        wakeups: Wakeups | None = None,
    ) -> None:
        self._store = store
        self._wakeups: Wakeups = store if wakeups is None else wakeups
        self._worker_id = worker_id
        self._cancels = cancels
        self._poll = poll if poll is not None else POLL.get(store.kind, 0.5)
        self._stopped = StopSignal()
        self._backoff = StoreBackoff("cancel-watcher")
        self.looks = 0

    async def run(self) -> None:
        while not self._stopped:
            if self._cancels.running:
                try:
                    requested = await self._store.cancel_requested(self._worker_id)
                except StoreError as exc:
                    await self._stopped.sleep(self._backoff.failed(exc))
                    continue
                self._backoff.succeeded()
                self.looks += 1
                await self._cancels.request(requested)
                self._cancels.forget_early(set(requested))
                await self._cancels.nudge_overdue()
            await self._wait()

    async def _wait(self) -> None:
        """Until a notification, the poll interval, or stop(). A listener that fails
        (the store is down) is backed off on, the outage logged once."""
        waiter = asyncio.ensure_future(self._wakeups.wait_for_cancels(self._poll))
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            done, _ = await asyncio.wait({waiter, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in (waiter, stopped):
                fut.cancel()
            await asyncio.gather(waiter, stopped, return_exceptions=True)
        if waiter not in done or waiter.cancelled():
            return
        exc = waiter.exception()
        if exc is None:
            self._backoff.succeeded()
        elif isinstance(exc, StoreError):
            await self._stopped.sleep(self._backoff.failed(exc))
        elif exc is not None:
            raise exc
