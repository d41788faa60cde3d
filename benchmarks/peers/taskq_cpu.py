"""taskq's CPU-bound scenarios (``taskq_bench.py cpu_drain|mixed ...``): the same job body
as Celery's and the bare executor's (``_cpu.burn``) as a ``cpu_bound`` actor, run by the
real ``taskq worker`` at its defaults (a pool of ``os.cpu_count()`` processes); and mixed
work: I/O jobs' latency with and without a CPU backlog in the same worker."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence

import _common
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


MIXED_REGISTRY = "taskq_cpu_actors:mixed"


def mixed(peer, args: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def]
    """One worker with an async I/O actor and a ``cpu_bound`` one (``taskq_cpu_actors:
    mixed``, defaults): ``n`` I/O jobs (``io_wait``, ``io_ms`` of sleep) ``interval`` apart
    to the idle worker, then a backlog of ``backlog`` CPU jobs of ``work_ms`` and the same
    ``n`` I/O jobs while the pool works it off. Latency = I/O job start - enqueue call."""
    events = peer.workdir / "mixed.events"
    events.unlink(missing_ok=True)
    log = peer.workdir / "mixed-worker.log"
    env = {_common.EVENTS_ENV: str(events), **peer.worker_env()}
    proc = _common.spawn(
        [sys.executable, "-m", "taskq", "worker", "--actors", MIXED_REGISTRY], env, log
    )
    lines = _cpu.DoneLines(events)

    def started() -> dict[str, float]:
        return {k: t for kind, k, t, _pid in _common.read_events(events) if kind == "start"}

    def io_phase(tag: str) -> tuple[list[float], list[float]]:
        """Each I/O job's enqueue call -> start, and the enqueue call's own time (the
        driver and its Postgres backend share the saturated cores too)."""
        called: dict[str, float] = {}
        calls: list[float] = []
        tick = time.monotonic()
        for i in range(args.n):
            key = f"{tag}{i}"
            called[key] = time.time()
            peer.runner.run(peer.client.enqueue(taskq_cpu_actors.io_wait, key, args.io_ms))
            calls.append(time.time() - called[key])
            tick += args.interval
            time.sleep(max(0.0, tick - time.monotonic()))
        _common.wait_for(
            lambda: all(k in started() for k in called), 120.0, f"the {tag} I/O jobs", 0.05
        )
        starts = started()
        return [starts[k] - called[k] for k in called], calls

    try:
        warm = [f"warm{i}" for i in range(5)]
        for key in warm:
            peer.runner.run(peer.client.enqueue(taskq_cpu_actors.io_wait, key, 0))
        try:
            _common.wait_for(
                lambda: all(k in started() for k in warm) or proc.poll() is not None,
                60.0,
                "the warm-up jobs",
                0.05,
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; worker log: {_common.tail(log)}") from None
        if proc.poll() is not None:
            raise RuntimeError(f"worker exited {proc.returncode}: {_common.tail(log)}")
        idle, idle_calls = io_phase("idle")
        iterations = _cpu.iterations_for(args.work_ms)
        keys = [f"c{i}" for i in range(args.backlog)]
        for start in range(0, len(keys), 1000):
            peer.runner.run(
                peer.client.enqueue_many(
                    taskq_cpu_actors.mixed_burn,
                    [((k, iterations), {}) for k in keys[start : start + 1000]],
                )
            )
        _common.wait_for(lambda: lines.poll() > 0, 60.0, "the CPU backlog to start", 0.01)
        busy, busy_calls = io_phase("busy")
        cpu_done = lines.poll()  # CPU jobs finished while the I/O jobs ran
        _common.wait_for(lambda: lines.poll() >= args.backlog, args.timeout, "the backlog", 0.05)
    finally:
        _common.stop(proc)
    quiet, loaded = _common.latency_summary(idle), _common.latency_summary(busy)
    return {
        "io_jobs": args.n,
        "io_ms": args.io_ms,
        "backlog": args.backlog,
        "work_ms": args.work_ms,
        "backlog_left_after_io": args.backlog - cpu_done,  # > 0: the pool stayed saturated
        "idle": quiet,
        "busy": loaded,
        # the enqueue call alone (part of the latency above; slower with the cores busy)
        "idle_enqueue": _common.latency_summary(idle_calls),
        "busy_enqueue": _common.latency_summary(busy_calls),
        "p50_ratio": loaded["p50_ms"] / quiet["p50_ms"],
        "p99_ratio": loaded["p99_ms"] / quiet["p99_ms"],
        "cpu_ms_per_job": statistics.fmean(lines.cpu_us) / 1000.0,
    }
