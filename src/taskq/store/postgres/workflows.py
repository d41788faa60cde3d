"""The Postgres store's workflow calls (``PostgresStore`` inherits them; the operator's
workflow views are in ``insight.py``).

The fan-in itself is not here: the ``jobs_workflow_step*`` triggers (migrations 0007,
0009) do it inside whatever statement ends a step, once per statement. These are the
inserts, the reads, the cancel and a running step's fan-out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg import errors as pg_errors
from psycopg.rows import DictRow, dict_row

from ...jobs import Outcome, StepRow, WorkflowRow
from ...workflows.model import MAX_STEPS, WorkflowInfo
from .. import pgarray
from ..enqueue import run_async
from ..pgarray import complete_params
from ..workflows import (
    copy_rows,
    joined,
    pg_steps_params,
    pg_workflow_steps,
    too_many,
    upstream_results,
    workflow_info,
)
from .codec import CODEC
from .connections import Connections

COPY_THRESHOLD = 100  # workflows this big go by COPY (the store's own connection)
#: how often cancel_workflow tries again when the server broke a deadlock against it (an
#: ack ending a step of the same workflow at that moment)
CANCEL_TRIES = 5


def _ids(value: Any) -> list[UUID]:
    return list(value)


class PostgresWorkflows:
    """Workflow inserts, reads, cancel and fan-out on Postgres."""

    _db: Connections
    cancel_channel: str
    channel: str
    enqueue_sql: dict[str, str]

    async def enqueue_workflow(self, workflow: WorkflowRow) -> None:
        async with self._db.connection() as conn, conn.transaction():
            if len(workflow.steps) < COPY_THRESHOLD:
                await run_async(conn, pg_workflow_steps(self.enqueue_sql, workflow))
                return
            # a large one: the row, then its steps by COPY (~3x the unnest insert)
            await conn.execute(
                self.enqueue_sql["workflow_insert"],
                {"id": workflow.id, "name": workflow.name, "steps": len(workflow.steps)},
            )
            for waiting in (False, True):
                name = "workflow_steps_copy_waiting" if waiting else "workflow_steps_copy"
                async with conn.cursor().copy(self.enqueue_sql[name]) as copy:
                    for row in copy_rows(workflow, waiting=waiting):
                        await copy.write_row(row)

    async def get_workflow(self, workflow_id: UUID) -> WorkflowInfo | None:
        row = await self._db.fetchone("workflow_get", {"id": workflow_id})
        if row is None:
            return None
        steps = await self._db.fetchall("workflow_steps", {"id": workflow_id})
        return workflow_info(CODEC, row, steps, ids=_ids)

    async def upstream_results(self, step_id: UUID) -> dict[str, Any]:
        rows = await self._db.fetchall("workflow_upstream_results", {"id": step_id})
        return upstream_results(rows)

    async def cancel_workflow(self, workflow_id: UUID, *, by: str | None = None) -> int | None:
        if await self._db.fetchone("workflow_get", {"id": workflow_id}) is None:
            return None
        params = {"id": workflow_id, "by": by, "cancel_channel": self.cancel_channel}
        moved = 0
        # Twice: a step made queued by a fan-out or an ack that held a row this statement
        # waited for is not in its snapshot; the second statement's snapshot has it. Every
        # step running after the first carries the cancel and can release nothing more.
        for _ in range(2):
            row = await self._retry_deadlock("workflow_request_cancel", params)
            moved += int(row["moved"]) if row else 0
        await self._db.fetchone("workflow_mark_cancelled", {"id": workflow_id, "by": by})
        return moved

    async def _retry_deadlock(self, name: str, params: dict[str, Any]) -> DictRow | None:
        for attempt in range(CANCEL_TRIES):
            try:
                async with self._db.connection() as conn:
                    cur = conn.cursor(row_factory=dict_row)
                    await cur.execute(self._db.q[name], params)
                    return await cur.fetchone()
            except Exception as exc:
                if attempt + 1 == CANCEL_TRIES or not isinstance(
                    exc.__cause__, pg_errors.DeadlockDetected
                ):
                    raise
        return None

    async def complete_fanout(
        self, worker_id: UUID, outcome: Outcome, added: Sequence[StepRow]
    ) -> int:
        async with self._db.kept() as spare, spare.conn.transaction():
            cur = spare.conn.cursor(row_factory=dict_row)
            await cur.execute(
                self._db.q["workflow_fanout_fence"],
                {"id": outcome.job_id, "attempt": outcome.attempt, "worker_id": worker_id},
            )
            held = await cur.fetchone()
            if held is None:
                return 0  # fenced out: the run that added them is not this one any more
            if not held["cancelling"]:
                if held["steps"] + len(added) > MAX_STEPS:
                    outcome = too_many(outcome, held["steps"], len(added))
                else:
                    await cur.execute(
                        self.enqueue_sql["workflow_steps_insert"],
                        pg_steps_params(
                            held["workflow_id"],
                            joined(added, held["downstream"] or ()),
                            held["meta"],
                        ),
                    )
                    await cur.execute(
                        self._db.q["workflow_fanout_link"],
                        {
                            "id": outcome.job_id,
                            "added": pgarray.uuids(s.spec.id for s in added),
                            "downstream": pgarray.uuids(held["downstream"] or ()),
                        },
                    )
            await cur.execute(
                self._db.q["complete"], complete_params(worker_id, self.channel, [outcome])
            )
            row = await cur.fetchone()
            return int(row["changed"]) if row else 0
