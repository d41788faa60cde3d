"""What the application features cost: unique keys on enqueue, and the plain paths.

    python -m benchmarks.app_features postgresql://root@127.0.0.1:5432/test
    python -m benchmarks.app_features sqlite:////tmp/taskq-features.sqlite3
    PYTHONPATH=/tmp/taskq-before/src python -m benchmarks.app_features DSN --plain-only

Through ``AsyncClient`` (the producer's real path) on a throwaway schema / file:
``enqueue_many`` of N jobs plain, with a distinct unique key each, and again with the
same keys (every one a duplicate); single ``enqueue`` calls plain and with a unique key;
and a store-level drain (``claim`` + ``complete`` by 100) of N plain jobs. ``--plain-only``
runs only what an older taskq (before unique keys) also has, so the same numbers can be
taken from a checkout of it. Each case runs ``--runs`` times, interleaved; the median is
printed. Not asserted anywhere: docs/benchmarks.md records a run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import os
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from taskq import AsyncClient, Registry
from taskq.ids import uuid7
from taskq.jobs import Outcome, OutcomeKind

registry = Registry()


@registry.actor(name="bench.noop")
async def noop(n: int) -> None:
    return None


ACTOR: Any = noop  # the Actor object (enqueue by name needs a worker to have run)


def _remove_sqlite(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path + suffix)


async def fresh(dsn: str) -> tuple[AsyncClient, Callable[[], Awaitable[None]]]:
    if dsn.startswith("sqlite:"):
        _remove_sqlite(dsn.removeprefix("sqlite:///"))
        client = AsyncClient(dsn)
    else:
        client = AsyncClient(dsn, schema=f"taskq_feat_{secrets.token_hex(4)}")
    await client.open()
    await client.store.migrate()

    async def drop() -> None:
        schema = getattr(client.store, "schema", None)
        await client.close()
        if schema is not None:  # an older taskq has no drop_schema: drop it here
            import psycopg

            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    return client, drop


def _has_unique(client: AsyncClient) -> bool:
    return "unique_keys" in inspect.signature(client.enqueue_many).parameters


async def case_enqueue_many(dsn: str, n: int, mode: str) -> float:
    client, drop = await fresh(dsn)
    try:
        items = [((i,), {}) for i in range(n)]
        extra: dict[str, Any] = {}
        if mode != "plain":
            extra["unique_keys"] = [f"k{i}" for i in range(n)]
        if mode == "duplicates":
            await client.enqueue_many(ACTOR, items, **extra)
        t = time.perf_counter()
        await client.enqueue_many(ACTOR, items, **extra)
        return n / (time.perf_counter() - t)
    finally:
        await drop()


async def case_single(dsn: str, n: int, mode: str) -> float:
    client, drop = await fresh(dsn)
    try:
        t = time.perf_counter()
        if mode == "plain":
            for i in range(n):
                await client.enqueue(ACTOR, i)
        else:
            for i in range(n):
                await client.enqueue_with(ACTOR, [i], unique_key=f"k{i}")
        return n / (time.perf_counter() - t)
    finally:
        await drop()


async def case_drain(dsn: str, n: int, _mode: str) -> float:
    client, drop = await fresh(dsn)
    try:
        await client.enqueue_many(ACTOR, [((i,), {}) for i in range(n)])
        store, worker, done = client.store, uuid7(), 0
        t = time.perf_counter()
        while claimed := await store.claim(worker, ["default"], 100, 30.0):
            outcomes = [Outcome(c.id, c.attempt, OutcomeKind.SUCCEEDED) for c in claimed]
            done += await store.complete(worker, outcomes)
        return done / (time.perf_counter() - t)
    finally:
        await drop()


async def main_async(dsn: str, n: int, singles: int, runs: int, plain_only: bool) -> None:
    probe, drop = await fresh(dsn)
    unique = _has_unique(probe) and not plain_only
    await drop()
    cases: list[tuple[str, Callable[..., Awaitable[float]], int, str]] = [
        (f"enqueue_many {n} plain", case_enqueue_many, n, "plain"),
        (f"enqueue {singles} singles plain", case_single, singles, "plain"),
        (f"drain {n} (claim+complete by 100)", case_drain, n, "plain"),
    ]
    if unique:
        cases[1:1] = [
            (f"enqueue_many {n} unique keys", case_enqueue_many, n, "unique"),
            (f"enqueue_many {n} all duplicates", case_enqueue_many, n, "duplicates"),
        ]
        cases.insert(-1, (f"enqueue {singles} singles unique", case_single, singles, "unique"))
    rates: dict[str, list[float]] = {name: [] for name, *_ in cases}
    for r in range(runs):
        order = cases[r % len(cases) :] + cases[: r % len(cases)]  # rotate the order
        for name, fn, size, mode in order:
            rates[name].append(await fn(dsn, size, mode))
    kind = "sqlite" if dsn.startswith("sqlite:") else "postgres"
    for name, *_ in cases:
        values = rates[name]
        print(
            f"{kind}: {name}: {statistics.median(values):,.0f} jobs/s "
            f"(runs: {', '.join(f'{v:,.0f}' for v in values)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dsn")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--singles", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--plain-only", action="store_true")
    ns = parser.parse_args()
    asyncio.run(main_async(ns.dsn, ns.n, ns.singles, ns.runs, ns.plain_only))


if __name__ == "__main__":
    main()
