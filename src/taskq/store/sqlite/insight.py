"""The operator's views on SQLite (``Insight``; ``SqliteStore.insight``).

The same methods as ``postgres/insight.py``; every statement a named block in
``sqlite.sql``. Reads run on the store thread; writes in one ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from ...insight import (
    LAST_ID,
    JobError,
    JobFilter,
    QueueActivity,
    QueueDepth,
    QueueStatus,
    WorkgroupReport,
)
from ...jobs import Job, WorkerInfo
from ...workflows.model import WorkflowInfo
from ..queues import activities, depths, statuses
from ..rows import Codec
from ..workflows import workflow_info
from .codec import dt, ts
from .connections import Engine, read, written


class SqliteInsight:
    """``Insight`` on one SQLite store's connection and thread."""

    def __init__(self, store: Engine, codec: Codec) -> None:
        self._store = store
        self._codec = codec

    async def queue_backlog(self) -> list[QueueDepth]:
        return depths(await read(self._store, "queue_backlog", {"now": time.time()}))

    async def queue_statuses(self) -> list[QueueStatus]:
        backlog = await read(self._store, "queue_backlog", {"now": time.time()})
        controls = await read(self._store, "queue_controls")
        limits = await read(self._store, "get_limits")
        return statuses(self._codec, backlog, controls, limits)

    async def queue_activity(self, since: datetime) -> list[QueueActivity]:
        return activities(await read(self._store, "queue_activity", {"since": ts(since)}))

    async def browse_jobs(
        self, filters: JobFilter, *, before: UUID | None = None, limit: int = 50
    ) -> list[Job]:
        params = {
            "before": str(before or LAST_ID),
            "state": filters.state,
            "queue": filters.queue,
            "actor": filters.actor,
            "error": filters.error,
            "tag": filters.tag,
            "limit": limit,
        }
        return [self._codec.job(r) for r in await read(self._store, "browse_jobs", params)]

    async def list_workflows(
        self, *, state: str | None = None, limit: int = 50
    ) -> list[WorkflowInfo]:
        rows = await read(self._store, "workflow_list", {"state": state, "limit": limit})
        return [workflow_info(self._codec, r) for r in rows]

    async def workflow_totals(self) -> dict[str, int]:
        rows = await read(self._store, "workflow_totals")
        return {r["state"]: int(r["finished"]) for r in rows}

    async def job_errors(self, job_id: UUID) -> list[JobError]:
        rows = await read(self._store, "job_errors", {"id": str(job_id)})
        return [
            JobError(
                r["attempt"],
                dt(r["at"]),
                bool(r["crash"]),
                UUID(r["worker_id"]) if r["worker_id"] else None,
                r["error"],
            )
            for r in rows
        ]

    async def discard_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        if not job_ids:
            return []
        rows = await written(
            self._store, "discard_jobs", {"ids": json.dumps([str(i) for i in job_ids])}
        )
        return [UUID(r["id"]) for r in rows]

    async def list_workers(self) -> list[WorkerInfo]:
        return [self._codec.worker(r) for r in await read(self._store, "list_workers")]

    async def list_workgroups(self, since: datetime) -> list[WorkgroupReport]:
        rows = await read(self._store, "list_workgroups", {"since": ts(since)})
        return [
            WorkgroupReport(
                UUID(r["instance"]),
                r["hostname"],
                r["pid"],
                dt(r["updated_at"]),
                json.loads(r["children"]),
            )
            for r in rows
        ]
