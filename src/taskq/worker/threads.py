"""Sync actors run here, in daemon threads: never on the event loop.

A small pool rather than ``ThreadPoolExecutor`` for one reason: a sync job past its
timeout cannot be stopped, and its thread must neither block the process from exiting
(these are daemon threads) nor take a slot from the jobs that come after it (a new
thread starts whenever no idle one is left, so at most ``consumers`` threads are busy
with live jobs, plus however many abandoned ones are still running).

As a worker part it does nothing until stopped, then stops its idle threads.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

from ..lifecycle import Stoppable, StopSignal

_STOP = object()


class ThreadRunner(Stoppable):
    name = "threads"
    stop_timeout = None  # returns at once

    def __init__(self, thread_name: str = "taskq-sync") -> None:
        self._name = thread_name
        self._stopped = StopSignal()
        self._work: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads: list[threading.Thread] = []
        self._closed = False

    @property
    def threads(self) -> int:
        return sum(1 for t in self._threads if t.is_alive())

    def submit(
        self, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]
    ) -> asyncio.Future[Any]:
        """Run ``fn(*args, **kwargs)`` in a thread, in a copy of the caller's context (so
        the job's log fields reach the actor's records); the future resolves on this loop."""
        if self._closed:
            raise RuntimeError("the sync-actor thread pool is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
            else:
                self._start_thread()
        self._work.put((contextvars.copy_context(), fn, args, kwargs, loop, future))
        return future

    def _start_thread(self) -> None:
        self._threads = [t for t in self._threads if t.is_alive()]
        thread = threading.Thread(
            target=self._serve, name=f"{self._name}-{len(self._threads)}", daemon=True
        )
        self._threads.append(thread)
        thread.start()

    def _serve(self) -> None:
        while True:
            item = self._work.get()
            if item is _STOP:
                return
            context, fn, args, kwargs, loop, future = item
            try:
                result = context.run(fn, *args, **kwargs)
            except BaseException as exc:  # delivered to the awaiting consumer
                _deliver(loop, future, None, exc)
            else:
                _deliver(loop, future, result, None)
            del item, context, fn, args, kwargs, future
            with self._lock:
                self._idle += 1

    async def run(self) -> None:
        try:
            await self._stopped.wait()
        finally:
            self.close()

    def close(self) -> None:
        """Stop idle threads; busy ones finish their job and stop (they are daemons)."""
        self._closed = True
        for _ in self._threads:
            self._work.put(_STOP)


def _deliver(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    exc: BaseException | None,
) -> None:
    def settle() -> None:
        if future.done():  # timed out or cancelled meanwhile: nobody waits any more
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:  # the loop is closed: the process is exiting
        pass
