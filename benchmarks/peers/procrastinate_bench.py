"""procrastinate 3.10 under the shared scenarios. Runs in benchmarks/.venvs/procrastinate.

``App(connector=PsycopgConnector(...))``, schema applied with ``SchemaManager``, one
worker process running ``app.run_worker_async()`` with its defaults (concurrency 1,
LISTEN/NOTIFY on, 5 s polling fallback); "at 32" sets ``concurrency=32``. Batch
enqueue is ``Task.batch_defer_async`` (one INSERT per batch). ``sync_enqueue`` (the
enqueue a web request pays) is the synchronous ``Task.defer`` of an app opened with
``app.open()``, procrastinate's documented setup for sync code: the connector then makes
its ``SyncPsycopgConnector`` (a psycopg ``ConnectionPool`` that checks each connection
it hands out); the async pool is never opened.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path

import _common
from procrastinate import App, PsycopgConnector

events = _common.Events()
PARSER = _common.base_parser(["enqueue", "drain", "latency", "recovery_bare", "sync_enqueue"])
ARGS = PARSER.parse_args()
app = App(connector=PsycopgConnector(conninfo=ARGS.dsn))


@app.task(name="noop", queue="default")
async def noop(key: str) -> None:
    if events.hold:
        events.write("start", key)
        await asyncio.sleep(events.hold)
    elif events.expect:
        events.hit()
    else:
        events.write("start", key)


class ProcrastinatePeer(_common.Peer):
    def __init__(self, args: argparse.Namespace) -> None:
        self.script = __file__
        self.workdir = Path(args.path)
        self.runner = asyncio.Runner()
        self.app = app
        self.task = noop
        self.runner.run(self._open())
        installed = self.runner.run(
            self.app.connector.execute_query_one_async(
                "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present"
            )
        )
        if not installed["present"]:
            self.runner.run(self.app.schema_manager.apply_schema_async())

    async def _open(self) -> None:
        await self.app.open_async()

    def enqueue_keys(self, keys: Sequence[str], batch: int) -> None:
        for start in range(0, len(keys), batch):
            self.enqueue_batch(keys[start : start + batch])

    def enqueue_batch(self, keys: Sequence[str]) -> None:
        self.runner.run(self.task.batch_defer_async(*({"key": k} for k in keys)))

    def enqueue_one(self, key: str) -> None:
        self.runner.run(self.task.defer_async(key=key))

    def _count(self, where: str) -> int:
        row = self.runner.run(
            self.app.connector.execute_query_one_async(
                "SELECT count(*) AS n FROM procrastinate_jobs WHERE " + where
            )
        )
        return row["n"]

    def pending(self) -> int:
        return self._count("status IN ('todo', 'doing')")

    def describe_stuck(self) -> str:
        doing = self._count("status = 'doing'")
        return (
            f"not re-run: {doing} jobs stay 'doing' (worker row pruned after "
            "stalled_worker_timeout; re-queueing stalled jobs is left to a "
            "user-written periodic task calling retry_stalled_jobs)"
        )

    def close(self) -> None:
        self.runner.run(self.app.close_async())
        self.runner.close()


class SyncDeferPeer:
    """procrastinate from synchronous code: ``app.open()``, ``task.defer()``."""

    def __init__(self, args: argparse.Namespace) -> None:
        app.open()
        sync = app.connector.get_sync_connector()
        installed = sync.execute_query_one(
            "SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS present"
        )
        if not installed["present"]:
            app.schema_manager.apply_schema()

    def defer_one(self, key: str) -> None:
        noop.defer(key=key)

    def close(self) -> None:
        app.close()


async def _worker(args: argparse.Namespace) -> None:
    async with app.open_async():
        kwargs = {}
        if args.concurrency:
            kwargs["concurrency"] = args.concurrency
        await app.run_worker_async(**kwargs)


def main() -> None:
    args = ARGS
    if args.scenario == "worker":
        asyncio.run(_worker(args))
        return
    if args.scenario == "sync_enqueue":
        _common.run_main(
            args,
            SyncDeferPeer,  # type: ignore[arg-type]  # run_main only builds and closes it
            {"sync_enqueue": lambda peer, a: _common.sync_single(peer.defer_one, a)},
        )
        return
    _common.run_main(
        args,
        ProcrastinatePeer,
        {
            **_common.SHARED,
        },
    )


if __name__ == "__main__":
    main()
