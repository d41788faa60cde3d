"""One pool process and its pipe: spawn, wait for it to be ready, send a job, stop, reap.

Every function here may block (the pool calls them from its own threads; ``post`` of a
small job from the event loop) and none raises for anything the process does: a death or
a broken pipe is a ``Died`` verdict. The replies to a job are read by the event loop
(``channel.py``). Reaping
goes through one lock: ``multiprocessing`` reads a forkserver child's exit status from a
pipe exactly once, and ``Process.start()`` polls every other child, so two threads
reaping at once could lose the status. Waiting happens on the process sentinel without
the lock.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess

from . import child
from .protocol import (
    Died,
    Garbled,
    InitFailed,
    Ready,
    Run,
    StartReply,
    TimedOut,
    from_wire,
    send,
)

_reap_lock = threading.Lock()  # shared by every pool in the process (see module docstring)


def spawn(
    ctx: ForkServerContext | SpawnContext,
    registry_ref: str,
    sys_path: list[str],
    env: Mapping[str, str],
    nice: int,
) -> tuple[BaseProcess, Connection]:
    parent_end, child_end = ctx.Pipe(duplex=True)
    process = ctx.Process(
        target=child.main,
        args=(child_end, registry_ref, sys_path, dict(env), os.getpid(), nice),
        name="taskq-procpool",
        daemon=True,
    )
    try:
        with _reap_lock:
            process.start()
    finally:
        child_end.close()
    return process, parent_end


def _receive(conn: Connection) -> object:
    try:
        return from_wire(conn.recv())
    except (EOFError, OSError):
        return Died()
    except Exception as exc:  # not a message, or bytes that do not unpickle
        return Garbled(f"{type(exc).__name__}: {exc}")


def wait_ready(conn: Connection, process: BaseProcess, timeout: float) -> StartReply:
    """The child's first message: ``Ready`` or ``InitFailed``; else ``Died``/``TimedOut``."""
    ready = wait([conn, process.sentinel], timeout)
    if not ready:
        return TimedOut()
    if conn not in ready and not conn.poll(0):
        return Died()
    match _receive(conn):
        case Ready() | InitFailed() | Died() | Garbled() as reply:
            return reply
        case other:
            return Garbled(f"expected Ready or InitFailed, got {other!r}")


def post(conn: Connection, message: Run) -> bool:
    """Send a job. From the event loop's thread only a small one (``PIPELINE_MAX_CHARS``:
    the pipe's buffer holds it without blocking), perhaps to wait in the pipe of a busy
    process behind the job it runs; a large one from a thread. False if the pipe is gone."""
    try:
        send(conn, message)
    except (OSError, ValueError):
        return False
    return True


def terminate(process: BaseProcess) -> None:
    """SIGTERM, ignoring a process that is already gone."""
    _signal(process, "terminate")


def stop(process: BaseProcess, conn: Connection | None, *, hard: bool, grace: float) -> int | None:
    """End the process and reap it; returns its exit code.

    Gentle (``hard=False``): close the pipe, so an idle child reads EOF and exits; hard:
    SIGTERM at once. Either way, still alive after ``grace``: SIGKILL.
    """
    if conn is not None and not hard:
        conn.close()
    elif hard:
        terminate(process)  # a no-op once multiprocessing knows it exited
    wait([process.sentinel], grace)
    if not _reap(process, 0):
        if not hard:
            terminate(process)
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
