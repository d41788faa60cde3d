"""One place in the pool and the process currently filling it: plain state.

Anyone in the pool reads a ``Slot``; only the slot supervisor (``supervisor.py``)
writes it. ::

    down -> starting -> idle <-> busy
      ^        |          |       |
      +--------+----------+-------+   retired (death, timeout, recycle, cancel, close),
                                      stopped and reaped, then restarted
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from ..restart import RestartPolicy
from .causes import OomCounter
from .channel import Channel
from .protocol import Exchanged

#: jobs a process holds at once: one running and one waiting in its pipe (pipelining)
PIPELINE_DEPTH = 2


def new_reaped() -> asyncio.Future[int | None]:
    """A future for one process's exit code (each process gets its own)."""
    return asyncio.get_running_loop().create_future()


class SlotState(enum.Enum):
    DOWN = "down"  # no process (waiting for a restart delay or the breaker)
    STARTING = "starting"  # spawned, running its initializers
    IDLE = "idle"  # ready for a job
    BUSY = "busy"  # running a job


@dataclass(frozen=True, slots=True)
class Retirement:
    """Why a slot's current process must go, and how."""

    reason: str  # died, died_idle, timeout, cancelled, max_tasks, max_memory, closing, ...
    failure: bool  # counts against the slot's restart policy (a backoff delay)
    hard: bool  # SIGTERM at once (a job is running) instead of closing the pipe


@dataclass(eq=False)
class Slot:
    """One place in the pool. Read by anyone; written only by ``SlotSupervisor``."""

    index: int
    policy: RestartPolicy
    state: SlotState = SlotState.DOWN
    generation: int = 0  # processes started in this slot
    process: BaseProcess | None = None
    conn: Connection | None = None
    pid: int | None = None
    memory_limit_mib: int = -1  # RLIMIT_AS soft of the child, as it reported when ready
    oom_counter: OomCounter | None = None
    tasks_done: int = 0
    retirement: Retirement | None = None
    retired: asyncio.Event = field(default_factory=asyncio.Event)
    # the current process's exit code once it is reaped (a new future for each process:
    # whoever awaits one process's end keeps its own future)
    reaped: asyncio.Future[int | None] = field(default_factory=new_reaped)
    #: the parent's end of the pipe, read by the event loop from ``Ready`` to the stop
    channel: Channel | None = None
    #: the exchange with the busy process (its verdict; while a large job is written from
    #: a thread, that write)
    exchange: asyncio.Future[Exchanged] | asyncio.Future[bool] | None = None
    #: jobs sent to the current process and not concluded yet: 1 while busy, 2 while a
    #: job waits in its pipe behind the running one (``SlotSupervisor.take_queueable``)
    pending: int = 0
    #: the running job's message is sent from a thread (a large payload): nothing may be
    #: queued behind it, whose bytes could interleave with its own
    exclusive: bool = False
    #: resolved once the last job sent to the current process is concluded (its verdict
    #: acted on: the slot retired, or offered again): the job queued behind it waits for it
    turn: asyncio.Future[None] | None = None
    #: the job queued in the pipe was given up while it waited (its caller was cancelled):
    #: the process is stopped when the job before it ends, not offered again
    drop_after_turn: bool = False
