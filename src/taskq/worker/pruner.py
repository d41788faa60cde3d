"""The pruner: every worker's part that deletes what is past its keep.

Every ``prune_interval`` seconds (the first pass at a random point of the first
interval, so the workers of one deployment do not prune in step) it deletes succeeded,
dead and cancelled jobs older than their retention (``keep_succeeded``, ``keep_dead``,
``keep_cancelled``; None keeps them) and worker rows silent for longer than
``keep_silent_workers``.

At start it asks the store whether autovacuum reaches the jobs table (Postgres only): a
pruned row, like each version a claim or an ack leaves behind, is a dead tuple until a
VACUUM reclaims it, so with autovacuum off the table grows without bound. It logs
``autovacuum-off`` once, with the fix. With ``vacuum_after_prune`` (off by default) the
pruner then VACUUMs the table itself after each prune pass, when its role may: skipped
when the table was vacuumed within half a prune interval (another worker did) or another
vacuum holds it, never waited for, and a failure is a warning, never the worker's end
(docs/operating.md says why this is not the default).
"""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta

from ..events import (
    AUTOVACUUM_OFF,
    AUTOVACUUM_OFF_VACUUMING,
    JOBS_PRUNED,
    JOBS_VACUUM_FAILED,
    JOBS_VACUUMED,
)
from ..exceptions import StoreError, StoreUnavailable
from ..insight import VacuumOutcome
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..store import Store
from .outage import StoreBackoff

log = get_logger(__name__)


class Pruner(Stoppable):
    name = "pruner"
    stop_timeout = 2.0  # a prune in hand; then it is cancelled (a rollback)

    def __init__(
        self,
        store: Store,
        *,
        prune_interval: float,
        keep_succeeded: float,
        keep_silent_workers: float,
        keep_dead: float | None = None,
        keep_cancelled: float | None = None,
        vacuum_after_prune: bool = False,
    ) -> None:
        self.store = store
        self.prune_interval = prune_interval
        self.keep_succeeded = keep_succeeded
        self.keep_silent_workers = keep_silent_workers
        self.keep_dead = keep_dead
        self.keep_cancelled = keep_cancelled
        self.vacuum_after_prune = vacuum_after_prune
        self.vacuuming = False  # vacuum_after_prune, autovacuum off, and allowed to
        self._autovacuum_checked = False
        self.passes = 0
        self._backoff = StoreBackoff(self.name)
        self._stopped = StopSignal()

    async def run(self) -> None:
        wait = self.prune_interval * random.random()
        while not self._stopped:
            try:
                if not self._autovacuum_checked:
                    await self.check_autovacuum()
                    self._autovacuum_checked = True
                if await self._stopped.sleep(wait):
                    return
                await self.prune()
                if self.vacuuming:
                    await self.vacuum()
            except StoreError as exc:
                wait = self._backoff.failed(exc)
                continue
            self._backoff.succeeded()
            wait = self.prune_interval

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
        self.passes += 1
        if jobs or workers:
            log.event(JOBS_PRUNED, jobs=jobs, worker_rows=workers)

    async def check_autovacuum(self) -> None:
        """Once: say so when autovacuum never reaches the jobs table, and decide whether
        this pruner vacuums it."""
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
            raise  # an outage: the pruner backs off as for any other call
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
