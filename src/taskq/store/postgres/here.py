"""The Postgres store's enqueue on the calling thread (``LocalEnqueue``), for the
synchronous ``taskq.Client``: plain jobs written on a synchronous psycopg connection in
the thread that enqueues, with no hop to the client's loop thread and back (the enqueue
a web request pays: docs/benchmarks.md).

The rows and statements are the async path's (``enqueue_one`` / ``enqueue`` /
``enqueue_full`` for fewer than ``copy_threshold`` jobs, one ``COPY`` from there), on a
connection opened as the pool's are (``Connections.conninfo``: ``application_name``;
``Connections.connection_kwargs``: autocommit, nothing prepared through a pooler): each write is
one statement, its own transaction, all or nothing.

Connections (``HereConnections``): at most ``max_size`` out at once (the store pool's
size; a thread past that waits for one, up to ``CHECKOUT_TIMEOUT``, then
``StoreUnavailable``); idle ones kept on a stack, the most recently used on top, so a
single web thread reuses one warm connection; one idle past ``MAX_IDLE`` or older than
``MAX_LIFETIME`` is closed. Threads take and give back connections without a lock on
that path (``list.pop``/``append``); a lock guards only giving back against ``close``.

After a database restart: an idle connection whose server hung up (its socket readable:
the server's goodbye or EOF; one ``select``, no round trip) is closed and replaced when
taken, before anything is sent on it. A connection that fails during a write is
closed, never kept, and the error raised (``StoreUnavailable``); its one statement
committed whole or not at all.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from ...exceptions import StoreUnavailable
from ...jobs import JobColumns
from ..enqueue import columns_insert, copy_columns
from .connections import CHECKOUT_TIMEOUT, Connections, hung_up

MAX_IDLE = 600.0  # an idle connection is closed after this long unused
MAX_LIFETIME = 3600.0  # and any after this long (as the pool's max_lifetime)


class _Kept:
    """A connection, its cursor, and when it was made and last given back."""

    __slots__ = ("born", "conn", "cursor", "generation", "used")

    def __init__(self, conn: psycopg.Connection[Any], generation: int) -> None:
        self.conn = conn
        self.cursor = conn.cursor()
        self.born = self.used = time.monotonic()
        self.generation = generation


class HereConnections:
    """The calling threads' synchronous connections of one Postgres store (see the
    module docstring). ``write`` is ``Store.enqueue_columns`` on one of them."""

    def __init__(
        self,
        db: Connections,
        statements: dict[str, str],
        *,
        copy_threshold: int,
        copy_block: int,
    ) -> None:
        self._db = db  # its conninfo (as reloaded), pool size and error mapping
        self._statements = statements
        self._copy_threshold, self._copy_block = copy_threshold, copy_block
        self._slots = threading.BoundedSemaphore(db.max_size)
        self._idle: list[_Kept] = []
        self._in_use: set[_Kept] = set()  # set.add/discard: atomic, no lock on the write path
        self._lock = threading.Lock()
        self._generation = 0  # replace(): connections of an older one are not kept

    def write(self, jobs: JobColumns) -> None:
        """Insert ``jobs`` (no unique keys) in one statement on a connection of the
        calling thread's for the call."""
        if not self._slots.acquire(timeout=CHECKOUT_TIMEOUT):
            raise StoreUnavailable(
                f"all {self._db.max_size} enqueue connections stayed busy for "
                f"{CHECKOUT_TIMEOUT:g} s (more threads enqueue at once than the pool's size)"
            )
        try:
            kept = self._take()
            self._in_use.add(kept)
            ok = False
            try:
                cursor = kept.cursor
                if len(jobs.ids) < self._copy_threshold:
                    cursor.execute(*columns_insert(self._statements, jobs))
                else:
                    name, blocks = copy_columns(jobs, self._copy_block)
                    with cursor.copy(self._statements[name]) as copy:
                        for block in blocks:
                            copy.write(block)
                ok = True
            except psycopg.Error as exc:
                raise self._db.translate(exc) from exc
            finally:
                self._in_use.discard(kept)
                self._give(kept, ok)
        finally:
            self._slots.release()

    def open_connections(self) -> int:
        """Connections open now: idle and in use."""
        return len(self._idle) + len(self._in_use)

    def _take(self) -> _Kept:
        """The most recently used idle connection the server has not hung up on, else
        a new one."""
        now = time.monotonic()
        while True:
            try:
                kept = self._idle.pop()
            except IndexError:
                return self._connect()
            if (
                kept.generation == self._generation
                and now - kept.born < MAX_LIFETIME
                and not hung_up(kept.conn)
            ):
                return kept
            kept.conn.close()  # the server hung up on it (restarted), or it is too old

    def _connect(self) -> _Kept:
        generation = self._generation
        try:
            conn = psycopg.Connection.connect(self._db.conninfo, **self._db.connection_kwargs)
        except psycopg.Error as exc:
            raise self._db.translate(exc) from exc
        return _Kept(conn, generation)

    def _give(self, kept: _Kept, ok: bool) -> None:
        """Keep it if the write ended cleanly and it is idle; close the idle connection
        unused longest if it has waited past ``MAX_IDLE``."""
        conn = kept.conn
        keep = ok and conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        stale = None
        with self._lock:
            keep = keep and kept.generation == self._generation
            if keep:
                kept.used = now = time.monotonic()
                self._idle.append(kept)
                try:  # taken by another thread meanwhile: nothing to close
                    if self._idle[0].used < now - MAX_IDLE:
                        stale = self._idle.pop(0)
                except IndexError:
                    pass
        if not keep:
            conn.close()
        if stale is not None:
            stale.conn.close()

    def replace(self) -> None:
        """Close the idle connections; those in use are closed when given back; new ones
        use the store's conninfo as it is then (credentials reloaded). ``close`` is
        ``replace``: the store may be opened again."""
        with self._lock:
            self._generation += 1
            idle, self._idle = self._idle, []
        for kept in idle:
            kept.conn.close()

    close = replace
