"""The SQLite store's workflow calls (``SqliteStore`` inherits them; the operator's
workflow views are in ``insight.py``).

The fan-in itself is not here: the ``jobs_workflow_step_*`` triggers (migration 0007)
do it inside whatever statement ends a step. These are the inserts, the reads, the
cancel and a running step's fan-out, each on the store's thread, every write one
``BEGIN IMMEDIATE`` transaction.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from ...jobs import Outcome, StepRow, WorkflowRow
from ...workflows.model import MAX_STEPS, WorkflowInfo
from ..enqueue import uuid_text
from ..sqlfile import load_queries
from ..workflows import (
    joined,
    sqlite_insert_workflow,
    sqlite_step_rows,
    too_many,
    upstream_results,
    workflow_info,
)
from .codec import CODEC
from .runs import complete_runs

Q = load_queries("sqlite.sql")
T = TypeVar("T")


def _ids(value: Any) -> list[UUID]:
    return [UUID(v) for v in json.loads(value)]


def _json_ids(ids: Sequence[UUID]) -> str:
    return json.dumps([uuid_text(u.int) for u in ids])


class SqliteWorkflows:
    """Workflow inserts, reads, cancel and fan-out on SQLite."""

    if TYPE_CHECKING:

        @property
        def db(self) -> sqlite3.Connection: ...

        async def run(self, fn: Callable[..., T], *args: Any) -> T: ...

        def write(self, fn: Callable[..., T], *args: Any) -> T: ...

    async def enqueue_workflow(self, workflow: WorkflowRow) -> None:
        await self.run(self.write, lambda: sqlite_insert_workflow(self.db, workflow))

    def _get_workflow(self, workflow_id: UUID) -> WorkflowInfo | None:
        params = {"id": str(workflow_id)}
        row = self.db.execute(Q["workflow_get"], params).fetchone()
        if row is None:
            return None
        steps = self.db.execute(Q["workflow_steps"], params).fetchall()
        return workflow_info(CODEC, row, steps, ids=_ids)

    async def get_workflow(self, workflow_id: UUID) -> WorkflowInfo | None:
        return await self.run(self._get_workflow, workflow_id)

    async def upstream_results(self, step_id: UUID) -> dict[str, Any]:
        params = {"id": str(step_id)}
        rows = await self.run(
            lambda: self.db.execute(Q["workflow_upstream_results"], params).fetchall()
        )
        return upstream_results(rows)

    def _cancel_workflow(self, workflow_id: UUID, by: str | None) -> int | None:
        params = {"id": str(workflow_id), "by": by, "now": time.time()}
        if self.db.execute(Q["workflow_get"], {"id": params["id"]}).fetchone() is None:
            return None
        moved = self.db.execute(Q["workflow_request_cancel"], params).rowcount
        self.db.execute(Q["workflow_mark_cancelled"], params)
        return moved

    async def cancel_workflow(self, workflow_id: UUID, *, by: str | None = None) -> int | None:
        return await self.run(self.write, self._cancel_workflow, workflow_id, by)

    def _complete_fanout(self, worker_id: str, outcome: Outcome, added: Sequence[StepRow]) -> int:
        db = self.db
        held = db.execute(
            Q["workflow_fanout_fence"],
            {"id": str(outcome.job_id), "attempt": outcome.attempt, "worker_id": worker_id},
        ).fetchone()
        if held is None:
            return 0  # fenced out: the run that added them is not this one any more
        if not held["cancelling"]:
            if held["steps"] + len(added) > MAX_STEPS:
                outcome = too_many(outcome, held["steps"], len(added))
            else:
                wf = UUID(held["workflow_id"])
                rows = joined(added, _ids(held["downstream"] or "[]"))
                db.executemany(
                    Q["workflow_steps_insert"],
                    sqlite_step_rows(wf, rows, time.time(), held["meta"]),
                )
                params = {
                    "id": str(outcome.job_id),
                    "added": _json_ids([s.spec.id for s in added]),
                    "downstream": held["downstream"] or "[]",
                }
                db.execute(Q["workflow_fanout_parent"], params)
                db.execute(Q["workflow_fanout_after"], params)
                db.execute(Q["workflow_fanout_count"], {**params, "id": held["workflow_id"]})
        return complete_runs(self.db, worker_id, [outcome])

    async def complete_fanout(
        self, worker_id: UUID, outcome: Outcome, added: Sequence[StepRow]
    ) -> int:
        return await self.run(self.write, self._complete_fanout, str(worker_id), outcome, added)
