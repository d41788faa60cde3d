"""The SQLite store: ``Store`` on one file shared by the processes of one host.

The package's parts: ``thread.py`` (the store's one thread: every method hands its work
to it and awaits it, so the event loop never blocks on the file), ``connections.py``
(opening the file in WAL mode, BEGIN IMMEDIATE transactions, busy retries, the calling
threads' connections), ``claims.py`` (claims and limits inside the claim's
transaction), ``insight.py`` (the operator's views). This module is the store itself.

Times are REAL unix seconds from this host's clock, passed to every statement as
``:now``. ``wait_for_jobs`` polls ``PRAGMA data_version`` (which moves when another
connection commits) every few tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

from ...events import STORE_MIGRATED
from ...exceptions import SchemaNotMigrated, StoreUnavailable
from ...jobs import (
    ALL_STATES,
    ActorConfig,
    CancelResult,
    Claim,
    Job,
    JobColumns,
    JobSpec,
    Limits,
    Outcome,
    QueueInfo,
    RescuedJob,
    ScheduleInfo,
    WorkerInfo,
)
from ...logs import get_logger
from ...settings import sqlite_path
from ..drift import Difference, config_differences
from ..enqueue import sqlite_column_rows, sqlite_enqueue
from ..queues import limits_from_row, overview
from ..sqlfile import load_queries
from .claims import Claims
from .codec import CODEC, ts
from .connections import (
    BUSY_TIMEOUT,
    LOCKED_DEADLINE,
    Connector,
    ThreadConnections,
    read,
    translate,
    written,
)
from .insight import SqliteInsight
from .runs import complete_runs, give_back_runs, rescue_expired, rescue_worker
from .schema import apply_migrations, missing_migrations
from .thread import StoreThread
from .upkeep import Upkeep
from .workflows import SqliteWorkflows

log = get_logger(__name__)
T = TypeVar("T")

Q = load_queries("sqlite.sql")

POLL_INTERVAL = 0.025  # wait_for_jobs: how often to look for commits by others


def _ids(values: Sequence[UUID]) -> str:
    return json.dumps([str(v) for v in values])


class SqliteStore(SqliteWorkflows, Upkeep):
    """``Store`` on one SQLite file."""

    kind = "sqlite"

    def __init__(
        self,
        path: str,
        *,
        busy_timeout: float = BUSY_TIMEOUT,
        locked_deadline: float = LOCKED_DEADLINE,
    ) -> None:
        self._set_path(path)
        self._connector = Connector(busy_timeout, locked_deadline)
        self._conn: sqlite3.Connection | None = None
        self._executor: StoreThread | None = None
        # Seen by the store thread only: commits made through this connection (which
        # do not move data_version) and the marker taken before the last claim.
        self._own_commits = 0
        self._claim_marker: tuple[int, int] | None = None
        self._claims = Claims()
        # the connections enqueue_columns_here opened, one per calling thread
        self._here = ThreadConnections(self._connector)
        self.insight = SqliteInsight(self, CODEC)

    def open_connections(self) -> int:
        return int(self._conn is not None) + self._here.open_connections()

    def _set_path(self, path: str) -> None:
        self.path = path
        self.display_dsn = f"sqlite:///{path}"

    # -- the store thread ------------------------------------------------------------
    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the store thread, its sqlite3 errors as taskq's."""
        executor = self._executor
        if executor is None:
            raise StoreUnavailable(f"the store for {self.display_dsn} is not open")
        return await executor.submit(self._guarded, fn, args)

    def _guarded(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        try:
            return fn(*args)
        except sqlite3.Error as exc:
            raise translate(exc, self.display_dsn) from exc

    @property
    def db(self) -> sqlite3.Connection:
        """The store's connection (on the store thread only)."""
        if self._conn is None:
            raise StoreUnavailable(f"the store for {self.display_dsn} is not open")
        return self._conn

    def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in one BEGIN IMMEDIATE transaction of the store's connection (all
        or nothing; on the store thread)."""
        result = self._connector.transaction(self.db, fn, *args)
        self._own_commits += 1
        return result

    def _marker(self) -> tuple[int, int]:
        row = self.db.execute(Q["data_version"]).fetchone()
        return row["data_version"], self._own_commits

    # -- lifecycle -------------------------------------------------------------------
    async def open(self) -> None:
        if self._executor is not None:
            return
        self._executor = StoreThread("taskq-sqlite")
        try:
            self._conn = await self.run(self._connector.connect, self.path)
        except BaseException:
            executor, self._executor = self._executor, None
            executor.shutdown()
            raise

    def _close_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def close(self) -> None:
        executor = self._executor
        if executor is None:
            return
        try:
            await self.run(self._close_connection)
        finally:
            self._executor = None
            executor.shutdown()
            self._here.close()

    async def reconnect(self, dsn: str | None = None) -> None:
        path = self.path
        if dsn is not None:
            path = sqlite_path(dsn)
        if self._executor is None:
            self._set_path(path)
            await self.open()
            return
        new = await self.run(self._connector.connect, path)

        def swap() -> None:
            old, self._conn = self._conn, new
            if old is not None:
                old.close()

        await self.run(swap)
        self._set_path(path)
        self._here.close()

    def _migrate(self) -> list[str]:
        return self.write(apply_migrations, self.db)

    async def migrate(self) -> list[str]:
        applied = await self.run(self._migrate)
        if applied:
            log.event(STORE_MIGRATED, dsn=self.display_dsn, versions=applied)
        return applied

    def _check_schema(self) -> None:
        missing = missing_migrations(self.db)
        if missing:
            raise SchemaNotMigrated(
                f"{self.display_dsn} lacks migrations {', '.join(missing)}: run `taskq migrate`"
            )

    async def check_schema(self) -> None:
        await self.run(self._check_schema)

    async def ping(self) -> None:
        await self.run(lambda: self.db.execute(Q["ping"]).fetchone())

    async def now(self) -> datetime:
        return datetime.fromtimestamp(time.time(), UTC)

    # -- producers -------------------------------------------------------------------
    def _enqueue(self, specs: Sequence[JobSpec]) -> list[UUID]:
        return self.write(sqlite_enqueue, self.db, specs)

    async def enqueue(self, specs: Sequence[JobSpec]) -> list[UUID]:
        if not specs:
            return []
        return await self.run(self._enqueue, specs)

    def _enqueue_columns(self, jobs: JobColumns) -> None:
        self._insert_columns(self.db, jobs)
        self._own_commits += 1

    def _insert_columns(self, db: sqlite3.Connection, jobs: JobColumns) -> None:
        """``jobs`` written on ``db`` in one transaction."""
        rows = sqlite_column_rows(jobs, time.time())  # built before the write lock is taken
        if len(rows) > 1:
            self._connector.transaction(db, db.executemany, Q["enqueue_columns"], rows)
            return
        # one row: one INSERT in autocommit is its own transaction, and takes the write
        # lock as it starts (as BEGIN IMMEDIATE would): two statements fewer
        self._connector.retrying_locks(lambda: db.execute(Q["enqueue_columns"], rows[0]))

    async def enqueue_columns(self, jobs: JobColumns) -> None:
        if jobs.ids:
            await self.run(self._enqueue_columns, jobs)

    def enqueue_columns_here(self, jobs: JobColumns) -> None:
        """``enqueue_columns`` on the calling thread (``LocalEnqueue``), on a connection
        of this thread's own, opened on its first use with the store's settings: no hop
        to the store thread and back (about two thirds of a single enqueue's time). A
        commit through another connection moves ``data_version``, so waiting workers see
        it as they see another process's."""
        if self._executor is None:
            raise StoreUnavailable(f"the store for {self.display_dsn} is not open")
        if not jobs.ids:
            return
        try:
            self._insert_columns(self._here.get(self.path), jobs)
        except sqlite3.Error as exc:
            raise translate(exc, self.display_dsn) from exc

    async def get_job(self, job_id: UUID) -> Job | None:
        row = await self.run(lambda: self.db.execute(Q["get_job"], {"id": str(job_id)}).fetchone())
        return CODEC.job(row) if row else None

    async def list_jobs(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        params = {"state": state, "queue": queue, "tag": tag, "limit": limit}
        rows = await read(self, "list_jobs", params)
        return [CODEC.job(r) for r in rows]

    async def stats(self) -> dict[str, int]:
        counts = dict.fromkeys(ALL_STATES, 0)
        rows = await read(self, "stats")
        counts.update({r["state"]: r["count"] for r in rows})
        return counts

    def _moved_ids(
        self, name: str, job_ids: Sequence[UUID], extra: dict[str, Any] | None = None
    ) -> list[UUID]:
        params = {"ids": _ids(job_ids), "now": time.time(), **(extra or {})}
        rows = self.write(lambda: self.db.execute(Q[name], params).fetchall())
        return [UUID(r["id"]) for r in rows]

    async def retry_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        if not job_ids:
            return []
        return await self.run(self._moved_ids, "retry_jobs", job_ids)

    async def retry_all_dead(self) -> int:
        return await self.run(
            self.write,
            lambda: self.db.execute(Q["retry_all_dead"], {"now": time.time()}).rowcount,
        )

    async def cancel_jobs(self, job_ids: Sequence[UUID], *, by: str | None = None) -> list[UUID]:
        if not job_ids:
            return []
        return await self.run(self._moved_ids, "cancel_jobs", job_ids, {"by": by})

    def _request_cancel(
        self, job_ids: Sequence[UUID], by: str | None
    ) -> dict[UUID, tuple[CancelResult, str]]:
        db, ids = self.db, _ids(job_ids)
        before = {r["id"]: r["state"] for r in db.execute(Q["job_states"], {"ids": ids})}
        moved = {
            r["id"]: r["state"]
            for r in db.execute(Q["request_cancel"], {"ids": ids, "by": by, "now": time.time()})
        }
        return {
            UUID(i): (CancelResult.of(moved.get(i, state), i in moved), moved.get(i, state))
            for i, state in before.items()
        }

    async def request_cancel(
        self, job_ids: Sequence[UUID], *, by: str | None = None
    ) -> dict[UUID, tuple[CancelResult, str]]:
        if not job_ids:
            return {}
        return await self.run(self.write, self._request_cancel, job_ids, by)

    async def cancel_requested(self, worker_id: UUID) -> list[UUID]:
        params = {"worker_id": str(worker_id)}
        rows = await read(self, "cancel_requested", params)
        return [UUID(r["id"]) for r in rows]

    async def wait_for_cancels(self, timeout: float) -> bool:
        """SQLite has no notifications: the caller polls; this only waits ``timeout``."""
        await asyncio.sleep(timeout)
        return False

    async def advance_next_scheduled(self, queues: Sequence[str]) -> list[UUID]:
        if not queues:
            return []
        params = {"queues": json.dumps(list(queues)), "now": time.time()}
        rows = await written(self, "advance_next_scheduled", params)
        return [UUID(r["id"]) for r in rows]

    def _actor_configs(self) -> dict[str, ActorConfig]:
        rows = self.db.execute(Q["actor_configs"])
        return {r["name"]: CODEC.actor_config(r) for r in rows}

    # -- periodic schedules ----------------------------------------------------------
    async def record_schedules(self, schedules: Sequence[Mapping[str, str]], now: datetime) -> None:
        if not schedules:
            return
        rows = [{**s, "now": now.timestamp()} for s in schedules]
        await self.run(self.write, lambda: self.db.executemany(Q["record_schedule"], rows))

    async def list_schedules(self) -> list[ScheduleInfo]:
        rows = await read(self, "list_schedules")
        return [CODEC.schedule(r) for r in rows]

    async def mark_schedule_tick(self, name: str, tick: datetime) -> None:
        params = {"name": name, "tick": ts(tick)}
        await self.run(self.write, lambda: self.db.execute(Q["mark_schedule_tick"], params))

    async def actor_configs(self) -> dict[str, ActorConfig]:
        return await self.run(self._actor_configs)

    def _sync_actor_configs(self, configs: Sequence[ActorConfig], force: bool) -> list[Difference]:
        differences = config_differences(self._actor_configs(), configs)  # in the write
        if not force and any(d.routes for d in differences):
            return differences
        now = time.time()
        self.db.executemany(
            Q["upsert_actor_config"],
            [
                {
                    "name": c.name,
                    "queue": c.queue,
                    "max_attempts": c.max_attempts,
                    "max_crashes": c.max_crashes,
                    "idempotent": int(c.idempotent),
                    "cpu_bound": int(c.cpu_bound),
                    "timeout": c.timeout,
                    "extra": json.dumps(c.extra),
                    "now": now,
                }
                for c in configs
            ],
        )
        return differences

    async def sync_actor_configs(
        self, configs: Sequence[ActorConfig], *, force: bool
    ) -> list[Difference]:
        return await self.run(self.write, self._sync_actor_configs, configs, force)

    # -- workers ---------------------------------------------------------------------
    async def register_worker(self, info: WorkerInfo) -> None:
        params = {
            "id": str(info.id),
            "workgroup_instance": str(info.workgroup_instance) if info.workgroup_instance else None,
            "worker_label": info.worker_label,
            "pid": info.pid,
            "hostname": info.hostname,
            "queues": json.dumps(list(info.queues)),
            "started_at": ts(info.started_at),
            "max_connections": info.max_connections,
            "now": time.time(),
        }
        await self.run(self.write, self.db.execute, Q["register_worker"], params)

    async def unregister_worker(self, worker_id: UUID) -> None:
        await self.run(self.write, self.db.execute, Q["unregister_worker"], {"id": str(worker_id)})

    async def find_worker(self, workgroup_instance: UUID, worker_label: str) -> WorkerInfo | None:
        params = {"workgroup_instance": str(workgroup_instance), "worker_label": worker_label}
        row = await self.run(lambda: self.db.execute(Q["find_worker"], params).fetchone())
        return CODEC.worker(row) if row else None

    def _heartbeat(self, worker_id: UUID, lease_seconds: float, connections: int | None) -> int:
        params = {
            "worker_id": str(worker_id),
            "now": time.time(),
            "lease": lease_seconds,
            "connections": connections,
        }
        self.db.execute(Q["touch_worker"], params)
        return self.db.execute(Q["extend_leases"], params).rowcount

    async def heartbeat(
        self, worker_id: UUID, lease_seconds: float, connections: int | None = None
    ) -> int:
        lease = float(lease_seconds)
        return await self.run(self.write, self._heartbeat, worker_id, lease, connections)

    def _claim(self, params: dict[str, Any]) -> tuple[list[Any], dict[tuple[str, str], int]]:
        version, _ = self._marker()  # before the claim: later commits wake wait_for_jobs

        def claim() -> tuple[list[Any], dict[tuple[str, str], int]]:
            waits: dict[tuple[str, str], int] = {}  # again from empty if retried
            return self._claims.rows(self.db, params, waits), waits

        rows, waits = self.write(claim)
        self._claim_marker = (version, self._own_commits)
        return rows, waits

    async def claim(
        self,
        worker_id: UUID,
        queues: Sequence[str],
        limit: int,
        lease_seconds: float,
        exclude_actors: Sequence[str] = (),
    ) -> Claim:
        if limit < 1 or not queues:
            return Claim([])
        params = {
            "worker_id": str(worker_id),
            "queues": json.dumps(list(queues)),
            "exclude_actors": json.dumps(list(exclude_actors)),
            "limit": limit,
            "lease": float(lease_seconds),
            "now": time.time(),
        }
        rows, waits = await self.run(self._claim, params)
        rows.sort(key=lambda r: (r["priority"], r["run_at"], r["id"]))  # claim order
        return Claim(CODEC.claimed(rows), waits)

    # -- queue controls --------------------------------------------------------------
    async def paused_queues(self) -> list[str]:
        rows = await read(self, "paused_queues")
        return [r["name"] for r in rows]

    async def set_queue_paused(self, name: str, paused: bool, *, by: str | None = None) -> None:
        params = {"name": name, "paused": int(paused), "by": by, "now": time.time()}
        await self.run(self.write, self.db.execute, Q["pause_queue"], params)

    def _set_limits(self, kind: str, name: str, limits: Limits) -> None:
        self._claims.forget_limits()
        params: dict[str, Any] = {"kind": kind, "name": name, "now": time.time()}
        if not limits:
            self.db.execute(Q["clear_limits"], params)
            self.db.execute(Q["clear_limit_starts"], params)
            return
        params["concurrency"] = limits.concurrency
        params["rate"] = limits.rate.count if limits.rate else None
        params["rate_period"] = limits.rate.period if limits.rate else None
        self.db.execute(Q["set_limits"], params)

    async def set_limits(self, kind: str, name: str, limits: Limits) -> None:
        await self.run(self.write, self._set_limits, kind, name, limits)

    async def get_limits(self) -> dict[tuple[str, str], Limits]:
        rows = await read(self, "get_limits")
        return {(r["kind"], r["name"]): limits_from_row(r) for r in rows}

    def _queue_overview(self) -> list[QueueInfo]:
        db = self.db
        depths = db.execute(Q["queue_depths"], {"now": time.time()}).fetchall()
        controls = db.execute(Q["queue_controls"]).fetchall()
        return overview(CODEC, depths, controls, db.execute(Q["get_limits"]).fetchall())

    async def queue_overview(self) -> list[QueueInfo]:
        return await self.run(self._queue_overview)

    async def complete(self, worker_id: UUID, outcomes: Sequence[Outcome]) -> int:
        if not outcomes:
            return 0
        wid = str(worker_id)
        return await self.run(lambda: self.write(complete_runs, self.db, wid, outcomes))

    async def give_back(self, worker_id: UUID, jobs: Sequence[tuple[UUID, int]]) -> int:
        if not jobs:
            return 0
        wid = str(worker_id)
        return await self.run(lambda: self.write(give_back_runs, self.db, wid, jobs))

    async def rescue_worker(
        self, worker_id: UUID, cause: str, *, blamed: bool = False
    ) -> list[RescuedJob]:
        return await self.run(
            lambda: self.write(rescue_worker, self.db, str(worker_id), cause, blamed)
        )

    async def rescue_expired(
        self, cause: str, *, exclude_worker: UUID | None = None
    ) -> list[RescuedJob]:
        # BEGIN IMMEDIATE makes this exclusive across processes: one sweeper at a time.
        return await self.run(lambda: self.write(rescue_expired, self.db, cause, exclude_worker))

    def _prune(
        self, succeeded_before: float, workers_before: float, batch: int, ended: dict[str, float]
    ) -> tuple[int, int]:
        jobs_deleted = 0
        passes = [("prune_succeeded", {"before": succeeded_before, "batch": batch})] + [
            ("prune_ended", {"state": state, "before": before, "batch": batch})
            for state, before in ended.items()
        ]
        for name, params in passes:
            while True:
                deleted = self.write(
                    lambda name=name, params=params: self.db.execute(Q[name], params).rowcount
                )
                jobs_deleted += deleted
                if deleted < batch:
                    break
        workers_deleted = self.write(
            lambda: self.db.execute(Q["prune_workers"], {"before": workers_before}).rowcount
        )
        return jobs_deleted, workers_deleted

    async def prune(
        self,
        *,
        succeeded_before: datetime,
        workers_before: datetime,
        batch: int = 1000,
        dead_before: datetime | None = None,
        cancelled_before: datetime | None = None,
    ) -> tuple[int, int]:
        ended = {
            state: before.timestamp()
            for state, before in (("dead", dead_before), ("cancelled", cancelled_before))
            if before is not None
        }
        return await self.run(
            self._prune, succeeded_before.timestamp(), workers_before.timestamp(), batch, ended
        )

    # -- waking ----------------------------------------------------------------------
    def _due(self, queues: str) -> bool:
        row = self.db.execute(Q["due_job_exists"], {"queues": queues, "now": time.time()})
        return bool(row.fetchone()["due"])

    async def warm_up(self) -> None:
        pass  # one connection, open already

    async def wait_for_jobs(self, queues: Sequence[str], timeout: float) -> bool:
        """Poll for commits since the last claim (by anyone, this connection included);
        after one, True if a job is due on ``queues``."""
        deadline = time.monotonic() + timeout
        queues_json = json.dumps(list(queues))
        marker = self._claim_marker or await self.run(self._marker)
        while True:
            current = await self.run(self._marker)
            if current != marker:
                marker = current
                if await self.run(self._due, queues_json):
                    return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(POLL_INTERVAL, remaining))
