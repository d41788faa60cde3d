"""The scheduler part: enqueue every due tick of the registry's periodic schedules.

Every worker whose registry has schedules runs one, and they need not agree on anything:
each look reads what the store recorded (``first_seen_at``, ``last_tick``), works out
the ticks due since then (``Schedule.due``: on-time ticks all, ticks missed while no
worker ran by the schedule's ``missed`` policy), enqueues each with the tick's unique
key (``periodic:<schedule>:<tick>``, covering every state) and then advances
``last_tick``. Two workers enqueueing the same tick make one job; a worker that dies
before enqueueing a tick leaves it to the next look of any other, which wakes at the
same tick (each sleeps until the next tick of any schedule, at most ``MAX_SLEEP``).

A look that fails (the store is down) is logged and retried at the next wake; its ticks
are still owed, since ``last_tick`` did not move.

It is the worker's last part, so the first to stop: once shutdown began no tick is
enqueued (a look in hand stops before its next tick); the ticks are owed to whichever
worker looks next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from ..client import AsyncClient
from ..events import (
    PERIODIC_ENQUEUED,
    PERIODIC_TICKS_MISSED,
    SCHEDULER_LOOK_FAILED,
    SCHEDULER_STARTED,
)
from ..exceptions import TaskqError
from ..jobs import ALL_STATES
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..periodic import Schedule, tick_key
from ..registry import AnyActor, Registry
from ..store import Store
from ..unique import Unique

log = get_logger(__name__)

MAX_SLEEP = 30.0  # seconds between looks at most, whatever the crons say
MIN_SLEEP = 0.01
RETRY_AFTER_FAILURE = 2.0

Clock = Callable[[], datetime]


def _wall_clock() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Enqueued:
    """One tick a look enqueued (``duplicate``: another worker had already)."""

    schedule: str
    tick: datetime
    job_id: UUID
    duplicate: bool


class Scheduler(Stoppable):
    """A worker part (``start``/``run``/``stop``); ``look`` is one pass, for tests with
    an injected ``clock``."""

    name = "scheduler"
    stop_timeout: float | None = 5.0

    def __init__(self, store: Store, registry: Registry, *, clock: Clock = _wall_clock) -> None:
        self._store = store
        self._client = AsyncClient(store=store)
        self._schedules = registry.schedules
        self._actors: dict[str, AnyActor] = {s.name: registry.get(s.actor) for s in self._schedules}
        self._clock = clock
        self._stopped = StopSignal()

    @property
    def schedules(self) -> list[Schedule]:
        return list(self._schedules)

    async def start(self) -> None:
        await self._store.record_schedules([s.describe() for s in self._schedules], self._clock())
        log.event(SCHEDULER_STARTED, schedules=[s.name for s in self._schedules])

    async def run(self) -> None:
        while not self._stopped:
            wait = MAX_SLEEP
            try:
                await self.look()
            except TaskqError as exc:
                log.event(SCHEDULER_LOOK_FAILED, error=f"{type(exc).__name__}: {exc}")
                wait = RETRY_AFTER_FAILURE
            now = self._clock()
            upcoming = min((s.next_after(now) for s in self._schedules), default=None)
            if upcoming is not None:
                wait = min(wait, max((upcoming - self._clock()).total_seconds(), MIN_SLEEP))
            await self._stopped.sleep(wait)

    async def look(self) -> list[Enqueued]:
        """Enqueue what is due now; return what was enqueued."""
        now = self._clock()
        recorded = {info.name: info for info in await self._store.list_schedules()}
        missing = [s for s in self._schedules if s.name not in recorded]
        if missing:  # recorded at start; gone since (a schema reset): owed from now on
            await self._store.record_schedules([s.describe() for s in missing], now)
            recorded = {info.name: info for info in await self._store.list_schedules()}
        enqueued: list[Enqueued] = []
        for schedule in self._schedules:
            info = recorded[schedule.name]
            due = schedule.due(info.last_tick or info.first_seen_at, now)
            for tick in due.enqueue:
                if self._stopped:  # shutdown began: the ticks stay owed to other workers
                    return enqueued
                enqueued.append(await self._enqueue(schedule, tick))
            if due.skipped:
                log.event(
                    PERIODIC_TICKS_MISSED,
                    schedule=schedule.name,
                    skipped=due.skipped,
                    policy=schedule.missed.value,
                    note="ticks missed while no worker ran",
                )
            if due.last is not None:
                await self._store.mark_schedule_tick(schedule.name, due.last)
        return enqueued

    async def _enqueue(self, schedule: Schedule, tick: datetime) -> Enqueued:
        key = tick_key(schedule.name, tick)
        job_id = await self._client.enqueue_with(
            self._actors[schedule.name],
            schedule.args,
            schedule.kwargs,
            run_at=tick,
            unique_key=Unique(key=key, states=ALL_STATES),
            meta={"periodic": schedule.name, "tick": tick.isoformat()},
        )
        duplicate = job_id.duplicate
        log.event(
            PERIODIC_ENQUEUED,
            schedule=schedule.name,
            tick=tick.isoformat(),
            job=str(job_id),
            duplicate=duplicate,
        )
        return Enqueued(schedule.name, tick, job_id, duplicate)
