"""``python -m benchmarks.sync_floor [--blocks 10] [--size 200]``: what ``taskq.Client``
adds to the enqueue a web request pays. Interleaves blocks of single enqueues through
``taskq.Client.enqueue`` (Postgres, the calling thread) with blocks of the very
statement it sends (``enqueue_one``) on a bare synchronous psycopg connection, in the
same schema (same indexes, same trigger), and prints each one's median time a job and
the median of the paired differences. Whatever the server's commit costs on this
machine, both pay it; the difference is the client. Needs TASKQ_BENCH_PG_DSN; a
throwaway schema, dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import time
import uuid
from collections.abc import Callable

import psycopg

import taskq
from taskq.store import create_store

registry = taskq.Registry()


@registry.actor(name="bench.noop", queue="bench", idempotent=True)
async def noop(key: str) -> None:
    del key


async def _schema(dsn: str, schema: str, *, drop: bool) -> None:
    store = create_store(dsn, schema)
    await store.open()
    try:
        if drop:
            await store.drop_schema()  # type: ignore[attr-defined]  # Postgres only
        else:
            await store.migrate()
    finally:
        await store.close()


def _per_job(call: Callable[[int], object], size: int) -> float:
    t0 = time.perf_counter()
    for i in range(size):
        call(i)
    return (time.perf_counter() - t0) / size * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.sync_floor")
    p.add_argument("--blocks", type=int, default=10, help="blocks of each, interleaved")
    p.add_argument("--size", type=int, default=200, help="enqueues a block")
    args = p.parse_args(argv)
    dsn = os.environ.get("TASKQ_BENCH_PG_DSN")
    if not dsn:
        print("benchmarks: TASKQ_BENCH_PG_DSN is not set", file=sys.stderr)
        return 2
    schema = f"bench_floor_{secrets.token_hex(4)}"
    asyncio.run(_schema(dsn, schema, drop=False))
    statement = create_store(dsn, schema).enqueue_sql["enqueue_one"]  # type: ignore[attr-defined]
    times: dict[str, list[float]] = {"taskq.Client.enqueue": [], "bare psycopg INSERT": []}
    try:
        with (
            taskq.Client(dsn, schema=schema) as client,
            psycopg.connect(dsn, autocommit=True, application_name="taskq") as bare,
        ):
            cursor = bare.cursor()

            def insert(i: int) -> None:
                cursor.execute(
                    statement,
                    {
                        "id": uuid.uuid4(),
                        "actor": noop.name,
                        "queue": noop.queue,
                        "args": f'["b{i}"]',
                        "kwargs": "{}",
                        "priority": 0,
                        "run_at": None,
                        "max_attempts": noop.max_attempts,
                        "max_crashes": noop.max_crashes,
                        "idempotent": noop.idempotent,
                    },
                )

            calls = {
                "taskq.Client.enqueue": lambda i: client.enqueue(noop, f"c{i}"),
                "bare psycopg INSERT": insert,
            }
            for call in calls.values():  # warm-up: connections, prepared statements
                _per_job(call, 50)
            for block in range(args.blocks):
                order = list(calls) if block % 2 == 0 else list(calls)[::-1]
                for name in order:
                    times[name].append(_per_job(calls[name], args.size))
    finally:
        asyncio.run(_schema(dsn, schema, drop=True))
    for name, values in times.items():
        print(f"{name:22} median {statistics.median(values):8,.0f} us a job  (blocks: ", end="")
        print(", ".join(f"{v:,.0f}" for v in values) + ")")
    client, bare_ = times["taskq.Client.enqueue"], times["bare psycopg INSERT"]
    paired = statistics.median(a - b for a, b in zip(client, bare_, strict=True))
    print(f"taskq.Client - bare INSERT, median of the paired blocks: {paired:+,.0f} us a job")
    return 0


if __name__ == "__main__":
    sys.exit(main())
