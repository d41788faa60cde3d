"""Producers' and operators' side: enqueue jobs and workflows, look at them and wait for
them, and act on them (retry, cancel, pause and resume queues, set queue and actor
limits: those are ``operations.py``'s, which both clients inherit).

``AsyncClient`` is the implementation over the async ``Store``. ``Client`` is its mirror
for plain synchronous code (Flask, Django, scripts): same methods, same arguments, same
results; its ``async_client`` and ``run`` are the seam for code built on the async API
(``taskq.testing``). Enqueue is one ``Enqueuer`` (taskq/enqueuer.py: the options value, the builder,
the middleware's hooks, the writes), shared by both, as httpx's clients share their
I/O-free base: the ``AsyncClient`` awaits its writes; the ``Client`` writes plain jobs
on the calling thread (``LocalEnqueue``) and everything else on a private event loop in
a background thread (``portal.Portal``), so its callers need no event loop of their own.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload
from uuid import UUID

from . import txn
from .enqueuer import Enqueuer
from .exceptions import ConfigError
from .inputs import who
from .jobs import ActorConfig, JobId
from .middleware import Middleware
from .operations import AsyncOperations, Operations
from .payload import DEFAULT_MAX_PAYLOAD_BYTES
from .plan import NO_OPTIONS, ActorPlan, EnqueueOptions
from .portal import Portal
from .registry import Actor, ActorRef
from .specs import Item, UniqueKey
from .store import Store, create_store

if TYPE_CHECKING:
    from .workflows.graph import Workflow
    from .workflows.model import WorkflowInfo

T = TypeVar("T")
P = ParamSpec("P")


class AsyncClient(AsyncOperations):
    """Enqueue and inspect jobs from async code. ``async with AsyncClient(dsn) as c: ...``

    ``middleware``: ``taskq.Middleware`` whose enqueue hooks run around every enqueue
    (after taskq's own enqueue tracing)."""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        schema: str | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        store: Store | None = None,
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self._store = store or create_store(dsn, schema)
        self._owns_store = store is None
        #: this client's enqueue (a ``Client`` over this one shares it)
        self.enqueuer = Enqueuer(
            self._store, max_payload_bytes=max_payload_bytes, middleware=middleware
        )
        self._opened = False

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

    async def _known(self, actor: ActorRef) -> Mapping[str, ActorConfig]:
        known = self.enqueuer.known(actor)
        if known is None:
            await self.open()
            known = await self.enqueuer.relearn()
        return known

    # -- enqueue ---------------------------------------------------------------------
    @overload
    async def enqueue(
        self, actor: Actor[P, Any], /, *args: P.args, **kwargs: P.kwargs
    ) -> JobId: ...

    @overload
    async def enqueue(self, actor: str, /, *args: Any, **kwargs: Any) -> JobId: ...

    async def enqueue(self, actor: ActorRef, /, *args: Any, **kwargs: Any) -> JobId:
        """Enqueue one job now with the actor's default options; return its id.

        Given an ``Actor``, the arguments are checked against its function's signature
        (by a type checker, and here: ``ArgumentsMismatch``, nothing written); given an
        actor's name (a ``str``), they cannot be."""
        return await self._one(actor, args, kwargs, NO_OPTIONS, None)

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
        options = EnqueueOptions(queue, delay, run_at, priority, unique_key, meta, tags)
        return await self._one(actor, args, kwargs, options, connection)

    async def _one(
        self,
        actor: ActorRef,
        args: Sequence[Any],
        kwargs: Mapping[str, Any] | None,
        options: EnqueueOptions,
        connection: Any,
    ) -> JobId:
        if not self._opened:
            await self._open_for(connection)
        plan = self.enqueuer.builder.one(actor, args, kwargs, options, await self._known(actor))
        return (await self.enqueuer.write(plan, connection))[0]

    async def _open_for(self, connection: Any) -> None:
        """Open the store; a ``connection=`` of the other engine is refused first (the
        default SQLite store would create its file for nothing)."""
        if connection is not None:
            txn.check_kind(self._store, await txn.resolve_async(connection))
        await self.open()

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
        taken as positional args (checked against an ``Actor``'s signature, as for
        ``enqueue``). ``unique_keys`` gives each item its key (``None``: the actor's
        ``unique`` option, if any); ``meta`` and ``tags`` go on every job.
        ``connection``: in the caller's transaction, as for ``enqueue_with``."""
        options = EnqueueOptions(queue, delay, run_at, priority, None, meta, tags)
        await self._open_for(connection)
        plan = self.enqueuer.builder.many(
            actor, items, options, await self._known(actor), unique_keys
        )
        return await self.enqueuer.write(plan, connection)

    # -- workflows (docs/workflows.md; taskq.workflow_calls) ---------------------------
    async def enqueue_workflow(self, wf: Workflow, connection: Any = None) -> UUID:
        """Enqueue one run of ``wf``: every step in one transaction (on ``connection``,
        the caller's, as ``enqueue_with``); return the run's workflow id. The steps with
        nothing to wait for are due now; the others become due when the last step they
        run after succeeds. ``InvalidWorkflow`` (nothing written) for a cycle, an
        unknown ``after`` step, an empty workflow."""
        from . import workflow_calls

        return await workflow_calls.enqueue(self, wf, connection)

    async def workflow(self, workflow_id: UUID | str) -> WorkflowInfo:
        """A workflow run and its steps (``.state``, ``.steps``); ``WorkflowNotFound``."""
        from . import workflow_calls

        return await workflow_calls.get(self, workflow_id)

    async def workflows(
        self, *, state: str | None = None, limit: int = 50
    ) -> builtins.list[WorkflowInfo]:
        """Workflow runs newest first (without their steps), optionally in one state."""
        from . import workflow_calls

        return await workflow_calls.listing(self, state, limit)

    async def cancel_workflow(self, workflow_id: UUID | str, *, by: str | None = None) -> int:
        """Cancel a workflow run: its queued steps now, its running steps asked to stop
        (as ``cancel`` does for a job); returns how many steps that touched."""
        from . import workflow_calls

        return await workflow_calls.cancel(self, workflow_id, by or who())

    async def wait_workflow(
        self, workflow_id: UUID | str, *, timeout: float = 60.0, interval: float = 0.05
    ) -> WorkflowInfo:
        """Poll until the run is no longer running; TimeoutError past ``timeout``."""
        from . import workflow_calls

        return await workflow_calls.wait(self, workflow_id, timeout, interval)


class Client(Operations):
    """The synchronous mirror of ``AsyncClient``: ``with Client(dsn) as c: c.enqueue(...)``.

    Safe to share between threads. Plain jobs of an ``Actor`` (no unique key, no
    ``connection=``) are written on the calling thread (``LocalEnqueue``: SQLite on a
    connection of that thread's, Postgres on a synchronous psycopg connection); the rest
    runs the ``AsyncClient``'s code on this client's private loop thread."""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        schema: str | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self._async = AsyncClient(
            dsn, schema=schema, max_payload_bytes=max_payload_bytes, middleware=middleware
        )
        #: the enqueue it shares with its ``AsyncClient``
        self.enqueuer = self._async.enqueuer
        self._portal: Portal | None = None
        self._opened = False
        self._lock = threading.Lock()  # one portal, the store opened once, whatever the threads

    @property
    def async_client(self) -> AsyncClient:
        """The ``AsyncClient`` whose code this client runs on its loop thread (the same
        store and enqueue): for helpers built on the async API, with ``run``."""
        return self._async

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` (a call of ``async_client``'s, or of its store's) on this
        client's loop thread, the store opened first, and return its result: the
        store's async connections belong to that loop (``taskq.testing.drain`` runs
        there)."""
        portal = self._portal if self._opened else None
        if portal is None:
            try:
                portal = self._open_portal()
            except BaseException:
                coro.close()
                raise
        return portal.call(coro)

    def _open_portal(self) -> Portal:
        """The loop thread, with the store open: made and opened once, whichever
        threads ask at the same time."""
        with self._lock:
            if self._portal is None:
                self._portal = Portal()
            if not self._opened:
                self._portal.call(self._async.open())
                self._opened = True
            return self._portal

    def open(self) -> None:
        self._open_portal()

    def close(self) -> None:
        with self._lock:
            portal, self._portal = self._portal, None
            self._opened = False
        if portal is not None:
            try:
                portal.call(self._async.close())
            finally:
                portal.stop()

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
        plan = self.enqueuer.builder.one(actor, args, kwargs, NO_OPTIONS, self._known(actor))
        return self._write(plan)[0]

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
        target = None if connection is None else self._target(connection)
        options = EnqueueOptions(queue, delay, run_at, priority, unique_key, meta, tags)
        plan = self.enqueuer.builder.one(actor, args, kwargs, options, self._known(actor))
        return self._write(plan, target)[0]

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
        target = None if connection is None else self._target(connection)
        options = EnqueueOptions(queue, delay, run_at, priority, None, meta, tags)
        plan = self.enqueuer.builder.many(actor, items, options, self._known(actor), unique_keys)
        return self._write(plan, target)

    def _known(self, actor: ActorRef) -> Mapping[str, ActorConfig]:
        known = self.enqueuer.known(actor)
        if known is None:
            known = self.run(self._relearn())
        return known

    async def _relearn(self) -> Mapping[str, ActorConfig]:
        await self._async.open()
        return await self.enqueuer.relearn()

    def _write(self, plan: ActorPlan, target: txn.Target | None = None) -> list[JobId]:
        """Where the plan is written: the caller's connection on this thread; plain
        rows on this thread (``LocalEnqueue``); else on the loop thread."""
        enqueuer = self.enqueuer
        if target is not None:
            return enqueuer.write_on(plan, target, self._identity)
        if enqueuer.can_write_here(plan):
            if not self._opened:
                self.open()
            return enqueuer.write_here(plan)
        return self.run(self._write_async(plan))

    async def _write_async(self, plan: ActorPlan) -> list[JobId]:
        await self._async.open()
        return await self.enqueuer.write(plan)

    def _identity(self) -> txn.Identity:
        async def identity() -> txn.Identity:
            await self._async.open()
            return await txn.store_identity(self._async.store)

        return self.run(identity())

    def _target(self, connection: Any) -> txn.Target:
        target = txn.resolve(connection)
        if target.is_async:
            raise ConfigError(
                "connection= is an async connection: enqueue on it with taskq.AsyncClient"
            )
        txn.check_kind(self._async.store, target)  # before the store is opened
        return target

    def enqueue_workflow(self, wf: Workflow, connection: Any = None) -> UUID:
        """See ``AsyncClient.enqueue_workflow``; with ``connection``, the steps are
        written on that connection in this thread."""
        if connection is None:
            return self.run(self._async.enqueue_workflow(wf))
        target = self._target(connection)
        from . import workflow_calls

        planned = self.run(workflow_calls.prepare(self._async, wf))
        self.enqueuer.write_workflow_on(planned, target, self._identity)
        return planned.workflow_id

    def workflow(self, workflow_id: UUID | str) -> WorkflowInfo:
        return self.run(self._async.workflow(workflow_id))

    def workflows(
        self, *, state: str | None = None, limit: int = 50
    ) -> builtins.list[WorkflowInfo]:
        return self.run(self._async.workflows(state=state, limit=limit))

    def cancel_workflow(self, workflow_id: UUID | str, *, by: str | None = None) -> int:
        return self.run(self._async.cancel_workflow(workflow_id, by=by))

    def wait_workflow(
        self, workflow_id: UUID | str, *, timeout: float = 60.0, interval: float = 0.05
    ) -> WorkflowInfo:
        return self.run(self._async.wait_workflow(workflow_id, timeout=timeout, interval=interval))
