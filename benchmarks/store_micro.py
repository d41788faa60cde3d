"""Store micro-benchmark: raw Store calls, no worker. Prints rates for one engine.

    python benchmarks/store_micro.py postgresql://root@127.0.0.1:5432/test
    python benchmarks/store_micro.py sqlite:////tmp/taskq-bench.sqlite3

Measures enqueue of one 20,000-job batch (plain, and with a unique key per job), single
enqueues (one job per call), and draining with claim + complete in batches. Uses a
throwaway schema / file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time

from taskq.ids import uuid7
from taskq.jobs import JobSpec, Outcome, OutcomeKind
from taskq.store import create_store


def spec(n: int, unique_key: str | None = None) -> JobSpec:
    return JobSpec(
        id=uuid7(),
        actor="bench.noop",
        queue="bench",
        args_json=f"[{n}]",
        kwargs_json="{}",
        unique_key=unique_key,
        unique_states=",queued,running," if unique_key else None,
    )


async def run(dsn: str, batch: int, singles: int, claim_size: int) -> None:
    schema = f"taskq_bench_{secrets.token_hex(4)}"
    store = create_store(dsn, schema)
    await store.open()
    try:
        await store.migrate()
        specs = [spec(i) for i in range(batch)]
        t = time.perf_counter()
        await store.enqueue(specs)
        elapsed = time.perf_counter() - t
        print(
            f"{store.kind}: enqueue_many {batch}: {batch / elapsed:,.0f} jobs/s "
            f"({elapsed * 1000:.0f} ms)"
        )
        keyed = [spec(i, f"bench-{i}") for i in range(batch)]
        t = time.perf_counter()
        await store.enqueue(keyed)
        unique_elapsed = time.perf_counter() - t
        print(
            f"{store.kind}: enqueue_many {batch} with unique keys: "
            f"{batch / unique_elapsed:,.0f} jobs/s ({unique_elapsed * 1000:.0f} ms, "
            f"{unique_elapsed / elapsed:.1f}x the plain batch)"
        )

        t = time.perf_counter()
        for i in range(singles):
            await store.enqueue([spec(i)])
        elapsed = time.perf_counter() - t
        print(f"{store.kind}: single enqueue x{singles}: {singles / elapsed:,.0f} jobs/s")

        worker = uuid7()
        done = 0
        t = time.perf_counter()
        while claimed := await store.claim(worker, ["bench"], claim_size, 30.0):
            done += await store.complete(
                worker,
                [
                    Outcome(c.id, c.attempt, OutcomeKind.SUCCEEDED, result_json="null")
                    for c in claimed
                ],
            )
        elapsed = time.perf_counter() - t
        print(
            f"{store.kind}: claim+complete by {claim_size}: {done / elapsed:,.0f} jobs/s "
            f"({done} jobs)"
        )
    finally:
        await store.close()
        if store.kind == "postgres":
            import psycopg

            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dsn")
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--singles", type=int, default=2_000)
    parser.add_argument("--claim-size", type=int, default=100)
    args = parser.parse_args()
    if args.dsn.startswith("sqlite:///") and os.path.exists(args.dsn[len("sqlite:///") :]):
        os.remove(args.dsn[len("sqlite:///") :])
    asyncio.run(run(args.dsn, args.batch, args.singles, args.claim_size))


if __name__ == "__main__":
    main()
