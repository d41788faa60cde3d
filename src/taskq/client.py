"""Producers' and operators' side: enqueue jobs, look at them and wait for them, and act
on them (retry, cancel, pause and resume queues, set queue and actor limits).

``AsyncClient`` is the real implementation, over the async ``Store``. ``Client`` is its
mirror for plain synchronous code (Flask, Django, scripts): same methods, same
arguments, same results, run on a private event loop in a background thread, so its
callers need no event loop of their own. The I/O-free work (turning an actor and its
arguments into a ``JobSpec``) lives in ``specs.JobBuilder`` and is shared by both.
"""

from __future__ import annotations

import asyncio
import builtins
import contextvars
import getpass
import os
import socket
import threading
import time
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload
from uuid import UUID

from . import tracing, txn
from .exceptions import ConfigError, InvalidJobState, JobNotFound
from .ids import uuid7, uuid7_int, uuid7_ints
from .jobs import (
    ActorConfig,
    CancelResult,
    Job,
    JobColumns,
    JobId,
    JobSpec,
    JobState,
    Limits,
    QueueInfo,
    Rate,
    new_job_ids,
)
from .payload import DEFAULT_MAX_PAYLOAD_BYTES
from .registry import Actor, check_queue_name
from .specs import ActorRef, Item, JobBuilder, Template, UniqueKey, job_ids
from .store import Store, create_store
from .store.base import LocalEnqueue
from .store.queues import ACTOR, QUEUE
from .unique import Unique

if TYPE_CHECKING:
    from .workflows.graph import Workflow
    from .workflows.model import WorkflowInfo
from .validation import check_int, check_text

T = TypeVar("T")
P = ParamSpec("P")
TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED})
_CONFIG_TTL = 30.0


def parse_job_id(job_id: UUID | str) -> UUID:
    if isinstance(job_id, UUID):
        return job_id
    try:
        return UUID(str(job_id))
    except ValueError:
        raise JobNotFound(f"invalid job id {job_id!r}: expected a UUID") from None


def who() -> str:
    """``user@host``: recorded as who paused a queue or cancelled a job."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid{os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def make_limits(concurrency: int | None, rate: Rate | str | None) -> Limits:
    """Check and build limits: ``concurrency`` an integer >= 1, ``rate`` "N/period"."""
    if concurrency is not None:
        check_int(concurrency, "concurrency", 1)
    if rate is not None and not isinstance(rate, Rate):
        rate = Rate.parse(rate)
    if rate is not None:
        check_int(rate.count, "a rate's count", 1)
    return Limits(concurrency=concurrency, rate=rate)


def _actor_name(actor: ActorRef) -> str:
    if isinstance(actor, Actor):
        return actor.name
    if isinstance(actor, str) and actor:
        return actor
    raise ConfigError(f"actor must be a taskq Actor or an actor name, got {actor!r}")


class AsyncClient:
    """Enqueue and inspect jobs from async code. ``async with AsyncClient(dsn) as c: ...``"""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        schema: str | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        store: Store | None = None,
    ) -> None:
        self._store = store or create_store(dsn, schema)
        self._owns_store = store is None
        self._builder = JobBuilder(max_payload_bytes)
        self._opened = False
        self._configs: dict[str, ActorConfig] = {}
        self._configs_at = float("-inf")

    @property
    def store(self) -> Store:
        return self._store

    async def open(self) -> None:
        if not self._opened:
            if self._owns_store:
                await self._store.open()
            self._opened = True

    async def close(self) -> None:
        if self._opened and self._owns_store:
            await self._store.close()
        self._opened = False

    async def __aenter__(self) -> AsyncClient:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _known(self, actors: Iterable[ActorRef]) -> Mapping[str, ActorConfig]:
        names = {a for a in actors if isinstance(a, str)}
        if not names:
            return {}
        if (
            time.monotonic() - self._configs_at > _CONFIG_TTL
            or not names <= self._configs.keys()  # a worker may have registered it since
        ):
            self._configs = await self._store.actor_configs()
            self._configs_at = time.monotonic()
        return self._configs

    # -- enqueue ---------------------------------------------------------------------
    @overload
    async def enqueue(
        self, actor: Actor[P, Any], /, *args: P.args, **kwargs: P.kwargs
    ) -> JobId: ...

    @overload
    async def enqueue(self, actor: str, /, *args: Any, **kwargs: Any) -> JobId: ...

    async def enqueue(self, actor: ActorRef, /, *args: Any, **kwargs: Any) -> JobId:
        """Enqueue one job now with the actor's default options; return its id.

        Given an ``Actor``, a type checker checks the arguments against its function's
        signature; given an actor's name (a ``str``), they are not checked."""
        return await self.enqueue_with(actor, args, kwargs)

    async def enqueue_with(
        self,
        actor: ActorRef,
        /,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        queue: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        unique_key: UniqueKey | None = None,
        meta: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        connection: Any = None,
    ) -> JobId:
        """Enqueue one job with options: a queue, a ``delay`` in seconds or a ``run_at``
        time, a ``priority`` (lower runs first; default the actor's, else 0).

        ``unique_key`` (a string, or a ``taskq.Unique``) makes the job unique: if a job
        holding that key exists, nothing is inserted and its id comes back with
        ``.duplicate`` True. ``meta`` is a small JSON object and ``tags`` short strings,
        both kept on the job. ``connection`` writes the job in the caller's transaction
        (see ``taskq.txn``): it exists only if that transaction commits."""
        if unique_key is None and connection is None:
            await self.open()
            template = self._builder.template(
                actor,
                known={} if isinstance(actor, Actor) else await self._known([actor]),
                queue=queue,
                delay=delay,
                run_at=run_at,
                priority=priority,
                meta=meta,
                tags=tags,
            )
            if template.unique is None:  # no key: as a batch of one, by columns
                job_id, job = self._one(template, args, kwargs)
                with tracing.enqueue_columns_span(job) as traced:
                    await self._store.enqueue_columns(traced)
                return job_id
            spec = self._builder.spec(template, args, kwargs or {}, uuid7())
            return (await self._insert([spec], None))[0]
        if connection is not None and not self._opened:
            await self._check_kind(connection)
        spec = await self._spec_one(
            actor,
            args,
            kwargs,
            queue=queue,
            delay=delay,
            run_at=run_at,
            priority=priority,
            unique_key=unique_key,
            meta=meta,
            tags=tags,
        )
        return (await self._insert([spec], connection))[0]

    async def _check_kind(self, connection: Any) -> None:
        """A connection of the other engine is refused before the store is opened (the
        default SQLite store would create its file for nothing)."""
        txn.check_kind(self._store, await txn.resolve_async(connection))

    async def _insert(self, specs: Sequence[JobSpec], connection: Any) -> list[JobId]:
        with tracing.enqueue_span(specs) as traced:
            if connection is None:
                return job_ids(traced, await self._store.enqueue(traced))
            return job_ids(traced, await txn.enqueue_async(self._store, connection, traced))

    async def _spec_one(
        self,
        actor: ActorRef,
        args: Sequence[Any],
        kwargs: Mapping[str, Any] | None,
        *,
        queue: str | None,
        delay: float | None,
        run_at: datetime | None,
        priority: int | None,
        unique_key: UniqueKey | None,
        meta: Mapping[str, Any] | None,
        tags: Sequence[str],
    ) -> JobSpec:
        if unique_key is not None and not isinstance(unique_key, str | Unique):
            raise ConfigError(
                f"unique_key must be a string or a taskq.Unique, got {type(unique_key).__name__}"
            )
        await self.open()
        template = self._builder.template(
            actor,
            known=await self._known([actor]),
            queue=queue,
            delay=delay,
            run_at=run_at,
            priority=priority,
            unique=unique_key if isinstance(unique_key, Unique) else None,
            meta=meta,
            tags=tags,
        )
        key = unique_key if isinstance(unique_key, str) else None
        return self._builder.spec(template, args, kwargs or {}, uuid7(), key)

    async def enqueue_many(
        self,
        actor: ActorRef,
        items: Iterable[Item | Sequence[Any]],
        /,
        *,
        queue: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        unique_keys: Sequence[str | None] | None = None,
        meta: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        connection: Any = None,
    ) -> list[JobId]:
        """Enqueue many jobs of one actor in one round trip, all or nothing.

        Each item is ``(args, kwargs)``; a bare list/tuple that is not such a pair is
        taken as positional args. ``unique_keys`` gives each item its key (``None``:
        the actor's ``unique`` option, if any); ``meta`` and ``tags`` go on every job.
        ``connection``: in the caller's transaction, as for ``enqueue_with``."""
        if connection is not None and not self._opened:
            await self._check_kind(connection)
        template = await self._template_many(
            actor, queue=queue, delay=delay, run_at=run_at, priority=priority, meta=meta, tags=tags
        )
        if unique_keys is None and template.unique is None and connection is None:
            return await self._insert_columns(template, items)
        specs = self._builder.many(template, items, unique_keys)
        return await self._insert(specs, connection) if specs else []

    async def _insert_columns(
        self, template: Template, items: Iterable[Item | Sequence[Any]]
    ) -> list[JobId]:
        """The batch path when no job carries a unique key: the jobs as columns (no
        ``JobSpec`` each), ``Store.enqueue_columns``."""
        ids, jobs = self._columns(template, items)
        if ids:
            with tracing.enqueue_columns_span(jobs) as traced:
                await self._store.enqueue_columns(traced)
        return ids

    def _one(
        self, template: Template, args: Sequence[Any], kwargs: Mapping[str, Any] | None
    ) -> tuple[JobId, JobColumns]:
        """One job without a unique key, as a batch of one (no I/O)."""
        (job_id,) = new_job_ids([uuid7_int()])
        return job_id, self._builder.one(template, args, kwargs or {}, job_id)

    def _columns(
        self, template: Template, items: Iterable[Item | Sequence[Any]]
    ) -> tuple[list[JobId], JobColumns]:
        """Jobs without unique keys as columns, and their ids (no I/O)."""
        items = items if isinstance(items, list) else list(items)
        ids = new_job_ids(uuid7_ints(len(items)))
        return ids, self._builder.columns(template, items, ids)

    async def _template_many(
        self,
        actor: ActorRef,
        *,
        queue: str | None,
        delay: float | None,
        run_at: datetime | None,
        priority: int | None,
        meta: Mapping[str, Any] | None,
        tags: Sequence[str],
    ) -> Template:
        await self.open()
        return self._builder.template(
            actor,
            known=await self._known([actor]),
            queue=queue,
            delay=delay,
            run_at=run_at,
            priority=priority,
            meta=meta,
            tags=tags,
        )

    async def _specs_many(
        self,
        actor: ActorRef,
        items: Iterable[Item | Sequence[Any]],
        *,
        queue: str | None,
        delay: float | None,
        run_at: datetime | None,
        priority: int | None,
        unique_keys: Sequence[str | None] | None,
        meta: Mapping[str, Any] | None,
        tags: Sequence[str],
    ) -> list[JobSpec]:
        template = await self._template_many(
            actor, queue=queue, delay=delay, run_at=run_at, priority=priority, meta=meta, tags=tags
        )
        return self._builder.many(template, items, unique_keys)

    # -- inspect and act -------------------------------------------------------------
    async def get(self, job_id: UUID | str) -> Job:
        await self.open()
        job = await self._store.get_job(parse_job_id(job_id))
        if job is None:
            raise JobNotFound(f"no job with id {job_id}")
        return job

    async def list(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        if state is not None and state not in JobState.__members__.values():
            raise ConfigError(
                f"unknown state {state!r}: expected one of {', '.join(s.value for s in JobState)}"
            )
        check_int(limit, "limit", 1)
        for name, value in (("queue", queue), ("tag", tag)):
            if value is not None:
                check_text(value, name)
        await self.open()
        return await self._store.list_jobs(state=state, queue=queue, tag=tag, limit=limit)

    async def stats(self) -> dict[str, int]:
        await self.open()
        return await self._store.stats()

    async def retry(self, job_id: UUID | str) -> None:
        """Re-queue a dead or cancelled job (attempts and crash count start again)."""
        job = await self.get(job_id)
        moved = await self._store.retry_jobs([job.id])
        if not moved and job.state in (JobState.DEAD, JobState.CANCELLED) and job.unique_key:
            raise InvalidJobState(
                f"job {job.id} cannot be retried: another job holds its unique key "
                f"{job.unique_key!r}"
            )
        if not moved:
            raise InvalidJobState(
                f"job {job.id} is {job.state}; only dead or cancelled jobs can be retried"
            )

    async def retry_all_dead(self) -> int:
        await self.open()
        return await self._store.retry_all_dead()

    async def cancel(self, job_id: UUID | str, *, by: str | None = None) -> CancelResult:
        """Cancel a job, queued or running, on any host.

        A queued job is cancelled at once (``CancelResult.CANCELLED``). A running job is
        marked (``cancelled_at``, ``cancelled_by``: ``by``, default ``user@host``) and
        its worker stops it within about a second: an async job is cancelled (its
        ``CancelledError`` may clean up, within a grace), a cpu_bound job's process is
        killed, a sync job sees ``taskq.current_job().cancel_requested`` turn True (a
        thread cannot be killed); the run then ends ``cancelled``, never retried
        (``REQUESTED``; ``ALREADY_REQUESTED`` if a cancel was asked for before). A job
        that already finished is left as it is: ``InvalidJobState`` says so."""
        job_uuid = parse_job_id(job_id)
        await self.open()
        found = await self._store.request_cancel([job_uuid], by=by or who())
        if job_uuid not in found:
            raise JobNotFound(f"no job with id {job_id}")
        result, state = found[job_uuid]
        if result is CancelResult.FINISHED:
            raise InvalidJobState(f"job {job_uuid} is already {state}: nothing changed")
        return result

    # -- queue controls ----------------------------------------------------------------
    async def queues(self) -> builtins.list[QueueInfo]:
        """Every queue with its depth by state, oldest due wait, pause state and limits."""
        await self.open()
        return await self._store.queue_overview()

    async def pause_queue(self, name: str, *, by: str | None = None) -> None:
        """Stop every worker from claiming ``name``'s jobs (running ones finish; queued
        ones wait, no attempt charged). Stored, so it holds on every host and restart."""
        await self.open()
        await self._store.set_queue_paused(check_queue_name(name), True, by=by or who())

    async def resume_queue(self, name: str) -> None:
        await self.open()
        await self._store.set_queue_paused(check_queue_name(name), False)

    async def set_queue_limits(
        self, name: str, concurrency: int | None = None, rate: Rate | str | None = None
    ) -> None:
        """Set the queue's fleet-wide limits to exactly these: at most ``concurrency``
        of its jobs running at once across all workers, at most ``rate`` ("N/second",
        "N/minute", "N/hour") starts in any such period. ``None`` is no limit of that
        kind; both ``None`` removes the queue's limits."""
        limits = make_limits(concurrency, rate)
        await self.open()
        await self._store.set_limits(QUEUE, check_queue_name(name), limits)

    async def set_actor_limits(
        self, actor: ActorRef, concurrency: int | None = None, rate: Rate | str | None = None
    ) -> None:
        """``set_queue_limits`` for one actor's jobs, whatever queue they are on."""
        limits = make_limits(concurrency, rate)
        await self.open()
        await self._store.set_limits(ACTOR, _actor_name(actor), limits)

    async def limits(self) -> dict[tuple[str, str], Limits]:
        """Every limit, keyed by ("queue" | "actor", name)."""
        await self.open()
        return await self._store.get_limits()

    async def wait(
        self, job_id: UUID | str, *, timeout: float = 60.0, interval: float = 0.05
    ) -> Job:
        """Poll until the job is succeeded, dead or cancelled; TimeoutError past ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            job = await self.get(job_id)
            if job.state in TERMINAL_STATES:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job.id} still {job.state} after {timeout}s")
            await asyncio.sleep(interval)

    # -- workflows (docs/workflows.md; taskq.workflows.submit) ---------------------------
    async def enqueue_workflow(self, wf: Workflow, connection: Any = None) -> UUID:
        """Enqueue one run of ``wf``: every step in one transaction (on ``connection``,
        the caller's, as ``enqueue_with``); return the run's workflow id. The steps with
        nothing to wait for are due now; the others become due when the last step they
        run after succeeds. ``InvalidWorkflow`` (nothing written) for a cycle, an
        unknown ``after`` step, an empty workflow."""
        from .workflows import submit

        return await submit.enqueue(self, wf, connection)

    async def workflow(self, workflow_id: UUID | str) -> WorkflowInfo:
        """A workflow run and its steps (``.state``, ``.steps``); ``WorkflowNotFound``."""
        from .workflows import submit

        return await submit.get(self, workflow_id)

    async def workflows(
        self, *, state: str | None = None, limit: int = 50
    ) -> builtins.list[WorkflowInfo]:
        """Workflow runs newest first (without their steps), optionally in one state."""
        from .workflows import submit

        return await submit.listing(self, state, limit)

    async def cancel_workflow(self, workflow_id: UUID | str, *, by: str | None = None) -> int:
        """Cancel a workflow run: its queued steps now, its running steps asked to stop
        (as ``cancel`` does for a job); returns how many steps that touched."""
        from .workflows import submit

        return await submit.cancel(self, workflow_id, by or who())

    async def wait_workflow(
        self, workflow_id: UUID | str, *, timeout: float = 60.0, interval: float = 0.05
    ) -> WorkflowInfo:
        """Poll until the run is no longer running; TimeoutError past ``timeout``."""
        from .workflows import submit

        return await submit.wait(self, workflow_id, timeout, interval)


class _Portal:
    """A private event loop on a daemon thread; ``call`` runs a coroutine on it."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="taskq-client", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop in a copy of the caller's context (its contextvars:
        the current OpenTelemetry span, log context) and wait for its result."""
        context = contextvars.copy_context()
        result: Future[T] = Future()

        def settle(task: asyncio.Task[T]) -> None:
            if task.cancelled():
                result.cancel()
            elif (exc := task.exception()) is not None:
                result.set_exception(exc)
            else:
                result.set_result(task.result())

        def start() -> None:
            self._loop.create_task(coro, context=context).add_done_callback(settle)

        self._loop.call_soon_threadsafe(start)
        return result.result()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_closed() and not self._thread.is_alive():
            self._loop.close()


# the options of an enqueue that make its template (JobBuilder.template's keywords)
_TEMPLATE_OPTIONS = ("queue", "delay", "run_at", "priority", "meta", "tags")


class Client:
    """The synchronous mirror of ``AsyncClient``: ``with Client(dsn) as c: c.enqueue(...)``."""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        schema: str | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        self._async = AsyncClient(dsn, schema=schema, max_payload_bytes=max_payload_bytes)
        self._portal: _Portal | None = None
        store = self._async.store
        # the store's enqueue on the calling thread, where it has one (SQLite)
        self._local = store if isinstance(store, LocalEnqueue) else None

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._portal is None:
            self._portal = _Portal()
        return self._portal.call(coro)

    def open(self) -> None:
        self._call(self._async.open())

    def close(self) -> None:
        if self._portal is not None:
            try:
                self._portal.call(self._async.close())
            finally:
                self._portal.stop()
                self._portal = None

    def __enter__(self) -> Client:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @overload
    def enqueue(self, actor: Actor[P, Any], /, *args: P.args, **kwargs: P.kwargs) -> JobId: ...

    @overload
    def enqueue(self, actor: str, /, *args: Any, **kwargs: Any) -> JobId: ...

    def enqueue(self, actor: ActorRef, /, *args: Any, **kwargs: Any) -> JobId:
        """See ``AsyncClient.enqueue``: arguments checked against an ``Actor``'s signature."""
        return self.enqueue_with(actor, args, kwargs)

    def _here(
        self, actor: ActorRef, options: Mapping[str, Any]
    ) -> tuple[LocalEnqueue, Template] | None:
        """The store's enqueue on the calling thread (SQLite: no hop to this client's
        loop thread nor to the store's thread), opened, and the call's template, for a
        call it can write: an ``Actor`` (no configuration to look up), no unique key of
        the call's or the actor's. Else None: the loop's path."""
        local = self._local
        if local is None or not isinstance(actor, Actor):
            return None
        if options.get("unique_key") is not None or options.get("unique_keys") is not None:
            return None
        template = self._async._builder.template(
            actor, known={}, **{k: options[k] for k in _TEMPLATE_OPTIONS}
        )
        if template.unique is not None:
            return None
        if not self._async._opened:
            self.open()
        return local, template

    def enqueue_with(
        self,
        actor: ActorRef,
        /,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        queue: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        unique_key: UniqueKey | None = None,
        meta: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        connection: Any = None,
    ) -> JobId:
        """See ``AsyncClient.enqueue_with``; with ``connection``, the job is written on
        that connection in this thread (Django's and sqlite3's connections belong to
        the thread that made them)."""
        target = self._target(connection)
        options: dict[str, Any] = {
            "queue": queue,
            "delay": delay,
            "run_at": run_at,
            "priority": priority,
            "unique_key": unique_key,
            "meta": meta,
            "tags": tags,
        }
        if target is None:
            here = self._here(actor, options)
            if here is not None:
                local, template = here
                job_id, job = self._async._one(template, args, kwargs)
                with tracing.enqueue_columns_span(job) as traced:
                    local.enqueue_columns_here(traced)
                return job_id
            return self._call(self._async.enqueue_with(actor, args, kwargs, **options))
        spec = self._call(self._async._spec_one(actor, args, kwargs, **options))
        return self._insert_on(target, [spec])[0]

    def _target(self, connection: Any) -> txn.Target | None:
        if connection is None:
            return None
        target = txn.resolve(connection)
        if target.is_async:
            raise ConfigError(
                "connection= is an async connection: enqueue on it with taskq.AsyncClient"
            )
        txn.check_kind(self._async.store, target)  # before the store is opened
        return target

    def _insert_on(self, target: txn.Target, specs: Sequence[JobSpec]) -> list[JobId]:
        store = self._async.store
        with tracing.enqueue_span(specs) as traced:
            holders = txn.enqueue_sync(
                store, target, traced, lambda: self._call(txn.store_identity(store))
            )
            return job_ids(traced, holders)

    def enqueue_many(
        self,
        actor: ActorRef,
        items: Iterable[Item | Sequence[Any]],
        /,
        *,
        queue: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        unique_keys: Sequence[str | None] | None = None,
        meta: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        connection: Any = None,
    ) -> list[JobId]:
        target = self._target(connection)
        options: dict[str, Any] = {
            "queue": queue,
            "delay": delay,
            "run_at": run_at,
            "priority": priority,
            "unique_keys": unique_keys,
            "meta": meta,
            "tags": tags,
        }
        if target is None:
            here = self._here(actor, options)
            if here is not None:
                local, template = here
                ids, jobs = self._async._columns(template, items)
                if ids:
                    with tracing.enqueue_columns_span(jobs) as traced:
                        local.enqueue_columns_here(traced)
                return ids
            return self._call(self._async.enqueue_many(actor, items, **options))
        specs = self._call(self._async._specs_many(actor, items, **options))
        return self._insert_on(target, specs) if specs else []

    def get(self, job_id: UUID | str) -> Job:
        return self._call(self._async.get(job_id))

    def list(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        return self._call(self._async.list(state=state, queue=queue, tag=tag, limit=limit))

    def stats(self) -> dict[str, int]:
        return self._call(self._async.stats())

    def retry(self, job_id: UUID | str) -> None:
        self._call(self._async.retry(job_id))

    def retry_all_dead(self) -> int:
        return self._call(self._async.retry_all_dead())

    def cancel(self, job_id: UUID | str, *, by: str | None = None) -> CancelResult:
        return self._call(self._async.cancel(job_id, by=by))

    def queues(self) -> builtins.list[QueueInfo]:
        return self._call(self._async.queues())

    def pause_queue(self, name: str, *, by: str | None = None) -> None:
        self._call(self._async.pause_queue(name, by=by))

    def resume_queue(self, name: str) -> None:
        self._call(self._async.resume_queue(name))

    def set_queue_limits(
        self, name: str, concurrency: int | None = None, rate: Rate | str | None = None
    ) -> None:
        self._call(self._async.set_queue_limits(name, concurrency, rate))

    def set_actor_limits(
        self, actor: ActorRef, concurrency: int | None = None, rate: Rate | str | None = None
    ) -> None:
        self._call(self._async.set_actor_limits(actor, concurrency, rate))

    def limits(self) -> dict[tuple[str, str], Limits]:
        return self._call(self._async.limits())

    def wait(self, job_id: UUID | str, *, timeout: float = 60.0, interval: float = 0.05) -> Job:
        return self._call(self._async.wait(job_id, timeout=timeout, interval=interval))

    def enqueue_workflow(self, wf: Workflow, connection: Any = None) -> UUID:
        """See ``AsyncClient.enqueue_workflow``; with ``connection``, the steps are
        written on that connection in this thread."""
        target = self._target(connection)
        if target is None:
            return self._call(self._async.enqueue_workflow(wf))
        from .workflows import submit

        store = self._async.store
        row = self._call(submit.prepare(self._async, wf))
        return submit.enqueue_on(store, target, row, lambda: self._call(txn.store_identity(store)))

    def workflow(self, workflow_id: UUID | str) -> WorkflowInfo:
        return self._call(self._async.workflow(workflow_id))

    def workflows(
        self, *, state: str | None = None, limit: int = 50
    ) -> builtins.list[WorkflowInfo]:
        return self._call(self._async.workflows(state=state, limit=limit))

    def cancel_workflow(self, workflow_id: UUID | str, *, by: str | None = None) -> int:
        return self._call(self._async.cancel_workflow(workflow_id, by=by))

    def wait_workflow(
        self, workflow_id: UUID | str, *, timeout: float = 60.0, interval: float = 0.05
    ) -> WorkflowInfo:
        return self._call(
            self._async.wait_workflow(workflow_id, timeout=timeout, interval=interval)
        )
