"""The SQLite store: the embedded default, one file shared by the processes of one host.

One ``sqlite3`` connection per store, used only from the store's own single thread
(every method hands its work to that thread and awaits it), so the event loop never
blocks on the file. The file runs in WAL mode (readers and one writer at once, across
processes) with a busy timeout; every write is a ``BEGIN IMMEDIATE`` transaction, which
takes the write lock up front, so a claim is exclusive without row locks. A lock still
held past the busy timeout is retried with a short random backoff before the call gives
up with ``StoreUnavailable``.

Times are REAL unix seconds from this host's clock, passed to every statement as
``:now``. ``wait_for_jobs`` polls ``PRAGMA data_version`` (which moves when another
connection commits) every few tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from queue import SimpleQueue
from typing import Any, TypeVar, cast, overload
from uuid import UUID

from ..events import STORE_MIGRATED
from ..exceptions import SchemaNotMigrated, StoreError, StoreUnavailable
from ..jobs import (
    ALL_STATES,
    ActorConfig,
    CancelResult,
    ClaimedJob,
    Job,
    JobColumns,
    JobSpec,
    Limits,
    Outcome,
    OutcomeKind,
    QueueInfo,
    RescuedJob,
    ScheduleInfo,
    WorkerInfo,
)
from ..logs import get_logger
from ..settings import sqlite_path
from .drift import config_differences
from .enqueue import sqlite_column_rows, sqlite_enqueue
from .queues import ACTOR, LIMITS_TTL, QUEUE, count_full, limits_from_row, overview
from .rows import Codec
from .sqlfile import load_migrations, load_queries
from .sqlite_insight import SqliteInsight
from .sqlite_workflows import SqliteWorkflows

log = get_logger(__name__)
T = TypeVar("T")

Q = load_queries("sqlite.sql")
MIGRATIONS = load_migrations("sqlite")

BUSY_TIMEOUT = 5.0  # seconds one statement waits for a lock (sqlite3's busy timeout)
LOCKED_DEADLINE = 30.0  # seconds of retrying a locked database before StoreUnavailable
POLL_INTERVAL = 0.025  # wait_for_jobs: how often to look for commits by others


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


@overload
def _dt(value: float) -> datetime: ...
@overload
def _dt(value: None) -> None: ...
@overload
def _dt(value: float | None) -> datetime | None: ...
def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _ids(values: Sequence[UUID]) -> str:
    return json.dumps([str(v) for v in values])


def split_script(script: str) -> list[str]:
    """A migration script as single statements (sqlite3 runs one at a time inside a
    transaction; ``executescript`` would commit first)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statement = pending.strip()
            if statement.rstrip(";").strip() and not all(
                part.strip().startswith("--") or not part.strip() for part in statement.splitlines()
            ):
                statements.append(statement)
            pending = ""
    if pending.strip() and not all(
        p.strip().startswith("--") or not p.strip() for p in pending.splitlines()
    ):
        raise StoreError(f"incomplete SQL statement in migration: {pending.strip()[:80]!r}")
    return statements


CODEC = Codec(uuid=UUID, time=_dt, texts=json.loads)


def lease_expired_error(cause: str, worker_id: str, hostname: str | None, pid: int | None) -> str:
    """``lease expired: worker ID on HOST (pid N) stopped heartbeating`` (the host and pid
    only while the worker's row is left); the Postgres store builds the same in SQL."""
    where = f" on {hostname} (pid {pid})" if hostname is not None else ""
    return f"{cause}: worker {worker_id}{where} stopped heartbeating"


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if not future.cancelled():
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)


class StoreThread:
    """The store's one thread: calls are queued to it and answered on the caller's loop.

    What ``run_in_executor`` on a one-thread ``ThreadPoolExecutor`` did, without its
    two futures, condition and callback chain per call: a call is a tuple on a
    ``SimpleQueue`` and a ``call_soon_threadsafe`` back (~40% of a single enqueue's
    client CPU went to crossing threads). A call cancelled before it starts is not run."""

    def __init__(self, name: str) -> None:
        self._calls: SimpleQueue[tuple[Any, ...] | None] = SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._calls.put((loop, future, fn, args))
        return future

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            loop, future, fn, args = call
            if future.cancelled():
                continue
            result = error = None
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the caller, as a future would
                error = exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the caller's loop is closed: nobody waits any more
                pass
            del call, future, result, error

    def shutdown(self) -> None:
        """No more calls: the thread ends after the ones queued."""
        self._calls.put(None)


class SqliteStore(SqliteWorkflows, SqliteInsight):
    """``Store`` on one SQLite file."""

    kind = "sqlite"
    _job_from_row = staticmethod(CODEC.job)
    _codec = CODEC

    def __init__(
        self,
        path: str,
        *,
        busy_timeout: float = BUSY_TIMEOUT,
        locked_deadline: float = LOCKED_DEADLINE,
    ) -> None:
        self._set_path(path)
        self._busy_timeout, self._locked_deadline = busy_timeout, locked_deadline
        self._conn: sqlite3.Connection | None = None
        self._executor: StoreThread | None = None
        # Seen by the store thread only: commits made through this connection (which
        # do not move data_version) and the marker taken before the last claim.
        self._own_commits = 0
        # claims that found a limit full, by (kind, name), until take_limit_waits()
        self.limit_waits: dict[tuple[str, str], int] = {}
        self._claim_marker: tuple[int, int] | None = None
        # (monotonic time, found) of the last limits_exist per claim's queues (store thread)
        self._limits_seen: dict[str, tuple[float, bool]] = {}
        # the connections enqueue_columns_here opened, one per calling thread
        self._here = threading.local()
        self._here_conns: set[sqlite3.Connection] = set()
        self._here_lock = threading.Lock()

    def _set_path(self, path: str) -> None:
        self.path = path
        self.display_dsn = f"sqlite:///{path}"

    # -- the store thread ------------------------------------------------------------
    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        executor = self._executor
        if executor is None:
            raise StoreUnavailable(f"the store for {self.display_dsn} is not open")
        return await executor.submit(self._guarded, fn, args)

    def _guarded(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        try:
            return fn(*args)
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: sqlite3.Error) -> StoreError:
        text = str(exc)
        if "no such table" in text or "no such column" in text:
            return SchemaNotMigrated(
                f"taskq's tables are missing or out of date in {self.display_dsn}: "
                f"run `taskq migrate` ({text})"
            )
        if _is_busy(exc) or "unable to open" in text or "disk" in text or "readonly" in text:
            return StoreUnavailable(f"SQLite database {self.display_dsn} is unavailable: {text}")
        return StoreError(f"SQLite error in {self.display_dsn}: {text}")

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreUnavailable(f"the store for {self.display_dsn} is not open")
        return self._conn

    def _retrying_locks(self, fn: Callable[[], T]) -> T:
        deadline = time.monotonic() + self._locked_deadline
        backoff = 0.005
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(random.uniform(0, backoff))
            backoff = min(backoff * 2, 0.1)

    def _write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in one BEGIN IMMEDIATE transaction of the store's connection (all
        or nothing)."""
        result = self._transaction(self._db, fn, *args)
        self._own_commits += 1
        return result

    def _transaction(self, db: sqlite3.Connection, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in one BEGIN IMMEDIATE transaction of ``db``, again while the
        write lock is busy (up to the store's deadline)."""

        def attempt() -> T:
            db.execute(Q["begin_immediate"])
            try:
                result = fn(*args)
                db.execute(Q["commit"])
            except BaseException:
                if db.in_transaction:
                    db.execute(Q["rollback"])
                raise
            return result

        return self._retrying_locks(attempt)

    def _marker(self) -> tuple[int, int]:
        row = self._db.execute(Q["data_version"]).fetchone()
        return row["data_version"], self._own_commits

    # -- lifecycle -------------------------------------------------------------------
    def _connect(self, path: str) -> sqlite3.Connection:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create the directory of SQLite database sqlite:///{path}: "
                f"{exc.strerror or exc}"
            ) from exc
        try:
            conn = sqlite3.connect(
                path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open SQLite database sqlite:///{path}: {exc}") from exc
        try:
            self._retrying_locks(lambda: conn.execute(Q["journal_mode_wal"]).fetchone())
            conn.execute(Q["synchronous_normal"])
            conn.row_factory = sqlite3.Row
        except sqlite3.Error as exc:
            conn.close()
            raise StoreUnavailable(f"cannot open SQLite database sqlite:///{path}: {exc}") from exc
        return conn

    async def open(self) -> None:
        if self._executor is not None:
            return
        self._executor = StoreThread("taskq-sqlite")
        try:
            self._conn = await self._run(self._connect, self.path)
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
            await self._run(self._close_connection)
        finally:
            self._executor = None
            executor.shutdown()
            self._close_here()

    async def reconnect(self, dsn: str | None = None) -> None:
        path = self.path
        if dsn is not None:
            path = sqlite_path(dsn)
        if self._executor is None:
            self._set_path(path)
            await self.open()
            return
        new = await self._run(self._connect, path)

        def swap() -> None:
            old, self._conn = self._conn, new
            if old is not None:
                old.close()

        await self._run(swap)
        self._set_path(path)
        self._close_here()

    def _migrate(self) -> list[str]:
        db = self._db

        def apply() -> list[str]:
            db.execute(Q["create_migrations_table"])
            done = {row["version"] for row in db.execute(Q["applied_migrations"])}
            applied = []
            for migration in MIGRATIONS:
                if migration.version in done:
                    continue
                for statement in split_script(migration.sql):
                    db.execute(statement)
                db.execute(
                    Q["record_migration"], {"version": migration.version, "now": time.time()}
                )
                applied.append(migration.version)
            return applied

        return self._write(apply)

    async def migrate(self) -> list[str]:
        applied = await self._run(self._migrate)
        if applied:
            log.event(STORE_MIGRATED, dsn=self.display_dsn, versions=applied)
        return applied

    def _check_schema(self) -> None:
        done = {row["version"] for row in self._db.execute(Q["applied_migrations"])}
        missing = [m.version for m in MIGRATIONS if m.version not in done]
        if missing:
            raise SchemaNotMigrated(
                f"{self.display_dsn} lacks migrations {', '.join(missing)}: run `taskq migrate`"
            )

    async def check_schema(self) -> None:
        await self._run(self._check_schema)

    async def ping(self) -> None:
        await self._run(lambda: self._db.execute(Q["ping"]).fetchone())

    async def now(self) -> datetime:
        return datetime.fromtimestamp(time.time(), UTC)

    # -- producers -------------------------------------------------------------------
    def _enqueue(self, specs: Sequence[JobSpec]) -> list[UUID]:
        return self._write(sqlite_enqueue, self._db, specs)

    async def enqueue(self, specs: Sequence[JobSpec]) -> list[UUID]:
        if not specs:
            return []
        return await self._run(self._enqueue, specs)

    def _enqueue_columns(self, jobs: JobColumns) -> None:
        self._insert_columns(self._db, jobs)
        self._own_commits += 1

    def _insert_columns(self, db: sqlite3.Connection, jobs: JobColumns) -> None:
        """``jobs`` written on ``db`` in one transaction."""
        rows = sqlite_column_rows(jobs, time.time())  # built before the write lock is taken
        if len(rows) > 1:
            self._transaction(db, db.executemany, Q["enqueue_columns"], rows)
            return
        # one row: one INSERT in autocommit is its own transaction, and takes the write
        # lock as it starts (as BEGIN IMMEDIATE would): two statements fewer
        self._retrying_locks(lambda: db.execute(Q["enqueue_columns"], rows[0]))

    async def enqueue_columns(self, jobs: JobColumns) -> None:
        if jobs.ids:
            await self._run(self._enqueue_columns, jobs)

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
            self._insert_columns(self._here_connection(), jobs)
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    def _here_connection(self) -> sqlite3.Connection:
        here = self._here
        if getattr(here, "path", None) != self.path:  # first use here, or reconnected
            conn = self._connect(self.path)
            with self._here_lock:
                self._here_conns.add(conn)
            here.path, here.conn = self.path, conn
        return cast(sqlite3.Connection, here.conn)

    def _close_here(self) -> None:
        """Close every calling thread's connection (each opens a new one next time)."""
        with self._here_lock:
            conns, self._here_conns = self._here_conns, set()
        self._here = threading.local()
        for conn in conns:
            conn.close()

    async def get_job(self, job_id: UUID) -> Job | None:
        row = await self._run(
            lambda: self._db.execute(Q["get_job"], {"id": str(job_id)}).fetchone()
        )
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
        rows = await self._run(lambda: self._db.execute(Q["list_jobs"], params).fetchall())
        return [CODEC.job(r) for r in rows]

    async def stats(self) -> dict[str, int]:
        counts = dict.fromkeys(ALL_STATES, 0)
        rows = await self._run(lambda: self._db.execute(Q["stats"]).fetchall())
        counts.update({r["state"]: r["count"] for r in rows})
        return counts

    def _moved_ids(
        self, name: str, job_ids: Sequence[UUID], extra: dict[str, Any] | None = None
    ) -> list[UUID]:
        params = {"ids": _ids(job_ids), "now": time.time(), **(extra or {})}
        rows = self._write(lambda: self._db.execute(Q[name], params).fetchall())
        return [UUID(r["id"]) for r in rows]

    async def retry_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        if not job_ids:
            return []
        return await self._run(self._moved_ids, "retry_jobs", job_ids)

    async def retry_all_dead(self) -> int:
        return await self._run(
            self._write,
            lambda: self._db.execute(Q["retry_all_dead"], {"now": time.time()}).rowcount,
        )

    async def cancel_jobs(self, job_ids: Sequence[UUID], *, by: str | None = None) -> list[UUID]:
        if not job_ids:
            return []
        return await self._run(self._moved_ids, "cancel_jobs", job_ids, {"by": by})

    def _request_cancel(
        self, job_ids: Sequence[UUID], by: str | None
    ) -> dict[UUID, tuple[CancelResult, str]]:
        db, ids = self._db, _ids(job_ids)
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
        return await self._run(self._write, self._request_cancel, job_ids, by)

    async def cancel_requested(self, worker_id: UUID) -> list[UUID]:
        params = {"worker_id": str(worker_id)}
        rows = await self._run(lambda: self._db.execute(Q["cancel_requested"], params).fetchall())
        return [UUID(r["id"]) for r in rows]

    async def wait_for_cancels(self, timeout: float) -> bool:
        """SQLite has no notifications: the caller polls; this only waits ``timeout``."""
        await asyncio.sleep(timeout)
        return False

    async def advance_next_scheduled(self, queues: Sequence[str]) -> list[UUID]:
        if not queues:
            return []
        params = {"queues": json.dumps(list(queues)), "now": time.time()}
        rows = await self._run(
            self._write,
            lambda: self._db.execute(Q["advance_next_scheduled"], params).fetchall(),
        )
        return [UUID(r["id"]) for r in rows]

    def _actor_configs(self) -> dict[str, ActorConfig]:
        rows = self._db.execute(Q["actor_configs"])
        return {r["name"]: CODEC.actor_config(r) for r in rows}

    # -- periodic schedules ----------------------------------------------------------
    async def record_schedules(self, schedules: Sequence[Mapping[str, str]], now: datetime) -> None:
        if not schedules:
            return
        rows = [{**s, "now": now.timestamp()} for s in schedules]
        await self._run(self._write, lambda: self._db.executemany(Q["record_schedule"], rows))

    async def list_schedules(self) -> list[ScheduleInfo]:
        rows = await self._run(lambda: self._db.execute(Q["list_schedules"]).fetchall())
        return [CODEC.schedule(r) for r in rows]

    async def mark_schedule_tick(self, name: str, tick: datetime) -> None:
        params = {"name": name, "tick": _ts(tick)}
        await self._run(self._write, lambda: self._db.execute(Q["mark_schedule_tick"], params))

    async def actor_configs(self) -> dict[str, ActorConfig]:
        return await self._run(self._actor_configs)

    def _sync_actor_configs(self, configs: Sequence[ActorConfig], force: bool) -> list[str]:
        differences = config_differences(self._actor_configs(), configs)
        if differences and not force:
            return differences
        now = time.time()
        self._db.executemany(
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

    async def sync_actor_configs(self, configs: Sequence[ActorConfig], *, force: bool) -> list[str]:
        return await self._run(self._write, self._sync_actor_configs, configs, force)

    # -- workers ---------------------------------------------------------------------
    async def register_worker(self, info: WorkerInfo) -> None:
        params = {
            "id": str(info.id),
            "workgroup_instance": str(info.workgroup_instance) if info.workgroup_instance else None,
            "worker_label": info.worker_label,
            "pid": info.pid,
            "hostname": info.hostname,
            "queues": json.dumps(list(info.queues)),
            "started_at": _ts(info.started_at),
            "now": time.time(),
        }
        await self._run(self._write, self._db.execute, Q["register_worker"], params)

    async def unregister_worker(self, worker_id: UUID) -> None:
        await self._run(
            self._write, self._db.execute, Q["unregister_worker"], {"id": str(worker_id)}
        )

    async def list_workers(self) -> list[WorkerInfo]:
        rows = await self._run(lambda: self._db.execute(Q["list_workers"]).fetchall())
        return [CODEC.worker(r) for r in rows]

    async def find_worker(self, workgroup_instance: UUID, worker_label: str) -> WorkerInfo | None:
        params = {"workgroup_instance": str(workgroup_instance), "worker_label": worker_label}
        row = await self._run(lambda: self._db.execute(Q["find_worker"], params).fetchone())
        return CODEC.worker(row) if row else None

    def _heartbeat(self, worker_id: UUID, lease_seconds: float) -> int:
        params = {"worker_id": str(worker_id), "now": time.time(), "lease": lease_seconds}
        self._db.execute(Q["touch_worker"], params)
        return self._db.execute(Q["extend_leases"], params).rowcount

    async def heartbeat(self, worker_id: UUID, lease_seconds: float) -> int:
        return await self._run(self._write, self._heartbeat, worker_id, float(lease_seconds))

    def _claim(self, params: dict[str, Any]) -> list[Any]:
        version, _ = self._marker()  # before the claim: later commits wake wait_for_jobs
        rows = self._write(self._claim_rows, params)
        self._claim_marker = (version, self._own_commits)
        return rows

    def _claim_rows(self, params: dict[str, Any]) -> list[Any]:
        """Inside the claim's BEGIN IMMEDIATE: no other writer runs until it commits, so
        the limits read here cannot race another claim."""
        if not self._limits_apply(params["queues"]):
            return self._db.execute(Q["claim"], params).fetchall()
        return self._claim_limited(params)

    def _limits_apply(self, queues: str) -> bool:
        """Whether a limit covers these queues (JSON) or any actor, as seen at most
        LIMITS_TTL ago: one statement fewer per claim. The claim statement skips limited
        queues and actors itself, so a stale "no" never lets a limit be exceeded."""
        now = time.monotonic()
        seen = self._limits_seen.get(queues)
        if seen is not None and now - seen[0] < LIMITS_TTL:
            return seen[1]
        found = bool(self._db.execute(Q["limits_exist"], {"queues": queues}).fetchone()["found"])
        self._limits_seen[queues] = (now, found)
        return found

    def _claim_limited(self, params: dict[str, Any]) -> list[Any]:
        """Each queue and actor gets at most its room: min(concurrency - running, rate -
        starts in the window). Each open queue offers its first ``limit`` due jobs; taken
        in claim order while every room they fall under has space, up to ``limit``."""
        db, limit = self._db, params["limit"]
        db.execute(Q["prune_limit_starts"], params)
        rooms = {(r["kind"], r["name"]): r["room"] for r in db.execute(Q["limit_rooms"], params)}
        blocked = [n for (k, n), room in rooms.items() if k == ACTOR and room <= 0]
        count_full(self.limit_waits, [f"{k}:{n}" for (k, n), room in rooms.items() if room <= 0])
        exclude = json.dumps(json.loads(params["exclude_actors"]) + blocked)
        candidates: list[Any] = []
        for queue in [r["name"] for r in db.execute(Q["unpaused_queues"], params)]:
            if rooms.get((QUEUE, queue), 1) > 0:
                candidates += db.execute(
                    Q["claim_candidates"],
                    {
                        "queue": queue,
                        "now": params["now"],
                        "exclude_actors": exclude,
                        "limit": limit,
                    },
                ).fetchall()
        candidates.sort(key=lambda c: (c["priority"], c["run_at"], c["id"]))
        taken: dict[tuple[str, str], int] = {}
        picked: list[str] = []
        for c in candidates:
            keys = [k for k in ((QUEUE, c["queue"]), (ACTOR, c["actor"])) if k in rooms]
            if any(taken.get(k, 0) >= rooms[k] for k in keys):
                continue
            for k in keys:
                taken[k] = taken.get(k, 0) + 1
            picked.append(c["id"])
            if len(picked) >= limit:
                break
        if not picked:
            return []
        ids = json.dumps(picked)
        rows = db.execute(Q["claim_ids"], {**params, "ids": ids}).fetchall()
        db.execute(Q["count_limit_starts"], {"ids": ids, "now": params["now"]})
        return rows

    async def claim(
        self,
        worker_id: UUID,
        queues: Sequence[str],
        limit: int,
        lease_seconds: float,
        exclude_actors: Sequence[str] = (),
    ) -> list[ClaimedJob]:
        if limit < 1 or not queues:
            return []
        params = {
            "worker_id": str(worker_id),
            "queues": json.dumps(list(queues)),
            "exclude_actors": json.dumps(list(exclude_actors)),
            "limit": limit,
            "lease": float(lease_seconds),
            "now": time.time(),
        }
        rows = await self._run(self._claim, params)
        rows.sort(key=lambda r: (r["priority"], r["run_at"], r["id"]))  # claim order
        return CODEC.claimed(rows)

    # -- queue controls --------------------------------------------------------------
    def take_limit_waits(self) -> dict[tuple[str, str], int]:
        waits, self.limit_waits = self.limit_waits, {}
        return waits

    async def paused_queues(self) -> list[str]:
        rows = await self._run(lambda: self._db.execute(Q["paused_queues"]).fetchall())
        return [r["name"] for r in rows]

    async def set_queue_paused(self, name: str, paused: bool, *, by: str | None = None) -> None:
        params = {"name": name, "paused": int(paused), "by": by, "now": time.time()}
        await self._run(self._write, self._db.execute, Q["pause_queue"], params)

    def _set_limits(self, kind: str, name: str, limits: Limits) -> None:
        self._limits_seen.clear()
        params: dict[str, Any] = {"kind": kind, "name": name, "now": time.time()}
        if not limits:
            self._db.execute(Q["clear_limits"], params)
            self._db.execute(Q["clear_limit_starts"], params)
            return
        params["concurrency"] = limits.concurrency
        params["rate"] = limits.rate.count if limits.rate else None
        params["rate_period"] = limits.rate.period if limits.rate else None
        self._db.execute(Q["set_limits"], params)

    async def set_limits(self, kind: str, name: str, limits: Limits) -> None:
        await self._run(self._write, self._set_limits, kind, name, limits)

    async def get_limits(self) -> dict[tuple[str, str], Limits]:
        rows = await self._run(lambda: self._db.execute(Q["get_limits"]).fetchall())
        return {(r["kind"], r["name"]): limits_from_row(r) for r in rows}

    def _queue_overview(self) -> list[QueueInfo]:
        db = self._db
        depths = db.execute(Q["queue_depths"], {"now": time.time()}).fetchall()
        controls = db.execute(Q["queue_controls"]).fetchall()
        return overview(CODEC, depths, controls, db.execute(Q["get_limits"]).fetchall())

    async def queue_overview(self) -> list[QueueInfo]:
        return await self._run(self._queue_overview)

    def _crash(
        self, runs: Sequence[tuple[str, int, str, str | None, bool]], now: float, *, shared: bool
    ) -> list[RescuedJob]:
        """The crash rules on (id, attempt, worker_id, error, blamed) runs, inside a write;
        ``shared``: one death of a runner that ran all these runs."""
        rescued = []
        for job_id, attempt, worker_id, error, blamed in runs:
            row = self._db.execute(
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

    def _complete(self, worker_id: str, outcomes: Sequence[Outcome]) -> int:
        """The batch's outcomes in one finish_runs statement, then its crashes. A second
        outcome for the same run could only fail its fence after the first: it is dropped
        here (one UPDATE ... FROM would apply an arbitrary one of the two)."""
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
            changed = self._db.execute(Q["finish_runs"], params).rowcount
        return changed + len(self._crash(crashes, now, shared=False))

    async def complete(self, worker_id: UUID, outcomes: Sequence[Outcome]) -> int:
        if not outcomes:
            return 0
        return await self._run(self._write, self._complete, str(worker_id), outcomes)

    def _give_back(self, worker_id: str, jobs: Sequence[tuple[UUID, int]]) -> int:
        now = time.time()
        return sum(
            self._db.execute(
                Q["give_back"],
                {"id": str(job_id), "attempt": attempt, "worker_id": worker_id, "now": now},
            ).rowcount
            for job_id, attempt in jobs
        )

    async def give_back(self, worker_id: UUID, jobs: Sequence[tuple[UUID, int]]) -> int:
        if not jobs:
            return 0
        return await self._run(self._write, self._give_back, str(worker_id), jobs)

    def _rescue_worker(self, worker_id: str, cause: str, blamed: bool) -> list[RescuedJob]:
        runs = self._db.execute(Q["running_of_worker"], {"worker_id": worker_id}).fetchall()
        rescued = self._crash(
            [(r["id"], r["attempt"], r["worker_id"], cause, blamed) for r in runs],
            time.time(),
            shared=len(runs) > 1,
        )
        self._db.execute(Q["unregister_worker"], {"id": worker_id})
        return rescued

    async def rescue_worker(
        self, worker_id: UUID, cause: str, *, blamed: bool = False
    ) -> list[RescuedJob]:
        return await self._run(self._write, self._rescue_worker, str(worker_id), cause, blamed)

    def _rescue_expired(self, cause: str, exclude_worker: UUID | None) -> list[RescuedJob]:
        now = time.time()
        runs = self._db.execute(
            Q["expired_runs"],
            {
                "now": now,
                "exclude_worker": None if exclude_worker is None else str(exclude_worker),
            },
        ).fetchall()
        return self._crash(
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

    async def rescue_expired(
        self, cause: str, *, exclude_worker: UUID | None = None
    ) -> list[RescuedJob]:
        # BEGIN IMMEDIATE makes this exclusive across processes: one sweeper at a time.
        return await self._run(self._write, self._rescue_expired, cause, exclude_worker)

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
                deleted = self._write(
                    lambda name=name, params=params: self._db.execute(Q[name], params).rowcount
                )
                jobs_deleted += deleted
                if deleted < batch:
                    break
        workers_deleted = self._write(
            lambda: self._db.execute(Q["prune_workers"], {"before": workers_before}).rowcount
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
        return await self._run(
            self._prune, succeeded_before.timestamp(), workers_before.timestamp(), batch, ended
        )

    # -- waking ----------------------------------------------------------------------
    def _due(self, queues: str) -> bool:
        row = self._db.execute(Q["due_job_exists"], {"queues": queues, "now": time.time()})
        return bool(row.fetchone()["due"])

    async def warm_up(self) -> None:
        pass  # one connection, open already

    async def wait_for_jobs(self, queues: Sequence[str], timeout: float) -> bool:
        """Poll for commits since the last claim (by anyone, this connection included);
        after one, True if a job is due on ``queues``."""
        deadline = time.monotonic() + timeout
        queues_json = json.dumps(list(queues))
        marker = self._claim_marker or await self._run(self._marker)
        while True:
            current = await self._run(self._marker)
            if current != marker:
                marker = current
                if await self._run(self._due, queues_json):
                    return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(POLL_INTERVAL, remaining))
