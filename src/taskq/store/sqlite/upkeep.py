"""The fleet's coordination on SQLite (``SqliteStore`` inherits it): leases held by one
process at a time and the workgroup supervisors' reports, each one write. There is no
vacuum to watch or run: SQLite reuses a deleted row's pages by itself.
"""

from __future__ import annotations

import json
import time
from typing import Any
from uuid import UUID

from ...insight import Autovacuum, VacuumOutcome, VacuumResult
from .connections import Engine, written


class Upkeep:
    async def try_lead(self: Engine, name: str, holder: str, seconds: float) -> bool:
        params = {"name": name, "holder": holder, "seconds": seconds, "now": time.time()}
        return bool(await written(self, "try_lead", params))

    async def release_lead(self: Engine, name: str, holder: str) -> None:
        await written(self, "release_lead", {"name": name, "holder": holder})

    async def report_workgroup(
        self: Engine, instance: UUID, hostname: str, pid: int, children: list[dict[str, Any]]
    ) -> None:
        params = {
            "instance": str(instance),
            "hostname": hostname,
            "pid": pid,
            "children": json.dumps(children),
            "now": time.time(),
        }
        await written(self, "report_workgroup", params)

    async def remove_workgroup(self: Engine, instance: UUID) -> None:
        await written(self, "remove_workgroup", {"instance": str(instance)})

    # -- upkeep of the jobs table: nothing to do ---------------------------------------
    async def autovacuum(self) -> Autovacuum | None:
        return None

    async def vacuum_jobs(self, *, unless_vacuumed_within: float) -> VacuumResult:
        return VacuumResult(VacuumOutcome.UNSUPPORTED)
