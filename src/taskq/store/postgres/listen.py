"""A Postgres LISTEN connection that several tasks wait on at once.

The store keeps one, outside its pool, LISTENing on both of its channels (new jobs,
cancel requests): the fetcher and the cancel watcher wait on it together, each for its
own notifications. It is opened on the first wait and reopened after it broke.

One connection, several waiters: psycopg's ``notifies()`` holds the connection while it
reads, so only one waiter reads at a time (the reader); it hands each notification to
every waiter it is for, and when its own wait ends the next waiter takes over reading.
The fetcher's wait comes ``first``: it takes the reading over from a reader that is not
first (between two notifications, never holding one), so a new job wakes the fetcher
in its own task, with no hop through another (the path from enqueue to start).
A notification no waiter was waiting for (the cancel watcher was polling when a cancel
was announced, the fetcher was claiming when a job came) is kept, as an unread one
would have stayed on a connection of its own, and the next wait it is for returns at
once (the last ``KEPT`` of them: more have nobody waiting for them).

Closing the connection is the delicate part: a task waiting in ``notifies()`` has the
socket registered with the event loop, and closing the connection under it frees the
file descriptor while it is still registered; the next connection opened (a SIGHUP's
new pool, say) may get the same number and then fails with "connection socket closed"
when the waiter lets go of it. So ``close`` only retires the connection: the last task
waiting on it closes it as it leaves (at the latest when its wait times out), and new
waits get a new connection.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing

import psycopg
from psycopg import Notify, sql

#: notifications kept for a waiter that was not waiting when they came
KEPT = 256
#: how long a waiter that is not first looks away while a first one takes the reading
HANDOVER = 0.01

Wanted = Callable[[Notify], bool]


def channel_for(schema: str, what: str = "") -> str:
    """The NOTIFY channel of a schema (identifiers stop at 63 bytes; so does the trigger).
    ``what`` names another channel of the schema (``cancel``: cancel requests)."""
    if what:
        return f"taskq_{what}_{schema}"[:63]
    return f"taskq_{schema}"[:63]


async def listen_on(
    conn: psycopg.AsyncConnection, queries: Mapping[str, str], jobs: str, cancels: str
) -> None:
    """LISTEN on a schema's two channels: ``jobs`` (new jobs: a queue's name) and
    ``cancels`` (cancel requests: a job id). The store's connection and a workgroup's
    (``notices.py``) both."""
    for name, channel in (("listen", jobs), ("listen_cancels", cancels)):
        await conn.execute(sql.SQL(queries[name]).format(channel=sql.Identifier(channel)))


class Listener:
    def __init__(self, connect: Callable[[], Awaitable[psycopg.AsyncConnection]]) -> None:
        self._connect = connect  # opens a connection and LISTENs on it
        self._conn: psycopg.AsyncConnection | None = None
        self._waiting: dict[psycopg.AsyncConnection, int] = {}  # connection -> its waiters
        self._lock = asyncio.Lock()
        self._waiters: dict[asyncio.Future[bool], Wanted] = {}
        #: per connection, done when its reader stops reading (the next one takes over)
        self._reading: dict[psycopg.AsyncConnection, asyncio.Future[None]] = {}
        #: per connection read by a waiter that is not ``first``: set to make it hand over
        self._yield: dict[psycopg.AsyncConnection, asyncio.Future[None]] = {}
        #: per connection, the ``first`` waits in progress (others leave them the reading)
        self._firsts: dict[psycopg.AsyncConnection, int] = {}
        self._kept: deque[Notify] = deque(maxlen=KEPT)

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

    async def wait(self, timeout: float, wanted: Wanted, *, first: bool = False) -> bool:
        """Until a notification ``wanted`` accepts arrives (True) or ``timeout`` (False);
        one kept since the last such wait answers at once. ``first``: read the connection
        itself, taking over from a reader that is not (see the module's docstring). A
        broken connection raises ``psycopg.Error``: the caller ``close``s it."""
        if self._take_kept(wanted):
            return True
        conn = await self.open()
        loop = asyncio.get_running_loop()
        mine: asyncio.Future[bool] = loop.create_future()
        self._waiters[mine] = wanted
        self._waiting[conn] = self._waiting.get(conn, 0) + 1
        if first:
            self._firsts[conn] = self._firsts.get(conn, 0) + 1
        deadline = loop.time() + max(0.0, timeout)
        try:
            while not mine.done():
                remaining = max(0.0, deadline - loop.time())
                reading = self._reading.get(conn)
                if reading is None and not first and self._firsts.get(conn):
                    # a first wait is about to read (it was just handed the reading)
                    await asyncio.wait((mine,), timeout=min(remaining, HANDOVER))
                    if not mine.done() and loop.time() >= deadline:
                        return False
                elif reading is None:  # read (a timeout of 0 reads what has come already)
                    await self._read(conn, mine, remaining, first)
                    if not mine.done() and loop.time() >= deadline:
                        return False
                elif remaining <= 0:
                    return False
                else:  # another waiter reads: until it hands us ours, or stops reading
                    handover = self._yield.get(conn)
                    if first and handover is not None and not handover.done():
                        handover.set_result(None)
                    await asyncio.wait(
                        (mine, reading), timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                    )
            return True
        finally:
            del self._waiters[mine]
            if first:
                firsts = self._firsts.pop(conn) - 1
                if firsts:
                    self._firsts[conn] = firsts
            left = self._waiting.pop(conn) - 1
            if left:
                self._waiting[conn] = left
            elif conn is not self._conn:  # retired while this task waited on it
                await conn.close()

    async def _read(
        self, conn: psycopg.AsyncConnection, mine: asyncio.Future[bool], timeout: float, first: bool
    ) -> None:
        """Read ``conn`` for every waiter until ``mine`` is answered or ``timeout`` (or,
        not ``first``, until a first waiter asks for the reading)."""
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[None] = loop.create_future()
        self._reading[conn] = turn
        try:
            async with aclosing(conn.notifies(timeout=timeout)) as notifies:
                if first:
                    async for notify in notifies:
                        self._deliver(notify)
                        if mine.done():
                            break
                else:
                    await self._read_yielding(conn, notifies, mine)
        finally:
            del self._reading[conn]
            self._yield.pop(conn, None)
            turn.set_result(None)

    async def _read_yielding(
        self,
        conn: psycopg.AsyncConnection,
        notifies: AsyncGenerator[Notify],
        mine: asyncio.Future[bool],
    ) -> None:
        """``_read`` for a waiter that is not first: each notification awaited beside the
        ask to hand over. The ask is honoured only while psycopg waits for the socket
        (its step still pending after one turn of the loop), never while its generator
        still holds notifications of a batch it read, which closing it would lose."""
        handover: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._yield[conn] = handover
        while not mine.done():
            step = asyncio.ensure_future(anext(notifies))
            try:
                await asyncio.sleep(0)  # a notification already in hand comes at once
                if not step.done():
                    await asyncio.wait((step, handover), return_when=asyncio.FIRST_COMPLETED)
            except BaseException:  # cancelled (a shutdown): the step ends with this wait
                step.cancel()
                await asyncio.gather(step, return_exceptions=True)
                raise
            if not step.done():  # a first waiter takes over: psycopg waits on the socket
                step.cancel()
                await asyncio.gather(step, return_exceptions=True)
                return
            try:
                self._deliver(step.result())
            except StopAsyncIteration:  # the timeout
                return

    def _deliver(self, notify: Notify) -> None:
        taken = False
        for waiter, wanted in self._waiters.items():
            if wanted(notify):
                taken = True
                if not waiter.done():
                    waiter.set_result(True)
        if not taken:
            self._kept.append(notify)

    def _take_kept(self, wanted: Wanted) -> bool:
        """Whether a kept notification is for this wait (those for it are used up)."""
        kept = self._kept
        if not kept:
            return False
        left = [n for n in kept if not wanted(n)]
        if len(left) == len(kept):
            return False
        kept.clear()
        kept.extend(left)
        return True

    async def close(self) -> None:
        """Retire the current connection: closed now if no task waits on it, else by the
        last one to leave it. Kept notifications go with it (a new connection's waiters
        look at the store again anyway)."""
        async with self._lock:
            conn, self._conn = self._conn, None
            self._kept.clear()
        if conn is not None and conn not in self._waiting:
            await conn.close()
