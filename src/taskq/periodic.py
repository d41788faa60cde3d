"""Periodic jobs: a cron schedule for an actor, and the ticks it owes.

``@registry.periodic("*/5 * * * *", timezone="Europe/Paris")`` attaches a ``Schedule``
to an actor. Every worker whose registry has schedules runs a scheduler
(``worker/scheduler.py``) that enqueues each tick as one job with the unique key
``periodic:<schedule>:<tick in UTC, ISO 8601>``, covering every state: however many
workers on however many hosts enqueue the same tick, one job exists, and a tick a dying
worker did not enqueue is enqueued by the next worker that looks.

Cron expressions are parsed and evaluated by ``cronsim`` (5 fields, or 6 with seconds
first; Debian cron's day-of-month/day-of-week rule; in a timezone with daylight saving
time a wall-clock time that does not exist runs at the next one that does, and one that
happens twice runs once).

Ticks missed while no worker ran (older than ``MISSED_AFTER`` when a scheduler first
sees them) follow the schedule's ``missed`` policy: ``"skip"`` (default) drops them,
``"run_once"`` enqueues the latest of them, once.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from .exceptions import ConfigError
from .jobs import ScheduleInfo
from .payload import encode_arguments

#: a tick this much older than "now" when a scheduler first sees it was missed
MISSED_AFTER = timedelta(seconds=60)
MAX_TICKS_PER_LOOK = 10_000  # a look never walks more ticks than this (a 1 s cron, a long outage)


class Missed(enum.StrEnum):
    SKIP = "skip"  # ticks missed while no worker ran are dropped
    RUN_ONCE = "run_once"  # ... are collapsed into one run, for the latest of them


def as_missed(value: Missed | str, where: str) -> Missed:
    try:
        return Missed(value)
    except ValueError:
        raise ConfigError(
            f"{where}: missed must be one of {', '.join(m.value for m in Missed)}, got {value!r}"
        ) from None


def tick_key(schedule: str, tick: datetime) -> str:
    """The unique key of one tick's job: the same on every worker and host."""
    return f"periodic:{schedule}:{tick.astimezone(UTC).isoformat()}"


def _zone(name: str, where: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"{where}: unknown timezone {name!r} (an IANA name)") from None


def check_cron(cron: str, timezone: str, where: str) -> ZoneInfo:
    """Raise ConfigError unless ``cron`` parses; return the timezone."""
    zone = _zone(timezone, where)
    if not isinstance(cron, str) or not cron.strip():
        raise ConfigError(f"{where}: a cron expression is required")
    try:
        CronSim(cron, datetime.now(zone))
    except CronSimError as exc:
        raise ConfigError(f"{where}: invalid cron expression {cron!r}: {exc}") from None
    return zone


def next_tick(cron: str, timezone: str, after: datetime) -> datetime:
    """The first tick strictly after ``after``, in UTC."""
    zone = _zone(timezone, "schedule")
    return next(CronSim(cron, after.astimezone(zone))).astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Due:
    """What one look at a schedule found: the ticks to enqueue, and the ones dropped."""

    enqueue: list[datetime]
    skipped: int
    last: datetime | None  # the latest tick looked at (enqueued or skipped)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A cron schedule of one actor. ``name`` is unique per registry (default: the
    actor's name); ``args``/``kwargs`` are given to every tick's job."""

    name: str
    actor: str
    cron: str
    timezone: str = "UTC"
    missed: Missed = Missed.SKIP
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"schedule {self.name!r}"
        check_cron(self.cron, self.timezone, where)
        object.__setattr__(self, "missed", as_missed(self.missed, where))
        encode_arguments(self.args, self.kwargs, actor=self.actor)  # JSON, or a clear error
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "kwargs", dict(self.kwargs))

    def next_after(self, after: datetime) -> datetime:
        return next_tick(self.cron, self.timezone, after)

    def due(self, since: datetime, now: datetime) -> Due:
        """The ticks in ``(since, now]``: those within ``MISSED_AFTER`` of ``now`` are
        all enqueued; older ones follow ``missed``."""
        zone = ZoneInfo(self.timezone)
        ticks: list[datetime] = []
        for tick in CronSim(self.cron, since.astimezone(zone)):
            if tick > now or len(ticks) >= MAX_TICKS_PER_LOOK:
                break
            ticks.append(tick.astimezone(UTC))
        if not ticks:
            return Due([], 0, None)
        cutoff = now - MISSED_AFTER
        late = [t for t in ticks if t < cutoff]
        on_time = ticks[len(late) :]
        if late and self.missed is Missed.RUN_ONCE:
            return Due([late[-1], *on_time], len(late) - 1, ticks[-1])
        return Due(on_time, len(late), ticks[-1])

    def describe(self) -> dict[str, Any]:
        """What a worker records in the store (``taskq schedules`` reads it)."""
        return {
            "name": self.name,
            "actor": self.actor,
            "cron": self.cron,
            "timezone": self.timezone,
            "missed": self.missed.value,
        }


def explain(cron: str) -> str:
    """The expression in words (``Every fifth minute of every hour``)."""
    try:
        return CronSim(cron, datetime.now(UTC)).explain()
    except (CronSimError, ValueError):
        return "-"


def listing(schedule: ScheduleInfo, now: datetime) -> dict[str, Any]:
    """One row of ``taskq schedules``: the recorded schedule and its next run (worked
    out from its cron and timezone: no application code needed)."""
    after = max(now, schedule.last_tick) if schedule.last_tick else now
    try:
        upcoming: str | None = next_tick(schedule.cron, schedule.timezone, after).isoformat()
    except (ConfigError, CronSimError, ValueError):
        upcoming = None
    return {**schedule.to_dict(), "next_run": upcoming, "explained": explain(schedule.cron)}
