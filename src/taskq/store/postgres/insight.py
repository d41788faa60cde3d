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
    SEARCH_SCAN,
    JobError,
    JobFilter,
    QueueDepth,
    QueueMinute,
    QueueStatus,
    WorkgroupReport,
)
from ...jobs import Job, WorkerInfo
from ...workflows.model import WorkflowInfo
from ..activity import KEEP, minute_of, minutes, open_minute, to_count
from ..queues import depths, statuses
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

    async def browse_jobs(
        self, filters: JobFilter, *, before: UUID | None = None, limit: int = 50
    ) -> list[Job]:
        params = self._filter(filters, before)
        params["limit"] = limit
        if filters.searches:
            params["args"], params["kwargs"], params["meta"] = filters.patterns()
            params["scan"] = SEARCH_SCAN
            rows = await self._unprepared("search_jobs", params)
        else:
            rows = await self._unprepared("browse_jobs", params)
        return [self._codec.job(r) for r in rows]

    async def count_jobs(self, filters: JobFilter, *, cap: int) -> int:
        params = self._filter(filters, None)
        params["cap"] = cap
        (row,) = await self._unprepared("count_jobs", params)
        return int(row["n"])

    @staticmethod
    def _filter(filters: JobFilter, before: UUID | None) -> dict[str, Any]:
        low, below = filters.bounds(before)
        return {
            "before": below,
            "id_low": low,
            "state": filters.state,
            "queue": filters.queue,
            "actor": filters.actor,
            "error": filters.error,
            "tag": filters.tag,
        }

    async def record_activity(
        self, backlog: Sequence[QueueDepth] | None = None, *, now: datetime | None = None
    ) -> None:
        now = now or datetime.now(UTC)
        row = await self._db.fetchone("activity_upto")
        window = to_count(row["upto"] if row else None, now)
        if window is not None:
            await self._db.execute("activity_fill", {"from": window[0], "to": window[1]})
            await self._db.execute("activity_prune", {"before": window[1] - KEEP})
        if backlog:
            await self._db.execute(
                "activity_sample",
                {
                    "minute": minute_of(now),
                    "queues": [d.queue for d in backlog],
                    "ages": [d.oldest_due_age for d in backlog],
                },
            )

    async def activity(
        self,
        since: datetime,
        *,
        bucket: int = 60,
        queue: str | None = None,
        by_actor: bool = False,
        now: datetime | None = None,
    ) -> list[QueueMinute]:
        now = now or datetime.now(UTC)
        params = {"since": since, "bucket": bucket, "queue": queue}
        read = "activity_read_actors" if by_actor else "activity_read"
        counted = minutes(await self._db.fetchall(read, params), self._codec.time)
        row = await self._db.fetchone("activity_upto")
        open_from = row["upto"] if row else minute_of(now)
        live = await self._db.fetchall("activity_live", {"from": open_from})
        return counted + open_minute(live, minute_of(now), queue=queue, by_actor=by_actor)

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
