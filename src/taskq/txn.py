"""Enqueue in the application's own transaction: ``enqueue_with(..., connection=conn)``.

The job rows are written on the caller's connection, inside whatever transaction it
has open, with the same statements the store uses on its own connections
(``store/enqueue.py``). So they become visible to workers when the caller commits and
vanish if it rolls back (a savepoint rolled back takes them too). On Postgres the
insert trigger's NOTIFY is transactional: workers are woken at commit, never for a
rollback. On SQLite workers notice the commit like any other.

Accepted connections, resolved to the driver's own connection:

* psycopg 3 ``Connection``/``Cursor`` and ``AsyncConnection``/``AsyncCursor``;
* SQLAlchemy ``Session``/``Connection`` and ``AsyncSession``/``AsyncConnection`` on
  the ``postgresql+psycopg`` (or ``sqlite``) dialect;
* Django's connection (``django.db.connection`` or ``connections[alias]``; Django 4.2+
  on psycopg 3, or SQLite), see ``taskq.contrib.django``;
* ``sqlite3.Connection`` to the store's file.

A connection that reaches another server, database or schema is refused before
anything is written: on Postgres the server (port and start time), the database and a
``<schema>.jobs`` table must match the store's; on SQLite, the file. SQLAlchemy and
Django are imported only when such a connection is passed; psycopg is never imported
here (a psycopg connection exists only once the application loaded psycopg), so an
application on SQLite does not load it.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from . import settings
from .exceptions import ConfigError, StoreError
from .jobs import JobSpec
from .store.enqueue import Steps, jobs_table, pg_steps, run_async, run_sync, sqlite_enqueue
from .store.sqlfile import load_queries

PG_SYNC, PG_ASYNC, SQLITE_CONN = "postgres", "postgres-async", "sqlite"
Identity = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Target:
    """A caller's connection as the driver's own object, and which kind it is."""

    kind: str
    conn: Any  # psycopg (Async)Connection or (Async)Cursor, or sqlite3.Connection

    @property
    def is_async(self) -> bool:
        return self.kind == PG_ASYNC


def _refuse(obj: Any, why: str = "") -> ConfigError:
    return ConfigError(
        f"connection= got a {type(obj).__module__}.{type(obj).__qualname__}{why}; expected a "
        "psycopg 3 connection or cursor, a SQLAlchemy Session/Connection on the psycopg "
        "dialect, a Django connection, or a sqlite3.Connection"
    )


def _from_driver(obj: Any, source: Any) -> Target:
    # looked up, not imported: an object is a psycopg connection only if the application
    # loaded psycopg (a process on SQLite never does)
    psycopg: Any = sys.modules.get("psycopg")
    if psycopg is not None:
        if isinstance(obj, psycopg.Connection | psycopg.Cursor):
            return Target(PG_SYNC, obj)
        if isinstance(obj, psycopg.AsyncConnection | psycopg.AsyncCursor):
            return Target(PG_ASYNC, obj)
    if isinstance(obj, sqlite3.Connection):
        return Target(SQLITE_CONN, obj)
    raise _refuse(source, f" whose driver connection is a {type(obj).__qualname__}")


def resolve(obj: Any) -> Target:
    """The driver connection behind ``obj`` (sync objects only; see ``resolve_async``)."""
    module = type(obj).__module__
    if module.startswith("sqlalchemy."):
        from sqlalchemy.engine import Connection
        from sqlalchemy.orm import Session

        if isinstance(obj, Session):
            obj = obj.connection()  # begins the session's transaction if none is open
        if isinstance(obj, Connection):
            return _from_driver(obj.connection.driver_connection, obj)
        raise _refuse(obj, " (use AsyncClient for SQLAlchemy's async objects)")
    if module.startswith("django."):
        return _from_driver(django_driver(obj), obj)
    return _from_driver(obj, obj)


def django_driver(wrapper: Any) -> Any:
    """The driver's connection under a Django connection (connecting if needed)."""
    if not hasattr(wrapper, "ensure_connection") or not hasattr(wrapper, "vendor"):
        raise ConfigError(
            f"expected a Django database connection, got {type(wrapper).__qualname__}"
        )
    if wrapper.vendor not in ("postgresql", "sqlite"):
        raise ConfigError(
            f"Django database {wrapper.alias!r} uses the {wrapper.vendor} backend; taskq "
            "enqueues in Postgres (psycopg 3) and SQLite transactions"
        )
    wrapper.ensure_connection()
    raw = wrapper.connection
    # looked up, not imported, as in _from_driver: Django on psycopg 3 has loaded it
    psycopg: Any = sys.modules.get("psycopg")
    if wrapper.vendor == "postgresql" and (
        psycopg is None or not isinstance(raw, psycopg.Connection)
    ):
        raise ConfigError(
            f"Django database {wrapper.alias!r} runs on {type(raw).__module__.split('.')[0]}; "
            "taskq needs psycopg 3 (pip install 'psycopg[binary]')"
        )
    return raw


async def resolve_async(obj: Any) -> Target:
    """Like ``resolve``, and also SQLAlchemy's ``AsyncSession``/``AsyncConnection``."""
    if type(obj).__module__.startswith("sqlalchemy.ext.asyncio"):
        from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

        if isinstance(obj, AsyncSession):
            obj = await obj.connection()
        if isinstance(obj, AsyncConnection):
            raw = await obj.get_raw_connection()
            return _from_driver(raw.driver_connection, obj)
        raise _refuse(obj)
    return resolve(obj)


# -- is it the store's database? --------------------------------------------------------

#: psycopg connections already checked: (backend pid, store DSN, schema) they passed for
_checked: weakref.WeakKeyDictionary[Any, set[tuple[int, str, str]]] = weakref.WeakKeyDictionary()


def _pg_connection(target: Target) -> Any:
    conn = target.conn
    import psycopg  # loaded already: the target is one of its objects

    return conn.connection if isinstance(conn, psycopg.Cursor | psycopg.AsyncCursor) else conn


def _already_checked(store: Any, target: Target) -> bool:
    conn = _pg_connection(target)
    try:
        passed = _checked.get(conn, set())
    except TypeError:  # not weak-referenceable: check every time
        return False
    return (conn.info.backend_pid, store.display_dsn, store.schema) in passed


def _remember(store: Any, target: Target) -> None:
    conn = _pg_connection(target)
    try:
        _checked.setdefault(conn, set()).add(
            (conn.info.backend_pid, store.display_dsn, store.schema)
        )
    except TypeError:
        pass


def _judge(store: Any, theirs: Sequence[Any], ours: Identity) -> None:
    db, port, started, has_jobs = theirs
    if (db, str(port), started) != (ours[0], str(ours[1]), ours[2]):
        raise ConfigError(
            f"connection= reaches database {db!r} on port {port} of a server started "
            f"{started}, but the taskq store {store.display_dsn} is database {ours[0]!r} on "
            f"port {ours[1]} of a server started {ours[2]}: enqueue in a transaction needs a "
            "connection to the store's own database"
        )
    if not has_jobs:
        raise ConfigError(
            f"connection= reaches database {db!r}, but it has no taskq schema "
            f"{store.schema!r} (no {jobs_table(store.schema)} table): run `taskq migrate`, or "
            "give the client the schema the application's database uses"
        )


def _check_sqlite(store: Any, conn: sqlite3.Connection) -> None:
    row = conn.execute(load_queries("sqlite.sql")["database_file"]).fetchone()
    theirs = row[0] if row else ""
    try:
        same = bool(theirs) and os.path.samefile(theirs, store.path)
    except OSError:
        same = False
    if not same:
        raise ConfigError(
            f"connection= is to SQLite file {theirs or '(in memory)'!r}, not the taskq "
            f"store's file {store.path!r}"
        )


def check_kind(store: Any, target: Target) -> None:
    """Refuse a connection of the other engine than the store's, before anything is
    opened or written (a client on the default SQLite file creates no file for it)."""
    expected = SQLITE_CONN if target.kind == SQLITE_CONN else "postgres"
    if store.kind == expected:
        return
    if expected == "postgres" and store.display_dsn == settings.DEFAULT_DSN:
        raise ConfigError(
            "connection= is a Postgres connection, but this taskq client has no DSN: "
            "TASKQ_DSN is not set, and the default store would be a SQLite file "
            f"({settings.DEFAULT_DSN}); set TASKQ_DSN to the application's database "
            "(postgresql://...), or pass its DSN: taskq.Client('postgresql://...')"
        )
    raise ConfigError(
        f"connection= is a {'SQLite' if expected == SQLITE_CONN else 'Postgres'} "
        f"connection, but the taskq store is {store.display_dsn}"
    )


def _driver_error(exc: BaseException) -> StoreError:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return StoreError(f"enqueue on the caller's connection failed: {text}")


# -- enqueue -------------------------------------------------------------------------


async def store_identity(store: Any) -> Identity:
    """The store's own (database, port, start time); only Postgres stores have one."""
    identity: Identity = await store.identity()
    return identity


def enqueue_sync(
    store: Any, target: Target, specs: Sequence[JobSpec], identity: Callable[[], Identity]
) -> list[UUID]:
    """Insert ``specs`` on a sync caller connection (in the calling thread).
    ``identity`` gives the store's own (database, port, start time), asked only the
    first time a connection is checked."""
    return write_sync(
        store,
        target,
        Write(lambda sql: pg_steps(sql, specs), lambda conn: sqlite_enqueue(conn, specs)),
        identity,
    )


async def enqueue_async(store: Any, obj: Any, specs: Sequence[JobSpec]) -> list[UUID]:
    """Insert ``specs`` on the caller's connection ``obj`` (any kind ``resolve_async``
    takes; a sync one runs right here, blocking the loop for its round trips)."""
    return await write_async(
        store,
        obj,
        Write(lambda sql: pg_steps(sql, specs), lambda conn: sqlite_enqueue(conn, specs)),
    )


@dataclass(frozen=True, slots=True)
class Write:
    """What to write on a caller's connection, for each kind of store: a Postgres
    statement generator (``store/enqueue.py``'s steps, given the store's statements with
    the schema filled in) and a function of a ``sqlite3.Connection`` in a transaction.
    Jobs (``enqueue_sync``) and workflows (``taskq.workflow_calls``) share it."""

    postgres: Callable[[dict[str, str]], Steps]
    sqlite: Callable[[sqlite3.Connection], list[UUID]]


def write_sync(
    store: Any, target: Target, write: Write, identity: Callable[[], Identity]
) -> list[UUID]:
    """Run ``write`` on a sync caller connection, once it is known to reach the store's
    own database (``identity``: the store's, asked only the first time)."""
    check_kind(store, target)
    if target.kind == SQLITE_CONN:
        try:
            _check_sqlite(store, target.conn)
            return write.sqlite(target.conn)
        except sqlite3.Error as exc:
            raise _driver_error(exc) from exc
    import psycopg  # loaded already: the target is one of its objects

    try:
        if not _already_checked(store, target):
            row = target.conn.execute(
                store.enqueue_sql["connection_identity"], {"jobs_table": jobs_table(store.schema)}
            ).fetchone()
            _judge(store, tuple(row.values()) if isinstance(row, dict) else row, identity())
            _remember(store, target)
        return run_sync(target.conn, write.postgres(store.enqueue_sql))
    except psycopg.Error as exc:
        raise _driver_error(exc) from exc


async def write_async(store: Any, obj: Any, write: Write) -> list[UUID]:
    """``write_sync`` on any connection ``resolve_async`` takes (a sync one runs right
    here, blocking the loop for its round trips)."""
    target = await resolve_async(obj)
    check_kind(store, target)
    ours = await store.identity() if target.kind != SQLITE_CONN else ()
    if not target.is_async:
        return write_sync(store, target, write, lambda: ours)
    import psycopg  # loaded already: the target is one of its objects

    try:
        if not _already_checked(store, target):
            cur = await target.conn.execute(
                store.enqueue_sql["connection_identity"], {"jobs_table": jobs_table(store.schema)}
            )
            row = await cur.fetchone()
            _judge(store, tuple(row.values()) if isinstance(row, dict) else row, ours)
            _remember(store, target)
        return await run_async(target.conn, write.postgres(store.enqueue_sql))
    except psycopg.Error as exc:
        raise _driver_error(exc) from exc
