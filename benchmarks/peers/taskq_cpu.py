"""taskq's CPU-bound scenarios (``taskq_bench.py cpu_drain ...``): the same job body as
Celery's and the bare executor's (``_cpu.burn``) as a ``cpu_bound`` actor, drained by
the real ``taskq worker`` at its defaults (a pool of ``os.cpu_count()`` processes)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import _cpu
import taskq_cpu_actors

CPU_REGISTRY = "taskq_cpu_actors:registry"


def worker_cmd(*extra: str) -> list[str]:
    return [sys.executable, "-m", "taskq", "worker", "--actors", CPU_REGISTRY, *extra]


def cpu_drain(peer, args: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def]
    """``n`` jobs of ``work_ms`` of CPU, enqueued before the worker starts."""
    iterations = _cpu.iterations_for(args.work_ms)

    def enqueue(keys: Sequence[str]) -> None:
        peer.runner.run(
            peer.client.enqueue_many(taskq_cpu_actors.burn, [((k, iterations), {}) for k in keys])
        )

    return _cpu.drain_by_lines(
        peer, args, enqueue=enqueue, worker_cmd=worker_cmd(), pending=peer.pending
    )
