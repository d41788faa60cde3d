"""A workgroup child's wake-ups, relayed by its supervisor: the ``wake-relay`` part.

With ``TASKQ_PG_DSN_DIRECT`` set, the workgroup supervisor holds the host's one LISTEN
connection (``taskq.workgroup.relay``) and writes what it hears down a pipe to each child
(``taskq.wakeups`` has the format). This part reads that pipe and is the child's
``Wakeups``: the fetcher and the cancel watcher wait on it instead of on LISTEN
connections of their own, so the child opens none.

News is kept until it is looked at: a queue named while the fetcher was claiming wakes
its next wait at once, as a notification queued on a LISTEN connection would.

When the pipe closes (the supervisor is gone: SIGKILLed, crashed) the part says so once
(``wake-relay-lost``, counted in ``taskq_wake_relay_lost``), wakes both waiters (news may
have been missed) and from then on every wait simply lasts its timeout: the fetcher
polls every ``poll_interval``, the cancel watcher every second. It opens no LISTEN
connection of its own: a host whose supervisor died is about to lose its children too
(they get SIGTERM), and a hundred of them reconnecting at once is what the relay avoids.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from ..events import WAKE_RELAY_LOST
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..wakeups import News, decode

log = get_logger(__name__)

#: the longest line read from the pipe (the relay's are shorter than PIPE_BUF)
LINE_LIMIT = 64 * 1024
LOST_NOTE = (
    "this worker now polls: for new jobs every poll_interval seconds, for cancels every second"
)


class RelayedWakeups(Stoppable):
    """The ``wake-relay`` part: the child's end of its supervisor's relay."""

    name = "wake-relay"
    stop_timeout = 5.0

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._stopped = StopSignal()
        self._news = News()
        self._changed = asyncio.Event()
        self._transport: asyncio.ReadTransport | None = None
        self._reader: asyncio.StreamReader | None = None
        self.lost = False
        self.messages = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        pipe = os.fdopen(self._fd, "rb", buffering=0)
        try:
            self._transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), pipe
            )
        except BaseException:
            pipe.close()
            raise
        self._reader = reader

    async def run(self) -> None:
        reader = self._reader
        assert reader is not None, "started"
        try:
            while not self._stopped:
                try:
                    line = await reader.readline()
                except (OSError, ValueError) as exc:  # ValueError: a line past LINE_LIMIT
                    self._lose(f"{type(exc).__name__}: {exc}")
                    break
                if self._stopped:
                    break
                if not line:
                    self._lose("the supervisor's end of the relay closed (the supervisor is gone)")
                    break
                self._note(decode(line))
        finally:
            if self._transport is not None:
                self._transport.close()
        await self._stopped.wait()

    def stop(self, *, hurry: bool = False) -> None:
        self._stopped.set(hurry=hurry)
        if self._transport is not None:
            self._transport.close()  # the reader sees the end at once; not a loss

    # -- Wakeups ------------------------------------------------------------------------
    async def wait_for_jobs(self, queues: Sequence[str], timeout: float) -> bool:
        news = self._news
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            hit = news.everything or not news.queues.isdisjoint(queues)
            news.queues.clear()  # only the fetcher asks about queues
            news.everything = False
            if hit:
                return True
            if not await self._changed_within(deadline - loop.time()):
                return False

    async def wait_for_cancels(self, timeout: float) -> bool:
        news = self._news
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if news.cancels:
                news.cancels = False
                return True
            if not await self._changed_within(deadline - loop.time()):
                return False

    # -- internals ----------------------------------------------------------------------
    async def _changed_within(self, seconds: float) -> bool:
        """Until the next message (True) or ``seconds`` (False)."""
        if seconds <= 0:
            return False
        changed = self._changed
        try:
            async with asyncio.timeout(seconds):
                await changed.wait()
        except TimeoutError:
            return False
        return True

    def _note(self, news: News) -> None:
        self.messages += 1
        if news.everything:  # look at both, whatever the other waiter does first
            news = News(cancels=True, everything=True)
        self._news.add(news)
        self._changed.set()  # wake every waiter now; the next ones wait on a new event
        self._changed = asyncio.Event()

    def _lose(self, why: str) -> None:
        self.lost = True
        log.event(WAKE_RELAY_LOST, error=why, note=LOST_NOTE)
        self._note(News(everything=True))  # news may have been missed: look once now
