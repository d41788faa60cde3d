"""The SQLite store's connections to its file: opening one, locks, transactions, errors.

Each connection runs the file in WAL mode (readers and one writer at once, across
processes) with a busy timeout; every write is a ``BEGIN IMMEDIATE`` transaction, which
takes the write lock up front, so a claim is exclusive without row locks. A lock still
held past the busy timeout is retried with a short random backoff before the call gives
up with ``StoreUnavailable``.

The store's own connection lives on the store thread (``thread.py``); the sync
``Client``'s plain enqueues use one connection per calling thread (``ThreadConnections``).
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from ...exceptions import SchemaNotMigrated, StoreError, StoreUnavailable
from ..sqlfile import load_queries
from . import functions

T = TypeVar("T")

Q = load_queries("sqlite.sql")

BUSY_TIMEOUT = 5.0  # seconds one statement waits for a lock (sqlite3's busy timeout)
LOCKED_DEADLINE = 30.0  # seconds of retrying a locked database before StoreUnavailable


def is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def translate(exc: sqlite3.Error, display_dsn: str) -> StoreError:
    """A driver error as taskq's: missing tables, an unavailable file, anything else."""
    text = str(exc)
    if "no such table" in text or "no such column" in text:
        return SchemaNotMigrated(
            f"taskq's tables are missing or out of date in {display_dsn}: "
            f"run `taskq migrate` ({text})"
        )
    if is_busy(exc) or "unable to open" in text or "disk" in text or "readonly" in text:
        return StoreUnavailable(f"SQLite database {display_dsn} is unavailable: {text}")
    return StoreError(f"SQLite error in {display_dsn}: {text}")


class Connector:
    """Opens connections to a file and runs transactions on them, with the store's busy
    timeout and its deadline for a lock held by others."""

    def __init__(self, busy_timeout: float, locked_deadline: float) -> None:
        self.busy_timeout, self.locked_deadline = busy_timeout, locked_deadline

    def connect(self, path: str) -> sqlite3.Connection:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create the directory of SQLite database sqlite:///{path}: "
                f"{exc.strerror or exc}"
            ) from exc
        try:
            conn = sqlite3.connect(
                path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open SQLite database sqlite:///{path}: {exc}") from exc
        try:
            self.retrying_locks(lambda: conn.execute(Q["journal_mode_wal"]).fetchone())
            conn.execute(Q["synchronous_normal"])
            conn.row_factory = sqlite3.Row
            functions.register(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreUnavailable(f"cannot open SQLite database sqlite:///{path}: {exc}") from exc
        return conn

    def retrying_locks(self, fn: Callable[[], T]) -> T:
        """``fn()``, again after a short random backoff while the file is locked by
        others, up to the deadline."""
        deadline = time.monotonic() + self.locked_deadline
        backoff = 0.005
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(random.uniform(0, backoff))
            backoff = min(backoff * 2, 0.1)

    def transaction(self, db: sqlite3.Connection, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in one BEGIN IMMEDIATE transaction of ``db``, again while the
        write lock is busy (up to the deadline)."""

        def attempt() -> T:
            db.execute(Q["begin_immediate"])
            try:
                result = fn(*args)
                db.execute(Q["commit"])
            except BaseException:
                if db.in_transaction:
                    db.execute(Q["rollback"])
                raise
            return result

        return self.retrying_locks(attempt)


class Engine(Protocol):
    """What the store's parts (its views, its upkeep) need of it: its thread, its
    connection and its writes (``SqliteStore.run``, ``db``, ``write``)."""

    async def run(self, fn: Callable[..., T], *args: Any) -> T: ...

    @property
    def db(self) -> sqlite3.Connection: ...

    def write(self, fn: Callable[..., T], *args: Any) -> T: ...


async def read(store: Engine, name: str, params: dict[str, Any] | None = None) -> list[Any]:
    """The rows of the named statement, on the store thread."""
    return await store.run(lambda: store.db.execute(Q[name], params or {}).fetchall())


async def written(store: Engine, name: str, params: dict[str, Any]) -> list[Any]:
    """The rows the named statement returns, run in one write."""

    def write() -> list[Any]:
        return store.db.execute(Q[name], params).fetchall()

    return await store.run(store.write, write)


class ThreadConnections:
    """One connection per calling thread (``LocalEnqueue``), opened on its first use
    there; all closed at once when the store closes or reconnects."""

    def __init__(self, connector: Connector) -> None:
        self._connector = connector
        self._here = threading.local()
        self._conns: set[sqlite3.Connection] = set()
        self._lock = threading.Lock()

    def get(self, path: str) -> sqlite3.Connection:
        """This thread's connection to ``path``."""
        here = self._here
        if getattr(here, "path", None) != path:  # first use here, or reconnected
            conn = self._connector.connect(path)
            with self._lock:
                self._conns.add(conn)
            here.path, here.conn = path, conn
        return cast(sqlite3.Connection, here.conn)

    def open_connections(self) -> int:
        with self._lock:
            return len(self._conns)

    def close(self) -> None:
        """Close every calling thread's connection (each opens a new one next time)."""
        with self._lock:
            conns, self._conns = self._conns, set()
        self._here = threading.local()
        for conn in conns:
            conn.close()
