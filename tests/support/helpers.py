"""Waiting without sleeping blind: poll a condition until a deadline, then say what failed.
And ``claimed_job()``: a job as a worker part receives it, for tests that need no store;
``start_script()``: a Python script in its own process (a producer racing others);
``migrated_store()`` / ``migrate()``: a store on a schema, migrated; ``FakeClock``: a
monotonic clock that moves only when told."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TypeVar

from taskq.ids import uuid7
from taskq.jobs import ClaimedJob
from taskq.store import Store, create_store

T = TypeVar("T")


class FakeClock:
    """A ``time.monotonic`` stand-in for a part that takes a ``clock``: ``advance`` moves it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float = 20.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    deadline = time.monotonic() + timeout
    last: T = condition()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what}; last value: {last!r}"
            )
        time.sleep(interval)
        last = condition()
    return last


async def async_wait_until(
    condition: Callable[[], Awaitable[T]],
    *,
    timeout: float = 20.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    deadline = time.monotonic() + timeout
    last = await condition()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what}; last value: {last!r}"
            )
        await asyncio.sleep(interval)
        last = await condition()
    return last


def claimed_job(actor: str = "a", queue: str = "q") -> ClaimedJob:
    """A freshly claimed job (attempt 1, no crashes), with its own id."""
    return ClaimedJob(
        id=uuid7(),
        actor=actor,
        queue=queue,
        args_json="[]",
        kwargs_json="{}",
        attempt=1,
        max_attempts=3,
        crash_count=0,
        max_crashes=2,
        idempotent=True,
    )


def start_script(source: str, *argv: str, env: Mapping[str, str]) -> subprocess.Popen[str]:
    """``python -c source argv...`` with ``env``; stdout and stderr captured as text."""
    return subprocess.Popen(
        [sys.executable, "-c", source, *argv],
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@asynccontextmanager
async def migrated_store(
    dsn: str, schema: str, direct_dsn: str | None = None
) -> AsyncIterator[Store]:
    """A store on ``dsn``/``schema``, opened and migrated; closed afterwards."""
    store = create_store(dsn, schema, direct_dsn=direct_dsn)
    await store.open()
    try:
        await store.migrate()
        yield store
    finally:
        await store.close()


async def migrate(dsn: str, schema: str) -> None:
    """Create or upgrade the schema at ``dsn``/``schema``."""
    async with migrated_store(dsn, schema):
        pass
