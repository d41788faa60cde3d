"""``taskq.contrib.django.client()``: a ``taskq.Client`` on the Django database's DSN
whose enqueues join the current ``transaction.atomic()`` block.

``DjangoClient`` is a ``taskq.Client``; what it adds is the default of ``connection=``:
inside an ``atomic()`` block of the ``DATABASE`` alias (``settings.TASKQ``), a job is
written on Django's own connection, in that transaction, so it exists only if the block
commits (a rolled-back savepoint takes it too); outside one (autocommit), on taskq's
own connection, at once. ``connection=None`` asks for taskq's connection even inside a
block (the job is written whatever the block does); any other ``connection=`` is used as
given. ``JOIN_ATOMIC = False`` turns the default off.

``client()`` gives one client per process and settings (after a fork, a new one: the
old one's event-loop thread did not survive it); ``close()`` closes them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ParamSpec, overload

from ...client import Client
from ...jobs import JobId
from ...registry import Actor, ActorRef
from ...specs import Item
from . import conf
from .db import dsn
from .middleware import CloseOldConnections

P = ParamSpec("P")


class _Auto:
    """``connection=``'s default: Django's connection inside an ``atomic()`` block."""

    def __repr__(self) -> str:
        return "AUTO"


#: the default of ``connection=``: join the current ``atomic()`` block, if any
AUTO: Any = _Auto()


class DjangoClient(Client):
    """A ``taskq.Client`` on Django's database ``using`` whose enqueues join its current
    ``atomic()`` block (see the module's docstring)."""

    def __init__(
        self,
        *,
        using: str = "default",
        schema: str | None = None,
        join_atomic: bool = True,
    ) -> None:
        # Django's connection hygiene for the sync jobs taskq.testing.drain runs with it
        super().__init__(dsn(using), schema=schema, middleware=[CloseOldConnections()])
        self.using = using
        self.join_atomic = join_atomic

    def _joined(self, connection: Any) -> Any:
        """The connection an enqueue uses: Django's inside an atomic block (when joining),
        else taskq's own (None); an explicit one as given."""
        if connection is not AUTO:
            return connection
        if not self.join_atomic:
            return None
        from django.db import connections

        wrapper = connections[self.using]
        return wrapper if wrapper.in_atomic_block else None

    @overload
    def enqueue(self, actor: Actor[P, Any], /, *args: P.args, **kwargs: P.kwargs) -> JobId: ...

    @overload
    def enqueue(self, actor: str, /, *args: Any, **kwargs: Any) -> JobId: ...

    def enqueue(self, actor: ActorRef, /, *args: Any, **kwargs: Any) -> JobId:
        """``taskq.Client.enqueue``, in the current ``atomic()`` block if there is one."""
        connection = self._joined(AUTO)
        if connection is None:
            return super().enqueue(actor, *args, **kwargs)
        return super().enqueue_with(actor, args, kwargs, connection=connection)

    def enqueue_with(
        self,
        actor: ActorRef,
        /,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        connection: Any = AUTO,
        **options: Any,
    ) -> JobId:
        """``taskq.Client.enqueue_with`` (the same options); ``connection`` defaults to
        the current ``atomic()`` block's (``None``: taskq's own connection)."""
        return super().enqueue_with(
            actor, args, kwargs, connection=self._joined(connection), **options
        )

    def enqueue_many(
        self,
        actor: ActorRef,
        items: Iterable[Item | Sequence[Any]],
        /,
        *,
        connection: Any = AUTO,
        **options: Any,
    ) -> list[JobId]:
        """``taskq.Client.enqueue_many`` (the same options); ``connection`` as for
        ``enqueue_with``."""
        return super().enqueue_many(actor, items, connection=self._joined(connection), **options)


_lock = threading.Lock()
_clients: dict[tuple[Any, ...], DjangoClient] = {}


def client() -> DjangoClient:
    """The process's ``DjangoClient`` for ``settings.TASKQ`` (made on first use)."""
    settings = conf.load()
    key = (os.getpid(), settings.database, dsn(settings.database), settings.schema)
    with _lock:
        found = _clients.get(key)
        if found is None or found.join_atomic != settings.join_atomic:
            found = _clients[key] = DjangoClient(
                using=settings.database, schema=settings.schema, join_atomic=settings.join_atomic
            )
        return found


def close() -> None:
    """Close the process's clients (``client()`` makes a new one on its next call). Run
    before Django's test runner drops its test database, whose connections these hold
    (apps.py)."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for one in clients:
        one.close()
