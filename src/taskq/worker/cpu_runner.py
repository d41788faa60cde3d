"""cpu_bound actors: the adapter between a job and ``taskq.procpool.ProcessPool``.

The pool is started with the worker only when one of the queues it consumes has a
cpu_bound actor (``procpool`` is imported then, not before): a workgroup child serving
I/O queues runs no pool. A cpu_bound job that arrives anyway (enqueued with another
``queue=``) starts the pool then, once (``process-pool-started`` with ``late: true``).
What the pool raises maps to outcomes:

===============================  ==========================================
``JobFailed``, ``JobTimedOut``   a clean failure: retry, then dead/failed
``ResultDropped``                succeeded, result dropped (outcomes.result_dropped)
``JobCancelled``                 cancelled (``cancel`` killed its process): no charge
``ProcessDied``                  ``crashed`` with the cause: the crash rules
``BreakerOpen``, ``PoolClosed``  given back, no attempt charged
``PayloadTooLarge``              dead/failed (it will never fit)
``PayloadUndecodable``           dead/undecodable
``JobFailed`` of a Snooze        snoozed (its seconds cross in the message)
===============================  ==========================================

While the pool's breaker is open, ``excluded_actors`` names the paused actors so the
fetcher leaves their jobs queued.

As a worker part it stops after the consumers. It owns the pool's own part
(``ProcessPool``: ``start``, then its ``run`` as a task of this part, ``stop``): stopping,
it stops the pool, whose idle processes get ``STOP_GRACE`` seconds to exit cleanly (none
when the worker hurries: ``stop(hurry=True)`` is passed on), and waits until every
process is reaped (however ``run`` ends).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from ..blame import blames_job
from ..events import PROCESS_POOL_STARTED
from ..exceptions import (
    BreakerOpen,
    JobCancelled,
    JobFailed,
    JobTimedOut,
    PayloadTooLarge,
    PayloadUndecodable,
    PoolClosed,
    ProcessDied,
    ResultDropped,
    Snooze,
)
from ..jobs import ClaimedJob, DeadReason, Outcome, OutcomeKind
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..registry import AnyActor
from . import outcomes
from .config import WorkerConfig

log = get_logger(__name__)

STOP_GRACE = 1.0  # seconds idle pool processes get to exit cleanly at shutdown


class CpuRunner(Stoppable):
    name = "cpu-pool"
    stop_timeout = None  # the pool's stop is bounded by STOP_GRACE and its kill grace
    start_early = True  # its processes start while the stores open (lifecycle.Parts)

    def __init__(self, config: WorkerConfig, *, needed: bool) -> None:
        self._config = config
        self._needed = needed  # a queue this worker consumes has a cpu_bound actor
        self._pool: Any = None  # a ProcessPool, started and running
        self._pool_run: asyncio.Task[None] | None = None  # its run, owned here
        self._stopping: Any = None  # the pool while it winds down (a hurry reaches it)
        self._stopped = StopSignal()
        self._changing = asyncio.Lock()  # one start or stop of the pool at a time

    @property
    def started(self) -> bool:
        return self._pool is not None

    async def start(self) -> None:
        """Start the process pool, if a consumed queue has a cpu_bound actor."""
        if self._needed:
            await self._start_pool(late=False)

    async def _start_pool(self, *, late: bool) -> None:
        async with self._changing:
            if self._pool is not None or (late and self._stopped):
                return
            pool = self._new_pool()
            await pool.start()
            self._pool = pool
            self._pool_run = asyncio.create_task(pool.run(), name="taskq-process-pool")
            log.event(PROCESS_POOL_STARTED, size=pool.size, late=late)

    def _new_pool(self) -> Any:
        from ..procpool import ProcessPool

        return ProcessPool(
            registry_ref=self._config.actors,
            size=self._config.cpu_workers,
            max_tasks_per_child=self._config.cpu_max_tasks_per_child,
            max_memory_per_child_mib=self._config.cpu_max_memory_per_child,
            max_payload_bytes=self._config.cpu_max_payload_bytes,
            # the child checks the result against the worker's limit before sending it:
            # one result rule for every runner (outcomes.result_dropped)
            max_result_bytes=self._config.result_max_bytes,
            stop_grace=STOP_GRACE,
            nice=self._config.cpu_nice,
        )

    @property
    def excluded_actors(self) -> Sequence[str]:
        pool = self._pool
        if pool is not None and pool.breaker_open:
            return tuple(pool.paused_actors)
        return ()

    async def run_job(self, job: ClaimedJob, actor: AnyActor) -> Outcome | None:
        """Run one job in the pool. ``None`` means: give it back uncharged."""
        if self._pool is None:
            await self._start_pool(late=True)
            if self._pool is None:  # the worker is stopping: give the job back
                return None
        try:
            result_json = await self._pool.submit(
                actor.name,
                job.args_json,
                job.kwargs_json,
                timeout=actor.timeout,
                job_id=job.id,
                attempt=job.attempt,
            )
        except (JobFailed, JobTimedOut) as exc:
            seconds = _snoozed(exc)
            if seconds is not None:
                return outcomes.snoozed(job, seconds, actor.max_snoozes)
            return outcomes.failed(job, _pool_error(exc), actor.retry_backoff)
        except ProcessDied as exc:
            # one job per pool process: a death that blames a job blames this one, alone
            blamed = blames_job(
                exit_signal=exc.exit_signal, exit_code=exc.exit_code, oom_kill=exc.oom_kill
            )
            return outcomes.crashed(job, exc.cause, blamed=blamed)
        except JobCancelled as exc:
            return outcomes.cancelled(job, f"JobCancelled: {exc}")
        except (BreakerOpen, PoolClosed):
            return None
        except PayloadTooLarge as exc:
            return outcomes.dead(job, DeadReason.FAILED, f"PayloadTooLarge: {exc}")
        except PayloadUndecodable as exc:
            return outcomes.dead(job, DeadReason.UNDECODABLE, f"PayloadUndecodable: {exc}")
        except ResultDropped as exc:
            return outcomes.result_dropped(job, exc.reason)
        return Outcome(job.id, job.attempt, OutcomeKind.SUCCEEDED, result_json=result_json)

    async def cancel(self, job_id: UUID) -> bool:
        """Kill the pool process running ``job_id`` (see ``ProcessPool.cancel``); its
        ``run_job`` then returns a ``cancelled`` outcome. False if it is not running."""
        pool = self._pool
        return False if pool is None else bool(await pool.cancel(job_id))

    async def run(self) -> None:
        try:
            await self._stopped.wait()
        finally:
            await self._stop_pool()

    def stop(self, *, hurry: bool = False) -> None:
        super().stop(hurry=hurry)
        if hurry and self._stopping is not None:
            self._stopping.stop(hurry=True)  # what is left of its grace is skipped

    async def _stop_pool(self) -> None:
        """Stop the pool (``hurry`` if the worker hurries) and wait for its ``run``."""
        async with self._changing:
            pool, running = self._pool, self._pool_run
            if pool is None or running is None:
                return
            self._pool, self._stopping = None, pool
            try:
                pool.stop(hurry=self._stopped.hurried)
                await running
            finally:
                self._pool_run = self._stopping = None


def start_fork_server() -> None:
    """Start the pool's fork server now (``procpool.forkserver.start_now``). The worker
    calls it as soon as its registry says it will run a pool, before it imports its store
    and connects: the server's interpreter and imports then overlap those, off the path
    to the first CPU job (~100 ms earlier on 2 cores). Only a head start: where it cannot
    start now (no temporary directory for its socket, ...), the pool's first process
    tries again and reports what fails as every pool start does."""
    from ..procpool.forkserver import start_now

    with contextlib.suppress(OSError):
        start_now()


def _snoozed(exc: BaseException) -> float | None:
    """A ``taskq.Snooze`` raised in the pool process arrives as JobFailed named Snooze."""
    if isinstance(exc, JobFailed) and exc.error_type == "Snooze":
        return Snooze.seconds_in(exc.error_message)
    return None


def _pool_error(exc: BaseException) -> str:
    if isinstance(exc, JobFailed) and exc.error_type:
        text = f"{exc.error_type}: {exc.error_message}"
        if exc.remote_traceback:
            text += "\n" + exc.remote_traceback.rstrip()
        return text[: outcomes.ERROR_MAX_CHARS]
    return f"{type(exc).__name__}: {exc}"
