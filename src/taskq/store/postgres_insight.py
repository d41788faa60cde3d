"""The operator's reads and chores on Postgres (``PostgresStore`` inherits them).

Backlog metrics, the dashboard's pages and actions, the fleet-wide leases, the workgroup
reports and the jobs table's upkeep (autovacuum, VACUUM): every statement is a named
block in ``postgres.sql``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import DictRow, dict_row

from ..insight import (
    LAST_ID,
    Autovacuum,
    JobError,
    JobFilter,
    QueueActivity,
    QueueDepth,
    VacuumOutcome,
    VacuumResult,
    WorkgroupReport,
)
from ..jobs import Job, QueueInfo
from .queues import activities, backlog_depths, depths, overview
from .rows import Codec
from .sqlfile import load_queries

Q = load_queries("postgres.sql")

Fetch = Callable[[str, dict[str, Any] | None], Awaitable[Any]]


#: the SQLSTATE of VACUUM (SKIP_LOCKED)'s warning when another vacuum holds the table
LOCK_NOT_AVAILABLE = "55P03"


class PostgresInsight:
    schema: str
    _fetchall: Fetch
    _fetchone: Fetch
    _connection: Callable[[], AbstractAsyncContextManager[psycopg.AsyncConnection]]
    _job_from_row: Callable[[Mapping[str, Any]], Job]
    _codec: Codec

    async def queue_backlog(self) -> list[QueueDepth]:
        return depths(await self._fetchall("queue_backlog", None))

    async def queue_infos(self) -> list[QueueInfo]:
        depths = backlog_depths(await self._fetchall("queue_backlog", None))
        controls = await self._fetchall("queue_controls", None)
        limits = await self._fetchall("get_limits", None)
        return overview(self._codec, depths, controls, limits)

    async def queue_activity(self, since: datetime) -> list[QueueActivity]:
        return activities(await self._fetchall("queue_activity", {"since": since}))

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
        return [self._job_from_row(r) for r in await self._unprepared("browse_jobs", params)]

    async def _unprepared(self, name: str, params: dict[str, Any]) -> list[DictRow]:
        """A statement planned with its values every time: psycopg never prepares it,
        so Postgres never falls back to a generic plan that cannot tell a rare filter
        (a tag, a dead state) from a common one."""
        async with self._connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(Q[name], params, prepare=False)
            return await cur.fetchall()

    async def job_errors(self, job_id: UUID) -> list[JobError]:
        rows = await self._fetchall("job_errors", {"id": job_id})
        return [
            JobError(r["attempt"], r["at"].astimezone(UTC), r["crash"], r["worker_id"], r["error"])
            for r in rows
        ]

    async def discard_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        if not job_ids:
            return []
        rows = await self._fetchall("discard_jobs", {"ids": list(job_ids)})
        return [r["id"] for r in rows]

    async def try_lead(self, name: str, holder: str, seconds: float) -> bool:
        row = await self._fetchone("try_lead", {"name": name, "holder": holder, "seconds": seconds})
        return row is not None

    async def release_lead(self, name: str, holder: str) -> None:
        await self._fetchall("release_lead", {"name": name, "holder": holder})

    async def report_workgroup(
        self, instance: UUID, hostname: str, pid: int, children: list[dict[str, Any]]
    ) -> None:
        params = {
            "instance": instance,
            "hostname": hostname,
            "pid": pid,
            "children": json.dumps(children),
        }
        await self._fetchall("report_workgroup", params)

    async def remove_workgroup(self, instance: UUID) -> None:
        await self._fetchall("remove_workgroup", {"instance": instance})

    async def list_workgroups(self, since: datetime) -> list[WorkgroupReport]:
        rows = await self._fetchall("list_workgroups", {"since": since})
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

    # -- upkeep of the jobs table ----------------------------------------------------------
    async def autovacuum(self) -> Autovacuum:
        row = await self._fetchone("autovacuum_state", None)
        assert row is not None, "autovacuum_state returns one row"
        return Autovacuum(
            table=f"{self.schema}.jobs",
            server=row["server"],
            track_counts=row["track_counts"],
            table_enabled=row["table_enabled"],
            can_vacuum=row["can_vacuum"],
            role=row["role"],
        )

    async def vacuum_jobs(self, *, unless_vacuumed_within: float) -> VacuumResult:
        warnings: list[tuple[str | None, str]] = []

        def on_notice(notice: psycopg.errors.Diagnostic) -> None:
            # read here: a notice's fields are gone once the callback returns
            if notice.severity_nonlocalized == "WARNING":
                warnings.append((notice.sqlstate, notice.message_primary or ""))

        async with self._connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(Q["vacuumed_within"], {"seconds": unless_vacuumed_within})
            row = await cur.fetchone()
            if row is not None and row["recent"]:
                return VacuumResult(VacuumOutcome.RECENT)
            conn.add_notice_handler(on_notice)
            try:
                await conn.execute(Q["vacuum_jobs"])
            finally:
                conn.remove_notice_handler(on_notice)
        if not warnings:
            return VacuumResult(VacuumOutcome.VACUUMED)
        state, message = warnings[0]
        busy = state == LOCK_NOT_AVAILABLE
        return VacuumResult(VacuumOutcome.BUSY if busy else VacuumOutcome.REFUSED, message)
