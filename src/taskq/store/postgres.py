"""The Postgres store: psycopg 3 async, a connection pool, SQL from ``postgres.sql``.

Every pooled connection runs in autocommit with ``search_path`` set to the taskq schema
and ``TimeZone`` UTC (libpq ``options``), so each hot-path call is one statement and one
round trip, and psycopg prepares the statements it sees repeatedly. Waking workers uses
LISTEN on one dedicated connection outside the pool, on channel ``taskq_<schema>``; claims
run on another (``_claiming``), whose planner settings keep one generic plan for them.

Driver errors are mapped at this boundary: a lost or refused connection becomes
``StoreUnavailable`` (and the pool drops its dead connections, so the next call works),
missing tables become ``SchemaNotMigrated``, anything else ``StoreError``; the driver's
error stays in ``__cause__``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast, overload
from uuid import UUID

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from .. import redaction
from ..events import STORE_LISTEN_FAILED, STORE_MIGRATED
from ..exceptions import InvalidDSN, SchemaNotMigrated, StoreError, StoreUnavailable
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
    QueueInfo,
    RescuedJob,
    ScheduleInfo,
    WorkerInfo,
)
from ..logs import get_logger
from ..settings import redact, validate_schema
from . import pgarray
from .drift import config_differences
from .enqueue import (
    columns_insert,
    copy_columns,
    jobs_table,
    needs_full,
    pg_statements,
    pg_steps,
    run_async,
    stage_row,
)
from .listen import Listener
from .postgres_insight import PostgresInsight
from .postgres_workflows import PostgresWorkflows
from .queues import LIMITS_TTL, count_full, limits_from_row, overview
from .rows import Codec
from .sqlfile import load_migrations, load_queries

log = get_logger(__name__)

Q = load_queries("postgres.sql")
MIGRATIONS = load_migrations("postgres")

CONNECT_TIMEOUT = 5.0  # seconds, unless the DSN sets connect_timeout
CHECKOUT_TIMEOUT = 10.0  # waiting for a pooled connection before StoreUnavailable
COPY_THRESHOLD = 100  # batches this big go by COPY (one stream), smaller by one INSERT
#: the claim connection's planner settings (``PostgresStore._claiming``): one generic plan
#: for the claim, planned once per connection instead of at every claim (~0.3 ms of server
#: time each, on the path from enqueue to start); no sort where an index gives the order
#: (a generic plan cannot know the LIMIT and would otherwise sort a whole queue once
#: ``jobs`` has statistics); no JIT (the disabled sorts that remain push the estimated cost
#: past jit_above_cost, and compiling cost seconds)
CLAIM_PLANNER = ("plan_cache_mode=force_generic_plan", "enable_sort=off", "jit=off")
COPY_BLOCK = 250  # jobs per block of enqueue_columns' COPY data (sent as the next is built)
#: how long the producer's spare connection (``PostgresStore._producer``) may stay out of
#: the pool before it goes back (so the pool's max_lifetime and checks still reach it)
SPARE_MAX_AGE = 60.0
_MISSING_SCHEMA = (
    pg_errors.UndefinedTable,
    pg_errors.InvalidSchemaName,
    pg_errors.UndefinedFunction,
    pg_errors.UndefinedColumn,
)


def channel_for(schema: str, what: str = "") -> str:
    """The NOTIFY channel of a schema (identifiers stop at 63 bytes; so does the trigger).
    ``what`` names another channel of the schema (``cancel``: cancel requests)."""
    if what:
        return f"taskq_{what}_{schema}"[:63]
    return f"taskq_{schema}"[:63]


def _first_line(exc: BaseException) -> str:
    """The error on one line: the server's primary message, else the client's text."""
    diag = getattr(exc, "diag", None)
    primary = diag.message_primary if diag is not None else None
    text = (primary or str(exc)).strip() or type(exc).__name__
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _hung_up(conn: psycopg.AsyncConnection) -> bool:
    """True if an idle connection's socket has something to read: the server closed it."""
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)


@overload
def _utc(value: datetime) -> datetime: ...
@overload
def _utc(value: None) -> None: ...
@overload
def _utc(value: datetime | None) -> datetime | None: ...
def _utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


CODEC = Codec(uuid=lambda v: cast(UUID, v), time=_utc, texts=list)


@dataclass(slots=True)
class _Spare:
    """A pooled connection the store keeps between two enqueues, with its cursor."""

    pool: AsyncConnectionPool
    conn: psycopg.AsyncConnection
    cursor: psycopg.AsyncCursor[Any]
    since: float  # when it left the pool (monotonic)


class PostgresStore(PostgresWorkflows, PostgresInsight):
    """``Store`` on Postgres; all tables live in ``schema``."""

    kind = "postgres"
    _job_from_row = staticmethod(CODEC.job)
    _codec = CODEC

    def __init__(
        self, dsn: str, *, schema: str = "taskq", min_size: int = 1, max_size: int = 10
    ) -> None:
        self.schema = validate_schema(schema)
        self.channel = channel_for(self.schema)
        self.cancel_channel = channel_for(self.schema, "cancel")
        self._cancel_listener = Listener(self._listen_for_cancels)
        self.enqueue_sql = pg_statements(self.schema)  # also run on callers' connections
        self._identity: tuple[Any, ...] | None = None
        self._min_size, self._max_size = min_size, max_size
        self._set_dsn(dsn)
        self._pool: AsyncConnectionPool | None = None
        self._listener = Listener(self._listen_for_jobs)
        self._claimer: psycopg.AsyncConnection | None = None
        self._spare: _Spare | None = None
        self._claimer_lock = asyncio.Lock()
        self._limits_seen: dict[tuple[str, ...], tuple[float, bool]] = {}
        self.limit_waits: dict[tuple[str, str], int] = {}

    def _set_dsn(self, dsn: str) -> None:
        self.display_dsn = redact(dsn)
        self._conninfo = self._conninfo_for(dsn)
        self._claim_conninfo = self._conninfo_for(dsn, planner=CLAIM_PLANNER)

    def _conninfo_for(self, dsn: str, planner: Sequence[str] = ()) -> str:
        try:
            params = conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise InvalidDSN(
                f"invalid DSN {redact(dsn)!r}: {redaction.echoed(_first_line(exc), dsn)}"
            ) from None
        extra = "".join(f" -c {setting}" for setting in planner)
        options = (
            f"{params.get('options') or ''} -c search_path={self.schema} -c TimeZone=UTC{extra}"
        )
        params["options"] = options.strip()
        params.setdefault("connect_timeout", str(int(CONNECT_TIMEOUT)))
        params.setdefault("application_name", "taskq")
        return make_conninfo("", **params)

    # -- errors ------------------------------------------------------------------------
    def _translate(self, exc: psycopg.Error) -> StoreError:
        if isinstance(exc, _MISSING_SCHEMA):
            return SchemaNotMigrated(
                f"taskq's tables are missing or out of date in schema {self.schema!r} at "
                f"{self.display_dsn}: run `taskq migrate` ({_first_line(exc)})"
            )
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            return StoreUnavailable(
                f"Postgres at {self.display_dsn} is unavailable: {_first_line(exc)}"
            )
        return StoreError(f"Postgres error at {self.display_dsn}: {_first_line(exc)}")

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """A pooled connection the server has not hung up on.

        A connection the server closed while it sat idle in the pool (Postgres restarted,
        ``pg_terminate_backend``) has a readable socket: the server's goodbye or EOF. Each
        such connection is discarded at checkout instead of failing the call it was
        handed to (checking costs one ``select``, no round trip). A connection lost in
        the middle of a call fails that call with StoreUnavailable; the pool drops it
        when it comes back closed."""
        pool, conn = await self._checkout()
        try:
            yield conn
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        finally:
            await pool.putconn(conn)

    async def _checkout(self) -> tuple[AsyncConnectionPool, psycopg.AsyncConnection]:
        """A connection from the pool that the server has not hung up on (see
        ``_connection``), and its pool; the caller puts it back."""
        pool = self._pool
        if pool is None:
            raise StoreUnavailable(f"the store for {self.display_dsn} is not open")
        try:
            conn = await pool.getconn(timeout=CHECKOUT_TIMEOUT)
            for _ in range(self._max_size):
                if not _hung_up(conn):
                    break
                await conn.close()
                await pool.putconn(conn)  # closed: the pool drops it and grows a new one
                conn = await pool.getconn(timeout=CHECKOUT_TIMEOUT)
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        return pool, conn

    async def _producer(self) -> _Spare:
        """A connection (and cursor) for one enqueue: the spare one kept since the last
        enqueue when there is one, else one from the pool as ``_connection`` checks it out.
        Saves the pool's checkout and return and a new cursor on every single enqueue
        (~20% of its client CPU); ``_release`` hands it back."""
        spare, self._spare = self._spare, None
        if spare is not None:
            if spare.pool is self._pool and not _hung_up(spare.conn):
                return spare
            await spare.conn.close()  # the server hung up on it (or the pool was replaced)
            await spare.pool.putconn(spare.conn)
        pool, conn = await self._checkout()
        return _Spare(pool, conn, conn.cursor(), time.monotonic())

    async def _release(self, spare: _Spare, ok: bool) -> None:
        """Keep ``spare`` for the next enqueue if it ended cleanly, idle and young, and no
        other is kept; else back to its pool (which checks, resets or drops it)."""
        if (
            ok
            and self._spare is None
            and spare.pool is self._pool
            and spare.conn.pgconn.transaction_status == TransactionStatus.IDLE
            and time.monotonic() - spare.since < SPARE_MAX_AGE
        ):
            self._spare = spare
            return
        await spare.pool.putconn(spare.conn)

    async def _drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            await spare.pool.putconn(spare.conn)

    async def _fetchall(self, name: str, params: dict[str, Any] | None = None) -> list[DictRow]:
        async with self._connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(Q[name], params)
            return await cur.fetchall()

    async def _fetchone(self, name: str, params: dict[str, Any] | None = None) -> DictRow | None:
        async with self._connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(Q[name], params)
            return await cur.fetchone()

    async def _fetchvalue(self, name: str, column: str, params: dict[str, Any]) -> int:
        """One count a statement returns in its one row."""
        row = await self._fetchone(name, params)
        assert row is not None, f"{name} returns one row"
        return int(row[column])

    # -- lifecycle -----------------------------------------------------------------------
    async def _new_pool(self, conninfo: str) -> AsyncConnectionPool:
        """Open a pool after one direct connection proves the server answers (so a bad
        host fails at once, with the server's own reason)."""
        try:
            probe = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
            await probe.close()
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to Postgres at {self.display_dsn}: {_first_line(exc)}"
            ) from exc
        pool = AsyncConnectionPool(
            conninfo,
            kwargs={"autocommit": True},
            min_size=self._min_size,
            max_size=self._max_size,
            open=False,
            name=f"taskq-{self.schema}",
            timeout=CHECKOUT_TIMEOUT,
            reconnect_timeout=60.0,
        )
        try:
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT * 2)
        except psycopg.Error as exc:
            await pool.close()
            raise StoreUnavailable(
                f"cannot open a connection pool to Postgres at {self.display_dsn}: "
                f"{_first_line(exc)}"
            ) from exc
        return pool

    async def open(self) -> None:
        if self._pool is None:
            self._pool = await self._new_pool(self._conninfo)

    async def close(self) -> None:
        await self._listener.close()
        await self._cancel_listener.close()
        await self._close_claimer()
        await self._drop_spare()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def reconnect(self, dsn: str | None = None) -> None:
        old = self.display_dsn, self._conninfo, self._claim_conninfo
        if dsn is not None:
            self._set_dsn(dsn)
        try:
            pool = await self._new_pool(self._conninfo)
        except BaseException:
            self.display_dsn, self._conninfo, self._claim_conninfo = old
            raise
        old_pool, self._pool = self._pool, pool
        self._identity = None
        await self._listener.close()
        await self._cancel_listener.close()
        await self._close_claimer()
        await self._drop_spare()
        if old_pool is not None:
            await old_pool.close()

    async def drop_schema(self) -> None:
        """Drop this store's schema and all its tables (``taskq.testing``: a throwaway
        schema per test). Not part of ``Store``: SQLite's test stores are files."""
        async with self._connection() as conn:
            await conn.execute(sql.SQL(Q["drop_schema"]).format(schema=sql.Identifier(self.schema)))

    async def migrate(self) -> list[str]:
        schema = sql.Identifier(self.schema)
        applied_now: list[str] = []
        async with self._connection() as conn, conn.transaction():
            await conn.execute(Q["migration_lock"], {"key": f"taskq-migrate:{self.schema}"})
            await conn.execute(sql.SQL(Q["create_schema"]).format(schema=schema))
            await conn.execute(sql.SQL(Q["use_schema"]).format(schema=schema))
            await conn.execute(Q["create_migrations_table"])
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(Q["applied_migrations"])
            done = {row["version"] for row in await cur.fetchall()}
            for migration in MIGRATIONS:
                if migration.version in done:
                    continue
                await conn.execute(migration.sql)
                await conn.execute(Q["record_migration"], {"version": migration.version})
                applied_now.append(migration.version)
        if applied_now:
            log.event(
                STORE_MIGRATED, dsn=self.display_dsn, schema=self.schema, versions=applied_now
            )
        return applied_now

    async def check_schema(self) -> None:
        rows = await self._fetchall("applied_migrations")
        done = {r["version"] for r in rows}
        missing = [m.version for m in MIGRATIONS if m.version not in done]
        if missing:
            raise SchemaNotMigrated(
                f"schema {self.schema!r} at {self.display_dsn} lacks migrations "
                f"{', '.join(missing)}: run `taskq migrate`"
            )

    async def ping(self) -> None:
        await self._fetchone("ping")

    async def now(self) -> datetime:
        row = await self._fetchone("now")
        assert row is not None
        return _utc(cast(datetime, row["now"]))

    # -- producers -----------------------------------------------------------------------
    async def enqueue(self, specs: Sequence[JobSpec]) -> list[UUID]:
        if not specs:
            return []
        full = needs_full(specs)
        async with self._connection() as conn:
            if len(specs) >= COPY_THRESHOLD and not full:
                async with conn.transaction():
                    await self._copy_jobs(conn, [s for s in specs if s.run_at is None])
                    await self._copy_jobs(conn, [s for s in specs if s.run_at is not None])
                return [s.id for s in specs]
            if full and len(specs) >= COPY_THRESHOLD:  # COPY to a staging table first
                async with conn.transaction():
                    inserted = await self._stage_jobs(conn, specs)
                    return await run_async(conn, pg_steps(self.enqueue_sql, specs, inserted))
            if full and len(specs) > 1:  # insert, look up holders, maybe insert again
                async with conn.transaction():
                    return await run_async(conn, pg_steps(self.enqueue_sql, specs))
            return await run_async(conn, pg_steps(self.enqueue_sql, specs))

    async def enqueue_columns(self, jobs: JobColumns) -> None:
        if not jobs.ids:
            return
        spare = await self._producer()
        ok = False
        try:
            if len(jobs.ids) < COPY_THRESHOLD:  # one INSERT (enqueue_one for a single job)
                await spare.cursor.execute(*columns_insert(self.enqueue_sql, jobs))
            else:  # one COPY on the autocommit connection: one statement, one transaction
                name, blocks = copy_columns(jobs, COPY_BLOCK)
                async with spare.cursor.copy(self.enqueue_sql[name]) as copy:
                    for block in blocks:
                        await copy.write(block)
            ok = True
        except psycopg.Error as exc:
            raise self._translate(exc) from exc
        finally:
            await self._release(spare, ok)

    async def _stage_jobs(
        self, conn: psycopg.AsyncConnection, specs: Sequence[JobSpec]
    ) -> set[UUID]:
        """COPY a batch that carries unique keys, meta or tags into the session's staging
        table, insert it in one statement; return the ids inserted (inside a transaction)."""
        await conn.execute(self.enqueue_sql["enqueue_stage"])
        async with conn.cursor().copy(self.enqueue_sql["enqueue_stage_copy"]) as copy:
            for s in specs:
                await copy.write_row(stage_row(s))
        cur = await conn.execute(self.enqueue_sql["enqueue_from_stage"])
        return {row[0] for row in await cur.fetchall()}

    async def identity(self) -> tuple[Any, ...]:
        """(database, port, server start time) of this store's server: a caller's
        connection must show the same to enqueue in its transaction. Asked once."""
        if self._identity is None:
            async with self._connection() as conn:
                cur = await conn.execute(
                    self.enqueue_sql["connection_identity"],
                    {"jobs_table": jobs_table(self.schema)},
                )
                row = await cur.fetchone()
            assert row is not None
            self._identity = tuple(row[:3])
        return self._identity

    async def _copy_jobs(self, conn: psycopg.AsyncConnection, specs: Sequence[JobSpec]) -> None:
        """COPY a batch; jobs without run_at take the database's now() as default."""
        if not specs:
            return
        with_run_at = specs[0].run_at is not None
        async with conn.cursor().copy(
            self.enqueue_sql["enqueue_copy_run_at" if with_run_at else "enqueue_copy"]
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

    async def get_job(self, job_id: UUID) -> Job | None:
        row = await self._fetchone("get_job", {"id": job_id})
        return CODEC.job(row) if row else None

    async def list_jobs(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        rows = await self._fetchall(
            "list_jobs", {"state": state, "queue": queue, "tag": tag, "limit": limit}
        )
        return [CODEC.job(r) for r in rows]

    async def stats(self) -> dict[str, int]:
        counts = dict.fromkeys(ALL_STATES, 0)
        for row in await self._fetchall("stats"):
            counts[row["state"]] = row["count"]
        return counts

    async def retry_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        if not job_ids:
            return []
        rows = await self._fetchall("retry_jobs", {"ids": list(job_ids), "channel": self.channel})
        return [r["id"] for r in rows]

    async def retry_all_dead(self) -> int:
        return await self._fetchvalue("retry_all_dead", "count", {"channel": self.channel})

    async def cancel_jobs(self, job_ids: Sequence[UUID], *, by: str | None = None) -> list[UUID]:
        if not job_ids:
            return []
        rows = await self._fetchall("cancel_jobs", {"ids": list(job_ids), "by": by})
        return [r["id"] for r in rows]

    async def request_cancel(
        self, job_ids: Sequence[UUID], *, by: str | None = None
    ) -> dict[UUID, tuple[CancelResult, str]]:
        if not job_ids:
            return {}
        rows = await self._fetchall(
            "request_cancel",
            {"ids": list(job_ids), "by": by, "cancel_channel": self.cancel_channel},
        )
        return {r["id"]: (CancelResult.of(r["state"], r["moved"]), r["state"]) for r in rows}

    async def cancel_requested(self, worker_id: UUID) -> list[UUID]:
        rows = await self._fetchall("cancel_requested", {"worker_id": worker_id})
        return [r["id"] for r in rows]

    async def wait_for_cancels(self, timeout: float) -> bool:
        """Until a cancel request is announced (any job: the caller checks which) or
        ``timeout``. The cancel listener is a connection of its own; when it fails this
        raises StoreUnavailable (the caller backs off and logs the outage once)."""
        try:
            return await self._cancel_listener.wait(timeout, lambda _notify: True)
        except psycopg.Error as exc:
            await self._cancel_listener.close()
            raise self._translate(exc) from exc

    async def _listen_for_cancels(self) -> psycopg.AsyncConnection:
        return await self._listen(Q["listen_cancels"], self.cancel_channel)

    async def _listen(self, statement: str, channel: str) -> psycopg.AsyncConnection:
        """A new connection outside the pool, LISTENing on ``channel``."""
        conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        try:
            await conn.execute(sql.SQL(statement).format(channel=sql.Identifier(channel)))
        except BaseException:
            await conn.close()
            raise
        return conn

    async def advance_next_scheduled(self, queues: Sequence[str]) -> list[UUID]:
        if not queues:
            return []
        rows = await self._fetchall("advance_next_scheduled", {"queues": list(queues)})
        return [r["id"] for r in rows]

    # -- periodic schedules ----------------------------------------------------------
    async def record_schedules(self, schedules: Sequence[Mapping[str, str]], now: datetime) -> None:
        if not schedules:
            return
        async with self._connection() as conn:
            await conn.execute(
                Q["record_schedules"],
                {
                    "now": now,
                    "names": [s["name"] for s in schedules],
                    "actors": [s["actor"] for s in schedules],
                    "crons": [s["cron"] for s in schedules],
                    "timezones": [s["timezone"] for s in schedules],
                    "missed": [s["missed"] for s in schedules],
                },
            )

    async def list_schedules(self) -> list[ScheduleInfo]:
        return [CODEC.schedule(r) for r in await self._fetchall("list_schedules")]

    async def mark_schedule_tick(self, name: str, tick: datetime) -> None:
        async with self._connection() as conn:
            await conn.execute(Q["mark_schedule_tick"], {"name": name, "tick": tick})

    async def actor_configs(self) -> dict[str, ActorConfig]:
        rows = await self._fetchall("actor_configs")
        return {r["name"]: CODEC.actor_config(r) for r in rows}

    async def sync_actor_configs(self, configs: Sequence[ActorConfig], *, force: bool) -> list[str]:
        differences = config_differences(await self.actor_configs(), configs)
        if (differences and not force) or not configs:
            return differences
        async with self._connection() as conn:
            await conn.execute(
                Q["upsert_actor_configs"],
                {
                    "names": [c.name for c in configs],
                    "queues": [c.queue for c in configs],
                    "max_attempts": [c.max_attempts for c in configs],
                    "max_crashes": [c.max_crashes for c in configs],
                    "idempotent": [c.idempotent for c in configs],
                    "cpu_bound": [c.cpu_bound for c in configs],
                    "timeouts": [c.timeout for c in configs],
                    "extras": [json.dumps(c.extra) for c in configs],
                },
            )
        return differences

    # -- workers -------------------------------------------------------------------------
    async def register_worker(self, info: WorkerInfo) -> None:
        async with self._connection() as conn:
            await conn.execute(
                Q["register_worker"],
                {
                    "id": info.id,
                    "workgroup_instance": info.workgroup_instance,
                    "worker_label": info.worker_label,
                    "pid": info.pid,
                    "hostname": info.hostname,
                    "queues": list(info.queues),
                    "started_at": info.started_at,
                },
            )

    async def unregister_worker(self, worker_id: UUID) -> None:
        async with self._connection() as conn:
            await conn.execute(Q["unregister_worker"], {"id": worker_id})

    async def list_workers(self) -> list[WorkerInfo]:
        return [CODEC.worker(r) for r in await self._fetchall("list_workers")]

    async def find_worker(self, workgroup_instance: UUID, worker_label: str) -> WorkerInfo | None:
        row = await self._fetchone(
            "find_worker", {"workgroup_instance": workgroup_instance, "worker_label": worker_label}
        )
        return CODEC.worker(row) if row else None

    async def heartbeat(self, worker_id: UUID, lease_seconds: float) -> int:
        return await self._fetchvalue(
            "heartbeat", "extended", {"worker_id": worker_id, "lease": float(lease_seconds)}
        )

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
            "worker_id": worker_id,
            "queues": list(queues),
            "limit": limit,
            "lease": float(lease_seconds),
            "exclude_actors": list(exclude_actors),
        }
        known = self._limits_known(tuple(queues))
        if known is None:  # not looked at lately: ask in the same round trip as the claim
            rows, found = await self._claim_checking_limits(params)
            if found and len(rows) < limit:
                # each part in claim order: the open queues' jobs, then the limited ones'
                rows += await self._claim_limited({**params, "limit": limit - len(rows)})
        elif known:
            rows = await self._claim_limited(params)
        else:
            async with self._claiming() as conn:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(Q["claim"], params)
                rows = await cur.fetchall()
        return CODEC.claimed(rows)

    @asynccontextmanager
    async def _claiming(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """The claim connection: one per store, outside the pool, with the planner settings
        of ``CLAIM_PLANNER``; claims through it run one at a time (a worker's fetcher
        claims one batch at a time anyway). Reopened when the server hung up on it while
        it sat idle, and dropped (to be reopened by the next claim) when a claim fails
        on it."""
        if self._pool is None:
            raise StoreUnavailable(f"the store for {self.display_dsn} is not open")
        async with self._claimer_lock:
            try:
                conn = self._claimer
                if conn is None or conn.closed or _hung_up(conn):
                    if conn is not None:
                        await conn.close()
                    self._claimer = None
                    conn = self._claimer = await psycopg.AsyncConnection.connect(
                        self._claim_conninfo, autocommit=True
                    )
                yield conn
            except psycopg.Error as exc:
                await self._close_claimer_unlocked()
                raise self._translate(exc) from exc
            except BaseException:
                if self._claimer is not None and (
                    self._claimer.info.transaction_status != TransactionStatus.IDLE
                ):
                    await self._close_claimer_unlocked()  # cut short in a claim: start over
                raise

    async def _close_claimer(self) -> None:
        async with self._claimer_lock:
            await self._close_claimer_unlocked()

    async def _close_claimer_unlocked(self) -> None:
        conn, self._claimer = self._claimer, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()

    def _limits_known(self, queues: tuple[str, ...]) -> bool | None:
        """Whether a limit covers these queues or any actor, as seen at most LIMITS_TTL
        ago; None when not seen since. The plain claim statement itself skips limited
        queues and actors, so a stale "no" only delays a newly limited queue's jobs; it
        never lets a limit be exceeded."""
        seen = self._limits_seen.get(queues)
        if seen is not None and time.monotonic() - seen[0] < LIMITS_TTL:
            return seen[1]
        return None

    async def _claim_checking_limits(self, params: dict[str, Any]) -> tuple[list[DictRow], bool]:
        """The plain claim with ``limits_exist`` in front of it, sent as one pipeline: a
        worker waking after a quiet second claims in one round trip, not two. The plain
        claim skips limited queues and actors by itself, so it is right either way; the
        caller claims the limited ones next when some exist."""
        queues = tuple(params["queues"])
        async with self._claiming() as conn, conn.pipeline():
            check = conn.cursor(row_factory=dict_row)
            await check.execute(Q["limits_exist"], {"queues": list(queues)})
            claim = conn.cursor(row_factory=dict_row)
            await claim.execute(Q["claim"], params)
            found_row = await check.fetchone()
            rows = await claim.fetchall()
        found = bool(found_row and found_row["found"])
        self._limits_seen[queues] = (time.monotonic(), found)
        return rows, found

    async def _claim_limited(self, params: dict[str, Any]) -> list[DictRow]:
        """The claim under limits: BEGIN, the limits lock, the claim within each room
        (forgetting starts that left their window), COMMIT, sent as one pipeline with a
        single sync (one round trip). Limited claims thus run one at a time, and each
        reads the counts the previous one committed. On any error the transaction is
        rolled back before the connection is used again."""
        async with self._claiming() as conn:
            try:
                async with conn.pipeline():
                    await conn.execute(Q["begin"])
                    await conn.execute(Q["limits_lock"], {"key": self._limits_key})
                    cur = conn.cursor(row_factory=dict_row)
                    await cur.execute(Q["claim_limited"], params)
                    await conn.execute(Q["commit"])
                rows = await cur.fetchall()
            except BaseException:
                if conn.info.transaction_status != TransactionStatus.IDLE and not conn.closed:
                    with contextlib.suppress(psycopg.Error):
                        await conn.execute(Q["rollback"])
                raise
        if rows:
            count_full(self.limit_waits, rows[0]["full_limits"] or ())
        return [r for r in rows if r["id"] is not None]

    @property
    def _limits_key(self) -> str:
        return f"taskq-limits:{self.schema}"

    # -- queue controls ------------------------------------------------------------------
    def take_limit_waits(self) -> dict[tuple[str, str], int]:
        waits, self.limit_waits = self.limit_waits, {}
        return waits

    async def paused_queues(self) -> list[str]:
        return [r["name"] for r in await self._fetchall("paused_queues")]

    async def set_queue_paused(self, name: str, paused: bool, *, by: str | None = None) -> None:
        async with self._connection() as conn:
            await conn.execute(Q["pause_queue"], {"name": name, "paused": paused, "by": by})

    async def set_limits(self, kind: str, name: str, limits: Limits) -> None:
        self._limits_seen.clear()
        async with self._connection() as conn:
            if not limits:
                await conn.execute(Q["clear_limits"], {"kind": kind, "name": name})
                return
            await conn.execute(
                Q["set_limits"],
                {
                    "kind": kind,
                    "name": name,
                    "concurrency": limits.concurrency,
                    "rate": limits.rate.count if limits.rate else None,
                    "rate_period": limits.rate.period if limits.rate else None,
                },
            )

    async def get_limits(self) -> dict[tuple[str, str], Limits]:
        rows = await self._fetchall("get_limits")
        return {(r["kind"], r["name"]): limits_from_row(r) for r in rows}

    async def queue_overview(self) -> list[QueueInfo]:
        depths = await self._fetchall("queue_depths")
        controls = await self._fetchall("queue_controls")
        limits = await self._fetchall("get_limits")
        return overview(CODEC, depths, controls, limits)

    async def complete(self, worker_id: UUID, outcomes: Sequence[Outcome]) -> int:
        if not outcomes:
            return 0
        return await self._fetchvalue(
            "complete", "changed", pgarray.complete_params(worker_id, self.channel, outcomes)
        )

    async def give_back(self, worker_id: UUID, jobs: Sequence[tuple[UUID, int]]) -> int:
        if not jobs:
            return 0
        return await self._fetchvalue(
            "give_back",
            "changed",
            {
                "worker_id": worker_id,
                "channel": self.channel,
                "ids": pgarray.uuids([j[0] for j in jobs]),
                "attempts": pgarray.ints([j[1] for j in jobs]),
            },
        )

    async def rescue_worker(
        self, worker_id: UUID, cause: str, *, blamed: bool = False
    ) -> list[RescuedJob]:
        rows = await self._fetchall(
            "rescue_worker",
            {"worker_id": worker_id, "cause": cause, "blamed": blamed, "channel": self.channel},
        )
        return [CODEC.rescued(r) for r in rows]

    async def rescue_expired(
        self, cause: str, *, exclude_worker: UUID | None = None
    ) -> list[RescuedJob]:
        rows = await self._fetchall(
            "rescue_expired",
            {
                "cause": cause,
                "channel": self.channel,
                "exclude_worker": exclude_worker,
                "lock_key": f"taskq-sweep:{self.schema}",
            },
        )
        return [CODEC.rescued(r) for r in rows]

    async def prune(
        self,
        *,
        succeeded_before: datetime,
        workers_before: datetime,
        batch: int = 1000,
        dead_before: datetime | None = None,
        cancelled_before: datetime | None = None,
    ) -> tuple[int, int]:
        jobs_deleted = 0
        passes: list[tuple[str, dict[str, Any]]] = [
            ("prune_succeeded", {"before": succeeded_before, "batch": batch})
        ] + [
            ("prune_ended", {"state": state, "before": before, "batch": batch})
            for state, before in (("dead", dead_before), ("cancelled", cancelled_before))
            if before is not None
        ]
        async with self._connection() as conn:
            for name, params in passes:
                while True:
                    cur = await conn.execute(Q[name], params)
                    jobs_deleted += cur.rowcount
                    if cur.rowcount < batch:
                        break
            cur = await conn.execute(Q["prune_workers"], {"before": workers_before})
            return jobs_deleted, cur.rowcount

    # -- waking --------------------------------------------------------------------------
    async def _listen_for_jobs(self) -> psycopg.AsyncConnection:
        return await self._listen(Q["listen"], self.channel)

    async def warm_up(self) -> None:
        async def claimer() -> None:
            async with self._claiming():
                pass

        # the two connect at once; what fails is left for the first claim or wait
        await asyncio.gather(self._listener.open(), claimer(), return_exceptions=True)

    async def wait_for_jobs(self, queues: Sequence[str], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        wanted = set(queues)
        try:
            return await self._listener.wait(timeout, lambda notify: notify.payload in wanted)
        except psycopg.Error as exc:
            log.event(STORE_LISTEN_FAILED, dsn=self.display_dsn, error=_first_line(exc))
            await self._listener.close()
            await asyncio.sleep(max(0.0, deadline - time.monotonic()))
            return False
