"""Actors for the end-to-end chaos and dependency-restart tests, and the side table they keep.

Every actor takes a ``key`` (one per job, so key <-> job id) and appends one line per
event to the file named by ``TASKQ_CHAOS_RUNS``: ``start <key> <pid>`` when its body
begins and ``done <key> <pid>`` just before it returns. ``O_APPEND`` writes of one short
line are atomic across processes, so the file is a side table of every run any process
made: a double run (two ``start`` lines) or a lost run (a succeeded job with no ``done``
line) shows up whatever the store says.

``registry`` is the chaos mix (async, sync and cpu_bound; idempotent and not; some that
fail by exception); ``outage_registry`` is the slow-ish jobs of the Postgres restart test
(no cpu_bound actor, so that worker starts no process pool).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from taskq import Registry, RetryBackoff

RUNS_ENV = "TASKQ_CHAOS_RUNS"
FAST_RETRY = RetryBackoff(initial=0.02, factor=2.0, maximum=0.1)

registry = Registry()
outage_registry = Registry()


def record(event: str, key: str) -> None:
    path = os.environ.get(RUNS_ENV)
    if not path:
        raise RuntimeError(f"{RUNS_ENV} is not set: the side table has nowhere to go")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{event} {key} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


def side_table(path: str | Path) -> dict[str, Counter[str]]:
    """``{"start": Counter(key -> runs), "done": Counter(key -> runs)}``."""
    table: dict[str, Counter[str]] = {"start": Counter(), "done": Counter()}
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return table
    for line in text.splitlines():
        event, key, _pid = line.split()
        table[event][key] += 1
    return table


def _first_time(key: str) -> bool:
    """True the first time ``key`` asks, across processes (an O_EXCL marker file)."""
    marker = Path(os.environ[RUNS_ENV]).with_name(f"first-{key}.marker")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _spin(seconds: float) -> int:
    """Burn CPU for about ``seconds`` (what a cpu_bound job is for)."""
    end, n = time.process_time() + seconds, 0
    while time.process_time() < end:
        n += sum(i * i for i in range(500))
    return n


async def _async_run(key: str, seconds: float) -> str:
    record("start", key)
    await asyncio.sleep(seconds)
    record("done", key)
    return key


def _sync_run(key: str, seconds: float, work: Callable[[float], object] = time.sleep) -> str:
    record("start", key)
    work(seconds)
    record("done", key)
    return key


# -- the chaos mix ------------------------------------------------------------------------


@registry.actor(idempotent=True)
async def idem_async(key: str, seconds: float) -> str:
    return await _async_run(key, seconds)


@registry.actor(idempotent=False)
async def once_async(key: str, seconds: float) -> str:
    return await _async_run(key, seconds)


@registry.actor(idempotent=True)
def idem_sync(key: str, seconds: float) -> str:
    return _sync_run(key, seconds)


@registry.actor(idempotent=False)
def once_sync(key: str, seconds: float) -> str:
    return _sync_run(key, seconds)


@registry.actor(cpu_bound=True, idempotent=True)
def idem_cpu(key: str, seconds: float) -> str:
    return _sync_run(key, seconds, _spin)


@registry.actor(cpu_bound=True, idempotent=False)
def once_cpu(key: str, seconds: float) -> str:
    return _sync_run(key, seconds, _spin)


@registry.actor(idempotent=False, max_attempts=2, retry_backoff=FAST_RETRY)
async def always_fails(key: str, seconds: float) -> None:
    record("start", key)
    await asyncio.sleep(seconds)
    raise ValueError(f"always_fails {key}: refused on purpose")


@registry.actor(idempotent=True, max_attempts=3, retry_backoff=FAST_RETRY)
def fails_once(key: str, seconds: float) -> str:
    record("start", key)
    time.sleep(seconds)
    if _first_time(key):
        raise ConnectionError(f"fails_once {key}: first run fails on purpose")
    record("done", key)
    return key


#: actors whose body raises (their last_error may name that exception, not a crash)
RAISING = frozenset({"always_fails", "fails_once"})


# -- the Postgres restart test ------------------------------------------------------------


@outage_registry.actor(idempotent=False)
async def slow_once(key: str, seconds: float) -> str:
    return await _async_run(key, seconds)


@outage_registry.actor(idempotent=True)
def slow_idem_sync(key: str, seconds: float) -> str:
    return _sync_run(key, seconds)
