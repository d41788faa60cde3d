"""A Postgres LISTEN connection that several tasks wait on at once.

The store keeps two (new jobs, cancel requests), outside its pool. Each is opened on the
first wait and reopened after it broke. Closing one is the delicate part: a task waiting
in ``notifies()`` has the socket registered with the event loop, and closing the
connection under it frees the file descriptor while it is still registered; the next
connection opened (a SIGHUP's new pool, say) may get the same number and then fails
with "connection socket closed" when the waiter lets go of it. So ``close`` only retires
the connection: the last task waiting on it closes it as it leaves (at the latest when
its wait times out), and new waits get a new connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import aclosing

import psycopg
from psycopg import Notify


class Listener:
    def __init__(self, connect: Callable[[], Awaitable[psycopg.AsyncConnection]]) -> None:
        self._connect = connect  # opens a connection and LISTENs on it
        self._conn: psycopg.AsyncConnection | None = None
        self._waiting: dict[psycopg.AsyncConnection, int] = {}  # connection -> its waiters
        self._lock = asyncio.Lock()

    def open_connections(self) -> int:
        """Connections open now: the current one, and retired ones still waited on."""
        conns = set(self._waiting) | ({self._conn} if self._conn is not None else set())
        return sum(1 for conn in conns if not conn.closed)

    async def open(self) -> psycopg.AsyncConnection:
        """The current connection, opened (and LISTENing) if there is none."""
        async with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = await self._connect()
            return self._conn

    async def wait(self, timeout: float, wanted: Callable[[Notify], bool]) -> bool:
        """Until a notification ``wanted`` accepts arrives (True) or ``timeout`` (False).
        A broken connection raises ``psycopg.Error``: the caller ``close``s it."""
        conn = await self.open()
        self._waiting[conn] = self._waiting.get(conn, 0) + 1
        try:
            async with aclosing(conn.notifies(timeout=max(0.0, timeout))) as notifies:
                async for notify in notifies:
                    if wanted(notify):
                        return True
            return False
        finally:
            left = self._waiting.pop(conn) - 1
            if left:
                self._waiting[conn] = left
            elif conn is not self._conn:  # retired while this task waited on it
                await conn.close()

    async def close(self) -> None:
        """Retire the current connection: closed now if no task waits on it, else by the
        last one to leave it."""
        async with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None and conn not in self._waiting:
            await conn.close()
