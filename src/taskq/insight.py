"""Plain data for the operator's views: backlog metrics, the dashboard, workgroup reports,
and the jobs table's upkeep.

Read from the store by the operator's ``Insight`` (``store.insight``: ``queue_backlog``,
``queue_statuses``, ``browse_jobs``, ``job_errors``,
``list_workgroups``) and the pruner's ``Store.autovacuum`` and ``vacuum_jobs``; no
behaviour here beyond wording.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from .exceptions import ConfigError
from .jobs import Limits

#: the largest UUID: "before the end" for the first page of a keyset pagination
LAST_ID = UUID("ffffffff-ffff-ffff-ffff-ffffffffffff")


@dataclass(frozen=True, slots=True)
class QueueDepth:
    """One queue's backlog now. ``oldest_due_age`` is the age in seconds of the oldest
    queued job whose ``run_at`` has passed (0.0 when none is due)."""

    queue: str
    queued: int = 0
    running: int = 0
    dead: int = 0
    oldest_due_age: float = 0.0


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """One queue on the dashboard: its backlog (the live states only, read from the
    partial indexes: the finished states are not counted), pause state and limits.
    ``taskq queues`` shows the full counts instead (``QueueInfo``)."""

    name: str
    backlog: QueueDepth
    paused: bool = False
    paused_at: datetime | None = None
    paused_by: str | None = None
    limits: Limits = field(default_factory=Limits)


@dataclass(frozen=True, slots=True)
class JobFilter:
    """The dashboard's job filters; ``None`` matches everything. ``error`` is a
    case-insensitive substring of ``last_error``; ``tag`` one of the job's tags;
    ``id_prefix`` the start of the job's id (hex digits, dashes ignored); ``args`` JSON
    the arguments contain (an array: positional ones; an object: keyword ones; anything
    else: one positional argument), ``meta`` a JSON object its meta contains (both as
    Postgres's ``@>``)."""

    state: str | None = None
    queue: str | None = None
    actor: str | None = None
    error: str | None = None
    tag: str | None = None
    id_prefix: str | None = None
    args: str | None = None
    meta: str | None = None

    def bounds(self, before: UUID | None = None) -> tuple[UUID, UUID]:
        """``(low, below)``: the ids kept are ``low <= id < below``, from ``id_prefix``
        and the keyset cursor ``before``; ``ConfigError`` for a prefix that is not hex."""
        digits = (self.id_prefix or "").replace("-", "").lower()
        if len(digits) > 32 or any(c not in "0123456789abcdef" for c in digits):
            raise ConfigError(f"an id prefix is up to 32 hex digits, got {self.id_prefix!r:.60}")
        low = int(digits.ljust(32, "0"), 16)
        below = min(int(digits.ljust(32, "f"), 16) + 1, LAST_ID.int)
        if before is not None:
            below = min(below, before.int)
        return UUID(int=low), UUID(int=below)

    def patterns(self) -> tuple[str | None, str | None, str | None]:
        """``(args, kwargs, meta)`` as the JSON each must contain, or None each."""
        args = kwargs = meta = None
        if self.args is not None:
            value = _json(self.args, "the arguments filter")
            if isinstance(value, dict):
                kwargs = json.dumps(value)
            else:
                args = json.dumps(value if isinstance(value, list) else [value])
        if self.meta is not None:
            value = _json(self.meta, "the meta filter")
            if not isinstance(value, dict):
                raise ConfigError('the meta filter is a JSON object, e.g. {"tenant": 7}')
            meta = json.dumps(value)
        return args, kwargs, meta

    @property
    def searches(self) -> bool:
        """It looks into arguments or meta (a scan: see ``SEARCH_SCAN``)."""
        return self.args is not None or self.meta is not None


#: the most jobs a search by arguments or meta looks at (the newest the other filters keep)
SEARCH_SCAN = 100_000


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise ConfigError(f"{what} is not JSON: {text!r:.60}") from None


@dataclass(frozen=True, slots=True)
class QueueMinute:
    """One queue's jobs of one actor in one minute (``Insight.activity``): jobs that
    succeeded, runs that failed (an exception or a crash; retried, or the last run of a
    job gone dead), jobs gone dead; and in the row of actor ``""``, the largest age of
    the queue's oldest due queued job sampled then (None: no sample)."""

    minute: datetime
    queue: str
    actor: str = ""
    succeeded: int = 0
    failed_runs: int = 0
    dead: int = 0
    backlog_age: float | None = None

    @property
    def retried(self) -> int:
        """Failed runs that did not end their job (it was queued again)."""
        return max(0, self.failed_runs - self.dead)


@dataclass(frozen=True, slots=True)
class JobError:
    """One failed run of a job: an exception (``crash`` false) or its runner's death."""

    attempt: int
    at: datetime
    crash: bool
    worker_id: UUID | None
    error: str


@dataclass(frozen=True, slots=True)
class WorkgroupReport:
    """What a workgroup supervisor last said about itself and its children."""

    instance: UUID
    hostname: str
    pid: int
    updated_at: datetime
    children: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Autovacuum:
    """Whether Postgres's autovacuum reaches the jobs table (``Store.autovacuum``): the
    server's ``autovacuum`` and ``track_counts`` settings, the table's own
    ``autovacuum_enabled`` storage parameter (None: not set, the server's applies), and
    whether ``role`` may ``VACUUM`` the table itself."""

    table: str  # schema-qualified: "taskq.jobs"
    server: bool
    track_counts: bool
    table_enabled: bool | None
    can_vacuum: bool
    role: str

    @property
    def problem(self) -> str | None:
        """Why autovacuum never vacuums the table; None when it does."""
        if not self.server:
            return "autovacuum is off on the Postgres server (autovacuum = off)"
        if not self.track_counts:
            return (
                "track_counts is off on the Postgres server, so autovacuum cannot see which "
                "tables need it"
            )
        if self.table_enabled is False:
            return f"autovacuum is off for {self.table} (its autovacuum_enabled storage parameter)"
        return None

    @property
    def fix(self) -> str:
        """What to do about ``problem``."""
        if not self.server or not self.track_counts:
            on = "track_counts = on" if self.server else "autovacuum = on"
            first = f"turn it on ({on} in postgresql.conf, then SELECT pg_reload_conf())"
        else:
            first = f"turn it on (ALTER TABLE {self.table} RESET (autovacuum_enabled))"
        return (
            f"{first}, or VACUUM {self.table} regularly (every minute or so under load: from "
            "cron, or by starting the workers with --vacuum-after-prune)"
        )


class VacuumOutcome(enum.StrEnum):
    VACUUMED = "vacuumed"
    RECENT = "recent"  # vacuumed (by anyone, autovacuum too) within the window: nothing to do
    BUSY = "busy"  # another vacuum holds the table: skipped, never waited for
    REFUSED = "refused"  # the server skipped it with a warning (this role may not vacuum it)
    UNSUPPORTED = "unsupported"  # a store with nothing to vacuum (SQLite)


@dataclass(frozen=True, slots=True)
class VacuumResult:
    """What ``Store.vacuum_jobs`` did; ``message`` is the server's warning when REFUSED."""

    outcome: VacuumOutcome
    message: str = ""
