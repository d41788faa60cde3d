"""Two small pieces every retry loop in taskq shares.

* ``Backoff``: exponential delays with full jitter. The n-th consecutive failure waits
  ``random() * min(maximum, initial * factor ** (n - 1))``; ``reset`` starts it afresh.
  Used by ``RestartPolicy`` (restarting a member) and ``worker.outage.StoreBackoff``
  (retrying a store call through an outage: no limit, no give-up).
* ``RollingWindow``: how many events happened within the last ``window`` seconds (an
  event exactly ``window`` seconds old still counts). Used by ``RestartPolicy`` (the
  burst limit) and ``procpool.breaker.Breaker`` (breaks that open the breaker).

The clock and the random source are injectable so tests never sleep.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable


class Backoff:
    def __init__(
        self,
        *,
        initial: float,
        maximum: float,
        factor: float = 2.0,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if initial < 0 or maximum < 0:
            raise ValueError("backoff delays must be >= 0")
        if factor < 1.0:
            raise ValueError("backoff factor must be >= 1.0")
        self.initial = initial
        self.factor = factor
        self.maximum = maximum
        self._rng = rng
        self.failures = 0  # consecutive failures since the last reset

    def ceiling(self, attempt: int) -> float:
        """The largest delay the ``attempt``-th consecutive failure can get."""
        try:
            value = self.initial * self.factor ** max(attempt - 1, 0)
        except OverflowError:
            return self.maximum if self.initial > 0 else 0.0
        return min(self.maximum, value)

    def failed(self) -> float:
        """Count one more consecutive failure; return the delay before the next try."""
        self.failures += 1
        return self._rng() * self.ceiling(self.failures)

    def reset(self) -> None:
        self.failures = 0


class RollingWindow:
    def __init__(self, window: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if window <= 0:
            raise ValueError("a rolling window must be > 0 seconds")
        self.window = window
        self._clock = clock
        self._events: deque[float] = deque()

    def add(self) -> int:
        """Record one event now; return how many are in the window, this one included."""
        now = self._clock()
        self._events.append(now)
        self._forget(now)
        return len(self._events)

    def count(self) -> int:
        self._forget(self._clock())
        return len(self._events)

    def clear(self) -> None:
        self._events.clear()

    def _forget(self, now: float) -> None:
        events = self._events
        while events and now - events[0] > self.window:
            events.popleft()
