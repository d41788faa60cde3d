"""What every peer script shares. Standard library only: it runs in each peer's venv.

A peer script is ``python <peer>_bench.py SCENARIO --dsn DSN [options]``. It prints ONE
JSON object on its last stdout line (``{"ok": true, ...}`` or ``{"ok": false, "error":
...}``). The worker side of a scenario runs as a child process of the same script
(``... worker ...``) so that the measured worker is one process of its own, as it
would be in production, and the driver (producer, observer) does not steal its loop.

Job bodies report through an *events file*: one line per event, ``<kind> <key>
<unix-time> <pid>``, appended with O_APPEND (atomic for short lines). The drain counter
writes two lines (first start, Nth finish) so a 20,000-job drain costs no extra I/O.
"""

from __future__ import annotations

import abc
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

EVENTS_ENV = "BENCH_EVENTS"
EXPECT_ENV = "BENCH_EXPECT"
HOLD_ENV = "BENCH_HOLD"  # job bodies of the recovery scenario block this long (s)


# -- output ------------------------------------------------------------------------------
def emit(result: dict) -> None:
    print(json.dumps(result, sort_keys=True), flush=True)


def run_main(
    args: argparse.Namespace,
    make_peer: Callable[[argparse.Namespace], Peer],
    handlers: dict[str, Callable[[Peer, argparse.Namespace], dict]],
) -> None:
    """Build the peer, run one scenario, print its one JSON line (errors included)."""
    handler = handlers.get(args.scenario)
    if handler is None:
        emit({"ok": False, "error": f"scenario {args.scenario!r} not supported"})
        sys.exit(2)
    signal.signal(signal.SIGTERM, _terminate_spawned)  # driver only, never in a worker
    peer = None
    try:
        peer = make_peer(args)
        result = handler(peer, args)
    except Exception as exc:  # one line for the harness table, never a bare traceback
        emit({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        sys.exit(1)
    finally:
        if peer is not None:
            peer.close()
    result.setdefault("ok", True)
    emit(result)


SHARED = {
    "enqueue": lambda peer, a: enqueue_rates(peer, a, peer.enqueue_batch, peer.enqueue_one),
    "drain": lambda peer, a: drain(peer, a),
    "latency": lambda peer, a: latency(peer, a),
    "recovery_bare": lambda peer, a: recovery_bare(peer, a),
}


def base_parser(scenarios: Sequence[str]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=[*scenarios, "worker"])
    p.add_argument("--dsn", default="")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--single", type=int, default=100)
    p.add_argument("--warmup", type=int, default=200, help="sync_enqueue: untimed calls first")
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=0, help="0: the peer's default")
    p.add_argument("--interval", type=float, default=0.02)
    p.add_argument("--inflight", type=int, default=5)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--observe", type=float, default=45.0)
    p.add_argument("--path", default="")
    return p


# -- stats -------------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100.0 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def latency_summary(latencies_s: Sequence[float]) -> dict:
    ms = [v * 1000.0 for v in latencies_s]
    return {
        "p50_ms": percentile(ms, 50),
        "p90_ms": percentile(ms, 90),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms) if ms else float("nan"),
        "mean_ms": statistics.fmean(ms) if ms else float("nan"),
        "samples": len(ms),
    }


# -- events written by job bodies ---------------------------------------------------------
class Events:
    """Appends event lines; ``hit()`` is the drain counter."""

    def __init__(self) -> None:
        path = os.environ.get(EVENTS_ENV)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else None
        self.expect = int(os.environ.get(EXPECT_ENV, "0"))
        self.hold = float(os.environ.get(HOLD_ENV, "0"))
        self.count = 0
        self.pid = os.getpid()

    def write(self, kind: str, key: object) -> None:
        if self._fd is not None:
            os.write(self._fd, f"{kind} {key} {time.time():.6f} {self.pid}\n".encode())

    def hit(self) -> None:
        self.count += 1
        if self.count == 1:
            self.write("first", 0)
        if self.count % 10_000 == 0:
            self.write("tick", self.count)
        if self.count == self.expect:
            self.write("last", self.count)


def read_events(path: Path) -> list[tuple[str, str, float, int]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            rows.append((parts[0], parts[1], float(parts[2]), int(parts[3])))
    return rows


def wait_for(
    predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.01
) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def event_times(path: Path, kind: str) -> list[float]:
    return [t for k, _key, t, _pid in read_events(path) if k == kind]


# -- worker processes ---------------------------------------------------------------------
#: every worker this script started (each in a process group of its own), so that a
#: SIGTERM from the harness (its timeout) ends them too instead of orphaning them
_SPAWNED: list[subprocess.Popen] = []


def _terminate_spawned(signum: int, _frame: object) -> None:
    for proc in _SPAWNED:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    sys.exit(128 + signum)


def spawn(
    cmd: Sequence[str], env_extra: dict[str, str], log_path: Path, cwd: str | None = None
) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(env_extra)
    log = open(log_path, "ab")  # the child keeps its own copy
    try:
        proc = subprocess.Popen(
            list(cmd),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
        )
    finally:
        log.close()
    _SPAWNED.append(proc)
    return proc


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL; always reaps."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            kill(proc)
    proc.wait()


def kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def self_worker_cmd(script: str, args: argparse.Namespace, *extra: str) -> list[str]:
    """Command that starts this same script's worker mode in this same venv."""
    cmd = [
        sys.executable,
        script,
        "worker",
        "--dsn",
        args.dsn,
        "--concurrency",
        str(args.concurrency),
    ]
    return [*cmd, *extra]


def tail(path: Path, lines: int = 5) -> str:
    if not path.exists():
        return ""
    return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])


# -- the scenarios every Postgres peer runs the same way ----------------------------------
class Peer(abc.ABC):
    """What a peer script supplies to the shared scenarios. Callbacks are synchronous
    (peer scripts wrap their async clients in one ``asyncio.Runner``)."""

    script: str  # the peer script's path (to start its worker mode)
    workdir: Path

    @abc.abstractmethod
    def enqueue_keys(self, keys: Sequence[str], batch: int) -> None:
        """Enqueue one no-op job per key, ``batch`` per round trip (not timed)."""

    @abc.abstractmethod
    def enqueue_one(self, key: str) -> None: ...

    @abc.abstractmethod
    def pending(self) -> int:
        """Jobs not finished yet (queued or running), as the store sees them."""

    def describe_stuck(self) -> str:
        """What became of a dead worker's jobs when they were not re-run."""
        return "not re-run"

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections."""

    def worker_cmd(self, args: argparse.Namespace) -> list[str]:
        return self_worker_cmd(self.script, args)

    def worker_env(self) -> dict[str, str]:
        return {}


def drain(peer: Peer, args: argparse.Namespace) -> dict:
    """Enqueue ``n`` no-op jobs, start one worker process, time first start -> all done."""
    peer.enqueue_keys([str(i) for i in range(args.n)], args.batch)
    events = peer.workdir / "drain.events"
    events.unlink(missing_ok=True)
    log = peer.workdir / "drain-worker.log"
    env = {EVENTS_ENV: str(events), EXPECT_ENV: str(args.n), **peer.worker_env()}
    spawned = time.time()
    proc = spawn(peer.worker_cmd(args), env, log)
    try:
        try:
            wait_for(
                lambda: event_times(events, "last") or proc.poll() is not None,
                args.timeout,
                "the last job to run",
                interval=0.05,
            )
            if proc.poll() is not None:
                raise RuntimeError(f"worker exited {proc.returncode}: {tail(log)}")
            wait_for(lambda: peer.pending() == 0, args.timeout, "the queue to empty", interval=0.01)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; worker log: {tail(log)}") from None
        done = time.time()
    finally:
        stop(proc)
    first = event_times(events, "first")[0]
    last_body = event_times(events, "last")[0]
    return {
        "jobs": args.n,
        "seconds": done - first,
        "jobs_per_s": args.n / (done - first),
        "ack_tail_ms": (done - last_body) * 1000.0,
        "startup_ms": (first - spawned) * 1000.0,  # process start -> first job body
        "jobs_per_s_with_startup": args.n / (done - spawned),
    }


def latency(peer: Peer, args: argparse.Namespace) -> dict:
    """``n`` jobs ``interval`` apart to an idle worker: job start - enqueue call."""
    events = peer.workdir / "latency.events"
    events.unlink(missing_ok=True)
    log = peer.workdir / "latency-worker.log"
    env = {EVENTS_ENV: str(events), **peer.worker_env()}
    proc = spawn(peer.worker_cmd(args), env, log)
    try:

        def started() -> dict[str, float]:
            return {key: t for kind, key, t, _pid in read_events(events) if kind == "start"}

        warm = [f"warm{i}" for i in range(5)]
        for key in warm:
            peer.enqueue_one(key)
        try:
            wait_for(
                lambda: all(k in started() for k in warm) or proc.poll() is not None,
                60.0,
                "the warm-up jobs",
                interval=0.05,
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; worker log: {tail(log)}") from None
        if proc.poll() is not None:
            raise RuntimeError(f"worker exited {proc.returncode}: {tail(log)}")
        time.sleep(1.0)  # idle: whatever the worker does when nothing is queued
        called: dict[str, float] = {}
        rtts = []
        tick = time.monotonic()
        for i in range(args.n):
            key = f"j{i}"
            called[key] = time.time()
            t0 = time.perf_counter()
            peer.enqueue_one(key)
            rtts.append(time.perf_counter() - t0)
            tick += args.interval
            pause = tick - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        wait_for(
            lambda: all(k in started() for k in called), 60.0, "every job to start", interval=0.05
        )
        starts = started()
    finally:
        stop(proc)
    summary = latency_summary([starts[k] - called[k] for k in called])
    summary["enqueue_rtt_p50_ms"] = percentile(rtts, 50) * 1000.0
    return summary


def recovery_bare(peer: Peer, args: argparse.Namespace) -> dict:
    """Worker A runs ``inflight`` blocking jobs; worker B is idle beside it; SIGKILL A;
    time until every one of those jobs has started again (in B)."""
    events = peer.workdir / "recovery.events"
    events.unlink(missing_ok=True)
    keys = [f"r{i}" for i in range(args.inflight)]
    env = {EVENTS_ENV: str(events), HOLD_ENV: "3600", **peer.worker_env()}
    log_a = peer.workdir / "recovery-a.log"
    log_b = peer.workdir / "recovery-b.log"
    a = spawn(peer.worker_cmd(args), env, log_a)
    b = None
    try:
        peer.enqueue_keys(keys, len(keys))

        def starts_by(pred: Callable[[int], bool]) -> dict[str, float]:
            return {
                key: t for kind, key, t, pid in read_events(events) if kind == "start" and pred(pid)
            }

        try:
            wait_for(
                lambda: (
                    len(starts_by(lambda pid: pid == a.pid)) == len(keys) or a.poll() is not None
                ),
                60.0,
                "worker A to start every job",
                0.05,
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; worker A log: {tail(log_a)}") from None
        if a.poll() is not None:
            raise RuntimeError(f"worker A exited {a.returncode}: {tail(log_a)}")
        b = spawn(peer.worker_cmd(args), {**env, HOLD_ENV: "0"}, log_b)
        time.sleep(2.0)  # B connected and idle before A dies
        killed_at = time.time()
        kill(a)
        try:
            wait_for(
                lambda: len(starts_by(lambda pid: pid != a.pid)) == len(keys),
                args.observe,
                "the killed worker's jobs to run again",
                0.02,
            )
        except TimeoutError:
            again = starts_by(lambda pid: pid != a.pid)
            return {
                "recovered": False,
                "observed_s": args.observe,
                "rerun": len(again),
                "inflight": len(keys),
                "what_happens": peer.describe_stuck(),
            }
        again = starts_by(lambda pid: pid != a.pid)
    finally:
        kill(a)
        if b is not None:
            stop(b)
    delays = sorted(t - killed_at for t in again.values())
    return {
        "recovered": True,
        "inflight": len(keys),
        "first_s": delays[0],
        "all_s": delays[-1],
        "median_s": statistics.median(delays),
    }


def one_by_one(call: Callable[[str], None], n: int, prefix: str = "s") -> float:
    """Seconds ``n`` calls of ``call`` took, one after the other (keys ``<prefix><i>``)."""
    t0 = time.perf_counter()
    for i in range(n):
        call(f"{prefix}{i}")
    return time.perf_counter() - t0


def sync_single(call: Callable[[str], None], args: argparse.Namespace) -> dict:
    """The enqueue a web request pays: one job at a time on this thread, through the
    system's synchronous API; ``args.warmup`` calls first (connections opened, statements
    prepared), then ``args.single`` timed."""
    one_by_one(call, args.warmup, "w")
    elapsed = one_by_one(call, args.single)
    return {
        "warmup": args.warmup,
        "single_jobs": args.single,
        "single_per_s": args.single / elapsed,
        "single_us": elapsed / args.single * 1e6,
    }


def enqueue_rates(
    peer: Peer,
    args: argparse.Namespace,
    batch_call: Callable[[Sequence[str]], None],
    single_call: Callable[[str], None],
) -> dict:
    keys = [str(i) for i in range(args.n)]
    t0 = time.perf_counter()
    for start in range(0, len(keys), args.batch):
        batch_call(keys[start : start + args.batch])
    batch_s = time.perf_counter() - t0
    single_s = one_by_one(single_call, args.single)
    return {
        "batch_jobs": args.n,
        "batch_size": args.batch,
        "batch_per_s": args.n / batch_s,
        "single_jobs": args.single,
        "single_per_s": args.single / single_s,
    }
