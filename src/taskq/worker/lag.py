"""Event-loop lag: measured on the loop, watched from a thread.

A task on the loop ticks every ``tick`` seconds and records how late each tick woke up
(``taskq_loop_lag_seconds``). A watchdog thread looks at the last tick: when the loop has
not ticked for more than ``warn_after`` seconds it logs ``event-loop-blocked`` at once,
while the loop is still stuck, naming the actors of the jobs running at that moment
(an async actor that blocks is the usual culprit).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from .. import metrics
from ..events import EVENT_LOOP_BLOCKED
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger

log = get_logger(__name__)


class LagMonitor(Stoppable):
    name = "lag-monitor"
    stop_timeout = 5.0

    def __init__(
        self, running_actors: Callable[[], list[str]], *, tick: float = 0.1, warn_after: float = 1.0
    ) -> None:
        self._running_actors = running_actors
        self.tick = tick
        self.warn_after = warn_after
        self._last_tick = time.monotonic()
        self._watchdog_stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.warnings = 0
        self._stopped = StopSignal()

    async def start(self) -> None:
        """Start the watchdog thread."""
        self._last_tick = time.monotonic()
        self._thread = threading.Thread(target=self._watch, name="taskq-lag-watchdog", daemon=True)
        self._thread.start()

    async def run(self) -> None:
        """The on-loop half: tick until stopped, then stop the watchdog thread."""
        try:
            while not self._stopped:
                before = time.monotonic()
                self._last_tick = before
                await asyncio.sleep(self.tick)
                lag = max(time.monotonic() - before - self.tick, 0.0)
                metrics.loop_lag.set(lag)
        finally:
            self._close()

    def _watch(self) -> None:
        warned_for = None
        while not self._watchdog_stop.wait(self.tick):
            last = self._last_tick
            stalled = time.monotonic() - last
            if stalled > self.warn_after and warned_for != last:
                warned_for = last
                self.warnings += 1
                log.event(
                    EVENT_LOOP_BLOCKED,
                    blocked_for=round(stalled, 3),
                    running_actors=self._snapshot(),
                )

    def _snapshot(self) -> list[str]:
        for _ in range(3):  # the loop may be mutating the running set right now
            try:
                return self._running_actors()
            except RuntimeError:
                continue
        return []

    def _close(self) -> None:
        self._watchdog_stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
