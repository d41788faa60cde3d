"""How a pool process gives way on the CPU: a lower weight and a longer slice.

A pool process runs CPU-bound jobs; its owner (the worker's event loop: heartbeats,
claims, acknowledgements, I/O jobs) and the database beside it wait on it when the cores
are saturated. ``give_way(nice)`` is the first thing a pool process does (docs/cpu-bound.md,
"Priority"):

1. ``os.nice(nice)``: the process weighs less than its worker. Linux weighs niceness
   within a scheduling group (an autogroup: the worker's session, or its cgroup), so it
   yields to its own worker, not to the rest of the machine.
2. A long slice (``SLICE_NS``, ``sched_setattr``'s ``sched_runtime`` for a fair task,
   Linux >= 6.12; ignored by older kernels): the EEVDF scheduler gives a task with a
   shorter slice an earlier deadline, and a waking task with a shorter slice preempts
   the running one at once. Every other task keeps the default slice (~1-3 ms), so a
   process that wakes to do a little work (the worker on a notification, a Postgres
   backend on a query, an API server) no longer waits out a pool process's slice first:
   the cores still run the pool whenever nothing else is runnable. This reaches across
   scheduling groups, which the niceness does not.

Both are best effort: a platform without them runs the pool at the worker's priority.
Only the standard library is imported here.
"""

from __future__ import annotations

import os
import struct
import sys

#: the slice a pool process asks for (the kernel allows 0.1 - 100 ms)
SLICE_NS = 20_000_000

#: ``sched_setattr``'s number where Python's libc may lack a wrapper (glibc < 2.41)
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274, "riscv64": 274}
# struct sched_attr, its first version (48 bytes): size, policy, flags, nice, priority,
# runtime, deadline, period
_SCHED_ATTR = struct.Struct("=IIQiIQQQ")


def give_way(nice: int) -> str | None:
    """Lower this process by ``nice`` steps and, when ``nice`` > 0, ask for a long
    slice; None when done, else why the slice was not set (``nice`` 0: nothing to do)."""
    if nice <= 0:
        return "not asked"
    os.nice(nice)
    return request_slice(SLICE_NS)


def request_slice(slice_ns: int) -> str | None:
    """Ask the kernel to run this thread in slices of ``slice_ns`` (its policy and
    niceness unchanged). None when asked, else why not."""
    machine = os.uname().machine
    number = _SCHED_SETATTR.get(machine)
    if not sys.platform.startswith("linux") or number is None:
        return f"not available on {sys.platform} {machine}"
    policy = os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK
    if policy not in (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE):
        return f"scheduling policy {policy} is not a fair one"
    import ctypes  # only a pool process asks, once

    attr = _SCHED_ATTR.pack(
        _SCHED_ATTR.size, policy, 0, os.getpriority(os.PRIO_PROCESS, 0), 0, slice_ns, 0, 0
    )
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the interpreter's own libc
        if libc.syscall(number, 0, ctypes.create_string_buffer(attr), 0) != 0:
            return os.strerror(ctypes.get_errno())
    except (OSError, AttributeError) as exc:
        return str(exc)
    return None
