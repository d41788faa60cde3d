"""``python -m benchmarks.hotpath [--n N] [--concurrency C] [--sqlite]``: profile one
``taskq worker`` draining N queued no-op jobs with py-spy (sampling, attached by pid, in
the bench-only venv ``benchmarks/.venvs/profile``), and print where the worker's time
goes: the hottest frames by own time and by inclusive time, and the GIL-idle share.

Needs TASKQ_BENCH_PG_DSN (as ``make bench``). The raw collapsed stacks are kept in
``benchmarks/results/raw/hotpath/`` for a flame graph (``py-spy`` ``--format raw``).
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

from . import pgadmin, venvs

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
OUT = HERE / "results" / "raw" / "hotpath"
PROFILER_REQUIREMENTS = ("py-spy>=0.4,<0.5",)


def summarise(raw: Path, top: int) -> str:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = idle = 0
    for line in raw.read_text().splitlines():
        stack, _, count_s = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_s)
        frames = stack.split(";")
        if any(f.startswith("Thread._bootstrap (threading.py") for f in frames):
            continue  # helper threads (lag monitor, ...): the event loop's thread only
        total += count
        leaf = frames[-1]
        if ("select" in leaf and ("selectors.py" in leaf or "(select)" in leaf)) or "epoll" in leaf:
            idle += count
        own[leaf] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = [
        f"event-loop thread samples: {total}; waiting in select/epoll (idle): "
        f"{idle / max(total, 1):.0%}",
        "",
        "own time:",
    ]
    lines += [f"  {c / total:6.1%}  {f}" for f, c in own.most_common(top)]
    lines += ["", "inclusive time:"]
    lines += [f"  {c / total:6.1%}  {f}" for f, c in inclusive.most_common(top)]
    return "\n".join(lines)


def worker_cmd(
    peer, ns: argparse.Namespace, prefetch: int | None, trace: bool = False
) -> list[str]:
    if trace:
        return [sys.executable, str(PEERS / "taskq_traced_worker.py")]
    if prefetch is None:
        return peer.worker_cmd(ns)
    concurrency = ns.concurrency or 10
    code = (
        "import sys\n"
        "from taskq.worker.config import WorkerConfig\n"
        "from taskq.worker.main import run\n"
        f"sys.exit(run(WorkerConfig(actors='taskq_actors:registry', "
        f"max_concurrency={concurrency}, prefetch={prefetch})))\n"
    )
    return [sys.executable, "-c", code]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.hotpath")
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--concurrency", type=int, default=0)
    p.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--sqlite", action="store_true", help="profile the SQLite store")
    p.add_argument(
        "--prefetch",
        type=int,
        default=None,
        help="run the worker through the Python API with WorkerConfig(prefetch=N) "
        "(as `taskq worker --prefetch N`): what claiming ahead of free consumers buys",
    )
    p.add_argument("--no-profile", action="store_true", help="time the drain only")
    p.add_argument(
        "--trace",
        action="store_true",
        help="time the worker's store.claim / store.complete calls "
        "(peers/taskq_traced_worker.py) instead of sampling",
    )
    p.add_argument(
        "--complete-unprepared",
        action="store_true",
        help="with --trace: send store.complete unprepared (custom plans)",
    )
    p.add_argument(
        "--pg-options",
        default="",
        help="libpq options for the worker's connections, e.g. "
        "'-c synchronous_commit=off' (the store appends its own)",
    )
    args = p.parse_args(argv)

    built = venvs.ensure("profile", PROFILER_REQUIREMENTS)
    if built.python is None:
        print(f"hotpath: py-spy unavailable: {built.error}", file=sys.stderr)
        return 2
    py_spy = built.python.parent / "py-spy"
    OUT.mkdir(parents=True, exist_ok=True)
    if args.sqlite:
        db = OUT / "profile.sqlite3"
        for f in OUT.glob("profile.sqlite3*"):
            f.unlink()
        dsn = f"sqlite:///{db}"
    else:
        admin = os.environ.get("TASKQ_BENCH_PG_DSN")
        if not admin:
            print("hotpath: TASKQ_BENCH_PG_DSN is not set", file=sys.stderr)
            return 2
        dsn = pgadmin.recreate(admin, "bench_hotpath")
        if args.pg_options:
            dsn += "?options=" + urllib.parse.quote(args.pg_options)

    sys.path.insert(0, str(PEERS))
    import _common
    import taskq_bench

    ns = argparse.Namespace(dsn=dsn, path=str(OUT), concurrency=args.concurrency)
    peer = taskq_bench.TaskqPeer(ns)
    try:
        peer.enqueue_keys([str(i) for i in range(args.n)], 1000)
        events = OUT / "drain.events"
        events.unlink(missing_ok=True)
        env = {
            _common.EVENTS_ENV: str(events),
            _common.EXPECT_ENV: str(args.n),
            **peer.worker_env(),
        }
        trace = OUT / "trace.json"
        trace.unlink(missing_ok=True)
        env.update(
            {
                "BENCH_TRACE": str(trace),
                "BENCH_CONCURRENCY": str(args.concurrency or 10),
                "BENCH_COMPLETE_UNPREPARED": "1" if args.complete_unprepared else "0",
            }
        )
        worker = _common.spawn(
            worker_cmd(peer, ns, args.prefetch, args.trace), env, OUT / "worker.log"
        )
        raw = OUT / (
            f"drain-{'sqlite' if args.sqlite else 'pg'}-c{args.concurrency}-p{args.prefetch}.txt"
        )
        # attach once the drain has begun (start-up imports are not the hot path);
        # --idle keeps the samples where the worker waits, so shares are of wall time
        _common.wait_for(
            lambda: _common.event_times(events, "first") or worker.poll() is not None,
            120,
            "the first job",
            0.005,
        )
        spy = (
            None
            if args.no_profile or args.trace
            else subprocess.Popen(
                [
                    str(py_spy),
                    "record",
                    "--pid",
                    str(worker.pid),
                    "--rate",
                    str(args.rate),
                    "--format",
                    "raw",
                    "--output",
                    str(raw),
                    "--nonblocking",
                    "--idle",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
        try:
            _common.wait_for(
                lambda: _common.event_times(events, "last") or worker.poll() is not None,
                600,
                "the drain",
                0.05,
            )
            first = _common.event_times(events, "first")
            last = _common.event_times(events, "last")
            if first and last:
                print(
                    f"drained {args.n} jobs in {last[0] - first[0]:.2f} s "
                    f"({args.n / (last[0] - first[0]):,.0f} jobs/s"
                    f"{'' if spy is None else ', under the profiler'})"
                )
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                try:
                    spy.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    spy.kill()
                    spy.wait()
            _common.stop(worker)
        if args.trace and trace.exists():
            print(trace.read_text().strip())
        if spy is None:
            return 0
        time.sleep(0.1)
        if not raw.exists():
            print(
                "hotpath: py-spy wrote nothing: "
                + (spy.stderr.read().decode(errors="replace")[-300:] if spy.stderr else ""),
                file=sys.stderr,
            )
            return 1
        print(summarise(raw, args.top))
        print(f"\nraw stacks: {raw}")
    finally:
        peer.close()
        if not args.sqlite:
            pgadmin.drop(os.environ["TASKQ_BENCH_PG_DSN"], "bench_hotpath")
    return 0


if __name__ == "__main__":
    sys.exit(main())
