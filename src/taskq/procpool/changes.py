"""``Changes``: one wake-up for everything in the pool that waits on the pool's state.

Whoever changes something others may wait for (a slot turned idle or went down, the
breaker moved, ``stop`` began) calls ``notify``; waiters re-check their condition after
``wait`` returns, so a wake-up that was not for them costs one check.
"""

from __future__ import annotations

import asyncio
import contextlib


class Changes:
    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, timeout: float | None = None) -> None:
        """Until the next ``notify`` (or ``timeout`` seconds, whichever comes first)."""
        event = self._event
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)
