"""Maintenance every worker takes part in: rescue expired leases, prune old rows.

Every ``interval`` seconds ``store.rescue_expired`` applies the crash rules to running
jobs whose lease expired (their worker stopped heartbeating: SIGKILL, a lost host). The
store lets one sweeper at a time do it across all workers. Every ``prune_interval``
seconds it deletes succeeded jobs older than the retention and worker rows silent for
longer than ``retention_workers``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from datetime import timedelta

from .. import metrics
from ..exceptions import StoreError
from ..jobs import JobState, RescuedJob
from ..logs import get_logger
from ..store import Store
from .outage import StoreBackoff

log = get_logger(__name__)

LEASE_EXPIRED = "lease expired"


def count_rescued(rescued: Sequence[RescuedJob], detected_by: str) -> None:
    """Metrics and one log line per rescued job."""
    for job in rescued:
        result = "queued" if job.state == JobState.QUEUED else (job.dead_reason or "dead")
        metrics.jobs_rescued.labels(detected_by, result).inc()
        if job.state != JobState.QUEUED:
            metrics.pool_items_dead_lettered.labels(job.actor, job.dead_reason or "crashed").inc()
        log.warning("job-rescued", job=str(job.id), actor=job.actor, detected_by=detected_by,
                    state=job.state, dead_reason=job.dead_reason, crash_count=job.crash_count)


class Sweeper:
    def __init__(self, store: Store, *, interval: float, prune_interval: float,
                 retention_succeeded: float, retention_workers: float) -> None:
        self.store = store
        self.interval = interval
        self.prune_interval = prune_interval
        self.retention_succeeded = retention_succeeded
        self.retention_workers = retention_workers
        self.sweeps = 0
        self._backoff = StoreBackoff("sweeper")
        self._next_prune = time.monotonic() + prune_interval * random.random()

    async def run(self) -> None:
        while True:
            try:
                await self.sweep()
            except StoreError as exc:
                await asyncio.sleep(self._backoff.failed(exc))
                continue
            self._backoff.succeeded()
            # a little jitter keeps the workers of one deployment from sweeping in step
            await asyncio.sleep(self.interval * (0.75 + random.random() / 2))

    async def sweep(self) -> None:
        rescued = await self.store.rescue_expired(LEASE_EXPIRED)
        if rescued:
            count_rescued(rescued, "lease_expired")
        self.sweeps += 1
        if time.monotonic() >= self._next_prune:
            await self.prune()
            self._next_prune = time.monotonic() + self.prune_interval

    async def prune(self) -> None:
        now = await self.store.now()
        jobs, workers = await self.store.prune(
            succeeded_before=now - timedelta(seconds=self.retention_succeeded),
            workers_before=now - timedelta(seconds=self.retention_workers),
        )
        if jobs or workers:
            log.info("pruned", succeeded_jobs=jobs, worker_rows=workers)
