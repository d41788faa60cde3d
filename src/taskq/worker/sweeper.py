"""Maintenance every worker takes part in: rescue expired leases, prune old rows.

Every ``interval`` seconds ``store.rescue_expired`` applies the crash rules to running
jobs whose lease expired (their worker stopped heartbeating: SIGKILL, a lost host). The
store lets one sweeper at a time do it across all workers. Every ``prune_interval``
seconds it deletes succeeded, dead and cancelled jobs older than their retention
(``keep_succeeded``, ``keep_dead``, ``keep_cancelled``; None keeps them)
and worker rows silent for longer than ``keep_silent_workers``.

Its first sweep also asks the store whether autovacuum reaches the jobs table (Postgres
only): a pruned row, like each version a claim or an ack leaves behind, is a dead tuple
until a VACUUM reclaims it, so with autovacuum off the table grows without bound. It logs
``autovacuum-off`` once, with the fix. With ``vacuum_after_prune`` (off by default) the
sweeper then VACUUMs the table itself after each prune pass, when its role may: skipped
when the table was vacuumed within half a prune interval (another worker did) or another
vacuum holds it, never waited for, and a failure is a warning, never the worker's end
(docs/operating.md says why this is not the default).

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

from ..events import (
    AUTOVACUUM_OFF,
    AUTOVACUUM_OFF_VACUUMING,
    JOB_RESCUED,
    JOBS_PRUNED,
    JOBS_VACUUM_FAILED,
    JOBS_VACUUMED,
)
from ..exceptions import StoreError, StoreUnavailable
from ..insight import VacuumOutcome
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
        log.event(
            JOB_RESCUED,
            job=str(job.id),
            actor=job.actor,
            detected_by=detected_by,
            result=result,
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
        keep_succeeded: float,
        keep_silent_workers: float,
        keep_dead: float | None = None,
        keep_cancelled: float | None = None,
        worker_id: UUID | None = None,
        quiet_after_outage: float = 0.0,
        vacuum_after_prune: bool = False,
    ) -> None:
        self.store = store
        self.vacuum_after_prune = vacuum_after_prune
        self.vacuuming = False  # vacuum_after_prune, autovacuum off, and allowed to
        self._autovacuum_checked = False
        self.worker_id = worker_id
        self.quiet_after_outage = quiet_after_outage
        self._quiet_until = 0.0
        self.interval = interval
        self.prune_interval = prune_interval
        self.keep_succeeded = keep_succeeded
        self.keep_silent_workers = keep_silent_workers
        self.keep_dead = keep_dead
        self.keep_cancelled = keep_cancelled
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
        if not self._autovacuum_checked:
            await self.check_autovacuum()
            self._autovacuum_checked = True
        if time.monotonic() < self._quiet_until:
            return
        rescued = await self.store.rescue_expired(LEASE_EXPIRED, exclude_worker=self.worker_id)
        if rescued:
            count_rescued(rescued, "lease_expired")
        self.sweeps += 1
        if time.monotonic() >= self._next_prune:
            await self.prune()
            if self.vacuuming:
                await self.vacuum()
            self._next_prune = time.monotonic() + self.prune_interval

    async def prune(self) -> None:
        now = await self.store.now()

        def before(retention: float | None) -> datetime | None:
            return None if retention is None else now - timedelta(seconds=retention)

        jobs, workers = await self.store.prune(
            succeeded_before=now - timedelta(seconds=self.keep_succeeded),
            workers_before=now - timedelta(seconds=self.keep_silent_workers),
            dead_before=before(self.keep_dead),
            cancelled_before=before(self.keep_cancelled),
        )
        if jobs or workers:
            log.event(JOBS_PRUNED, jobs=jobs, worker_rows=workers)

    async def check_autovacuum(self) -> None:
        """Once: say so when autovacuum never reaches the jobs table, and decide whether
        this sweeper vacuums it."""
        state = await self.store.autovacuum()
        if state is None or state.problem is None:
            return
        consequence = (
            f"nothing reclaims the space of the rows taskq prunes and of the row versions "
            f"each claim and ack leave behind: {state.table} grows without bound and claims "
            "slow down"
        )
        if self.vacuum_after_prune and state.can_vacuum:
            self.vacuuming = True
            log.event(
                AUTOVACUUM_OFF_VACUUMING,
                table=state.table,
                problem=state.problem,
                handling=f"this worker VACUUMs {state.table} after each prune pass "
                f"(--vacuum-after-prune, every {self.prune_interval:g} s)",
            )
            return
        fields: dict[str, object] = {}
        if self.vacuum_after_prune:
            fields["vacuum_after_prune"] = (
                f"not possible: role {state.role!r} may not VACUUM {state.table} (it takes "
                "the table's or the database's owner, or from Postgres 17 the MAINTAIN "
                "privilege)"
            )
        log.event(
            AUTOVACUUM_OFF,
            table=state.table,
            problem=f"{state.problem}: {consequence}",
            fix=state.fix,
            **fields,
        )

    async def vacuum(self) -> None:
        """One VACUUM of the jobs table after a prune pass; its failure is a warning."""
        started = time.monotonic()
        try:
            result = await self.store.vacuum_jobs(unless_vacuumed_within=self.prune_interval / 2)
        except StoreUnavailable:
            raise  # an outage: the sweeper backs off as for any other call
        except StoreError as exc:
            log.event(JOBS_VACUUM_FAILED, error=str(exc), note="tried again after the next prune")
            return
        if result.outcome is VacuumOutcome.VACUUMED:
            log.event(JOBS_VACUUMED, seconds=round(time.monotonic() - started, 3))
        elif result.outcome is VacuumOutcome.REFUSED:
            self.vacuuming = False
            log.event(
                JOBS_VACUUM_FAILED,
                error=result.message,
                note="this worker vacuums no more; see the autovacuum-off fix",
            )
