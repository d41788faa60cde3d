"""The one restart policy every supervisor in taskq uses.

Consumer tasks (worker/supervisor.py), CPU pool processes (procpool/) and worker
processes (workgroup/) all decide "how long until the replacement, or give up?" here.
The delays and the window are ``taskq.backoff``'s ``Backoff`` and ``RollingWindow``.

* Exponential backoff: the n-th consecutive failure has a ceiling of
  ``min(maximum, initial * factor ** (n - 1))``.
* Full jitter: the delay is ``random() * ceiling``, so members that die together do not
  restart in lockstep.
* Burst limit: more than ``burst_limit`` failures within ``burst_window`` seconds latches
  the policy: ``on_failure`` answers ``give_up`` from then on, for good.
* Reset: the consecutive-failure count (the exponent) resets when the replacement
  *recovered* (``on_success``), not on its construction, and also when no failure
  happened for ``stable_after`` seconds (default: the burst window).

What "recovered" means, one rule per ring (``Recovered``; the only calls of
``on_success``):

=====================  =========================================================
consumer task          it finished a job, whatever the job's outcome (a failing
                       job is the job's fault, not the consumer's)
CPU pool process       it came back alive from a job, whatever the job's outcome
workgroup child        its worker row passed a database health check (health
                       checks are off by default: then only the quiet period
                       of ``stable_after`` resets it)
=====================  =========================================================

The clock and the random source are injectable so tests never sleep. One policy object
per supervised member (per consumer index, per pool slot, per workgroup child): one bad
member never trips the limit for its healthy siblings. What a ring does when a member's
policy gives up is the ring's own rule: the task supervisor leaves that consumer down
and trips its crash-loop guard when every consumer has given up; the pool opens its
breaker; the workgroup latches that child.
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from .backoff import Backoff, RollingWindow


class Recovered(enum.Enum):
    """What counts as a replacement's first success, one rule per ring (see above)."""

    FINISHED_A_JOB = "consumer: finished a job, whatever the job's outcome"
    SURVIVED_A_JOB = "pool process: came back alive from a job, whatever its outcome"
    PASSED_A_HEALTH_CHECK = "workgroup child: its worker row passed a health check"


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
        if burst_limit < 0 or burst_window <= 0:
            raise ValueError("burst_limit must be >= 0 and burst_window > 0")
        self._backoff = Backoff(initial=initial, factor=factor, maximum=maximum, rng=rng)
        self._recent = RollingWindow(burst_window, clock=clock)
        self.initial = initial
        self.factor = factor
        self.maximum = maximum
        self.burst_limit = burst_limit
        self.burst_window = burst_window
        self.stable_after = burst_window if stable_after is None else stable_after
        self._clock = clock
        self._last_failure: float | None = None
        self.latched = False

    @property
    def consecutive_failures(self) -> int:
        return self._backoff.failures

    def ceiling(self, attempt: int) -> float:
        """The largest delay the ``attempt``-th consecutive failure can get."""
        return self._backoff.ceiling(attempt)

    def on_failure(self) -> RestartDecision:
        now = self._clock()
        if self._last_failure is not None and now - self._last_failure >= self.stable_after:
            self._backoff.reset()  # it had been stable: a fresh start
        self._last_failure = now
        recent = self._recent.add()
        delay = self._backoff.failed()
        if self.latched or recent > self.burst_limit:
            self.latched = True
            return RestartDecision(True, 0.0, self._backoff.failures, recent)
        return RestartDecision(False, delay, self._backoff.failures, recent)

    def on_success(self, evidence: Recovered) -> None:
        """The replacement recovered (``evidence``, its ring's rule): the next failure
        starts the backoff afresh. The burst window is not forgotten."""
        self._backoff.reset()
