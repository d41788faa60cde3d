"""Actors for the control tests (pause, limits, snooze, cancel), run by real workers.

Each run appends ``<event> <key> <pid>`` to the ledger named by ``TASKQ_TEST_RUNS``
(O_APPEND: each line lands whole, in the order the writes happened), so a test reads
what the jobs themselves saw: how many ran at once, how many started, which were stopped.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import taskq
from taskq import Registry, Snooze
from tests.support.worker_actors import record

registry = Registry()


@registry.actor(idempotent=True)
async def remember(key: str) -> str:
    record("run", key)
    return key


@registry.actor(queue="held", idempotent=True)
async def held(key: str, release_dir: str) -> str:
    """Runs until the file ``release_dir/key`` exists."""
    record("start", key)
    while not (Path(release_dir) / key).exists():  # noqa: ASYNC110 (another process writes it)
        await asyncio.sleep(0.02)
    record("end", key)
    return key


@registry.actor(queue="limited", idempotent=True)
async def tracked(key: str, hold: float = 0.05) -> str:
    """Records its start and end; takes ``hold`` seconds in between."""
    record("start", key)
    try:
        await asyncio.sleep(hold)
    finally:
        record("end", key)
    return key


@registry.actor(queue="limited", idempotent=True)
def tracked_sync(key: str, hold: float = 0.05) -> str:
    record("start", key)
    try:
        time.sleep(hold)
    finally:
        record("end", key)
    return key


def ledger(path: str | Path) -> list[tuple[str, str]]:
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []
    return [(parts[0], parts[1]) for parts in (line.split() for line in lines)]


def peak_overlap(path: str | Path, prefix: str = "") -> int:
    """The most runs (keys starting with ``prefix``) that were between start and end at once."""
    running = peak = 0
    for event, key in ledger(path):
        if not key.startswith(prefix):
            continue
        if event == "start":
            running += 1
            peak = max(peak, running)
        elif event == "end":
            running -= 1
    return peak


def count(path: str | Path, event: str, prefix: str = "") -> int:
    return sum(1 for e, k in ledger(path) if e == event and k.startswith(prefix))


def pids_of(path: str | Path, event: str) -> set[str]:
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return set()
    return {line.split()[2] for line in lines if line.split()[0] == event}


@registry.actor(queue="snoozy", max_snoozes=3)
async def snoozer(key: str, times: int, seconds: float = 0.05, returned: bool = False) -> str:
    """Snoozes ``times`` times (counted in the ledger), then succeeds."""
    if count_key(key, "snooze") < times:
        record("snooze", key)
        if returned:
            return Snooze(seconds)  # type: ignore[return-value]
        raise Snooze(seconds)
    record("run", key)
    return key


@registry.actor(queue="snoozy", max_snoozes=3)
def snoozer_sync(key: str, times: int, seconds: float = 0.05) -> str:
    if count_key(key, "snooze") < times:
        record("snooze", key)
        raise Snooze(seconds)
    record("run", key)
    return key


def count_key(key: str, event: str) -> int:
    path = os.environ.get("TASKQ_TEST_RUNS")
    return 0 if not path else sum(1 for e, k in ledger(path) if e == event and k == key)


@registry.actor(queue="held", idempotent=True, max_attempts=5)
async def stoppable(key: str, release_dir: str) -> str:
    """Runs until released; a cancel's CancelledError runs its cleanup."""
    record("start", key)
    try:
        while not (Path(release_dir) / key).exists():  # noqa: ASYNC110 (another process writes it)
            await asyncio.sleep(0.02)
    except asyncio.CancelledError:
        record("cleanup", key)
        raise
    record("end", key)
    return key


@registry.actor(queue="held", idempotent=True, max_attempts=5)
def stoppable_sync(key: str, release_dir: str) -> str:
    """Runs until released or until it sees its cancel (a thread cannot be killed)."""
    record("start", key)
    while not (Path(release_dir) / key).exists():
        if taskq.current_job().cancel_requested:
            record("saw-cancel", key)
            return "stopped early"
        time.sleep(0.02)
    record("end", key)
    return key


@registry.actor(queue="cpu", cpu_bound=True, idempotent=True)
def spin(key: str, release_dir: str) -> str:
    """A cpu_bound job that runs until released (or until its process is killed)."""
    record("start", key)
    while not (Path(release_dir) / key).exists():
        time.sleep(0.02)
    record("end", key)
    return key


@registry.actor(queue="held", idempotent=True)
async def stubborn(key: str) -> str:
    """Swallows the first cancel and goes on; the next one (after the grace) ends it."""
    record("start", key)
    ignored = False
    while True:
        try:
            await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            if ignored:
                record("cleanup", key)
                raise
            ignored = True
            record("ignored", key)
