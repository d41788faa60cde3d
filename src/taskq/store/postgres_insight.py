"""The operator's reads and chores on Postgres (``PostgresStore`` inherits them).

Backlog metrics, the dashboard's pages and actions, the fleet-wide leases and the
workgroup reports: every statement is a named block in ``postgres.sql``.
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

from ..insight import LAST_ID, JobError, JobFilter, QueueActivity, QueueDepth, WorkgroupReport
from ..jobs import Job, QueueInfo
from .queues import overview
from .rows import Codec
from .sqlfile import load_queries

Q = load_queries("postgres.sql")

Fetch = Callable[[str, dict[str, Any] | None], Awaitable[Any]]


def depths(rows: Sequence[Mapping[str, Any]]) -> list[QueueDepth]:
    """``queue_backlog`` rows -> one ``QueueDepth`` per queue, by name."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        queue, state = row["queue"], row["state"]
        entry = found.setdefault(queue, {"queue": queue})
        entry[state] = int(row["jobs"])
        if state == "queued":
            entry["oldest_due_age"] = max(0.0, float(row["oldest_due_age"]))
    return [QueueDepth(**found[q]) for q in sorted(found)]


def backlog_depths(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``queue_backlog`` rows as the ``depths`` rows of ``queues.overview``."""
    return [
        {
            "queue": r["queue"],
            "state": r["state"],
            "n": r["jobs"],
            "oldest_s": r["oldest_due_age"]
            if r["state"] == "queued" and r["oldest_due_age"] > 0
            else None,
        }
        for r in rows
    ]


def activities(rows: Sequence[Mapping[str, Any]]) -> list[QueueActivity]:
    """``queue_activity`` rows -> one ``QueueActivity`` per queue, by name."""
    keys = {"succeeded": "succeeded", "failed_run": "failed_runs", "dead": "dead"}
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        found.setdefault(row["queue"], {"queue": row["queue"]})[keys[row["kind"]]] = int(row["n"])
    return [QueueActivity(**found[q]) for q in sorted(found)]


class PostgresInsight:
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
