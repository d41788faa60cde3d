"""A ``taskq worker`` whose store calls are timed (for ``benchmarks.hotpath --trace``).

Wraps ``claim`` and ``complete`` of the store the worker creates and, at exit, writes one
JSON line to $BENCH_TRACE: how many calls, their sizes and durations, and how long the
fetcher spent between the end of one claim and the start of the next.

``BENCH_COMPLETE_UNPREPARED=1`` sends ``complete`` unprepared (``prepare=False``), so
Postgres plans it for the real batch size every time instead of reusing the generic plan
that psycopg's auto-prepare (after 5 runs) leads to: the experiment behind the
acker finding in docs/benchmarks.md."""

from __future__ import annotations

import atexit
import itertools
import json
import os
import sys
import time

import taskq.worker.worker as worker_module
from taskq.worker.config import WorkerConfig
from taskq.worker.main import run

calls: dict[str, list[tuple[float, float, int]]] = {"claim": [], "complete": []}
_create_store = worker_module.create_store


def traced_store(*args, **kwargs):
    store = _create_store(*args, **kwargs)
    for name in ("claim", "complete"):
        original = getattr(store, name)

        async def timed(*a, _original=original, _name=name, **k):
            t0 = time.perf_counter()
            result = await _original(*a, **k)
            size = len(result) if _name == "claim" else len(a[1])
            calls[_name].append((t0, time.perf_counter(), size))
            return result

        setattr(store, name, timed)
    return store


def dump() -> None:
    out = {}
    for name, rows in calls.items():
        busy = [r for r in rows if r[2] > 0]
        if not busy:
            continue
        durations = sorted(e - s for s, e, _n in busy)
        out[name] = {
            "calls": len(busy),
            "jobs": sum(n for *_x, n in busy),
            "mean_batch": sum(n for *_x, n in busy) / len(busy),
            "p50_ms": durations[len(durations) // 2] * 1000,
            "p90_ms": durations[int(len(durations) * 0.9)] * 1000,
            "busy_s": sum(durations),
        }
        if name == "claim":
            gaps = sorted(b[0] - a[1] for a, b in itertools.pairwise(busy))
            if gaps:
                out[name]["gap_p50_ms"] = gaps[len(gaps) // 2] * 1000
                out[name]["gap_p90_ms"] = gaps[int(len(gaps) * 0.9)] * 1000
                out[name]["span_s"] = busy[-1][1] - busy[0][0]
    with open(os.environ["BENCH_TRACE"], "w") as fh:
        fh.write(json.dumps(out) + "\n")


if os.environ.get("BENCH_COMPLETE_UNPREPARED") == "1":
    from taskq.store.postgres import connections as pg_module

    async def _fetchone_custom_plan(self, name, params=None):
        async with self.connection() as conn:
            cur = await conn.execute(
                pg_module.Q[name], params, prepare=False if name == "complete" else None
            )
            return await cur.fetchone()

    pg_module.Connections.fetchone = _fetchone_custom_plan

worker_module.create_store = traced_store
atexit.register(dump)
sys.exit(
    run(
        WorkerConfig(
            actors="taskq_actors:registry",
            max_concurrency=int(os.environ.get("BENCH_CONCURRENCY", "10")),
        )
    )
)
