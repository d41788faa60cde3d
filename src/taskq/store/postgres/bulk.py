"""COPY of a large batch of jobs (``PostgresStore.enqueue``), inside the caller's
transaction: plain jobs straight into ``jobs`` (with and without their own ``run_at``),
jobs with unique keys, meta or tags through a staging table that lives for the
transaction (``ON COMMIT DROP``: nothing stays in a session a pooler hands on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

import psycopg

from ...jobs import JobSpec
from ..enqueue import stage_row


async def copy_jobs(
    conn: psycopg.AsyncConnection, statements: Mapping[str, str], specs: Sequence[JobSpec]
) -> None:
    """COPY a batch; jobs without run_at take the database's now() as default."""
    if not specs:
        return
    with_run_at = specs[0].run_at is not None
    async with conn.cursor().copy(
        statements["enqueue_copy_run_at" if with_run_at else "enqueue_copy"]
    ) as copy:
        for s in specs:
            row: tuple[Any, ...] = (
                s.id,
                s.actor,
                s.queue,
                s.args_json,
                s.kwargs_json,
                s.priority,
                s.max_attempts,
                s.max_crashes,
                s.idempotent,
            )
            await copy.write_row((*row, s.run_at) if with_run_at else row)


async def stage_jobs(
    conn: psycopg.AsyncConnection, statements: Mapping[str, str], specs: Sequence[JobSpec]
) -> set[UUID]:
    """COPY a batch that carries unique keys, meta or tags into the transaction's
    staging table, insert it in one statement; return the ids inserted (inside a transaction)."""
    await conn.execute(statements["enqueue_stage"])
    async with conn.cursor().copy(statements["enqueue_stage_copy"]) as copy:
        for s in specs:
            await copy.write_row(stage_row(s))
    cur = await conn.execute(statements["enqueue_from_stage"])
    return {row[0] for row in await cur.fetchall()}
