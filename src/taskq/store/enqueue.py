"""Inserting jobs, shared by the stores' own connections and the caller's connection.

Enqueue runs in two places: on a store's own connection (``PostgresStore.enqueue``,
``SqliteStore.enqueue``) and on the application's connection, inside its transaction
(``enqueue_with(..., connection=conn)``, see ``taskq.txn``). Both run the same named
statements (``enqueue*``, ``unique_holders`` in ``<engine>.sql``) through this module.

Unique keys: jobs are inserted with ``ON CONFLICT DO NOTHING`` on the unique partial
index; the jobs not inserted then learn the id of the job holding their key. If that
holder left its covered states in between (it finished), they are inserted again. The
answer is one id per spec: its own, or the holder's (a duplicate).

On Postgres the sequence is written once, as a generator of ``(statement, params,
wants_rows)`` steps (``pg_steps``), and driven by a sync or an async cursor
(``run_sync``/``run_async``); psycopg connections and cursors both work. Only the two
Postgres-only helpers that quote the schema (``pg_statements``, ``jobs_table``) need
psycopg itself, and import it when called: they run for a Postgres store or a
psycopg connection only, so an application on SQLite never loads psycopg.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from datetime import UTC
from typing import Any
from uuid import UUID

from ..exceptions import StoreError
from ..jobs import JobColumns, JobSpec
from .sqlfile import load_queries

PG_STATEMENTS = (
    "enqueue",
    "enqueue_one",
    "enqueue_full",
    "enqueue_copy",
    "enqueue_copy_run_at",
    "enqueue_columns_copy",
    "enqueue_columns_copy_run_at",
    "unique_holders",
    "connection_identity",
    "enqueue_stage",
    "enqueue_stage_copy",
    "enqueue_from_stage",
    "workflow_insert",  # a workflow goes in beside its steps (store/workflows.py)
    "workflow_steps_insert",
    "workflow_steps_copy",
    "workflow_steps_copy_waiting",
)
SETTLE_ROUNDS = 5  # a key whose holder keeps finishing between insert and lookup

Step = tuple[str, dict[str, Any], bool]
Steps = Generator[Step, list[tuple[Any, ...]], list[UUID]]


def needs_full(specs: Sequence[JobSpec]) -> bool:
    """Does any job carry a unique key, meta or tags (the plain statements lack them)?"""
    return any(s.unique_key is not None or s.meta_json is not None or s.tags for s in specs)


def pg_statements(schema: str) -> dict[str, str]:
    """The enqueue statements with the schema filled in (once per store)."""
    from psycopg import sql

    ident, queries = sql.Identifier(schema), load_queries("postgres.sql")
    return {n: sql.SQL(queries[n]).format(schema=ident).as_string(None) for n in PG_STATEMENTS}


def jobs_table(schema: str) -> str:
    """``"schema".jobs`` as ``to_regclass`` takes it."""
    from psycopg import sql

    return sql.Identifier(schema).as_string(None) + ".jobs"


def _pg_columns(specs: Sequence[JobSpec]) -> dict[str, Any]:
    return {
        "ids": [s.id for s in specs],
        "actors": [s.actor for s in specs],
        "queues": [s.queue for s in specs],
        "args": [s.args_json for s in specs],
        "kwargs": [s.kwargs_json for s in specs],
        "priorities": [s.priority for s in specs],
        "run_ats": [s.run_at for s in specs],
        "max_attempts": [s.max_attempts for s in specs],
        "max_crashes": [s.max_crashes for s in specs],
        "idempotent": [s.idempotent for s in specs],
    }


def stage_row(s: JobSpec) -> tuple[Any, ...]:
    """One spec as a row of ``enqueue_stage_copy``."""
    return (
        s.id,
        s.actor,
        s.queue,
        s.args_json,
        s.kwargs_json,
        s.priority,
        s.run_at,
        s.max_attempts,
        s.max_crashes,
        s.idempotent,
        s.unique_key,
        s.unique_states,
        s.meta_json,
        tags_json(s.tags),
    )


def _pg_full(specs: Sequence[JobSpec]) -> dict[str, Any]:
    params = _pg_columns(specs)
    params["unique_keys"] = [s.unique_key for s in specs]
    params["unique_states"] = [s.unique_states for s in specs]
    params["metas"] = [s.meta_json for s in specs]
    params["tags"] = [tags_json(s.tags) for s in specs]
    return params


def tags_json(tags: Sequence[str]) -> str | None:
    """A job's tags as the statements take them: one JSON array (None for none)."""
    return json.dumps(list(tags)) if tags else None


def columns_insert(statements: dict[str, str], jobs: JobColumns) -> tuple[str, dict[str, Any]]:
    """A small batch of columns as one ``INSERT``: ``enqueue_one`` for a single plain job,
    else ``INSERT ... SELECT FROM unnest`` (``enqueue``; ``enqueue_full`` when the jobs
    carry meta or tags)."""
    n = len(jobs.ids)
    if n == 1 and jobs.meta_json is None and not jobs.tags:
        return statements["enqueue_one"], {
            "id": jobs.ids[0],
            "actor": jobs.actor,
            "queue": jobs.queue,
            "args": jobs.args_json[0],
            "kwargs": jobs.kwargs_json[0],
            "priority": jobs.priority,
            "run_at": jobs.run_at,
            "max_attempts": jobs.max_attempts,
            "max_crashes": jobs.max_crashes,
            "idempotent": jobs.idempotent,
        }
    params: dict[str, Any] = {
        "ids": list(jobs.ids),
        "actors": [jobs.actor] * n,
        "queues": [jobs.queue] * n,
        "args": list(jobs.args_json),
        "kwargs": list(jobs.kwargs_json),
        "priorities": [jobs.priority] * n,
        "run_ats": [jobs.run_at] * n,
        "max_attempts": [jobs.max_attempts] * n,
        "max_crashes": [jobs.max_crashes] * n,
        "idempotent": [jobs.idempotent] * n,
    }
    if jobs.meta_json is None and not jobs.tags:
        return statements["enqueue"], params
    params["unique_keys"] = params["unique_states"] = [None] * n
    params["metas"] = [jobs.meta_json] * n
    params["tags"] = [tags_json(jobs.tags)] * n
    return statements["enqueue_full"], params


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
COPY_NULL = "\\N"


def copy_text(value: str) -> str:
    """One field of a COPY text line: backslash, tab, newline and CR escaped."""
    return value.translate(_COPY_ESCAPES)


def _array_literal(items: Sequence[str]) -> str:
    """A ``text[]`` literal, every element quoted."""
    quoted = (item.replace("\\", "\\\\").replace('"', '\\"') for item in items)
    return "{" + ",".join(f'"{item}"' for item in quoted) + "}"


def copy_columns(jobs: JobColumns, chunk: int) -> tuple[str, Iterator[bytes]]:
    """``jobs`` as the COPY of ``enqueue_columns_copy[_run_at]``: the statement's name and
    its data in blocks of ``chunk`` lines (sent while the next block is built).

    A line is the shared fields (escaped once per batch), then the job's id (32 hex
    digits), args and kwargs. JSON text holds no raw tab, newline or CR (the encoder
    escapes them) and the ids no backslash, so a block is escaped with one pass over
    it; a block whose arguments do hold one of them (JSON from elsewhere) is escaped
    field by field."""
    shared = [
        copy_text(jobs.actor),
        copy_text(jobs.queue),
        str(int(jobs.priority)),
        str(int(jobs.max_attempts)),
        str(int(jobs.max_crashes)),
        "t" if jobs.idempotent else "f",
        COPY_NULL if jobs.meta_json is None else copy_text(jobs.meta_json),
        copy_text(_array_literal(jobs.tags)) if jobs.tags else COPY_NULL,
    ]
    name = "enqueue_columns_copy"
    if jobs.run_at is not None:
        shared.append(jobs.run_at.astimezone(UTC).isoformat())
        name = "enqueue_columns_copy_run_at"
    head = "\t".join(shared) + "\t"
    return name, _copy_blocks(jobs, head, chunk)


def _copy_blocks(jobs: JobColumns, head: str, chunk: int) -> Iterator[bytes]:
    separator = "\n" + head
    for start in range(0, len(jobs.ids), chunk):
        rows = list(
            zip(
                jobs.ids[start : start + chunk],
                jobs.args_json[start : start + chunk],
                jobs.kwargs_json[start : start + chunk],
                strict=True,
            )
        )
        block = "\n".join([f"{job_id.int:032x}\t{a}\t{k}" for job_id, a, k in rows])
        if (
            block.count("\t") != 2 * len(rows)
            or block.count("\n") != len(rows) - 1
            or "\r" in block
        ):
            block = "\n".join(
                [f"{job_id.int:032x}\t{copy_text(a)}\t{copy_text(k)}" for job_id, a, k in rows]
            )
        elif "\\" in block:
            block = block.replace("\\", "\\\\")
        yield (head + block.replace("\n", separator) + "\n").encode()


def pg_steps(
    statements: dict[str, str], specs: Sequence[JobSpec], inserted: set[UUID] | None = None
) -> Steps:
    """Insert ``specs``; return one id per spec (its own, or its key's holder).
    ``inserted``: the batch was already inserted (by COPY through the staging table) and
    these ids went in; only the lookup of holders (and any re-insert) is left."""
    if not needs_full(specs):
        if len(specs) == 1:
            (s,) = specs
            params = {
                "id": s.id,
                "actor": s.actor,
                "queue": s.queue,
                "args": s.args_json,
                "kwargs": s.kwargs_json,
                "priority": s.priority,
                "run_at": s.run_at,
                "max_attempts": s.max_attempts,
                "max_crashes": s.max_crashes,
                "idempotent": s.idempotent,
            }
            yield statements["enqueue_one"], params, False
        else:
            yield statements["enqueue"], _pg_columns(specs), False
        return [s.id for s in specs]
    ids: list[UUID | None] = [None] * len(specs)
    pending = list(range(len(specs)))
    for _ in range(SETTLE_ROUNDS):
        if inserted is None:
            batch = [specs[i] for i in pending]
            rows = yield statements["enqueue_full"], _pg_full(batch), True
            inserted = {r[0] for r in rows}
        for i in pending:
            if specs[i].id in inserted:
                ids[i] = specs[i].id
        pending = [i for i in pending if ids[i] is None]
        inserted = None
        if not pending:
            return [i for i in ids if i is not None]
        keys = sorted({str(specs[i].unique_key) for i in pending})
        rows = yield statements["unique_holders"], {"keys": keys}, True
        holders = {r[0]: r[1] for r in rows}
        for i in pending:
            ids[i] = holders.get(specs[i].unique_key)
        pending = [i for i in pending if ids[i] is None]  # their holder finished meanwhile
        if not pending:
            return [i for i in ids if i is not None]
    raise StoreError(
        f"could not settle unique key {specs[pending[0]].unique_key!r}: it kept changing"
    )


def _tuples(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows as tuples, whatever row factory the connection uses (taskq's pool uses
    ``dict_row``; a caller's connection may use anything)."""
    return [tuple(r.values()) if isinstance(r, Mapping) else tuple(r) for r in rows]


def run_sync(target: Any, steps: Steps) -> list[UUID]:
    """Drive ``steps`` on a psycopg ``Connection`` or ``Cursor``."""
    try:
        step = next(steps)
        while True:
            query, params, wants_rows = step
            cur = target.execute(query, params)
            step = steps.send(_tuples(cur.fetchall()) if wants_rows else [])
    except StopIteration as stop:
        result: list[UUID] = stop.value
        return result


async def run_async(target: Any, steps: Steps) -> list[UUID]:
    """Drive ``steps`` on a psycopg ``AsyncConnection`` or ``AsyncCursor``."""
    try:
        step = next(steps)
        while True:
            query, params, wants_rows = step
            cur = await target.execute(query, params)
            step = steps.send(_tuples(await cur.fetchall()) if wants_rows else [])
    except StopIteration as stop:
        result: list[UUID] = stop.value
        return result


def uuid_text(value: int) -> str:
    """``str(UUID(int=value))``, without the object."""
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def sqlite_column_rows(jobs: JobColumns, now: float) -> list[tuple[Any, ...]]:
    """``jobs`` as the rows of ``enqueue_columns``; ``now`` is the batch's created_at (and
    its run_at, when it names none)."""
    shared = (
        jobs.actor,
        jobs.queue,
        jobs.priority,
        now if jobs.run_at is None else jobs.run_at.timestamp(),
        now,
        jobs.max_attempts,
        jobs.max_crashes,
        int(jobs.idempotent),
        jobs.meta_json,
        tags_json(jobs.tags),
    )
    return [
        (uuid_text(job_id.int), a, k, *shared)
        for job_id, a, k in zip(jobs.ids, jobs.args_json, jobs.kwargs_json, strict=True)
    ]


def sqlite_enqueue(db: Any, specs: Sequence[JobSpec]) -> list[UUID]:
    """Insert ``specs`` on a ``sqlite3.Connection`` already inside a write transaction;
    return one id per spec (its own, or its key's holder)."""
    now = time.time()
    full = needs_full(specs)
    rows = [
        {
            "id": str(s.id),
            "actor": s.actor,
            "queue": s.queue,
            "args": s.args_json,
            "kwargs": s.kwargs_json,
            "priority": s.priority,
            "run_at": None if s.run_at is None else s.run_at.timestamp(),
            "now": now,
            "max_attempts": s.max_attempts,
            "max_crashes": s.max_crashes,
            "idempotent": int(s.idempotent),
            **(
                {
                    "unique_key": s.unique_key,
                    "unique_states": s.unique_states,
                    "meta": s.meta_json,
                    "tags": tags_json(s.tags),
                }
                if full
                else {}
            ),
        }
        for s in specs
    ]
    queries = load_queries("sqlite.sql")
    db.executemany(queries["enqueue_full" if full else "enqueue"], rows)
    keys = sorted({s.unique_key for s in specs if s.unique_key is not None})
    if not keys:
        return [s.id for s in specs]
    # Under the write lock the holders are exactly the jobs that hold the keys now:
    # either one of this batch or an older job.
    found = db.execute(queries["unique_holders"], {"keys": json.dumps(keys)}).fetchall()
    holders = {row[0]: UUID(row[1]) for row in found}
    missing = [
        s.unique_key for s in specs if s.unique_key is not None and s.unique_key not in holders
    ]
    if missing:  # only outside a transaction (a caller's autocommit connection)
        raise StoreError(f"unique key {missing[0]!r} changed hands during enqueue; enqueue again")
    return [s.id if s.unique_key is None else holders[s.unique_key] for s in specs]
