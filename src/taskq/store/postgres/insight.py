"""The operator's views on Postgres (``Insight``; ``PostgresStore.insight``).

Backlog metrics, the dashboard's pages and actions, ``taskq workers``: every statement
is a named block in ``postgres.sql``, run on the store's pool.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from psycopg.rows import DictRow, dict_row

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
from .connections import Connections


class PostgresInsight:
    """``Insight`` on one Postgres store's connections."""

    def __init__(self, connections: Connections, codec: Codec) -> None:
        self._db = connections
        self._codec = codec

    async def queue_backlog(self) -> list[QueueDepth]:
        return depths(await self._db.fetchall("queue_backlog"))

    async def queue_statuses(self) -> list[QueueStatus]:
        backlog = await self._db.fetchall("queue_backlog")
        controls = await self._db.fetchall("queue_controls")
        limits = await self._db.fetchall("get_limits")
        return statuses(self._codec, backlog, controls, limits)

    async def queue_activity(self, since: datetime) -> list[QueueActivity]:
        return activities(await self._db.fetchall("queue_activity", {"since": since}))

    async def browse_jobs(
        self, filters: JobFilter, *, before: UUID | None = None, limit: int = 50
    ) -> list[Job]:
        params = {
            "before": before or LAST_ID,
            "state": filters.state,
            "queue": filters.queue,
            "actor": filters.actor,
            "error": filters.error,
            "tag": filters.tag,
            "limit": limit,
        }
        return [self._codec.job(r) for r in await self._unprepared("browse_jobs", params)]

    async def _unprepared(self, name: str, params: dict[str, Any]) -> list[DictRow]:
        """A statement planned with its values every time: psycopg never prepares it,
        so Postgres never falls back to a generic plan that cannot tell a rare filter
        (a tag, a dead state) from a common one."""
        async with self._db.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(self._db.q[name], params, prepare=False)
            return await cur.fetchall()

    async def list_workflows(
        self, *, state: str | None = None, limit: int = 50
    ) -> list[WorkflowInfo]:
        rows = await self._db.fetchall("workflow_list", {"state": state, "limit": limit})
        return [workflow_info(self._codec, r) for r in rows]

    async def workflow_totals(self) -> dict[str, int]:
        return {r["state"]: int(r["finished"]) for r in await self._db.fetchall("workflow_totals")}

    async def job_errors(self, job_id: UUID) -> list[JobError]:
        rows = await self._db.fetchall("job_errors", {"id": job_id})
        return [
            JobError(r["attempt"], r["at"].astimezone(UTC), r["crash"], r["worker_id"], r["error"])
            for r in rows
        ]

    async def discard_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        if not job_ids:
            return []
        rows = await self._db.fetchall("discard_jobs", {"ids": list(job_ids)})
        return [r["id"] for r in rows]

    async def list_workers(self) -> list[WorkerInfo]:
        return [self._codec.worker(r) for r in await self._db.fetchall("list_workers")]

    async def list_workgroups(self, since: datetime) -> list[WorkgroupReport]:
        rows = await self._db.fetchall("list_workgroups", {"since": since})
        return [
            WorkgroupReport(
                r["instance"],
                r["hostname"],
                r["pid"],
                r["updated_at"].astimezone(UTC),
                json.loads(r["children"]),
            )
            for r in rows
        ]
