"""Running one claimed job and turning whatever happened into an ``Outcome``.

* async actors run on the event loop, awaited directly by the consumer (no task per
  job); a ``timeout`` cancels them;
* sync actors run in ``ThreadRunner`` threads, never on the loop; past its timeout a
  sync job is recorded as timed out (its thread cannot be stopped and is left to end);
* cpu_bound actors run in the CPU process pool (``CpuRunner``).

A run is stoppable by a cancel request (``Cancels``, worker/cancels.py): its outcome is
then ``cancelled``, whatever the job did.

``Executor.execute`` never raises for anything a job does; only cancellation (and a
``KeyboardInterrupt``) go through. Per-actor facts and metric children are looked up
once, not per job.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from .. import metrics
from ..context import JobContext, running
from ..events import SYNC_JOB_TIMED_OUT
from ..exceptions import JobTimedOut, Snooze
from ..jobs import ClaimedJob, DeadReason, Outcome, OutcomeKind
from ..logs import get_logger
from ..registry import AnyActor, Registry
from . import outcomes
from .cancels import Cancels
from .cpu_runner import CpuRunner
from .solo import Solo
from .steps import Steps, UpstreamReader
from .threads import ThreadRunner

log = get_logger(__name__)

ASYNC, SYNC, CPU = "async", "sync", "cpu"
_decoder = json.JSONDecoder()
_scan = _decoder.scan_once  # type: ignore[attr-defined]  # the C scanner, no regexes around it


def _decode(text: str) -> Any:
    """JSON text as stored (compact, from a json column) -> value; anything else takes
    the full decoder, which also names what is wrong."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        return _decoder.decode(text)
    return value


@dataclass(slots=True)
class _Counts:
    """One (actor, queue)'s metric children, made once."""

    duration: Any  # Histogram child
    finished: dict[str, Any]  # outcome -> Counter child

    @classmethod
    def of(cls, queue: str, actor: str) -> _Counts:
        finished = {
            k.value: metrics.jobs_finished.labels(queue, actor, k.value) for k in OutcomeKind
        }
        finished["given_back"] = metrics.jobs_finished.labels(queue, actor, "given_back")
        return cls(metrics.job_duration.labels(queue, actor), finished)


@dataclass(slots=True)
class _Plan:
    actor: AnyActor
    kind: str
    counts: dict[str, _Counts]  # by queue: the actor's own from the start, others when seen

    def counts_on(self, queue: str) -> _Counts:
        counts = self.counts.get(queue)
        if counts is None:
            counts = self.counts[queue] = _Counts.of(queue, self.actor.name)
        return counts


class Executor:
    """``cpu=None`` runs cpu_bound actors in threads like sync ones (``taskq.testing``'s
    inline drain: the test's process, no pool)."""

    def __init__(
        self,
        registry: Registry,
        threads: ThreadRunner,
        cpu: CpuRunner | None,
        result_max_bytes: int,
        *,
        cancels: Cancels | None = None,
        solo: Solo | None = None,
        in_thread: Callable[[ClaimedJob, Callable[..., Any]], Callable[..., Any]] | None = None,
        upstream: UpstreamReader | None = None,
    ) -> None:
        self._cancels = cancels
        self._in_thread = in_thread  # wraps a sync actor's function (thread middleware)
        self._solo = solo or Solo()
        self._threads = threads
        self._cpu = cpu
        self._result_max_bytes = result_max_bytes
        self._plans: dict[str, _Plan] = {a.name: self._plan(a, cpu is not None) for a in registry}
        # workflow steps: upstream results before, added steps after (worker/steps.py)
        self._steps = Steps(upstream, {a.name: a for a in registry})

    @staticmethod
    def _plan(actor: AnyActor, pool: bool) -> _Plan:
        kind = CPU if actor.cpu_bound and pool else ASYNC if actor.is_async else SYNC
        return _Plan(actor, kind, {actor.queue: _Counts.of(actor.queue, actor.name)})

    async def execute(self, job: ClaimedJob) -> Outcome | None:
        """Run ``job``; return its outcome, or ``None`` to give it back uncharged (also
        when a job that must run alone is waiting or running here: ``Solo``)."""
        solo = self._solo
        if job.run_alone:
            async with solo.turn(job) as allowed:
                if not allowed:
                    return None
                return await self._execute(job)
        if not solo.begin():  # every other job: no context manager, no lock
            return None
        try:
            return await self._execute(job)
        finally:
            if solo.end():  # a run_alone job waits for this one
                await solo.wake()

    async def _execute(self, job: ClaimedJob) -> Outcome | None:
        plan = self._plans.get(job.actor)
        if plan is None:
            outcome = outcomes.dead(
                job,
                DeadReason.UNKNOWN_ACTOR,
                f"ActorNotFound: no actor named {job.actor!r} in this worker's registry",
            )
            metrics.jobs_finished.labels(job.queue, job.actor, OutcomeKind.DEAD.value).inc()
            return outcome
        started = time.perf_counter()
        result: Outcome | None
        # taskq.current_job() is this job, and the actor's own log records (and ours about
        # this run) carry its fields; sync actors' threads run in a copy of this context
        # (its meta is decoded only if the run reads it)
        ctx = JobContext(
            job.id,
            actor=job.actor,
            queue=job.queue,
            attempt=job.attempt,
            crash_count=job.crash_count,
            meta_json=job.meta_json,
        )
        counts = plan.counts.get(job.queue) or plan.counts_on(job.queue)
        if job.workflow_id is not None and not await self._steps.join(job, ctx):
            counts.finished["given_back"].inc()
            return None
        with running(ctx):
            if self._cancels is None:
                result = await self._run(job, plan)
            else:
                result = await self._run_cancellable(job, plan, ctx, self._cancels)
        if job.workflow_id is not None and result is not None:
            result = self._steps.finish(job, ctx, result)
        if result is not None and result.meta_json is None:
            changed = ctx.changed_meta_json
            if changed is not None:  # saved with the outcome
                result = replace(result, meta_json=changed)
        counts.duration.observe(time.perf_counter() - started)
        counts.finished["given_back" if result is None else result.kind].inc()  # StrEnum: str key
        return result

    def _run(self, job: ClaimedJob, plan: _Plan) -> Awaitable[Outcome | None]:
        """The run's awaitable (not a coroutine of its own: one frame less a job)."""
        if plan.kind == CPU:
            assert self._cpu is not None  # no CPU plans without a pool
            return self._cpu.run_job(job, plan.actor)
        return self._run_here(job, plan)

    async def _run_cancellable(
        self, job: ClaimedJob, plan: _Plan, ctx: JobContext, cancels: Cancels
    ) -> Outcome | None:
        """``_run``, stoppable by a cancel request (``cancels``): see worker/cancels.py."""
        task = asyncio.current_task()
        assert task is not None
        cpu = self._cpu

        async def stop() -> None:
            ctx.cancel_requested = True  # what a sync job can see
            if plan.kind == ASYNC:
                task.cancel()
            elif plan.kind == CPU and cpu is not None:
                await cpu.cancel(job.id)  # kills its process: run_job returns cancelled

        if cancels.started(job, plan.kind, stop):
            return outcomes.cancelled(job)  # its cancel came before it started
        try:
            result = await self._run(job, plan)
        except asyncio.CancelledError:
            run = cancels.finished(job.id)
            if (
                run is None
                or run.requested_at is None
                or plan.kind != ASYNC
                or _uncancel(task, run.stops) > 0
            ):
                raise  # not (only) ours: a shutdown
            return outcomes.cancelled(job)
        run = cancels.finished(job.id)
        if run is None or run.requested_at is None:
            return result
        if plan.kind == ASYNC:
            _uncancel(task, run.stops)  # it swallowed our CancelledError(s) and returned
        return outcomes.cancelled(job)

    async def _run_here(self, job: ClaimedJob, plan: _Plan) -> Outcome:
        try:
            args = [] if job.args_json == "[]" else _decode(job.args_json)
            kwargs = {} if job.kwargs_json == "{}" else _decode(job.kwargs_json)
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise ValueError("arguments must be a JSON array and a JSON object")
        except ValueError as exc:
            return outcomes.dead(
                job, DeadReason.UNDECODABLE, f"undecodable payload: {type(exc).__name__}: {exc}"
            )
        actor = plan.actor
        try:
            if plan.kind == ASYNC:
                result = await self._run_async(actor, args, kwargs)
            else:
                result = await self._run_sync(job, actor, args, kwargs)
        except asyncio.CancelledError:
            raise
        except Snooze as snooze:
            return outcomes.snoozed(job, snooze.seconds, actor.max_snoozes)
        except (Exception, SystemExit) as exc:
            return outcomes.failed(job, outcomes.describe_error(exc), actor.retry_backoff)
        if isinstance(result, Snooze):
            return outcomes.snoozed(job, result.seconds, actor.max_snoozes)
        return outcomes.succeeded(job, result, self._result_max_bytes)

    @staticmethod
    async def _run_async(actor: AnyActor, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if actor.timeout is None:
            return await actor.fn(*args, **kwargs)
        try:
            async with asyncio.timeout(actor.timeout) as scope:
                return await actor.fn(*args, **kwargs)
        except TimeoutError:
            if scope.expired():
                raise JobTimedOut(f"job ran past its timeout of {actor.timeout}s") from None
            raise

    async def _run_sync(
        self, job: ClaimedJob, actor: AnyActor, args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        fn = actor.fn if self._in_thread is None else self._in_thread(job, actor.fn)
        future = self._threads.submit(fn, args, kwargs)
        if actor.timeout is None:
            return await future
        try:
            return await asyncio.wait_for(future, actor.timeout)
        except TimeoutError:
            if not future.cancelled():
                raise
            log.event(
                SYNC_JOB_TIMED_OUT,
                job=str(job.id),
                actor=actor.name,
                timeout=actor.timeout,
                note="its thread cannot be stopped and runs on until it returns",
            )
            raise JobTimedOut(f"job ran past its timeout of {actor.timeout}s") from None


def _uncancel(task: asyncio.Task[Any], times: int) -> int:
    """Take back ``times`` cancel requests of ours; how many (of others) remain."""
    remaining = task.cancelling()
    for _ in range(min(times, remaining)):
        remaining = task.uncancel()
    return remaining
