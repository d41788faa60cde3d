"""The fleet's coordination and the jobs table's upkeep on Postgres (``PostgresStore``
inherits them): leases held by one process at a time, the workgroup supervisors'
reports, autovacuum's reach and the opt-in VACUUM. Every statement is a named block in
``postgres.sql``.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from ...insight import Autovacuum, VacuumOutcome, VacuumResult
from .connections import Connections

#: the SQLSTATE of VACUUM (SKIP_LOCKED)'s warning when another vacuum holds the table
LOCK_NOT_AVAILABLE = "55P03"


class Upkeep:
    schema: str
    _db: Connections

    async def try_lead(self, name: str, holder: str, seconds: float) -> bool:
        row = await self._db.fetchone(
            "try_lead", {"name": name, "holder": holder, "seconds": seconds}
        )
        return row is not None

    async def release_lead(self, name: str, holder: str) -> None:
        await self._db.fetchall("release_lead", {"name": name, "holder": holder})

    async def report_workgroup(
        self, instance: UUID, hostname: str, pid: int, children: list[dict[str, Any]]
    ) -> None:
        params = {
            "instance": instance,
            "hostname": hostname,
            "pid": pid,
            "children": json.dumps(children),
        }
        await self._db.fetchall("report_workgroup", params)

    async def remove_workgroup(self, instance: UUID) -> None:
        await self._db.fetchall("remove_workgroup", {"instance": instance})

    # -- upkeep of the jobs table ----------------------------------------------------------
    async def autovacuum(self) -> Autovacuum:
        row = await self._db.fetchone("autovacuum_state", None)
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

        async with self._db.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(self._db.q["vacuumed_within"], {"seconds": unless_vacuumed_within})
            row = await cur.fetchone()
            if row is not None and row["recent"]:
                return VacuumResult(VacuumOutcome.RECENT)
            conn.add_notice_handler(on_notice)
            try:
                await conn.execute(self._db.q["vacuum_jobs"])
            finally:
                conn.remove_notice_handler(on_notice)
        if not warnings:
            return VacuumResult(VacuumOutcome.VACUUMED)
        state, message = warnings[0]
        busy = state == LOCK_NOT_AVAILABLE
        return VacuumResult(VacuumOutcome.BUSY if busy else VacuumOutcome.REFUSED, message)
