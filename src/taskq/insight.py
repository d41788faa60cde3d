"""Plain data for the operator's views: backlog metrics, the dashboard, workgroup reports.

Read from the store by ``Store.queue_backlog``, ``queue_activity``, ``browse_jobs``,
``job_errors`` and ``list_workgroups``; no behaviour here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

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
class QueueActivity:
    """One queue over a recent window: runs that succeeded, runs that failed (an
    exception or a crash, retried or not) and jobs that went dead."""

    queue: str
    succeeded: int = 0
    failed_runs: int = 0
    dead: int = 0

    @property
    def failure_rate(self) -> float | None:
        runs = self.succeeded + self.failed_runs
        return self.failed_runs / runs if runs else None


@dataclass(frozen=True, slots=True)
class JobFilter:
    """The dashboard's job filters; ``None`` matches everything. ``error`` is a
    case-insensitive substring of ``last_error``; ``tag`` one of the job's tags."""

    state: str | None = None
    queue: str | None = None
    actor: str | None = None
    error: str | None = None
    tag: str | None = None


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
