"""The SQLite store's one thread (``StoreThread``): calls run there, in order, one at a
time; results and errors come back to the caller's loop; a call cancelled before it
starts is not run."""

from __future__ import annotations

import asyncio
import threading

import pytest

from taskq.store.sqlite.thread import StoreThread


async def test_calls_run_on_the_thread_in_order_and_answer_on_the_loop() -> None:
    worker = StoreThread("test-store-thread")
    try:
        seen: list[tuple[int, str]] = []

        def call(i: int) -> int:
            seen.append((i, threading.current_thread().name))
            return i * 2

        results = await asyncio.gather(*(worker.submit(call, i) for i in range(50)))
        assert results == [i * 2 for i in range(50)]
        assert seen == [(i, "test-store-thread") for i in range(50)]
    finally:
        worker.shutdown()


async def test_errors_reach_the_caller() -> None:
    worker = StoreThread("test-store-thread")
    try:

        def fail() -> None:
            raise KeyError("boom")

        with pytest.raises(KeyError, match="boom"):
            await worker.submit(fail)
        assert await worker.submit(int, "7") == 7  # the thread goes on
    finally:
        worker.shutdown()


async def test_a_call_cancelled_before_it_starts_is_not_run() -> None:
    worker = StoreThread("test-store-thread")
    try:
        release = threading.Event()
        ran: list[str] = []
        blocker = worker.submit(release.wait, 20.0)  # holds the thread
        queued = worker.submit(ran.append, "queued")
        queued.cancel()
        release.set()
        assert await blocker is True
        assert await worker.submit(ran.append, "after") is None
        assert ran == ["after"]
    finally:
        worker.shutdown()


def test_an_answer_for_a_closed_loop_is_dropped_and_the_thread_goes_on() -> None:
    worker = StoreThread("test-store-thread")
    try:
        release = threading.Event()
        loop = asyncio.new_event_loop()

        async def start() -> asyncio.Future[bool]:
            return worker.submit(release.wait, 20.0)

        pending = loop.run_until_complete(start())
        loop.close()  # the caller is gone before the answer
        release.set()
        del pending
        assert asyncio.run(_one(worker)) == 3
    finally:
        worker.shutdown()


async def _one(worker: StoreThread) -> int:
    return await worker.submit(len, "abc")
