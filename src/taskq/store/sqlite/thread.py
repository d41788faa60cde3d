"""The SQLite store's one thread: calls are queued to it and answered on the caller's loop.

Every call of a ``SqliteStore`` runs here, on its one connection, so the event loop
never blocks on the file.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if not future.cancelled():
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)


class StoreThread:
    """The store's one thread: calls are queued to it and answered on the caller's loop.

    What ``run_in_executor`` on a one-thread ``ThreadPoolExecutor`` did, without its
    two futures, condition and callback chain per call: a call is a tuple on a
    ``SimpleQueue`` and a ``call_soon_threadsafe`` back (~40% of a single enqueue's
    client CPU went to crossing threads). A call cancelled before it starts is not run."""

    def __init__(self, name: str) -> None:
        self._calls: SimpleQueue[tuple[Any, ...] | None] = SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._calls.put((loop, future, fn, args))
        return future

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            loop, future, fn, args = call
            if future.cancelled():
                continue
            result = error = None
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the caller, as a future would
                error = exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the caller's loop is closed: nobody waits any more
                pass
            del call, future, result, error

    def shutdown(self) -> None:
        """No more calls: the thread ends after the ones queued."""
        self._calls.put(None)
