"""What the fleet benchmark does to a running fleet, and what it reads back.

* ``idle``: nothing is queued for ``seconds``; Postgres's transactions (``pg_stat_database``)
  and CPU (``processes.postgres_cpu``), PgBouncer's CPU, the workers' CPU.
* ``wakeups``: one job at a time to the idle fleet, each waited for; the pickup latency is
  ``started_at - created_at``, both written by Postgres (no clock of ours in it).
* ``drain``: the queue paused, ``jobs`` enqueued, the queue resumed: jobs/s from the first
  start to the last finish (Postgres's clock again); with ``restart_at`` PgBouncer is
  restarted once that share of the jobs succeeded. Then every job's state, and how often
  its body ran (the actor's runs files): each exactly once, none dead.
* ``Connections``: a thread that counts the role's sessions in ``pg_stat_activity`` every
  half second (the peak is what the role's limit must hold).
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg

from taskq.client import AsyncClient

from .actors import QUEUE, tick
from .processes import cpu_seconds, postgres_cpu
from .servers import DATABASE, ROLE, SCHEMA

BATCH = 1000


def _admin(dsn: str) -> psycopg.Connection:
    return psycopg.connect(dsn, autocommit=True)


def _rows(admin_dsn: str, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """One query of the benchmark's own, on a connection of its own (superuser, direct)."""
    with _admin(admin_dsn) as conn:
        return conn.execute(query, params).fetchall()


def xacts(admin_dsn: str) -> tuple[int, str]:
    """The database's transactions so far, and the WAL position now."""
    ((count, lsn),) = _rows(
        admin_dsn,
        "SELECT xact_commit + xact_rollback, pg_current_wal_lsn()::text "
        "FROM pg_stat_database WHERE datname = %s",
        (DATABASE,),
    )
    return int(count), str(lsn)


def wal_since(admin_dsn: str, lsn: str) -> int:
    query = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)"
    ((diff,),) = _rows(admin_dsn, query, (lsn,))
    return int(diff)


class Connections(threading.Thread):
    """The role's sessions, sampled every half second until ``stop()``."""

    def __init__(self, admin_dsn: str) -> None:
        super().__init__(daemon=True, name="fleet-connections")
        self.admin_dsn = admin_dsn
        self.samples: list[int] = []
        self._done = threading.Event()

    def run(self) -> None:
        with _admin(self.admin_dsn) as conn:
            while not self._done.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (ROLE,)
                ).fetchone()
                self.samples.append(int(row[0]) if row else 0)
                self._done.wait(0.5)

    def stop(self) -> dict[str, int]:
        self._done.set()
        self.join(timeout=10)
        return {
            "peak": max(self.samples, default=0),
            "median": int(statistics.median(self.samples)) if self.samples else 0,
        }


class Costs:
    """CPU and transactions between ``__init__`` and ``done()``."""

    def __init__(
        self,
        admin_dsn: str,
        postmaster: int,
        bouncer: int | None,
        workers: Sequence[int],
        supervisors: Sequence[int] = (),
    ) -> None:
        self.admin_dsn, self.postmaster, self.bouncer = admin_dsn, postmaster, bouncer
        self.workers, self.supervisors = list(workers), list(supervisors)
        self.s0 = cpu_seconds(self.supervisors)
        self.t0 = time.monotonic()
        self.x0, self.lsn0 = xacts(admin_dsn)
        self.pg0 = postgres_cpu(postmaster)
        self.pb0 = cpu_seconds([bouncer]) if bouncer else 0.0
        self.w0 = cpu_seconds(self.workers)

    def done(self, bouncer_now: int | None = None) -> dict[str, Any]:
        """The costs since ``__init__``; PgBouncer's only if ``bouncer_now`` is the same
        process (a restarted one took its counters with it)."""
        wall = time.monotonic() - self.t0
        pg = postgres_cpu(self.postmaster) - self.pg0
        bouncer: float | None = None
        if self.bouncer and bouncer_now == self.bouncer:
            bouncer = round(100 * (cpu_seconds([self.bouncer]) - self.pb0) / wall, 1)
        return {
            "seconds": round(wall, 2),
            "xacts_per_s": round((xacts(self.admin_dsn)[0] - self.x0) / wall, 1),
            "wal_bytes": wal_since(self.admin_dsn, self.lsn0),
            "postgres_cpu_pct": round(100 * pg / wall, 1),
            "pgbouncer_cpu_pct": bouncer,
            "workers_cpu_pct": round(100 * (cpu_seconds(self.workers) - self.w0) / wall, 1),
            "supervisors_cpu_pct": round(100 * (cpu_seconds(self.supervisors) - self.s0) / wall, 1),
            "postgres_cpu_s": round(pg, 2),
        }


async def wakeups(admin_dsn: str, n: int, gap: float) -> dict[str, Any]:
    """``n`` jobs one at a time to the idle fleet (``gap`` seconds after each one ran)."""
    ids: list[UUID] = []
    async with AsyncClient(admin_dsn, schema=SCHEMA) as client:
        for _ in range(n):
            job_id = await client.enqueue(tick)
            ids.append(job_id)
            deadline = time.monotonic() + 60
            while (await client.get(job_id)).state != "succeeded":
                if time.monotonic() > deadline:
                    raise RuntimeError(f"wake-up job {job_id} did not run within 60 s")
                await asyncio.sleep(0.01)
            await asyncio.sleep(gap)
    rows = _rows(
        admin_dsn,
        f"SELECT extract(epoch FROM started_at - created_at) * 1000 FROM {SCHEMA}.jobs "
        "WHERE id = ANY(%s)",
        (ids,),
    )
    ms = sorted(float(r[0]) for r in rows)
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 2),
        "max_ms": round(ms[-1], 2),
    }


async def enqueue_paused(admin_dsn: str, jobs: int) -> list[UUID]:
    async with AsyncClient(admin_dsn, schema=SCHEMA) as client:
        await client.pause_queue(QUEUE, by="fleet benchmark")
        ids: list[UUID] = []
        for start in range(0, jobs, BATCH):
            ids += await client.enqueue_many(tick, [()] * min(BATCH, jobs - start))
        return ids


async def resume(admin_dsn: str) -> None:
    async with AsyncClient(admin_dsn, schema=SCHEMA) as client:
        await client.resume_queue(QUEUE)


def states(admin_dsn: str, ids: Sequence[UUID]) -> dict[str, int]:
    query = f"SELECT state, count(*) FROM {SCHEMA}.jobs WHERE id = ANY(%s) GROUP BY state"
    return {state: int(count) for state, count in _rows(admin_dsn, query, (list(ids),))}


def unfinished(admin_dsn: str) -> int:
    """Jobs of the fleet's queue not finished yet (the drain's progress: a count its
    partial indexes answer, cheap enough to ask every 0.2 s without weighing on what is
    measured)."""
    query = (
        f"SELECT count(*) FROM {SCHEMA}.jobs WHERE queue = %s AND state IN ('queued', 'running')"
    )
    ((count,),) = _rows(admin_dsn, query, (QUEUE,))
    return int(count)


def drain_window(admin_dsn: str, ids: Sequence[UUID]) -> float:
    query = (
        "SELECT extract(epoch FROM max(finished_at) - min(started_at)) "
        f"FROM {SCHEMA}.jobs WHERE id = ANY(%s)"
    )
    ((seconds,),) = _rows(admin_dsn, query, (list(ids),))
    return float(seconds) if seconds is not None else float("nan")


def runs(runs_dir: Path, ids: Sequence[UUID]) -> dict[str, int]:
    """How many jobs ran 0, 1, 2... times, from the actor's runs files."""
    wanted = {str(i) for i in ids}
    seen: Counter[str] = Counter()
    for path in runs_dir.glob("*.runs"):
        for line in path.read_text().splitlines():
            if line in wanted:
                seen[line] += 1
    by_count = Counter(seen[i] for i in wanted)
    return {
        "never": by_count.get(0, 0),
        "once": by_count.get(1, 0),
        "twice_or_more": sum(v for k, v in by_count.items() if k >= 2),
    }


def drain(
    admin_dsn: str,
    jobs: int,
    runs_dir: Path,
    *,
    timeout: float,
    restart_at: float | None = None,
    restart: Callable[[], None] | None = None,
    costs: Callable[[], Costs],
    bouncer: Callable[[], int | None] = lambda: None,
) -> dict[str, Any]:
    _, before_enqueue = xacts(admin_dsn)
    ids = asyncio.run(enqueue_paused(admin_dsn, jobs))
    enqueue_wal = wal_since(admin_dsn, before_enqueue)
    measured = costs()
    asyncio.run(resume(admin_dsn))
    deadline = time.monotonic() + timeout
    restarted: dict[str, Any] | None = None
    while True:
        left = unfinished(admin_dsn)
        if restart is not None and restart_at is not None and restarted is None:
            if jobs - left >= restart_at * jobs:
                begun = time.monotonic()
                restart()
                restarted = {
                    "at_finished": jobs - left,
                    "pgbouncer_down_s": round(time.monotonic() - begun, 2),
                }
        if left == 0:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the drain did not finish within {timeout:g} s: {left} left")
        time.sleep(0.2)
    cost = measured.done(bouncer())
    pg_cpu = cost["postgres_cpu_s"]
    window = drain_window(admin_dsn, ids)
    return {
        "jobs": jobs,
        "jobs_per_s": round(jobs / window, 1),
        "window_s": round(window, 2),
        "states": states(admin_dsn, ids),
        "runs": runs(runs_dir, ids),
        "pgbouncer_restart": restarted,
        "cost": cost,
        "jobs_per_postgres_cpu_s": round(jobs / pg_cpu, 1) if pg_cpu else None,
        "wal_bytes_per_job": {
            "enqueue": round(enqueue_wal / jobs),
            "claim_to_ack": round(cost["wal_bytes"] / jobs),
        },
    }
