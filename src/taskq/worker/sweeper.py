"""Maintenance every worker takes part in: rescue expired leases, prune old rows.

Every ``interval`` seconds ``store.rescue_expired`` applies the crash rules to running
jobs whose lease expired (their worker stopped heartbeating: SIGKILL, a lost host). The
store lets one sweeper at a time do it across all workers. Every ``prune_interval``
seconds it deletes succeeded, dead and cancelled jobs older than their retention
(``retention_succeeded``, ``retention_dead``, ``retention_cancelled``; None keeps them)
and worker rows silent for longer than ``retention_workers``.

Two rules keep a store outage from being mistaken for dead workers:

* a sweeper never rescues its own worker's runs (``exclude_worker``): it knows they are
  alive, whatever their lease says after the heartbeat could not reach the store;
* after its own outage it waits ``quiet_after_outage`` (one lease) before rescuing
  anything, so that every live worker's heartbeat has the time to reach the store again
  and extend the leases that lapsed while nobody could.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

from .. import metrics
from ..exceptions import StoreError
from ..jobs import JobState, RescuedJob
from ..logs import get_logger
from ..store import Store
from .outage import StoreBackoff
from .part import Stoppable, StopSignal

log = get_logger(__name__)

LEASE_EXPIRED = "lease expired"


def count_rescued(rescued: Sequence[RescuedJob], detected_by: str) -> None:
    """Metrics and one log line per rescued job."""
    for job in rescued:
        if job.state in (JobState.QUEUED, JobState.CANCELLED):  # cancelled: it was asked to
            result = str(job.state)
        else:
            result = job.dead_reason or "dead"
        metrics.jobs_rescued.labels(detected_by, result).inc()
        if job.state == JobState.DEAD:
            metrics.pool_items_dead_lettered.labels(job.actor, job.dead_reason or "crashed").inc()
        log.warning(
            "job-rescued",
            job=str(job.id),
            actor=job.actor,
            detected_by=detected_by,
            state=job.state,
            dead_reason=job.dead_reason,
            crash_count=job.crash_count,
        )


class Sweeper(Stoppable):
    name = "sweeper"
    stop_timeout = 2.0  # a rescue or prune in hand; then it is cancelled (a rollback)

    def __init__(
        self,
        store: Store,
        *,
        interval: float,
        prune_interval: float,
        retention_succeeded: float,
        retention_workers: float,
        retention_dead: float | None = None,
        retention_cancelled: float | None = None,
        worker_id: UUID | None = None,
        quiet_after_outage: float = 0.0,
    ) -> None:
        self.store = store
        self.worker_id = worker_id
        self.quiet_after_outage = quiet_after_outage
        self._quiet_until = 0.0
        self.interval = interval
        self.prune_interval = prune_interval
        self.retention_succeeded = retention_succeeded
        self.retention_workers = retention_workers
        self.retention_dead = retention_dead
        self.retention_cancelled = retention_cancelled
        self.sweeps = 0
        self._backoff = StoreBackoff("sweeper")
        self._next_prune = time.monotonic() + prune_interval * random.random()
        self._stopped = StopSignal()

    async def run(self) -> None:
        while not self._stopped:
            try:
                if self._backoff.in_outage:
                    await self.store.ping()  # back: give the heartbeats a lease to catch up
                    self._quiet_until = time.monotonic() + self.quiet_after_outage
                else:
                    await self.sweep()
            except StoreError as exc:
                await self._stopped.sleep(self._backoff.failed(exc))
                continue
            self._backoff.succeeded()
            # a little jitter keeps the workers of one deployment from sweeping in step
            await self._stopped.sleep(self.interval * (0.75 + random.random() / 2))

    async def sweep(self) -> None:
        if time.monotonic() < self._quiet_until:
            return
        rescued = await self.store.rescue_expired(LEASE_EXPIRED, exclude_worker=self.worker_id)
        if rescued:
            count_rescued(rescued, "lease_expired")
        self.sweeps += 1
        if time.monotonic() >= self._next_prune:
            await self.prune()
            self._next_prune = time.monotonic() + self.prune_interval

    async def prune(self) -> None:
        now = await self.store.now()

        def before(retention: float | None) -> datetime | None:
            return None if retention is None else now - timedelta(seconds=retention)

        jobs, workers = await self.store.prune(
            succeeded_before=now - timedelta(seconds=self.retention_succeeded),
            workers_before=now - timedelta(seconds=self.retention_workers),
            dead_before=before(self.retention_dead),
            cancelled_before=before(self.retention_cancelled),
        )
        if jobs or workers:
            log.info("pruned", jobs=jobs, worker_rows=workers)
