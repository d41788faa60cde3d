"""The one enqueue both clients share: options and arguments -> an ``ActorPlan`` (the
builder, ``specs.JobBuilder``; a workflow's run -> a ``WorkflowPlan``,
``workflows/plan.py``), the middleware's enqueue hooks around the write, and the write
itself. ``AsyncClient`` and ``Client`` each drive it with their own I/O (httpx's
shared base, taskq/client.py): neither reaches into the other.

Where a plan's rows are written, and why each path exists:

* ``Store.enqueue_columns``: rows without unique keys, on the store's own connection:
  one ``INSERT`` (``COPY`` from 100 jobs), no ``JobSpec`` per job. The batch and single
  enqueue of issue 13 are this path (docs/benchmarks.md).
* ``Store.enqueue``: rows with unique keys. A key needs ``ON CONFLICT DO NOTHING``, the
  lookup of each duplicate's holder and, when a holder finished in between, another
  round: several statements in one transaction, which plain rows do not pay for.
* ``LocalEnqueue.enqueue_columns_here``: the synchronous ``Client``'s plain rows, on a
  connection of the calling thread's (SQLite) or its own synchronous one (Postgres):
  no hop to the client's loop thread and back, which was most of a single enqueue's
  time (docs/benchmarks.md, "the enqueue a web request pays").
* the caller's connection (``connection=``, ``taskq.txn``): the rows in the caller's
  own transaction, with the same statements (``store/enqueue.py``).

``insert`` / ``insert_on`` are the seam for writing the specs of several plans in one
transaction: "insert these rows on this connection, all or nothing". A workflow's steps
carry their place in the graph as well: ``write_workflow`` / ``write_workflow_on`` write
them with the store's ``enqueue_workflow`` (``COPY`` from 100 steps) or on the caller's
connection, the hooks around them as around any plan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

from . import txn
from .jobs import ActorConfig, JobId, JobSpec
from .middleware import EnqueueHooks, Middleware
from .plan import ActorPlan, WorkflowPlan
from .registry import Actor, ActorRef
from .specs import JobBuilder
from .store import Store
from .store.base import LocalEnqueue
from .store.workflows import pg_workflow_steps, sqlite_insert_workflow
from .tracing import EnqueueTracing

#: how long the stored actor configurations (enqueue by name) are trusted
CONFIG_TTL = 30.0
_NOTHING: Mapping[str, ActorConfig] = {}


class Enqueuer:
    """One client's enqueue: build the plan (``builder.one`` / ``builder.many``), run
    the hooks, write it (see the module docstring). The I/O is the store's; ``Client``
    calls the synchronous writes on its caller's thread and the async ones on its
    loop."""

    def __init__(
        self, store: Store, *, max_payload_bytes: int, middleware: Sequence[Middleware] = ()
    ) -> None:
        self.store = store
        self.builder = JobBuilder(max_payload_bytes)
        traced = any(isinstance(m, EnqueueTracing) for m in middleware)
        self.middleware: tuple[Middleware, ...] = (
            *(() if traced else (EnqueueTracing(),)),
            *middleware,
        )
        self.hooks = EnqueueHooks(self.middleware)
        #: the store's write on the calling thread, where it has one
        self.here: LocalEnqueue | None = store if isinstance(store, LocalEnqueue) else None
        self._configs: Mapping[str, ActorConfig] = {}
        self._configs_at = float("-inf")

    # -- actors given by name ----------------------------------------------------------
    def known(self, actors: ActorRef | Iterable[ActorRef]) -> Mapping[str, ActorConfig] | None:
        """The stored actor configurations the plan of ``actors`` (one, or several: a
        workflow's) needs: none for ``Actor`` objects; for names, the ones read lately,
        or None: ``relearn`` them (a worker may have recorded them since)."""
        if isinstance(actors, Actor):
            return _NOTHING
        names = {actors} if isinstance(actors, str) else {a for a in actors if isinstance(a, str)}
        if not names:
            return _NOTHING
        if time.monotonic() - self._configs_at > CONFIG_TTL or not names <= self._configs.keys():
            return None
        return self._configs

    async def relearn(self) -> Mapping[str, ActorConfig]:
        """Read the stored actor configurations again (the store is open) and keep them."""
        configs = await self.store.actor_configs()
        self._configs, self._configs_at = configs, time.monotonic()
        return configs

    # -- writing -----------------------------------------------------------------------
    async def write(self, plan: ActorPlan, connection: Any = None) -> list[JobId]:
        """Write ``plan`` (all or nothing) on the store's connection, or on the caller's
        ``connection`` in its transaction; the hooks around it."""
        if not len(plan):
            return []
        with self.hooks.around(plan):
            if connection is None and plan.is_plain:
                await self.store.enqueue_columns(plan.rows)
                return plan.job_ids()
            return plan.job_ids(await self.insert(plan.specs(), connection))

    def can_write_here(self, plan: ActorPlan) -> bool:
        """Can ``write_here`` write it (plain rows, a store with a calling-thread write)?"""
        return self.here is not None and plan.is_plain

    def write_here(self, plan: ActorPlan) -> list[JobId]:
        """``write`` of a plain plan on the calling thread (``can_write_here``); the
        store must be open."""
        assert self.here is not None and plan.is_plain
        if not len(plan):
            return []
        with self.hooks.around(plan):
            self.here.enqueue_columns_here(plan.rows)
            return plan.job_ids()

    def write_on(
        self, plan: ActorPlan, target: txn.Target, identity: Callable[[], txn.Identity]
    ) -> list[JobId]:
        """``write`` on a caller's synchronous connection, on the calling thread
        (``identity``: the store's own, asked the first time a connection is checked)."""
        if not len(plan):
            return []
        with self.hooks.around(plan):
            return plan.job_ids(self.insert_on(plan.specs(), target, identity))

    async def write_workflow(self, plan: WorkflowPlan, connection: Any = None) -> None:
        """Write every step of a workflow's run (all or nothing) on the store's
        connection, or on the caller's ``connection`` in its transaction; the hooks
        around it (they may add meta: the row is read once they ran)."""
        with self.hooks.around(plan):
            if connection is None:
                await self.store.enqueue_workflow(plan.workflow)
            else:
                await txn.write_async(self.store, connection, _workflow_write(plan))

    def write_workflow_on(
        self, plan: WorkflowPlan, target: txn.Target, identity: Callable[[], txn.Identity]
    ) -> None:
        """``write_workflow`` on a caller's synchronous connection, on the calling thread."""
        with self.hooks.around(plan):
            txn.write_sync(self.store, target, _workflow_write(plan), identity)

    async def insert(self, specs: Sequence[JobSpec], connection: Any = None) -> list[UUID]:
        """Insert ``specs`` (of any actors) in one transaction, all or nothing: on the
        store's own connection, or on the caller's ``connection`` inside its
        transaction. One id per spec: its own, or its unique key's holder. No hooks:
        ``write`` runs them around a plan."""
        if connection is None:
            return await self.store.enqueue(specs)
        return await txn.enqueue_async(self.store, connection, specs)

    def insert_on(
        self, specs: Sequence[JobSpec], target: txn.Target, identity: Callable[[], txn.Identity]
    ) -> list[UUID]:
        """``insert`` on a caller's synchronous connection, on the calling thread."""
        return txn.enqueue_sync(self.store, target, specs, identity)


def _workflow_write(plan: WorkflowPlan) -> txn.Write:
    """A workflow's insert on a caller's connection, for either engine."""
    row = plan.workflow
    return txn.Write(
        lambda sql: pg_workflow_steps(sql, row), lambda conn: sqlite_insert_workflow(conn, row)
    )
