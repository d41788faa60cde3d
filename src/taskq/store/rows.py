"""Named rows into taskq's data, written once for both stores.

Both stores hand rows over as mappings keyed by column name (psycopg's ``dict_row``,
``sqlite3.Row``) and select JSON as text, so every column is read the same way. What
differs is how a driver returns ids, times and lists; each store passes a ``Codec``
that says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from ..jobs import ActorConfig, ClaimedJob, Job, RescuedJob, ScheduleInfo, WorkerInfo

Row = Mapping[str, Any]


def _json(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def _step(r: Row) -> ClaimedJob:
    """A claimed workflow step: its ``workflow`` column is [workflow id, step, how many
    upstream steps] (their ids stay in the store: a fan-in of thousands would decode and
    send them back to read their results)."""
    workflow_id, step, upstream_steps = json.loads(r["workflow"])
    return ClaimedJob(
        id=UUID(str(r["id"])),
        actor=r["actor"],
        queue=r["queue"],
        args_json=r["args"],
        kwargs_json=r["kwargs"],
        attempt=r["attempt"],
        max_attempts=r["max_attempts"],
        crash_count=r["crash_count"],
        max_crashes=r["max_crashes"],
        idempotent=bool(r["idempotent"]),
        meta_json=r["meta"],
        snooze_count=r["snooze_count"],
        run_alone=bool(r["run_alone"]),
        workflow_id=UUID(workflow_id),
        step=step,
        upstream_steps=upstream_steps or 0,
    )


@dataclass(frozen=True, slots=True)
class Codec:
    """How one driver returns the values that are not plain ints, text and JSON text."""

    uuid: Callable[[Any], UUID]  # a non-null id
    time: Callable[[Any], datetime]  # a non-null timestamp, as an aware UTC datetime
    texts: Callable[[Any], list[str]]  # a list of text (a worker's queues)

    def maybe_uuid(self, value: Any) -> UUID | None:
        return None if value is None else self.uuid(value)

    def maybe_time(self, value: Any) -> datetime | None:
        return None if value is None else self.time(value)

    def job(self, r: Row) -> Job:
        return Job(
            id=self.uuid(r["id"]),
            actor=r["actor"],
            queue=r["queue"],
            args=json.loads(r["args"]),
            kwargs=json.loads(r["kwargs"]),
            priority=r["priority"],
            state=r["state"],
            attempts=r["attempt"],
            max_attempts=r["max_attempts"],
            crash_count=r["crash_count"],
            max_crashes=r["max_crashes"],
            idempotent=bool(r["idempotent"]),
            run_at=self.time(r["run_at"]),
            created_at=self.time(r["created_at"]),
            started_at=self.maybe_time(r["started_at"]),
            finished_at=self.maybe_time(r["finished_at"]),
            worker_id=self.maybe_uuid(r["worker_id"]),
            lease_expires_at=self.maybe_time(r["lease_expires_at"]),
            last_error=r["last_error"],
            dead_reason=r["dead_reason"],
            result=_json(r["result"]),
            snooze_count=r["snooze_count"],
            cancelled_at=self.maybe_time(r["cancelled_at"]),
            cancelled_by=r["cancelled_by"],
            meta=_json(r["meta"]) or {},
            tags=[] if r["tags"] is None else self.texts(r["tags"]),
            unique_key=r["unique_key"],
            late=bool(r["late"]),
            blamed_crashes=r["blamed_crashes"],
            unproven_crashes=r["unproven_crashes"],
            workflow_id=self.maybe_uuid(r["workflow_id"]),
            step=r["step"],
        )

    def claimed(self, rows: Iterable[Row]) -> list[ClaimedJob]:
        """Claimed runs, in the order given (each store hands them over in claim order:
        priority, run_at, id)."""
        return [
            ClaimedJob(
                id=self.uuid(r["id"]),
                actor=r["actor"],
                queue=r["queue"],
                args_json=r["args"],
                kwargs_json=r["kwargs"],
                attempt=r["attempt"],
                max_attempts=r["max_attempts"],
                crash_count=r["crash_count"],
                max_crashes=r["max_crashes"],
                idempotent=bool(r["idempotent"]),
                meta_json=r["meta"],
                snooze_count=r["snooze_count"],
                run_alone=bool(r["run_alone"]),
            )
            if r["workflow"] is None
            else _step(r)
            for r in rows
        ]

    def rescued(self, r: Row) -> RescuedJob:
        return RescuedJob(
            id=self.uuid(r["id"]),
            actor=r["actor"],
            state=r["state"],
            dead_reason=r["dead_reason"],
            crash_count=r["crash_count"],
            queue=r["queue"],
        )

    def worker(self, r: Row) -> WorkerInfo:
        return WorkerInfo(
            id=self.uuid(r["id"]),
            pid=r["pid"],
            hostname=r["hostname"],
            queues=self.texts(r["queues"]),
            worker_label=r["worker_label"],
            workgroup_instance=self.maybe_uuid(r["workgroup_instance"]),
            started_at=self.maybe_time(r["started_at"]),
            last_seen_at=self.maybe_time(r["last_seen_at"]),
            max_connections=r["max_connections"],
            connections=r["connections"],
        )

    def schedule(self, r: Row) -> ScheduleInfo:
        return ScheduleInfo(
            name=r["name"],
            actor=r["actor"],
            cron=r["cron"],
            timezone=r["timezone"],
            missed=r["missed"],
            first_seen_at=self.time(r["first_seen_at"]),
            seen_at=self.time(r["seen_at"]),
            last_tick=self.maybe_time(r["last_tick"]),
        )

    @staticmethod
    def actor_config(r: Row) -> ActorConfig:
        return ActorConfig(
            name=r["name"],
            queue=r["queue"],
            max_attempts=r["max_attempts"],
            max_crashes=r["max_crashes"],
            idempotent=bool(r["idempotent"]),
            cpu_bound=bool(r["cpu_bound"]),
            timeout=r["timeout"],
            extra=_json(r["extra"]) or {},
        )
