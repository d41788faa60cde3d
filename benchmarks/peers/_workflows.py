"""The workflow scenarios (issue 22), shared by taskq's and Celery's peer scripts.
Standard library only: it runs in each peer's venv.

``fanin``: the same ``n`` no-op job bodies twice, each time enqueued before one worker
process starts at its defaults: as ``n`` plain jobs, then as a workflow of ``n`` steps
side by side and one fan-in step after all of them (taskq: ``taskq.group(...,
then=...)``; Celery: ``chord(group(...), callback)``). Every body appends one ``done``
line (``_cpu.done``), the fan-in's last (it runs after every other), so both are timed
the same way: first body -> every line written and nothing pending in the store. The
figure is the workflow's time over the plain jobs' (``overhead_x``), within one system.
At this size a drain takes tens of milliseconds, so the lines and the store are looked at
every ``POLL`` seconds (the CPU drains' 20 ms would be a fifth of one), and each run makes
``reps`` pairs (plain, then workflow, a fresh worker each) and reports the medians: the
time of each, and the median of the pairs' ratios.

``wf_enqueue``: the time to enqueue one workflow of ``n`` steps (``n - 1`` side by side
and a fan-in after them), the call alone, median of ``runs``; the workflow is built
before the clock starts (its build time is reported apart).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

import _common
import _cpu

POLL = 0.002  # seconds between looks at the done lines (the store: half that)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=3, help="wf_enqueue: enqueues timed")
    parser.add_argument("--reps", type=int, default=5, help="wf_fanin: plain/workflow pairs")


def fanin(
    peer: _common.Peer,
    args: argparse.Namespace,
    *,
    enqueue_plain: Callable[[Sequence[str]], None],
    enqueue_workflow: Callable[[Sequence[str]], None],
    worker_cmd: Sequence[str],
    pending: Callable[[], int],
) -> dict:
    keys = [str(i) for i in range(args.n)]
    with_fanin = argparse.Namespace(**{**vars(args), "n": args.n + 1})
    pairs = []
    for _ in range(args.reps):
        plain = _cpu.drain_by_lines(
            peer, args, enqueue=enqueue_plain, worker_cmd=worker_cmd, pending=pending, poll=POLL
        )
        enqueue_workflow(keys)
        flow = _cpu.drain_by_lines(
            peer, with_fanin, enqueue=None, worker_cmd=worker_cmd, pending=pending, poll=POLL
        )
        pairs.append((plain, flow))
    med = statistics.median
    return {
        "steps": args.n + 1,
        "plain_s": med(p["seconds"] for p, _ in pairs),
        "fanin_s": med(f["seconds"] for _, f in pairs),
        "overhead_x": med(f["seconds"] / p["seconds"] for p, f in pairs),
        "fanin_s_with_startup": med(f["seconds"] + f["startup_ms"] / 1000.0 for _, f in pairs),
        "pairs_s": [[p["seconds"], f["seconds"]] for p, f in pairs],
    }


def wf_enqueue(
    args: argparse.Namespace,
    *,
    build: Callable[[Sequence[str]], object],
    enqueue: Callable[[object], None],
    clear: Callable[[], None],
) -> dict:
    keys = [str(i) for i in range(args.n - 1)]
    builds, enqueues = [], []
    for _ in range(args.runs):
        clear()
        started = time.perf_counter()
        made = build(keys)
        built = time.perf_counter()
        enqueue(made)
        done = time.perf_counter()
        builds.append(built - started)
        enqueues.append(done - built)
    clear()
    seconds = statistics.median(enqueues)
    return {
        "steps": args.n,
        "enqueue_s": seconds,
        "steps_per_s": args.n / seconds,
        "build_s": statistics.median(builds),
        "enqueue_runs_s": enqueues,
    }
