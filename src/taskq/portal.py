"""A private event loop on a daemon thread: how the synchronous ``taskq.Client`` runs
the async implementation for code that has no event loop of its own."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class Portal:
    """A private event loop on a daemon thread; ``call`` runs a coroutine on it."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="taskq-client", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop in a copy of the caller's context (its contextvars:
        the current OpenTelemetry span, log context) and wait for its result."""
        context = contextvars.copy_context()
        result: Future[T] = Future()

        def settle(task: asyncio.Task[T]) -> None:
            if task.cancelled():
                result.cancel()
            elif (exc := task.exception()) is not None:
                result.set_exception(exc)
            else:
                result.set_result(task.result())

        def start() -> None:
            self._loop.create_task(coro, context=context).add_done_callback(settle)

        self._loop.call_soon_threadsafe(start)
        return result.result()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_closed() and not self._thread.is_alive():
            self._loop.close()
