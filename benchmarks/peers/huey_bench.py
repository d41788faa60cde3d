"""Huey 3.5 with its SQLite storage (scenario f). Runs in benchmarks/.venvs/huey.

``SqliteHuey(filename=...)``; one consumer process with the consumer's defaults (one
thread worker, 0.1 s initial poll with 1.15 backoff up to 10 s); tasks enqueued one
call at a time (Huey has no batch enqueue).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import _common
from huey import SqliteHuey

events = _common.Events()
PARSER = _common.base_parser(["enqueue", "drain"])
ARGS = PARSER.parse_args()
PATH = ARGS.dsn.removeprefix("sqlite:///") or "huey.sqlite3"
huey = SqliteHuey(filename=PATH)


@huey.task(name="noop")
def noop(key: str) -> None:
    if events.expect:
        events.hit()
    else:
        events.write("start", key)


class HueyPeer(_common.Peer):
    def __init__(self, args: argparse.Namespace) -> None:
        self.script = __file__
        self.workdir = Path(args.path)

    def enqueue_keys(self, keys: Sequence[str], batch: int) -> None:
        for key in keys:
            noop(key)

    def enqueue_one(self, key: str) -> None:
        noop(key)

    def pending(self) -> int:
        return huey.pending_count()

    def close(self) -> None:
        huey.storage.close()


def _worker(args: argparse.Namespace) -> None:
    options = {"workers": args.concurrency} if args.concurrency else {}
    huey.create_consumer(**options).run()


def main() -> None:
    if ARGS.scenario == "worker":
        _worker(ARGS)
        return
    _common.run_main(
        ARGS,
        HueyPeer,
        {
            "enqueue": lambda peer, a: _common.enqueue_rates(
                peer, a, lambda keys: peer.enqueue_keys(keys, len(keys)), peer.enqueue_one
            ),
            "drain": _common.SHARED["drain"],
        },
    )


if __name__ == "__main__":
    main()
