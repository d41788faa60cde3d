"""The operator's reads and chores on SQLite (``SqliteStore`` inherits them).

The same methods as ``postgres_insight``; every statement a named block in
``sqlite.sql``. Reads run on the store thread; writes in one ``BEGIN IMMEDIATE``.
There is no vacuum to watch or run: SQLite reuses a deleted row's pages by itself.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

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

Q = load_queries("sqlite.sql")


def _ts(value: datetime) -> float:
    return value.timestamp()


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


class SqliteInsight:
    _run: Callable[..., Awaitable[Any]]
    _write: Callable[..., Any]
    _job_from_row: Callable[[Mapping[str, Any]], Job]
    _codec: Codec

    def _connection(self) -> sqlite3.Connection:
        db: sqlite3.Connection = getattr(self, "_db")  # noqa: B009 (the store's property)
        return db

    async def _all(self, name: str, params: dict[str, Any] | None = None) -> list[Any]:
        return await self._run(lambda: self._connection().execute(Q[name], params or {}).fetchall())  # type: ignore[no-any-return]

    async def _written(self, name: str, params: dict[str, Any]) -> list[Any]:
        def write() -> list[Any]:
            return self._connection().execute(Q[name], params).fetchall()

        return await self._run(self._write, write)  # type: ignore[no-any-return]

    async def queue_backlog(self) -> list[QueueDepth]:
        return depths(await self._all("queue_backlog", {"now": time.time()}))

    async def queue_infos(self) -> list[QueueInfo]:
        depths = backlog_depths(await self._all("queue_backlog", {"now": time.time()}))
        controls = await self._all("queue_controls")
        limits = await self._all("get_limits")
        return overview(self._codec, depths, controls, limits)

    async def queue_activity(self, since: datetime) -> list[QueueActivity]:
        return activities(await self._all("queue_activity", {"since": _ts(since)}))

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
        return [self._job_from_row(r) for r in await self._all("browse_jobs", params)]

    async def job_errors(self, job_id: UUID) -> list[JobError]:
        rows = await self._all("job_errors", {"id": str(job_id)})
        return [
            JobError(
                r["attempt"],
                _dt(r["at"]),
                bool(r["crash"]),
                UUID(r["worker_id"]) if r["worker_id"] else None,
                r["error"],
            )
            for r in rows
        ]

    async def discard_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        if not job_ids:
            return []
        rows = await self._written("discard_jobs", {"ids": json.dumps([str(i) for i in job_ids])})
        return [UUID(r["id"]) for r in rows]

    async def try_lead(self, name: str, holder: str, seconds: float) -> bool:
        params = {"name": name, "holder": holder, "seconds": seconds, "now": time.time()}
        return bool(await self._written("try_lead", params))

    async def release_lead(self, name: str, holder: str) -> None:
        await self._written("release_lead", {"name": name, "holder": holder})

    async def report_workgroup(
        self, instance: UUID, hostname: str, pid: int, children: list[dict[str, Any]]
    ) -> None:
        params = {
            "instance": str(instance),
            "hostname": hostname,
            "pid": pid,
            "children": json.dumps(children),
            "now": time.time(),
        }
        await self._written("report_workgroup", params)

    async def remove_workgroup(self, instance: UUID) -> None:
        await self._written("remove_workgroup", {"instance": str(instance)})

    async def list_workgroups(self, since: datetime) -> list[WorkgroupReport]:
        rows = await self._all("list_workgroups", {"since": _ts(since)})
        return [
            WorkgroupReport(
                UUID(r["instance"]),
                r["hostname"],
                r["pid"],
                _dt(r["updated_at"]),
                json.loads(r["children"]),
            )
            for r in rows
        ]

    # -- upkeep of the jobs table: nothing to do ---------------------------------------
    async def autovacuum(self) -> Autovacuum | None:
        return None

    async def vacuum_jobs(self, *, unless_vacuumed_within: float) -> VacuumResult:
        return VacuumResult(VacuumOutcome.UNSUPPORTED)
