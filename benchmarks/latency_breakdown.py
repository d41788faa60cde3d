"""``python -m benchmarks.latency_breakdown [--n 200]``: where taskq's enqueue -> start
latency goes. Runs scenario (c) (a ``taskq worker`` idle, jobs enqueued 20 ms apart)
while an observer connection LISTENs on taskq's channel and stamps each notification,
and splits every job's latency into: the enqueue call until it returns (INSERT + commit),
the call until the NOTIFY reaches a listener, and that notification until the job body
starts (the worker's wake-up, claim round trip and dispatch). Needs TASKQ_BENCH_PG_DSN.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import psycopg

from . import pgadmin

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "raw" / "latency_breakdown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.latency_breakdown")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--interval", type=float, default=0.02)
    args = p.parse_args(argv)
    admin = os.environ.get("TASKQ_BENCH_PG_DSN")
    if not admin:
        print("latency_breakdown: TASKQ_BENCH_PG_DSN is not set", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    dsn = pgadmin.recreate(admin, "bench_latency")
    sys.path.insert(0, str(HERE / "peers"))
    import _common
    import taskq_bench

    ns = argparse.Namespace(dsn=dsn, path=str(OUT), concurrency=0)
    peer = taskq_bench.TaskqPeer(ns)
    notified: list[float] = []
    listening = threading.Event()
    stop = threading.Event()

    def observe() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"LISTEN taskq_{taskq_bench.SCHEMA}")
            listening.set()
            while not stop.is_set():
                for _ in conn.notifies(timeout=0.2):
                    notified.append(time.time())

    observer = threading.Thread(target=observe, name="listen-observer")
    observer.start()
    events = OUT / "latency.events"
    events.unlink(missing_ok=True)
    worker = _common.spawn(
        peer.worker_cmd(ns),
        {_common.EVENTS_ENV: str(events), **peer.worker_env()},
        OUT / "worker.log",
    )
    calls: list[tuple[float, float]] = []
    try:
        listening.wait(10)
        peer.enqueue_one("warm")
        _common.wait_for(
            lambda: any(k == "start" for k, *_ in _common.read_events(events)),
            60,
            "the warm-up job",
            0.05,
        )
        time.sleep(1.0)
        notified.clear()
        tick = time.monotonic()
        for i in range(args.n):
            t_call = time.time()
            peer.enqueue_one(f"j{i}")
            calls.append((t_call, time.time()))
            tick += args.interval
            time.sleep(max(0.0, tick - time.monotonic()))
        _common.wait_for(
            lambda: sum(k == "start" for k, *_ in _common.read_events(events)) > args.n,
            60,
            "every job to start",
            0.05,
        )
        time.sleep(0.3)
    finally:
        _common.stop(worker)
        stop.set()
        observer.join(5)
        peer.close()
        pgadmin.drop(admin, "bench_latency")
    starts = {key: t for kind, key, t, _pid in _common.read_events(events) if kind == "start"}
    if len(notified) != args.n:
        print(
            f"observer saw {len(notified)} notifications for {args.n} enqueues; cannot pair them",
            file=sys.stderr,
        )
        return 1
    parts: dict[str, list[float]] = {
        "enqueue call -> returned (insert + commit)": [],
        "enqueue call -> NOTIFY at a listener": [],
        "NOTIFY at a listener -> job start": [],
        "enqueue call -> job start (scenario c)": [],
    }
    for i, ((t_call, t_ret), t_note) in enumerate(zip(calls, notified, strict=True)):
        t_start = starts[f"j{i}"]
        values = (t_ret - t_call, t_note - t_call, t_start - t_note, t_start - t_call)
        for key, v in zip(parts, values, strict=True):
            parts[key].append(v * 1000.0)
    print(f"{args.n} jobs, {args.interval * 1000:.0f} ms apart, idle taskq worker (defaults)")
    for key, values in parts.items():
        print(
            f"  {key:<46} p50 {_common.percentile(values, 50):6.2f} ms   "
            f"p90 {_common.percentile(values, 90):6.2f} ms   "
            f"p99 {_common.percentile(values, 99):6.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
