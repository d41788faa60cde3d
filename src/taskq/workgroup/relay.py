"""The host's one LISTEN connection, relayed to the children: the supervisor's ``wake-relay``.

A worker LISTENs for two things (new jobs on its queues, cancel requests for its runs),
and on its own each holds connections for them: two per worker, and none at all through
a transaction pooler, which keeps no session. With ``TASKQ_PG_DSN_DIRECT`` set (a DSN
that reaches Postgres itself), the workgroup supervisor holds the host's one LISTEN
connection instead (``store.host_notices``) and hands what it hears to its children over
a pipe each (``taskq.wakeups``: the format; ``taskq.worker.relay``: the child's end).

* ``attach(worker, queues)`` before a child is spawned: a new pipe; the child gets its
  read end (``pass_fds``, ``TASKQ_WAKE_FD``), the relay keeps the write end (non-blocking)
  until ``detach`` after the child exited. A child only hears of its own queues (of
  every queue when it has none configured: it consumes its registry's).
* What arrives in one read of the connection goes down as one write per child (a queue
  or a cancel named once). A child whose pipe is full (it has not read for a while) owes
  a ``*``: its next message says "look at everything" instead.
* Each time the connection is (re)opened every child gets ``*``: a notification sent
  while nobody listened is looked for by a claim. While it is down the children wait
  their ``poll_interval`` (they poll), and the outage is logged once.
* Stopped after the children (a child in its shutdown grace still hears of cancels):
  closing the write ends is what tells a child its relay is gone (``wake-relay-lost``);
  a SIGKILLed supervisor's ends close with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import dataclass

from .. import metrics
from ..backoff import Backoff
from ..events import WAKE_RELAY_LISTEN_FAILED, WAKE_RELAY_LISTENING
from ..exceptions import StoreError
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..store.postgres.notices import Notices
from ..wakeups import News, encode

log = get_logger(__name__)


@dataclass(slots=True, eq=False)
class _Pipe:
    fd: int  # the write end
    queues: frozenset[str] | None  # None: every queue (the child consumes its registry's)
    owes_everything: bool = False


class ChildPipes:
    """Each child's pipe (the write end, non-blocking), what it listens for, and whether
    it is owed a ``*`` (its pipe was full when news came)."""

    def __init__(self) -> None:
        self._pipes: dict[str, _Pipe] = {}

    def __len__(self) -> int:
        return len(self._pipes)

    def names(self) -> list[str]:
        return sorted(self._pipes)

    def attach(self, worker: str, queues: Sequence[str]) -> int:
        """A new pipe for ``worker``'s next incarnation (its queues; none: every queue);
        returns the read end, which the caller passes to the child and then closes."""
        self.detach(worker)
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        self._pipes[worker] = _Pipe(write_end, frozenset(queues) if queues else None)
        return read_end

    def detach(self, worker: str) -> None:
        """Close ``worker``'s write end (it exited, or never started)."""
        pipe = self._pipes.pop(worker, None)
        if pipe is not None:
            with contextlib.suppress(OSError):
                os.close(pipe.fd)

    def close(self) -> None:
        for worker in list(self._pipes):
            self.detach(worker)

    def deliver(self, news: News) -> None:
        """One write to every child the news concerns (never blocks)."""
        for pipe in list(self._pipes.values()):
            everything = news.everything or pipe.owes_everything
            if everything:
                queues: set[str] | frozenset[str] = frozenset()
            elif pipe.queues is None:
                queues = news.queues
            else:
                queues = news.queues & pipe.queues
            if not (everything or queues or news.cancels):
                continue
            try:
                os.write(pipe.fd, encode(queues, news.cancels, everything))
            except BlockingIOError:  # its pipe is full of wake-ups already
                pipe.owes_everything = True
            except OSError:  # its process is gone; detach() comes after its exit
                continue
            else:
                pipe.owes_everything = False


class WakeRelay(Stoppable):
    """The supervisor's part that LISTENs for the host and writes to every child."""

    name = "wake-relay"
    stop_timeout = 5.0  # a connect in hand (connect_timeout)

    def __init__(self, notices: Notices, *, retry_initial: float = 0.5, retry_max: float = 10.0):
        self._notices = notices
        self.pipes = ChildPipes()
        self._pending = News()
        self._flush_scheduled = False
        self._backoff = Backoff(initial=retry_initial, maximum=retry_max)
        self._stopped = StopSignal()
        self._down_since: float | None = None
        self.listening = False
        self.connections = 0  # times the LISTEN connection was opened

    # -- the children's pipes -----------------------------------------------------------
    def attach(self, worker: str, queues: Sequence[str]) -> int:
        """``ChildPipes.attach``: the read end for ``worker``'s next incarnation."""
        return self.pipes.attach(worker, queues)

    def detach(self, worker: str) -> None:
        self.pipes.detach(worker)

    def status(self) -> dict[str, object]:
        """For ``/status``: where it listens, whether it does, for how many children."""
        return {
            "dsn": self._notices.display_dsn,
            "schema": self._notices.schema,
            "listening": self.listening,
            "connections_opened": self.connections,
            "children": self.pipes.names(),
        }

    # -- the part (its start has nothing to open: the connection opens in run(); until
    # then the children poll) -------------------------------------------------------------
    async def run(self) -> None:
        try:
            while not self._stopped:
                listening = asyncio.ensure_future(self._listen())
                stopped = asyncio.ensure_future(self._stopped.wait())
                try:
                    await asyncio.wait({listening, stopped}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for task in (listening, stopped):
                        task.cancel()
                    await asyncio.gather(listening, stopped, return_exceptions=True)
                if self._stopped:
                    break
                error = listening.exception() if not listening.cancelled() else None
                if error is not None and not isinstance(error, StoreError | OSError):
                    raise error  # a bug, not an outage
                self._went_down(error)
                await self._stopped.sleep(self._backoff.failed())
        finally:
            self._set_listening(False)
            self.pipes.close()

    # -- internals ----------------------------------------------------------------------
    async def _listen(self) -> None:
        """One connection, from open to break (``StoreError``)."""
        loop = asyncio.get_running_loop()
        async with aclosing(self._notices.listen()) as notices:
            async for notice in notices:
                if notice.kind == "listening":
                    self.connections += 1
                    self._backoff.reset()
                    self._down_since = None
                    self._set_listening(True)
                    log.event(
                        WAKE_RELAY_LISTENING,
                        dsn=self._notices.display_dsn,
                        schema=self._notices.schema,
                        children=len(self.pipes),
                    )
                    self._pending.everything = True
                elif notice.kind == "jobs":
                    self._pending.queues.add(notice.payload)
                else:
                    self._pending.cancels = True
                if not self._flush_scheduled:  # after the rest of this read's notifications
                    self._flush_scheduled = True
                    loop.call_soon(self._flush)
        raise StoreError("the LISTEN connection ended")

    def _went_down(self, error: BaseException | None) -> None:
        self._set_listening(False)
        if self._down_since is None:
            self._down_since = asyncio.get_running_loop().time()
            text = f"{type(error).__name__}: {error}" if error is not None else "ended"
            log.event(WAKE_RELAY_LISTEN_FAILED, dsn=self._notices.display_dsn, error=text)

    def _set_listening(self, value: bool) -> None:
        self.listening = value
        metrics.workgroup_wake_relay_listening.set(1 if value else 0)

    def _flush(self) -> None:
        """Write what was heard since the last flush to every child it concerns."""
        self._flush_scheduled = False
        news, self._pending = self._pending, News()
        self.pipes.deliver(news)
