"""PgQueuer's side of ``benchmarks/startup.py``; runs in benchmarks/.venvs/pgqueuer.

``python startup_pgqueuer.py enqueue DSN``: install the schema if needed, queue one job.
``python startup_pgqueuer.py worker DSN``: the worker of ``pgqueuer_bench.py`` (asyncpg,
uvloop, ``QueueManager.run()`` defaults); its body records what ``startup_taskq.py``'s
does. Imports only what that worker imports (not ``_common``: neither side does here).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import time

import asyncpg
import uvloop
from pgqueuer import AsyncpgDriver, QueueManager
from pgqueuer.queries import Queries

ENTRYPOINT = "first"


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


async def enqueue(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        queries = Queries(AsyncpgDriver(conn))
        if not await queries.schema_is_installed():
            await queries.install()
        await queries.enqueue(ENTRYPOINT, b"")
    finally:
        await conn.close()


async def worker(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))

    @qm.entrypoint(ENTRYPOINT)
    async def first(job: object) -> None:
        record()

    await qm.run()


def main() -> None:
    mode, dsn = sys.argv[1], sys.argv[2]
    if mode == "enqueue":
        asyncio.run(enqueue(dsn))
    else:
        uvloop.run(worker(dsn))


if __name__ == "__main__":
    main()
