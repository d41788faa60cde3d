"""CPU-bound work, and drains counted one line per job. Standard library only: it runs in
each peer's venv (taskq's interpreter, Celery's venv, the bare executor's).

The job body is the same function everywhere: ``burn(key, iterations)`` spins a loop of
pure Python arithmetic (``ITERATIONS_PER_MS`` iterations are ~1 ms of CPU on the machine
of docs/benchmarks.md) and appends one line to the events file: ``done <cpu_us> <time>
<pid>``, its own CPU time in microseconds, so each run reports what a job really cost.

Workers that run jobs in several processes (a process pool, Celery's prefork) cannot
share the in-memory counter of ``_common.Events.hit``: their drains are counted by these
lines instead (``drain_by_lines``), one ``O_APPEND`` write a job (atomic for short
lines), read incrementally by the driver.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import _common

ITERATIONS_PER_MS = 26_000  # measured here: ~26,000 loop turns = 1 ms of CPU
FIRST_SECOND = 1.0  # "after the first second": throughput from first job start + 1 s

_fd: int | None = None


def iterations_for(work_ms: float) -> int:
    return max(1, round(work_ms * ITERATIONS_PER_MS))


def spin(iterations: int) -> int:
    x = 0
    for i in range(iterations):
        x = (x * 31 + i) & 0xFFFF
    return x


def burn(key: str, iterations: int) -> int:
    """The CPU-bound job body: ``iterations`` loop turns, then one ``done`` line."""
    cpu = time.process_time()
    value = spin(iterations)
    done(time.process_time() - cpu)
    return value


def done(cpu_s: float = 0.0) -> None:
    """Append one ``done`` line for this job (any process; the file is opened lazily,
    after a fork or a spawn, from ``BENCH_EVENTS``)."""
    global _fd
    if _fd is None:
        path = os.environ.get(_common.EVENTS_ENV)
        if not path:
            return
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_fd, f"done {round(cpu_s * 1e6)} {time.time():.6f} {os.getpid()}\n".encode())


class DoneLines:
    """Reads the ``done`` lines of an events file as they come (incrementally)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self.times: list[float] = []
        self.cpu_us: list[int] = []

    def poll(self) -> int:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return len(self.times)
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            parts = line.split()
            if len(parts) == 4 and parts[0] == b"done":
                self.cpu_us.append(int(parts[1]))
                self.times.append(float(parts[2]))
        return len(self.times)


def drain_summary(n: int, spawned: float, times: Sequence[float], end: float) -> dict:
    """The drain figures of ``_common.drain``, plus the rate after the first second."""
    first = min(times)
    after = first + FIRST_SECOND
    late = sum(1 for t in times if t > after)
    return {
        "jobs": n,
        "seconds": end - first,
        "jobs_per_s": n / (end - first),
        "startup_ms": (first - spawned) * 1000.0,
        "jobs_per_s_with_startup": n / (end - spawned),
        "jobs_per_s_after_1s": late / (end - after) if end > after and late else None,
        "ack_tail_ms": (end - max(times)) * 1000.0,
    }


def drain_by_lines(
    peer: _common.Peer,
    args: argparse.Namespace,
    *,
    enqueue: Callable[[Sequence[str]], None] | None,
    worker_cmd: Sequence[str],
    pending: Callable[[], int] | None,
    poll: float = 0.02,
) -> dict:
    """Enqueue ``n`` jobs (``enqueue``; None: the worker has them in memory), spawn the
    worker, time spawn -> ``n`` done lines -> the store shows nothing pending (each
    looked at every ``poll`` seconds)."""
    keys = [str(i) for i in range(args.n)]
    if enqueue is not None:
        for start in range(0, len(keys), args.batch):
            enqueue(keys[start : start + args.batch])
    events = peer.workdir / "drain.events"
    events.unlink(missing_ok=True)
    log = peer.workdir / "drain-worker.log"
    lines = DoneLines(events)
    env = {_common.EVENTS_ENV: str(events), **peer.worker_env()}
    spawned = time.time()
    proc = _common.spawn(worker_cmd, env, log)
    try:
        try:
            _common.wait_for(
                lambda: lines.poll() >= args.n or proc.poll() is not None,
                args.timeout,
                f"{args.n} jobs to run",
                interval=poll,
            )
            if lines.poll() < args.n:
                raise RuntimeError(f"worker exited {proc.returncode}: {_common.tail(log)}")
            if pending is not None:
                _common.wait_for(
                    lambda: pending() == 0, args.timeout, "the queue to empty", poll / 2
                )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; worker log: {_common.tail(log)}") from None
        end = time.time()
    finally:
        _common.stop(proc)
    result = drain_summary(args.n, spawned, lines.times, end)
    result["cpu_ms_per_job"] = statistics.fmean(lines.cpu_us) / 1000.0
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--work-ms", type=float, default=2.0, help="CPU per CPU-bound job")
    parser.add_argument("--backlog", type=int, default=4000, help="mixed: CPU jobs queued")
    parser.add_argument("--io-ms", type=float, default=5.0, help="mixed: an I/O job's sleep")
