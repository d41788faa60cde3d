"""The actor of ``benchmarks/startup.py``: its body records, once, when it ran and the CPU
time the worker process had used by then (``resource.getrusage``: user + system, every
thread), into the file named by ``STARTUP_RECORD``. Nothing else is imported: what the
worker imports is what is measured."""

from __future__ import annotations

import json
import os
import resource
import sys
import time

import taskq

registry = taskq.Registry()


def record() -> None:
    wall = time.time()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = json.dumps(
        {
            "t": wall,
            "cpu": usage.ru_utime + usage.ru_stime,
            "maxrss_kib": usage.ru_maxrss,
            "modules": sorted(sys.modules),
        }
    )
    fd = os.open(os.environ["STARTUP_RECORD"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)
    if os.environ.get("STARTUP_EXIT"):
        os._exit(0)  # under valgrind: its count then ends at the first body


@registry.actor(queue="startup", idempotent=True)
async def first() -> None:
    record()
