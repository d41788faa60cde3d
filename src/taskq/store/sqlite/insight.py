"""The operator's views on SQLite (``Insight``; ``SqliteStore.insight``).

The same methods as ``postgres/insight.py``; every statement a named block in
``sqlite.sql``. Reads run on the store thread; writes in one ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

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
from .codec import dt, ts
from .connections import Engine, read, written


def _filter(filters: JobFilter, before: UUID | None) -> dict[str, Any]:
    low, below = filters.bounds(before)
    return {
        "before": str(below),
        "id_low": str(low),
        "state": filters.state,
        "queue": filters.queue,
        "actor": filters.actor,
        "error": filters.error,
        "tag": filters.tag,
    }


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

    async def browse_jobs(
        self, filters: JobFilter, *, before: UUID | None = None, limit: int = 50
    ) -> list[Job]:
        params = _filter(filters, before)
        params["limit"] = limit
        if filters.searches:
            params["args"], params["kwargs"], params["meta"] = filters.patterns()
            params["scan"] = SEARCH_SCAN
            rows = await read(self._store, "search_jobs", params)
        elif filters.state == "dead" and filters.queue is not None:
            rows = await read(self._store, "browse_dead_in_queue", params)
        else:
            rows = await read(self._store, "browse_jobs", params)
        return [self._codec.job(r) for r in rows]

    async def count_jobs(self, filters: JobFilter, *, cap: int) -> int:
        params = _filter(filters, None)
        params["cap"] = cap
        dead_in_queue = filters.state == "dead" and filters.queue is not None
        statement = "count_dead_in_queue" if dead_in_queue else "count_jobs"
        (row,) = await read(self._store, statement, params)
        return int(row["n"])

    async def record_activity(
        self, backlog: Sequence[QueueDepth] | None = None, *, now: datetime | None = None
    ) -> None:
        now = now or datetime.now(UTC)
        (row,) = await read(self._store, "activity_upto") or [None]
        window = to_count(dt(row["upto"]) if row else None, now)
        if window is not None:
            start, end = ts(window[0]), ts(window[1])
            await written(self._store, "activity_fill", {"from": start, "to": end})
            await written(self._store, "activity_mark", {"to": end})
            await written(self._store, "activity_prune", {"before": ts(window[1] - KEEP)})
        if backlog:
            ages = json.dumps({d.queue: d.oldest_due_age for d in backlog})
            await written(
                self._store, "activity_sample", {"minute": ts(minute_of(now)), "ages": ages}
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
        params = {"since": ts(since), "bucket": bucket, "queue": queue}
        statement = "activity_read_actors" if by_actor else "activity_read"
        counted = minutes(await read(self._store, statement, params), dt)
        (row,) = await read(self._store, "activity_upto") or [None]
        current = minute_of(now)
        live = await read(
            self._store, "activity_live", {"from": row["upto"] if row else ts(current)}
        )
        return counted + open_minute(live, current, queue=queue, by_actor=by_actor)

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
