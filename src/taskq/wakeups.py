"""Wake-ups: what the fetcher and the cancel watcher wait on, and the relay's pipe format.

A worker waits for two kinds of news: a job may be due on one of its queues, a cancel
may have been asked for one of its runs. ``Wakeups`` is that wait; the store is one
(Postgres: LISTEN/NOTIFY on a connection of the worker's own; SQLite: a timer), and a
workgroup child whose supervisor relays the host's one LISTEN connection has another
(``taskq.worker.relay``).

The relay's channel is a pipe per child incarnation: the supervisor keeps the write end,
the child gets the read end (``pass_fds``) and its number in ``TASKQ_WAKE_FD``. What goes
down it are lines, each shorter than ``PIPE_BUF`` (so a write is never split)::

    j QUEUE [QUEUE ...]     jobs may be due on these queues
    c                       a cancel was requested (the watcher asks the store which)
    *                       anything may have happened (the relay (re)connected, or
                            this child's pipe was full): look at everything

The relay coalesces: what arrives in one read of its connection goes down as one write
per child, a queue or a cancel named once.
"""

from __future__ import annotations

import os
import select
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

#: the environment variable that gives a workgroup child its end of the relay
WAKE_FD_ENV = "TASKQ_WAKE_FD"
#: a message longer than this is sent as ``*`` (a write up to PIPE_BUF is atomic)
MAX_MESSAGE = min(getattr(select, "PIPE_BUF", 512), 4096) - 1


class Wakeups(Protocol):
    async def wait_for_jobs(self, queues: Sequence[str], timeout: float) -> bool:
        """Until a job may be due on ``queues`` (True) or ``timeout`` (False)."""
        ...

    async def wait_for_cancels(self, timeout: float) -> bool:
        """Until a cancel may have been requested (True) or ``timeout`` (False)."""
        ...


@dataclass(slots=True)
class News:
    """What one message says (or several, read together)."""

    queues: set[str] = field(default_factory=set)
    cancels: bool = False
    everything: bool = False

    def __bool__(self) -> bool:
        return bool(self.queues) or self.cancels or self.everything

    def add(self, other: News) -> None:
        self.queues |= other.queues
        self.cancels = self.cancels or other.cancels
        self.everything = self.everything or other.everything


def encode(queues: Iterable[str], cancels: bool, everything: bool = False) -> bytes:
    """One message: ``*`` when it would not fit in one atomic write."""
    if everything:
        return b"*\n"
    lines = []
    named = sorted(set(queues))
    if named:
        lines.append("j " + " ".join(named) + "\n")
    if cancels:
        lines.append("c\n")
    data = "".join(lines).encode()
    return b"*\n" if len(data) > MAX_MESSAGE else data


def decode(line: bytes) -> News:
    """One line; a line this format does not know reads as ``*`` (look at everything)."""
    text = line.decode(errors="replace").strip()
    if text.startswith("j "):
        return News(queues=set(text[2:].split()))
    if text == "c":
        return News(cancels=True)
    return News(everything=True)


def take_fd(env: dict[str, str] | None = None) -> int | None:
    """The relay's read end this process was given (``TASKQ_WAKE_FD``), taken out of the
    environment so that nothing this process starts mistakes it for its own; None when
    there is none, or it is not an open pipe (a stale variable)."""
    environ = os.environ if env is None else env
    raw = environ.pop(WAKE_FD_ENV, None)
    if raw is None:
        return None
    try:
        fd = int(raw)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        os.set_inheritable(fd, False)  # a pool process must not hold it open
    except (ValueError, OSError):
        return None
    return fd
