"""The ceiling of the CPU-bound drain: a bare ``concurrent.futures.ProcessPoolExecutor``
(``os.cpu_count()`` processes, the default start method) mapping the same job body
(``_cpu.burn``) over the same number of jobs. No queue, no store, no crash handling: what
the hardware and the standard library allow. Runs with the project's interpreter.

The "worker" is a process of its own, as every peer's: spawned -> the executor built
(its processes start) -> ``map`` over ``n`` keys -> every job done, so the start-up of
an interpreter and of the pool counts as it does for a queue's worker.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import _common
import _cpu


class ExecutorPeer(_common.Peer):
    def __init__(self, args: argparse.Namespace) -> None:
        self.script = __file__
        self.workdir = Path(args.path)

    def enqueue_keys(self, keys: Sequence[str], batch: int) -> None:
        raise NotImplementedError("the executor has no queue")

    def enqueue_one(self, key: str) -> None:
        raise NotImplementedError("the executor has no queue")

    def pending(self) -> int:
        return 0

    def close(self) -> None:
        pass


def cpu_drain(peer: ExecutorPeer, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "worker", "--n", str(args.n), "--work-ms", str(args.work_ms)]
    result = _cpu.drain_by_lines(peer, args, enqueue=None, worker_cmd=cmd, pending=None)
    result["processes"] = os.cpu_count()
    return result


def _worker(args: argparse.Namespace) -> None:
    iterations = _cpu.iterations_for(args.work_ms)
    keys = [str(i) for i in range(args.n)]
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        for _ in pool.map(_cpu.burn, keys, [iterations] * len(keys)):
            pass


def main() -> None:
    parser = _common.base_parser(["cpu_drain"])
    _cpu.add_arguments(parser)
    args = parser.parse_args()
    if args.scenario == "worker":
        _worker(args)
        return
    _common.run_main(args, ExecutorPeer, {"cpu_drain": cpu_drain})


if __name__ == "__main__":
    main()
