"""How runs end on SQLite: a batch of outcomes, give-backs, and the crash rules on a
dead runner's runs (requeued or made dead, one by one).

Each runs on the store thread inside a write (``SqliteStore.write``); the crash rules
themselves are the ``crash_run`` statement in ``sqlite.sql`` (the same as Postgres's,
see ``base.py``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from ...jobs import Outcome, OutcomeKind, RescuedJob
from ..sqlfile import load_queries
from .codec import CODEC

Q = load_queries("sqlite.sql")


def lease_expired_error(cause: str, worker_id: str, hostname: str | None, pid: int | None) -> str:
    """``lease expired: worker ID on HOST (pid N) stopped heartbeating`` (the host and pid
    only while the worker's row is left); the Postgres store builds the same in SQL."""
    where = f" on {hostname} (pid {pid})" if hostname is not None else ""
    return f"{cause}: worker {worker_id}{where} stopped heartbeating"


def crash_runs(
    db: sqlite3.Connection,
    runs: Sequence[tuple[str, int, str, str | None, bool]],
    now: float,
    *,
    shared: bool,
) -> list[RescuedJob]:
    """The crash rules on (id, attempt, worker_id, error, blamed) runs, inside a write;
    ``shared``: one death of a runner that ran all these runs."""
    rescued = []
    for job_id, attempt, worker_id, error, blamed in runs:
        row = db.execute(
            Q["crash_run"],
            {
                "id": job_id,
                "attempt": attempt,
                "worker_id": worker_id,
                "error": error,
                "blamed": int(blamed),
                "shared": int(shared),
                "now": now,
            },
        ).fetchone()
        if row:
            rescued.append(CODEC.rescued(row))
    return rescued


def complete_runs(db: sqlite3.Connection, worker_id: str, outcomes: Sequence[Outcome]) -> int:
    """The batch's outcomes in one finish_runs statement, then its crashes; the rows
    changed. A second outcome for the same run could only fail its fence after the first:
    it is dropped here (one UPDATE ... FROM would apply an arbitrary one of the two)."""
    now = time.time()
    crashes = []
    finished: dict[tuple[UUID, int], list[Any]] = {}
    for o in outcomes:
        if o.kind == OutcomeKind.CRASHED:
            crashes.append((str(o.job_id), o.attempt, worker_id, o.error, o.blamed))
        elif (o.job_id, o.attempt) not in finished:
            finished[(o.job_id, o.attempt)] = [
                str(o.job_id),
                o.attempt,
                str(o.kind),
                o.result_json,
                o.error,
                float(o.retry_delay),
                o.dead_reason,
                o.meta_json,
            ]
    changed = 0
    if finished:
        params = {
            "outcomes": json.dumps(list(finished.values())),
            "worker_id": worker_id,
            "now": now,
        }
        changed = db.execute(Q["finish_runs"], params).rowcount
    return changed + len(crash_runs(db, crashes, now, shared=False))


def give_back_runs(db: sqlite3.Connection, worker_id: str, jobs: Sequence[tuple[UUID, int]]) -> int:
    """Claimed runs back to queued, their attempt not charged (fenced); the rows changed."""
    now = time.time()
    return sum(
        db.execute(
            Q["give_back"],
            {"id": str(job_id), "attempt": attempt, "worker_id": worker_id, "now": now},
        ).rowcount
        for job_id, attempt in jobs
    )


def rescue_worker(
    db: sqlite3.Connection, worker_id: str, cause: str, blamed: bool
) -> list[RescuedJob]:
    """An observed death: the crash rules on every running job of the worker, its row
    removed (inside a write)."""
    runs = db.execute(Q["running_of_worker"], {"worker_id": worker_id}).fetchall()
    rescued = crash_runs(
        db,
        [(r["id"], r["attempt"], r["worker_id"], cause, blamed) for r in runs],
        time.time(),
        shared=len(runs) > 1,
    )
    db.execute(Q["unregister_worker"], {"id": worker_id})
    return rescued


def rescue_expired(
    db: sqlite3.Connection, cause: str, exclude_worker: UUID | None
) -> list[RescuedJob]:
    """The crash rules on the runs whose lease expired (inside a write: BEGIN IMMEDIATE
    makes it one sweeper at a time across processes)."""
    now = time.time()
    runs = db.execute(
        Q["expired_runs"],
        {
            "now": now,
            "exclude_worker": None if exclude_worker is None else str(exclude_worker),
        },
    ).fetchall()
    return crash_runs(
        db,
        [
            (
                r["id"],
                r["attempt"],
                r["worker_id"],
                lease_expired_error(cause, r["worker_id"], r["hostname"], r["pid"]),
                False,  # a lost lease blames no job
            )
            for r in runs
        ],
        now,
        shared=False,
    )
