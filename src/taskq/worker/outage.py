"""Backing off on a dead dependency instead of restarting against it.

When the store is unreachable (Postgres restarting, a backend killed), the fetcher, the
acker, the heartbeat, the rescuer and the pruner each wait and try again through one
``StoreBackoff`` apiece. The outage is logged once when it starts and once when it ends,
never once per attempt; consumers are not crashed and no job is charged.
"""

from __future__ import annotations

import time

from ..backoff import Backoff
from ..events import STORE_RECOVERED, STORE_UNAVAILABLE
from ..logs import get_logger

log = get_logger(__name__)


class StoreBackoff:
    """Delays for retrying one part's store calls through an outage."""

    def __init__(self, part: str, *, initial: float = 0.05, maximum: float = 2.0) -> None:
        self.part = part
        self._backoff = Backoff(initial=initial, maximum=maximum)  # no limit, no give-up
        self._down_since: float | None = None
        self._failures = 0

    @property
    def in_outage(self) -> bool:
        return self._down_since is not None

    def failed(self, exc: BaseException) -> float:
        """Record a failed call; return how long to wait before the next one."""
        self._failures += 1
        if self._down_since is None:
            self._down_since = time.monotonic()
            log.event(
                STORE_UNAVAILABLE,
                part=self.part,
                error=f"{type(exc).__name__}: {exc}",
            )
        return self._backoff.failed()

    def succeeded(self) -> None:
        """A call went through: end the outage (logged once) and reset the backoff."""
        if self._down_since is not None:
            log.event(
                STORE_RECOVERED,
                part=self.part,
                down_for=round(time.monotonic() - self._down_since, 3),
                attempts=self._failures,
            )
            self._down_since = None
            self._failures = 0
            self._backoff.reset()
