"""PgQueuer 1.6 under the shared scenarios. Runs in benchmarks/.venvs/pgqueuer.

PgQueuer is given its best set-up as documented: asyncpg driver and uvloop (what its
``pgq run`` command uses), ``QueueManager.run()`` defaults (batch_size 10, no global
concurrency limit, heartbeat_timeout 30 s). "At 32" sets ``max_concurrent_tasks=32``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path

import _common
import asyncpg
import uvloop
from pgqueuer import AsyncpgDriver, QueueManager
from pgqueuer.queries import Queries

ENTRYPOINT = "noop"


async def _connect(dsn: str) -> asyncpg.Connection:
    return await asyncpg.connect(dsn)


class PgQueuerPeer(_common.Peer):
    def __init__(self, args: argparse.Namespace) -> None:
        self.script = __file__
        self.workdir = Path(args.path)
        self.dsn = args.dsn
        self.runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
        self.conn = self.runner.run(_connect(self.dsn))
        self.queries = Queries(AsyncpgDriver(self.conn))
        if not self.runner.run(self.queries.schema_is_installed()):
            self.runner.run(self.queries.install())

    def enqueue_keys(self, keys: Sequence[str], batch: int) -> None:
        for start in range(0, len(keys), batch):
            self.enqueue_batch(keys[start : start + batch])

    def enqueue_batch(self, keys: Sequence[str]) -> None:
        self.runner.run(
            self.queries.enqueue(
                [ENTRYPOINT] * len(keys), [k.encode() for k in keys], [0] * len(keys)
            )
        )

    def enqueue_one(self, key: str) -> None:
        self.runner.run(self.queries.enqueue(ENTRYPOINT, key.encode()))

    def pending(self) -> int:
        return self.runner.run(self.conn.fetchval("SELECT count(*) FROM pgqueuer"))

    def describe_stuck(self) -> str:
        rows = self.runner.run(
            self.conn.fetch("SELECT status::text, count(*) FROM pgqueuer GROUP BY 1")
        )
        return "not re-run; rows: " + ", ".join(f"{r[0]}={r[1]}" for r in rows)

    def close(self) -> None:
        self.runner.run(self.conn.close())
        self.runner.close()


async def _worker(args: argparse.Namespace) -> None:
    events = _common.Events()
    conn = await _connect(args.dsn)
    qm = QueueManager(Queries(AsyncpgDriver(conn)))

    # PgQueuer requires max_concurrent_tasks >= 2 * batch_size: a cap of 1 is set on the
    # entrypoint instead (concurrency_limit, enforced in its dequeue SQL).
    serial = args.concurrency == 1

    @qm.entrypoint(ENTRYPOINT, concurrency_limit=1 if serial else 0)
    async def noop(job) -> None:
        if events.hold:
            events.write("start", job.payload.decode())
            await asyncio.sleep(events.hold)
        elif events.expect:
            events.hit()
        else:
            events.write("start", job.payload.decode())

    kwargs = {}
    if args.concurrency > 1:
        kwargs["max_concurrent_tasks"] = args.concurrency
        kwargs["batch_size"] = max(1, min(10, args.concurrency // 2))
    await qm.run(**kwargs)


def main() -> None:
    parser = _common.base_parser(["enqueue", "drain", "latency", "recovery_bare"])
    args = parser.parse_args()
    if args.scenario == "worker":
        uvloop.run(_worker(args))
        return
    _common.run_main(
        args,
        PgQueuerPeer,
        {
            **_common.SHARED,
        },
    )


if __name__ == "__main__":
    main()
