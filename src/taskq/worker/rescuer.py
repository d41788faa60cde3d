"""The rescuer: every worker's part that ends the runs of dead workers.

Every ``interval`` seconds (jittered) ``store.rescue_expired`` applies the crash rules to
running jobs whose lease expired (their worker stopped heartbeating: SIGKILL, a lost
host). The store lets one rescuer at a time do it across all workers. (River's
maintenance services read side by side: the rescuer and the pruner are separate parts.)

Two rules keep a store outage from being mistaken for dead workers:

* a rescuer never rescues its own worker's runs (``exclude_worker``): it knows they are
  alive, whatever their lease says after the heartbeat could not reach the store;
* after its own outage it waits ``quiet_after_outage`` (one lease) before rescuing
  anything, so that every live worker's heartbeat has the time to reach the store again
  and extend the leases that lapsed while nobody could.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from uuid import UUID

from ..events import JOB_RESCUED
from ..exceptions import StoreError
from ..jobs import JobState, RescuedJob
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..store import Store
from .outage import StoreBackoff

log = get_logger(__name__)

LEASE_EXPIRED = "lease expired"


def count_rescued(rescued: Sequence[RescuedJob], detected_by: str) -> None:
    """Metrics and one log line per rescued job."""
    for job in rescued:
        if job.state in (JobState.QUEUED, JobState.CANCELLED):  # cancelled: it was asked to
            result = str(job.state)
        else:
            result = job.dead_reason or "dead"
        log.event(
            JOB_RESCUED,
            job=str(job.id),
            actor=job.actor,
            queue=job.queue,
            detected_by=detected_by,
            result=result,
            state=job.state,
            dead_reason=job.dead_reason,
            crash_count=job.crash_count,
        )


class Rescuer(Stoppable):
    name = "rescuer"
    stop_timeout = 2.0  # a rescue in hand; then it is cancelled (a rollback)

    def __init__(
        self,
        store: Store,
        *,
        interval: float,
        worker_id: UUID | None = None,
        quiet_after_outage: float = 0.0,
    ) -> None:
        self.store = store
        self.interval = interval
        self.worker_id = worker_id
        self.quiet_after_outage = quiet_after_outage
        self._quiet_until = 0.0
        self.passes = 0
        self._backoff = StoreBackoff(self.name)
        self._stopped = StopSignal()

    async def run(self) -> None:
        while not self._stopped:
            try:
                if self._backoff.in_outage:
                    await self.store.ping()  # back: give the heartbeats a lease to catch up
                    self._quiet_until = time.monotonic() + self.quiet_after_outage
                else:
                    await self.rescue()
            except StoreError as exc:
                await self._stopped.sleep(self._backoff.failed(exc))
                continue
            self._backoff.succeeded()
            # a little jitter keeps the workers of one deployment from rescuing in step
            await self._stopped.sleep(self.interval * (0.75 + random.random() / 2))

    async def rescue(self) -> None:
        """One pass: the expired runs of other workers, by the crash rules."""
        if time.monotonic() < self._quiet_until:
            return
        rescued = await self.store.rescue_expired(LEASE_EXPIRED, exclude_worker=self.worker_id)
        if rescued:
            count_rescued(rescued, "lease_expired")
        self.passes += 1
