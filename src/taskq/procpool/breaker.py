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

``Breaker`` is the state machine alone; ``PoolBreaker`` is the pool's use of it: it
counts each break in ``taskq_process_pool_breaks_total{cause}``, keeps the
``taskq_process_pool_breaker_open`` gauge and logs every transition.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable

from .. import metrics
from ..backoff import RollingWindow
from ..events import (
    PROCESS_POOL_BREAKER_CLOSED,
    PROCESS_POOL_BREAKER_HALF_OPEN,
    PROCESS_POOL_BREAKER_OPEN,
)
from ..logs import get_logger
from .causes import DeathReport
from .changes import Changes

log = get_logger(__name__)


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
        self._breaks = RollingWindow(window, clock=clock)
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
        return self._breaks.count()

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
        recent = self._breaks.add()
        if self._opened_at is not None:
            if self._probe_out or now - self._opened_at >= self.cooldown:
                return self._open(now)  # a break while half-open: the probe failed
            return False  # already open
        if recent > self.threshold:
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


class PoolBreaker:
    """The pool's breaker with its metrics and logs; every transition notifies ``changes``."""

    def __init__(
        self, breaker: Breaker, changes: Changes, paused_actors: Callable[[], list[str]]
    ) -> None:
        self._breaker = breaker
        self._changes = changes
        self._paused_actors = paused_actors
        self._gauge_on = False

    @property
    def state(self) -> BreakerState:
        return self._breaker.state

    @property
    def refusing(self) -> bool:
        return self._breaker.refusing

    def admit(self, actor: str, job_id: str | None) -> Admission:
        admission = self._breaker.admit()
        if admission is Admission.PROBE:
            log.event(PROCESS_POOL_BREAKER_HALF_OPEN, job=job_id, actor=actor)
            self._changes.notify()
        return admission

    def record_break(self, report: DeathReport) -> None:
        """A process broke (a job's death, a failed initializer): count it; maybe open."""
        metrics.process_pool_breaks.labels(cause=report.label).inc()
        breaker = self._breaker
        if breaker.record_break():
            log.event(
                PROCESS_POOL_BREAKER_OPEN,
                breaks=breaker.recent_breaks,
                threshold=breaker.threshold,
                window=breaker.window,
                cooldown=breaker.cooldown,
                last_cause=report.cause,
                paused_actors=self._paused_actors(),
            )
            self._set_gauge(True)
        self._changes.notify()

    def trip(self) -> None:
        """Open now (a slot's restart policy gave up)."""
        if self._breaker.trip():
            self._set_gauge(True)
        self._changes.notify()

    def probe_succeeded(self) -> None:
        self._breaker.probe_succeeded()
        log.event(PROCESS_POOL_BREAKER_CLOSED)
        self._set_gauge(False)
        self._changes.notify()

    def probe_abandoned(self) -> None:
        self._breaker.probe_abandoned()
        self._changes.notify()

    def close(self) -> None:
        """The pool closed: its breaker no longer holds anything back."""
        self._set_gauge(False)

    def _set_gauge(self, on: bool) -> None:
        if on and not self._gauge_on:
            metrics.process_pool_breaker_open.inc()
        elif not on and self._gauge_on:
            metrics.process_pool_breaker_open.dec()
        self._gauge_on = on
