"""Actors (and a middleware) the worker tests run, in-process and in real subprocesses.

Runs are recorded by appending ``<event> <key> <pid>`` lines to the file named by
``TASKQ_TEST_RUNS`` (O_APPEND writes are atomic), so a double run is detectable on both
stores and across processes.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from pathlib import Path

from taskq import Registry, RetryBackoff
from taskq.jobs import ClaimedJob
from taskq.worker import Middleware

registry = Registry()
FAST = RetryBackoff(initial=0.01, factor=2.0, maximum=0.05)


def record(event: str, key: str) -> None:
    path = os.environ.get("TASKQ_TEST_RUNS")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{event} {key} {os.getpid()}\n".encode())
        finally:
            os.close(fd)


def runs(path: str | Path, event: str = "run") -> list[str]:
    """Keys recorded for ``event``, one entry per run."""
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []
    return [line.split()[1] for line in lines if line.split()[0] == event]


async def started(path: str | Path, key: str) -> bool:
    """Whether the job ``key`` has started (a predicate for ``async_wait_until``)."""
    return key in runs(path, "start")


@registry.actor
async def noop() -> None:
    return None


@registry.actor(idempotent=True)
async def remember(key: str) -> dict:
    record("run", key)
    return {"key": key, "pid": os.getpid()}


@registry.actor(idempotent=True)
def remember_sync(key: str) -> dict:
    record("run", key)
    return {"key": key, "pid": os.getpid()}


@registry.actor(max_attempts=3, retry_backoff=FAST)
async def always_fails(key: str) -> None:
    record("run", key)
    raise ValueError(f"boom {key}")


@registry.actor(max_attempts=2, retry_backoff=FAST)
async def flaky(key: str) -> str:
    record("run", key)
    if random.random() < 0.5:
        raise RuntimeError(f"flaky {key}")
    return key


async def _until_released(key: str, release_dir: str) -> None:
    record("start", key)
    while not (Path(release_dir) / key).exists():  # noqa: ASYNC110 (another process writes it)
        await asyncio.sleep(0.02)


@registry.actor(queue="held", idempotent=True, max_crashes=2)
async def held_idempotent(key: str, release_dir: str) -> dict:
    """Runs until the file ``release_dir/key`` exists."""
    await _until_released(key, release_dir)
    record("run", key)
    return {"key": key, "pid": os.getpid()}


@registry.actor(queue="held", idempotent=False)
async def held_once(key: str, release_dir: str) -> dict:
    await _until_released(key, release_dir)
    record("run", key)
    return {"key": key, "pid": os.getpid()}


@registry.actor(queue="held", idempotent=True)
def held_sync(key: str, release_dir: str) -> dict:
    record("start", key)
    while not (Path(release_dir) / key).exists():
        time.sleep(0.02)
    record("run", key)
    return {"key": key, "pid": os.getpid()}


@registry.actor(timeout=0.2, max_attempts=1)
async def async_too_slow(key: str) -> None:
    record("start", key)
    await asyncio.sleep(30)


@registry.actor(timeout=0.2, max_attempts=1)
def sync_too_slow(key: str, release_dir: str) -> None:
    record("start", key)
    while not (Path(release_dir) / key).exists():
        time.sleep(0.02)


@registry.actor
async def blocks_the_loop(seconds: float) -> None:
    time.sleep(seconds)  # noqa: ASYNC251 (the bug the lag monitor exists for)


@registry.actor
async def huge_result(size: int) -> str:
    return "x" * size


@registry.actor(queue="faulty")
async def consumer_fault(key: str) -> None:
    """FaultMiddleware kills the consumer before every job of this actor."""
    record("run", key)


@registry.actor(queue="faulty")
async def consumer_fault_once(key: str) -> None:
    """FaultMiddleware kills the consumer the first time this process sees the job."""
    record("run", key)


class ConsumerFault(BaseException):
    """Raised by FaultMiddleware: a consumer-level fault, not a job failure. Not an
    ``Exception``: the middleware chain logs those and carries on, this one goes through
    and kills the consumer."""


class FaultMiddleware(Middleware):
    def __init__(self) -> None:
        self.seen: set[object] = set()

    def before_job(self, job: ClaimedJob) -> None:
        if job.actor == "consumer_fault":
            raise ConsumerFault(f"injected consumer fault (job {job.id})")
        if job.actor == "consumer_fault_once" and job.id not in self.seen:
            self.seen.add(job.id)
            raise ConsumerFault(f"injected one-off consumer fault (job {job.id})")


fault_middleware = FaultMiddleware()


class BrokenHooks(Middleware):
    """Both hooks raise on every job (a metrics plugin whose backend is down)."""

    def before_job(self, job: ClaimedJob) -> None:
        raise RuntimeError("metrics backend unreachable")

    def after_job(self, job: ClaimedJob, outcome: object) -> None:
        raise RuntimeError("metrics backend unreachable")


broken_hooks = BrokenHooks()
