"""Celery 5.7 on the local Redis. Runs in benchmarks/.venvs/celery (the app: celery_app.py).

``--dsn redis://HOST:PORT/DB#PREFIX``: the broker and the key prefix of this run (the
harness gives Celery database 10 and its ``--db-prefix``); the keys under the prefix are
deleted before the run. Results are ignored (``task_ignore_result``). The worker is
``python -m celery -A celery_app worker`` with Celery's defaults: the prefork pool at
its default concurrency (``os.cpu_count()`` processes), prefetch multiplier 4, early
acknowledgement, mingle, gossip and heartbeats on. A case at a given concurrency (the
drains "at 32" and the sweep) runs ``--pool threads --concurrency N``, Celery's pool
for I/O-bound work. Enqueue: ``task.delay()`` (also ``sync_enqueue``, the enqueue a web
request pays); batches: ``group(...).apply_async()``
(Celery has no multi-message publish: a group publishes its messages one by one).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import _common
import _cpu
import _workflows

PARSER = _common.base_parser(
    ["enqueue", "drain", "latency", "cpu_drain", "sync_enqueue", "wf_fanin", "wf_enqueue"]
)
_cpu.add_arguments(PARSER)
_workflows.add_arguments(PARSER)
ARGS = PARSER.parse_args()
_url, _, _prefix = (ARGS.dsn or "redis://127.0.0.1:6379/10").partition("#")
os.environ["BENCH_CELERY_BROKER"] = _url
os.environ["BENCH_CELERY_PREFIX"] = (_prefix or "bench_") + "celery:"

import celery_app  # noqa: E402  (reads the variables above)
from celery import group  # noqa: E402


class CeleryPeer(_common.Peer):
    def __init__(self, args: argparse.Namespace) -> None:
        self.script = __file__
        self.workdir = Path(args.path)
        self.expect = 0  # the no-op drain: its body writes one done line a job
        celery_app.clear()

    def enqueue_keys(self, keys: Sequence[str], batch: int) -> None:
        for start in range(0, len(keys), batch):
            self.enqueue_batch(keys[start : start + batch])

    def enqueue_batch(self, keys: Sequence[str]) -> None:
        group(celery_app.noop.s(k) for k in keys).apply_async()

    def enqueue_one(self, key: str) -> None:
        celery_app.noop.delay(key)

    def pending(self) -> int:
        return celery_app.pending()

    def worker_cmd(self, args: argparse.Namespace) -> list[str]:
        cmd = [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "--loglevel=WARNING"]
        if args.concurrency:
            cmd += ["--pool", "threads", "--concurrency", str(args.concurrency)]
        return cmd

    def worker_env(self) -> dict[str, str]:
        env = {
            "BENCH_CELERY_BROKER": os.environ["BENCH_CELERY_BROKER"],
            "BENCH_CELERY_PREFIX": os.environ["BENCH_CELERY_PREFIX"],
        }
        if self.expect:
            env[_common.EXPECT_ENV] = str(self.expect)
        return env

    def close(self) -> None:
        celery_app.clear()
        celery_app.redis_client().close()


def drain(peer: CeleryPeer, args: argparse.Namespace) -> dict:
    """The no-op drain, counted one line a job (prefork runs jobs in several processes)."""
    peer.expect = args.n
    return _cpu.drain_by_lines(
        peer,
        args,
        enqueue=peer.enqueue_batch,
        worker_cmd=peer.worker_cmd(args),
        pending=peer.pending,
    )


def cpu_drain(peer: CeleryPeer, args: argparse.Namespace) -> dict:
    iterations = _cpu.iterations_for(args.work_ms)

    def enqueue(keys: Sequence[str]) -> None:
        group(celery_app.burn.s(k, iterations) for k in keys).apply_async()

    return _cpu.drain_by_lines(
        peer, args, enqueue=enqueue, worker_cmd=peer.worker_cmd(args), pending=peer.pending
    )


def _wf_app():  # type: ignore[no-untyped-def]
    import celery_wf_app

    return celery_wf_app


def wf_fanin(peer: CeleryPeer, args: argparse.Namespace) -> dict:
    """1,000 no-op tasks as a plain group, then as a chord's header with its callback."""
    wf = _wf_app()
    wf.clear()
    try:
        return _workflows.fanin(
            peer,
            args,
            enqueue_plain=lambda keys: wf.plain(list(keys)),
            enqueue_workflow=lambda keys: wf.the_chord(list(keys)).apply_async(),
            worker_cmd=[
                sys.executable,
                "-m",
                "celery",
                "-A",
                "celery_wf_app",
                "worker",
                "--loglevel=WARNING",
            ],
            pending=wf.pending,
        )
    finally:
        wf.clear()


def wf_enqueue(peer: CeleryPeer, args: argparse.Namespace) -> dict:
    """``chord(group(n - 1 tasks), callback).apply_async()``, timed alone."""
    wf = _wf_app()
    return _workflows.wf_enqueue(
        args,
        build=lambda keys: wf.the_chord(list(keys)),
        enqueue=lambda made: made.apply_async(),  # type: ignore[attr-defined]
        clear=wf.clear,
    )


def main() -> None:
    if ARGS.scenario == "worker":
        raise SystemExit("celery_bench.py: the worker is `python -m celery -A celery_app worker`")
    _common.run_main(
        ARGS,
        CeleryPeer,
        {
            **_common.SHARED,
            "drain": drain,
            "cpu_drain": cpu_drain,
            # the enqueue a web request pays: task.delay(), as it is
            "sync_enqueue": lambda peer, a: _common.sync_single(peer.enqueue_one, a),
            "wf_fanin": wf_fanin,
            "wf_enqueue": wf_enqueue,
        },
    )


if __name__ == "__main__":
    main()
