"""The one restart policy every supervisor in taskq uses.

Consumer tasks (worker/supervisor.py), CPU pool processes (procpool.py) and worker
processes (workgroup/) all decide "how long until the replacement, or give up?" here.

* Exponential backoff: the n-th consecutive failure has a ceiling of
  ``min(maximum, initial * factor ** (n - 1))``.
* Full jitter: the delay is ``random() * ceiling``, so members that die together do not
  restart in lockstep.
* Burst limit: more than ``burst_limit`` failures within ``burst_window`` seconds latches
  the policy: ``on_failure`` answers ``give_up`` from then on, for good.
* Reset: the consecutive-failure count (the exponent) resets on the first *success* of
  the replacement (``on_success``), not on its construction, and also when no failure
  happened for ``stable_after`` seconds (default: the burst window).

The clock and the random source are injectable so tests never sleep. One policy object
per supervised member: one bad member never trips the limit for its healthy siblings.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RestartDecision:
    give_up: bool
    delay: float  # seconds to wait before the replacement (0 when give_up)
    attempt: int  # consecutive failures so far, this one included
    recent: int  # failures inside the burst window, this one included


class RestartPolicy:
    def __init__(
        self,
        *,
        initial: float = 0.1,
        factor: float = 2.0,
        maximum: float = 10.0,
        burst_limit: int = 10,
        burst_window: float = 60.0,
        stable_after: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> None:
        if initial < 0 or maximum < 0:
            raise ValueError("backoff delays must be >= 0")
        if factor < 1.0:
            raise ValueError("backoff factor must be >= 1.0")
        if burst_limit < 0 or burst_window <= 0:
            raise ValueError("burst_limit must be >= 0 and burst_window > 0")
        self.initial = initial
        self.factor = factor
        self.maximum = maximum
        self.burst_limit = burst_limit
        self.burst_window = burst_window
        self.stable_after = burst_window if stable_after is None else stable_after
        self._clock = clock
        self._rng = rng
        self._recent: deque[float] = deque()
        self._consecutive = 0
        self._last_failure: float | None = None
        self.latched = False

    @property
    def consecutive_failures(self) -> int:
        return self._consecutive

    def ceiling(self, attempt: int) -> float:
        """The largest delay the ``attempt``-th consecutive failure can get."""
        try:
            value = self.initial * self.factor ** max(attempt - 1, 0)
        except OverflowError:
            return self.maximum if self.initial > 0 else 0.0
        return min(self.maximum, value)

    def on_failure(self) -> RestartDecision:
        now = self._clock()
        if self._last_failure is not None and now - self._last_failure >= self.stable_after:
            self._consecutive = 0  # it had been stable: a fresh start
        self._last_failure = now
        self._recent.append(now)
        while self._recent and now - self._recent[0] > self.burst_window:
            self._recent.popleft()
        self._consecutive += 1
        if self.latched or len(self._recent) > self.burst_limit:
            self.latched = True
            return RestartDecision(True, 0.0, self._consecutive, len(self._recent))
        delay = self._rng() * self.ceiling(self._consecutive)
        return RestartDecision(False, delay, self._consecutive, len(self._recent))

    def on_success(self) -> None:
        """The replacement did real work: the next failure starts the backoff afresh."""
        self._consecutive = 0
