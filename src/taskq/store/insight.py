"""The operator's side of a store: what metrics, the dashboard and ``taskq workers`` read.

Kept apart from ``Store`` (what workers and clients call): a worker never reads these
views, and each engine keeps their statements in its own ``insight.py`` module. Every
store has one, on the store's own connections, as ``store.insight``. The data they
return is in ``taskq.insight``. Each view scans only the partial indexes of the live
states (queued, running, dead) or a recent window, never the whole jobs table.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

from ..insight import (
    JobError,
    JobFilter,
    QueueDepth,
    QueueMinute,
    QueueStatus,
    WorkgroupReport,
)
from ..jobs import Job, WorkerInfo
from ..workflows.model import WorkflowInfo


class Insight(Protocol):
    async def queue_backlog(self) -> list[QueueDepth]:
        """Per queue with queued, running or dead jobs: the counts and the age of the
        oldest due queued job (``taskq_queue_jobs``, the dashboard's overview)."""

    async def queue_statuses(self) -> list[QueueStatus]:
        """Per queue with live jobs, paused or limited: its backlog, pause state and
        limits (the dashboard's queue page)."""

    async def browse_jobs(
        self, filters: JobFilter, *, before: UUID | None = None, limit: int = 50
    ) -> list[Job]:
        """A page of jobs newest first with ``id < before`` (keyset pagination). A search
        by arguments or meta looks at the newest ``SEARCH_SCAN`` jobs the other filters
        keep."""

    async def count_jobs(self, filters: JobFilter, *, cap: int) -> int:
        """How many jobs ``filters`` keep, counted up to ``cap`` (by id and the
        non-JSON filters)."""

    async def record_activity(
        self, backlog: Sequence[QueueDepth] | None = None, *, now: datetime | None = None
    ) -> None:
        """Count the minutes that closed since the last count into ``queue_minutes``
        (store/activity.py), forget those older than it keeps, and sample ``backlog``'s
        ages into the current minute. ``now``: the clock (tests turn it)."""

    async def activity(
        self,
        since: datetime,
        *,
        bucket: int = 60,
        queue: str | None = None,
        by_actor: bool = False,
        now: datetime | None = None,
    ) -> list[QueueMinute]:
        """Since ``since``, oldest first, in buckets of ``bucket`` seconds (a multiple of
        60), per queue (only ``queue``'s when given) and, ``by_actor``, per actor: the
        counted minutes, and the one still open (counted now, not stored; last)."""

    async def list_workflows(
        self, *, state: str | None = None, limit: int = 50
    ) -> list[WorkflowInfo]:
        """Workflows newest first, without their steps (``taskq workflows``)."""

    async def workflow_totals(self) -> dict[str, int]:
        """How many workflows ever finished, by end state (never goes back)."""

    async def job_errors(self, job_id: UUID) -> list[JobError]:
        """Every failed run of a job (exceptions and crashes), oldest first."""

    async def discard_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        """Delete dead or cancelled jobs; returns the ids deleted."""

    async def list_workers(self) -> list[WorkerInfo]:
        """Every worker row (``taskq workers``), oldest first."""

    async def list_workgroups(self, since: datetime) -> list[WorkgroupReport]:
        """Workgroups that reported since ``since``, newest first."""
