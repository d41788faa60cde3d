"""Claim latency with and without fleet-wide limits, at several queue depths.

    python benchmarks/claim_limits.py postgresql://root@127.0.0.1:5432/test
    python benchmarks/claim_limits.py sqlite:////tmp/taskq-bench.sqlite3 --rows 10000

For each depth (default 10,000 and 1,000,000 queued jobs, one queue) it times ``claims``
claims of ``batch`` jobs, each followed by completing them (so the depth stays put and
nothing piles up running), first with no limits, then with a concurrency limit and a
rate limit on the queue (both set high enough never to hold a claim back: this measures
the cost of the limited claim path itself, not waiting). Prints median and p95 latency
per claim and the ratio limited / plain; the target is a ratio within 1.5.
Uses a throwaway schema / file. Not part of the test suite: speed is measured, never
asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import time

from taskq.ids import uuid7_many
from taskq.jobs import JobSpec, Limits, Outcome, OutcomeKind, Rate
from taskq.store import Store, create_store

CHUNK = 50_000


async def fill(store: Store, rows: int) -> None:
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        await store.enqueue(
            [
                JobSpec(id=i, actor="bench.noop", queue="bench", args_json="[]", kwargs_json="{}")
                for i in uuid7_many(n)
            ]
        )


async def time_claims(store: Store, claims: int, batch: int) -> list[float]:
    worker = uuid7_many(1)[0]
    latencies = []
    for _ in range(claims):
        t = time.perf_counter()
        got = await store.claim(worker, ["bench"], batch, 30.0)
        latencies.append(time.perf_counter() - t)
        await store.complete(worker, [Outcome(c.id, c.attempt, OutcomeKind.SUCCEEDED) for c in got])
    return latencies


def describe(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.95)] * 1000


async def run(dsn: str, rows: int, claims: int, batch: int) -> None:
    schema = f"taskq_bench_{secrets.token_hex(4)}"
    store = create_store(dsn, schema)
    await store.open()
    try:
        await store.migrate()
        t = time.perf_counter()
        await fill(store, rows + 2 * claims * batch)
        print(f"{store.kind} {rows:>9,} queued: filled in {time.perf_counter() - t:.1f} s")
        await time_claims(store, 20, batch)  # warm up: prepared statements, caches
        plain = describe(await time_claims(store, claims, batch))
        await store.set_limits(
            "queue", "bench", Limits(concurrency=100_000, rate=Rate(100_000_000, 3600.0))
        )
        await time_claims(store, 20, batch)
        limited = describe(await time_claims(store, claims, batch))
        print(
            f"{store.kind} {rows:>9,} queued, claim {batch}: plain median {plain[0]:.2f} ms "
            f"p95 {plain[1]:.2f} ms | limited median {limited[0]:.2f} ms "
            f"p95 {limited[1]:.2f} ms | ratio {limited[0] / plain[0]:.2f}"
        )
    finally:
        await store.close()
        if store.kind == "postgres":
            import psycopg

            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("dsn")
    parser.add_argument("--rows", default="10000,1000000", help="queue depths, comma-separated")
    parser.add_argument("--claims", type=int, default=300)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    for rows in (int(r) for r in args.rows.split(",")):
        if args.dsn.startswith("sqlite:///") and os.path.exists(args.dsn[len("sqlite:///") :]):
            os.remove(args.dsn[len("sqlite:///") :])
        asyncio.run(run(args.dsn, rows, args.claims, args.batch))


if __name__ == "__main__":
    main()
