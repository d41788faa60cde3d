"""One place in the pool and the process currently filling it.

A slot's process is started, waited on and reaped only through the helpers here, all of
them blocking (the pool calls them from its own threads). Reaping goes through one lock:
``multiprocessing`` reads a forkserver child's exit status from a pipe exactly once, and
``Process.start()`` polls every other child, so two threads reaping at once could lose the
status. Waiting happens on the process sentinel without the lock.
"""

from __future__ import annotations

import asyncio
import enum
import os
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

from ..restart import RestartPolicy
from . import child
from .causes import OomCounter

_reap_lock = threading.Lock()  # shared by every pool in the process (see module docstring)


class SlotState(enum.Enum):
    DOWN = "down"  # no process (waiting for a restart delay or the breaker)
    STARTING = "starting"  # spawned, running its initializers
    IDLE = "idle"  # ready for a job
    BUSY = "busy"  # running a job


@dataclass(eq=False)
class Slot:
    index: int
    policy: RestartPolicy
    state: SlotState = SlotState.DOWN
    generation: int = 0  # processes started in this slot
    process: BaseProcess | None = None
    conn: Connection | None = None
    pid: int | None = None
    memory_limit_mib: int = -1  # RLIMIT_AS soft of the child, as it last reported
    oom_counter: OomCounter | None = None
    oom_before: int | None = None  # the counter when the current job started
    tasks_done: int = 0
    # set by whoever decides the current process must go; the slot's supervisor acts on it
    retired: asyncio.Event = field(default_factory=asyncio.Event)
    retire_reason: str = ""
    retire_failure: bool = False  # counts against the slot's restart policy
    retire_hard: bool = False  # TERM at once (a job is running) instead of closing the pipe
    reaped: asyncio.Event = field(default_factory=asyncio.Event)
    exitcode: int | None = None
    exchange: asyncio.Future[Any] | None = None  # the thread talking to the busy process

    def retire(self, reason: str, *, failure: bool, hard: bool) -> None:
        if self.retired.is_set():
            return
        self.retire_reason = reason
        self.retire_failure = failure
        self.retire_hard = hard
        self.retired.set()

    def fresh_process(self) -> None:
        self.retired = asyncio.Event()
        self.reaped = asyncio.Event()
        self.retire_reason = ""
        self.retire_failure = False
        self.retire_hard = False
        self.exitcode = None
        self.tasks_done = 0
        self.exchange = None


def spawn(
    ctx: ForkServerContext | SpawnContext,
    registry_ref: str,
    sys_path: list[str],
    env: dict[str, str],
) -> tuple[BaseProcess, Connection]:
    parent_end, child_end = ctx.Pipe(duplex=True)
    process = ctx.Process(
        target=child.main,
        args=(child_end, registry_ref, sys_path, env, os.getpid()),
        name="taskq-procpool",
        daemon=True,
    )
    try:
        with _reap_lock:
            process.start()
    finally:
        child_end.close()
    return process, parent_end


def wait_ready(conn: Connection, process: BaseProcess, timeout: float) -> tuple[Any, ...]:
    """The child's first message: ("ready", ...), ("init_failed", tb), ("died",), ("timeout",)."""
    ready = wait([conn, process.sentinel], timeout)
    if not ready:
        return ("timeout",)
    if conn in ready or conn.poll(0):
        try:
            return tuple(conn.recv())
        except (EOFError, OSError):
            return ("died",)
    return ("died",)


def exchange(
    conn: Connection,
    process: BaseProcess,
    message: tuple[Any, ...],
    timeout: float | None,
    started: list[int],
) -> tuple[Any, ...]:
    """Send one job and wait for its verdict; ``started`` gets the child's memory limit.

    Returns the child's reply, or ("died",) / ("timeout",). Never raises.
    """
    deadline = None if timeout is None else _now() + timeout
    try:
        conn.send(message)
    except (OSError, ValueError):
        return ("died",)
    while True:
        remaining = None if deadline is None else max(0.0, deadline - _now())
        try:
            ready = wait([conn, process.sentinel], remaining)
        except (OSError, ValueError):
            return ("died",)
        if not ready:
            return ("timeout",)
        if conn in ready or conn.poll(0):
            try:
                reply = tuple(conn.recv())
            except (EOFError, OSError):
                return ("died",)
            if reply[0] == "started":
                started.append(int(reply[2]))
                continue
            return reply
        return ("died",)


def stop(process: BaseProcess, conn: Connection | None, *, hard: bool, grace: float) -> int | None:
    """End the process and reap it; returns its exit code. Gentle: close the pipe first."""
    if conn is not None and not hard:
        conn.close()  # an idle child reads EOF and exits 0
    elif hard:
        _signal(process, "terminate")  # a no-op once multiprocessing knows it exited
    wait([process.sentinel], grace)
    if not _reap(process, 0):
        if not hard:
            _signal(process, "terminate")
            wait([process.sentinel], grace)
        if not _reap(process, 0):
            _signal(process, "kill")
            wait([process.sentinel], None)
    _reap(process, None)
    if conn is not None and not conn.closed:
        conn.close()
    with _reap_lock:
        return process.exitcode


def _reap(process: BaseProcess, timeout: float | None) -> bool:
    with _reap_lock:
        process.join(timeout)
        return process.exitcode is not None


def _signal(process: BaseProcess, how: str) -> None:
    try:
        getattr(process, how)()
    except (OSError, ValueError, AttributeError):
        pass


def rss_mib(pid: int) -> float | None:
    """Resident set size of ``pid`` in MiB, from /proc/<pid>/statm (None if unreadable)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            resident_pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)


_now = time.monotonic
