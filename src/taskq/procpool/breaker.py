"""The pool's circuit breaker: too many breaks in a window pause CPU-bound work.

States::

    closed --(more than `threshold` breaks within `window` s)--> open
    open --(`cooldown` s later)--> half_open
    half_open --(the one probe succeeds)--> closed
    half_open --(the probe breaks)--> open (a fresh cooldown)

While open, nothing runs: the pool answers ``BreakerOpen`` at once and the worker leaves
the jobs queued, uncharged. Half-open lets exactly one probe through; everything else
still gets ``BreakerOpen`` until the probe's verdict. The clock is injectable so the whole
cycle is tested without sleeping through a cooldown.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Callable


class BreakerState(enum.Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Admission(enum.Enum):
    """What ``admit`` allows: a normal run, the half-open probe, or nothing."""

    RUN = "run"
    PROBE = "probe"
    REFUSED = "refused"


class Breaker:
    def __init__(
        self,
        *,
        threshold: int,
        window: float,
        cooldown: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if threshold < 0 or window <= 0 or cooldown < 0:
            raise ValueError("breaker: threshold must be >= 0, window > 0, cooldown >= 0")
        self.threshold = threshold
        self.window = window
        self.cooldown = cooldown
        self._clock = clock
        self._breaks: deque[float] = deque()
        self._opened_at: float | None = None
        self._probe_out = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._probe_out or self._clock() - self._opened_at >= self.cooldown:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    @property
    def refusing(self) -> bool:
        """True while a caller would be refused: open, or half-open with the probe out."""
        state = self.state
        return state is BreakerState.OPEN or (state is BreakerState.HALF_OPEN and self._probe_out)

    @property
    def recent_breaks(self) -> int:
        self._forget_old(self._clock())
        return len(self._breaks)

    def _forget_old(self, now: float) -> None:
        while self._breaks and now - self._breaks[0] > self.window:
            self._breaks.popleft()

    def admit(self) -> Admission:
        state = self.state
        if state is BreakerState.CLOSED:
            return Admission.RUN
        if state is BreakerState.HALF_OPEN and not self._probe_out:
            self._probe_out = True
            return Admission.PROBE
        return Admission.REFUSED

    def record_break(self) -> bool:
        """Count one break. True when this break opened (or re-opened) the breaker."""
        now = self._clock()
        self._breaks.append(now)
        self._forget_old(now)
        if self._opened_at is not None:
            if self._probe_out or now - self._opened_at >= self.cooldown:
                return self._open(now)  # a break while half-open: the probe failed
            return False  # already open
        if len(self._breaks) > self.threshold:
            return self._open(now)
        return False

    def trip(self) -> bool:
        """Open now, whatever the count (a member gave up). True if it was not open."""
        if self.state is BreakerState.OPEN:
            return False
        return self._open(self._clock())

    def _open(self, now: float) -> bool:
        self._opened_at = now
        self._probe_out = False
        return True

    def probe_succeeded(self) -> None:
        """The probe ran without a break: close, and forget the breaks that opened it."""
        self._opened_at = None
        self._probe_out = False
        self._breaks.clear()

    def probe_abandoned(self) -> None:
        """The probe ended with no verdict (refused, cancelled): let another one try."""
        self._probe_out = False
