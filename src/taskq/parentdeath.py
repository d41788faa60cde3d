"""A supervised child never outlives its supervisor, even one that dies in its first second.

A workgroup starts each child with ``TASKQ_SUPERVISOR_PID`` set to its own pid. The first
thing ``import taskq`` does (before asyncio, psycopg or the user's actors are imported) is
``guard()``:

1. take the variable out of the environment, so nothing the child starts (a CPU pool
   process, a subprocess of an actor) mistakes the worker for a supervisor;
2. ask the kernel for SIGTERM when the parent dies (``prctl(PR_SET_PDEATHSIG)``, Linux);
3. compare ``os.getppid()`` with the expected pid: a supervisor that died between the
   fork and step 2 left the child an orphan already (re-parented to init or a
   subreaper), which the kernel will never signal, so it exits at once, before it can
   register or claim a job.

``expected_parent()`` is the pid the worker's ``parent-watch`` part keeps polling for the
platforms without prctl. Only the standard library (and ``taskq.exit_codes``, constants)
is imported here, on purpose.
"""

from __future__ import annotations

import os
import signal
import sys
from datetime import UTC, datetime

from .exit_codes import ORPHANED

SUPERVISOR_PID_ENV = "TASKQ_SUPERVISOR_PID"
PR_SET_PDEATHSIG = 1

_expected: int | None = None


def set_parent_death_signal(sig: int = signal.SIGTERM) -> str | None:
    """Ask the kernel for ``sig`` when our parent dies. None if set, else why not."""
    if not sys.platform.startswith("linux"):
        return f"not available on {sys.platform}"
    import ctypes  # here: only a supervised child asks, and ``import taskq`` stays light

    try:
        # the running interpreter already links libc: no ctypes.util.find_library, which
        # runs ldconfig/gcc in a subprocess (a quarter second at every child start)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            return os.strerror(errno)
    except (OSError, AttributeError) as exc:
        return str(exc)
    return None


def expected_parent() -> int | None:
    """The supervisor pid this process was started for (None when not supervised)."""
    return _expected


def guard() -> None:
    """Run once at ``import taskq``; a no-op unless ``TASKQ_SUPERVISOR_PID`` is set."""
    global _expected
    raw = os.environ.pop(SUPERVISOR_PID_ENV, None)
    if raw is None:
        return
    try:
        expected = int(raw)
    except ValueError:
        return
    _expected = expected
    set_parent_death_signal()
    if os.getppid() != expected:
        _say_orphaned(expected)
        os._exit(ORPHANED)


def _say_orphaned(expected: int) -> None:
    # events.PARENT_GONE, written by hand: logging is not set up yet, and this module is
    # imported first thing by every taskq process (tests/unit/test_events.py checks it)
    now = datetime.now(UTC).isoformat()
    line = (
        f'{{"event": "parent-gone", "level": "warning", "timestamp": "{now}", '
        f'"parent_pid": {expected}, '
        f'"now_parent": {os.getppid()}, "pid": {os.getpid()}, '
        '"note": "the supervisor died before this child started"}\n'
    )
    try:
        os.write(2, line.encode())
    except OSError:
        pass  # the supervisor held the other end of the pipe
