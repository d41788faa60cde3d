"""Workflow rows, written once for both stores: what the insert statements take and
what the reads give back.

Inserting a workflow runs in two places, like a job's enqueue (store/enqueue.py): on the
store's own connection and on the caller's, in its transaction
(``enqueue_workflow(wf, connection=...)``). On Postgres the insert is one generator of
``(statement, params, wants_rows)`` steps (``pg_workflow_steps``) that ``run_sync`` or
``run_async`` drives on either; on SQLite one function of a ``sqlite3.Connection``
inside a write transaction (``sqlite_insert_workflow``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any
from uuid import UUID

from ..jobs import DeadReason, JobState, Outcome, OutcomeKind, StepRow, WorkflowRow
from ..workflows.model import MAX_STEPS, WAITING_RUN_AT, StepInfo, WorkflowInfo
from . import pgarray
from .enqueue import Steps, uuid_text
from .rows import Codec, Row
from .sqlfile import load_queries

#: the Postgres statements that also run on a caller's connection (schema filled in)
PG_STATEMENTS = ("workflow_insert", "workflow_steps_insert")
WAITING = "waiting"  # the state a step shows while it waits for its upstream steps


def _pg_ids(ids: Iterable[UUID]) -> str:
    return pgarray.uuids(ids)


def pg_steps_params(
    workflow_id: UUID, steps: Sequence[StepRow], meta_json: str | None = None
) -> dict[str, Any]:
    """The parallel arrays of ``workflow_steps_insert`` (``meta_json`` on every step)."""
    return {
        "workflow_id": workflow_id,
        "waiting": WAITING_RUN_AT,
        "meta": meta_json,
        "ids": pgarray.uuids(s.spec.id for s in steps),
        "actors": pgarray.texts(s.spec.actor for s in steps),
        "queues": pgarray.texts(s.spec.queue for s in steps),
        "args": pgarray.texts(s.spec.args_json for s in steps),
        "kwargs": pgarray.texts(s.spec.kwargs_json for s in steps),
        "priorities": pgarray.ints(s.spec.priority for s in steps),
        "max_attempts": pgarray.ints(s.spec.max_attempts for s in steps),
        "max_crashes": pgarray.ints(s.spec.max_crashes for s in steps),
        "idempotent": pgarray.bools(s.spec.idempotent for s in steps),
        "steps": pgarray.texts(s.name for s in steps),
        "upstream": pgarray.texts(_pg_ids(s.upstream) for s in steps),
        "downstream": pgarray.texts(_pg_ids(s.downstream) for s in steps),
        "upstream_left": pgarray.ints(len(s.upstream) for s in steps),
        "on_failure": pgarray.texts(str(s.on_failure) for s in steps),
    }


def pg_workflow_steps(statements: Mapping[str, str], workflow: WorkflowRow) -> Steps:
    """Insert ``workflow`` and its steps (inside the caller's transaction); return the
    step ids."""
    yield (
        statements["workflow_insert"],
        {"id": workflow.id, "name": workflow.name, "steps": len(workflow.steps)},
        False,
    )
    params = pg_steps_params(workflow.id, workflow.steps, workflow.meta_json)
    yield statements["workflow_steps_insert"], params, False
    return [s.spec.id for s in workflow.steps]


def copy_rows(workflow: WorkflowRow, *, waiting: bool) -> Iterator[tuple[Any, ...]]:
    """The steps that wait (``waiting``) or are due now, as rows of
    ``workflow_steps_copy[_waiting]``."""
    meta = workflow.meta_json
    for s in workflow.steps:
        if bool(s.upstream) is not waiting:
            continue
        j = s.spec
        row = (
            j.id,
            j.actor,
            j.queue,
            j.args_json,
            j.kwargs_json,
            j.priority,
            j.max_attempts,
            j.max_crashes,
            j.idempotent,
            workflow.id,
            s.name,
            list(s.upstream),
            list(s.downstream),
            len(s.upstream),
            str(s.on_failure),
            meta,
        )
        yield (*row, WAITING_RUN_AT) if waiting else row


def sqlite_step_rows(
    workflow_id: UUID, steps: Sequence[StepRow], now: float, meta_json: str | None = None
) -> list[tuple[Any, ...]]:
    """``steps`` as the rows of the SQLite ``workflow_steps_insert`` (``meta_json`` on
    every step)."""
    waiting = WAITING_RUN_AT.timestamp()
    wf = str(workflow_id)
    return [
        (
            str(s.spec.id),
            s.spec.actor,
            s.spec.queue,
            s.spec.args_json,
            s.spec.kwargs_json,
            s.spec.priority,
            waiting if s.upstream else now,
            now,
            s.spec.max_attempts,
            s.spec.max_crashes,
            int(s.spec.idempotent),
            wf,
            s.name,
            json.dumps([uuid_text(u.int) for u in s.upstream]),
            json.dumps([uuid_text(u.int) for u in s.downstream]),
            len(s.upstream),
            str(s.on_failure),
            meta_json,
        )
        for s in steps
    ]


def sqlite_insert_workflow(db: Any, workflow: WorkflowRow) -> list[UUID]:
    """Insert ``workflow`` on a ``sqlite3.Connection`` already inside a write transaction."""
    queries = load_queries("sqlite.sql")
    now = time.time()
    db.execute(
        queries["workflow_insert"],
        {"id": str(workflow.id), "name": workflow.name, "steps": len(workflow.steps), "now": now},
    )
    db.executemany(
        queries["workflow_steps_insert"],
        sqlite_step_rows(workflow.id, workflow.steps, now, workflow.meta_json),
    )
    return [s.spec.id for s in workflow.steps]


def workflow_info(
    codec: Codec,
    row: Row,
    steps: Sequence[Row] = (),
    *,
    ids: Callable[[Any], list[UUID]] | None = None,
) -> WorkflowInfo:
    """A workflow row (and its step rows, in order) as ``WorkflowInfo``. ``ids`` reads a
    step's ``upstream`` column (a list of ids, or JSON text on SQLite)."""
    infos: list[StepInfo] = []
    if steps:
        names = {codec.uuid(r["id"]): r["step"] for r in steps}
        for r in steps:
            upstream = [] if r["upstream"] is None or ids is None else ids(r["upstream"])
            state = r["state"]
            if state == JobState.QUEUED and (r["upstream_left"] or 0) > 0:
                state = WAITING
            infos.append(
                StepInfo(
                    id=codec.uuid(r["id"]),
                    name=r["step"],
                    actor=r["actor"],
                    queue=r["queue"],
                    state=state,
                    after=[names.get(u, str(u)) for u in upstream],
                    on_failure=r["on_failure"],
                    attempts=r["attempt"],
                    dead_reason=r["dead_reason"],
                    cancelled_by=r["cancelled_by"],
                    last_error=r["last_error"],
                    result=None if r["result"] is None else json.loads(r["result"]),
                    created_at=codec.time(r["created_at"]),
                    started_at=codec.maybe_time(r["started_at"]),
                    finished_at=codec.maybe_time(r["finished_at"]),
                )
            )
    return WorkflowInfo(
        id=codec.uuid(row["id"]),
        name=row["name"],
        state=row["state"],
        step_count=row["steps"],
        steps_left=row["steps_left"],
        failed_steps=row["failed_steps"],
        cancelled_steps=row["cancelled_steps"],
        created_at=codec.time(row["created_at"]),
        finished_at=codec.maybe_time(row["finished_at"]),
        cancelled_at=codec.maybe_time(row["cancelled_at"]),
        cancelled_by=row["cancelled_by"],
        steps=infos,
    )


def upstream_results(rows: Iterable[Row]) -> dict[str, Any]:
    """``{step name: result}`` from ``workflow_upstream_results`` rows."""
    return {r["step"]: None if r["result"] is None else json.loads(r["result"]) for r in rows}


def too_many(outcome: Outcome, steps: int, added: int) -> Outcome:
    """A fan-out that would take its workflow past ``MAX_STEPS``: the step that asked
    for it fails (dead), and nothing is added."""
    return Outcome(
        outcome.job_id,
        outcome.attempt,
        OutcomeKind.DEAD,
        error=(
            f"WorkflowTooLarge: adding {added} steps to a workflow of {steps} would pass "
            f"the limit of {MAX_STEPS} steps a workflow"
        ),
        dead_reason=DeadReason.FAILED,
    )


def joined(added: Sequence[StepRow], after_parent: Sequence[UUID]) -> list[StepRow]:
    """The steps a running step added, each also before the steps that run after it
    (``after_parent``, the adding step's downstream)."""
    out = []
    for s in added:
        extra = tuple(d for d in after_parent if d not in s.downstream)
        out.append(replace(s, downstream=(*s.downstream, *extra)) if extra else s)
    return out
