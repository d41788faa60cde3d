"""The Postgres store's connections: the pool, the kept connection (enqueues, acks), errors.

Every pooled connection runs in autocommit, so each hot-path call is one statement and
one round trip. No connection carries session state taskq relies on: the SQL names its
schema (``{schema}.jobs``), times are compared in SQL and read as aware datetimes, locks
are transaction-scoped, so ``TASKQ_DSN`` may point at a transaction pooler (PgBouncer in
``pool_mode = transaction``). What a pooler cannot carry is decided at open:

- whether ``TASKQ_DSN`` goes through a pooler: the backend pid the server reports
  (``pg_backend_pid()``) differs from the one the connection was given at startup (a
  pooler hands out its own cancel key). Session and transaction pooling look alike from
  here; both are treated as transaction pooling.
- through a pooler, psycopg never prepares statements (``prepare_threshold=None``): a
  prepared statement lives in one server session, and the pooler hands the next
  transaction to another (PgBouncer before 1.21 has no protocol-level support for them;
  Debian 12's is 1.18). A direct DSN keeps psycopg's automatic prepare (after 5 runs).
- LISTEN needs a session: through a pooler it goes to ``TASKQ_PG_DSN_DIRECT`` (checked
  at open to reach the same database, and directly; unused and unchecked when TASKQ_DSN
  is direct), and without one the store polls (``listen_conninfo`` is None; the store
  logs ``listen-unavailable`` once).

The connections outside the pool (the claim connection, ``claims.py``; the LISTEN
connections, ``listen.py``) are opened from the conninfo kept here.

Driver errors are mapped at this boundary: a lost or refused connection becomes
``StoreUnavailable`` (and the pool drops its dead connections, so the next call works),
missing tables become ``SchemaNotMigrated``, anything else ``StoreError``; the driver's
error stays in ``__cause__``.
"""

from __future__ import annotations

import functools
import select
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from ... import redaction
from ...exceptions import ConfigError, InvalidDSN, SchemaNotMigrated, StoreError, StoreUnavailable
from ...settings import HEALTH_DSN_ENV, redact
from ..sqlfile import load_queries

CONNECT_TIMEOUT = 5.0  # seconds, unless the DSN sets connect_timeout
#: the ``application_name`` of every connection through a pooler (see ``conninfo_for``)
POOLED_NAME = "taskq"
CHECKOUT_TIMEOUT = 10.0  # waiting for a pooled connection before StoreUnavailable
#: how long the kept connection (``Connections.kept``) may stay out of the pool before it
#: goes back (so the pool's max_lifetime and checks still reach it)
SPARE_MAX_AGE = 60.0
_MISSING_SCHEMA = (
    pg_errors.UndefinedTable,
    pg_errors.InvalidSchemaName,
    pg_errors.UndefinedFunction,
    pg_errors.UndefinedColumn,
)


@functools.cache
def queries(schema: str) -> dict[str, str]:
    """Every statement of ``postgres.sql`` with ``{schema}`` filled in (its quoted
    identifier), once per schema and process."""
    ident = sql.Identifier(schema).as_string(None)
    return {n: q.replace("{schema}", ident) for n, q in load_queries("postgres.sql").items()}


@dataclass(frozen=True, slots=True)
class Server:
    """Who answered a connection: the database and the postmaster (its start time tells
    one server from another), and whether a pooler stood between (``pooled``)."""

    database: str
    database_oid: int
    started: Any
    pooled: bool

    def same_database(self, other: Server) -> bool:
        return (self.database, self.database_oid, self.started) == (
            other.database,
            other.database_oid,
            other.started,
        )


def first_line(exc: BaseException) -> str:
    """The error on one line: the server's primary message, else the client's text."""
    diag = getattr(exc, "diag", None)
    primary = diag.message_primary if diag is not None else None
    text = (primary or str(exc)).strip() or type(exc).__name__
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def hung_up(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """True if an idle connection's socket has something to read: the server closed it."""
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)


async def _first_row(
    conn: psycopg.AsyncConnection, query: str, params: dict[str, Any] | None
) -> DictRow | None:
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(query, params)
    return await cur.fetchone()


@dataclass(slots=True)
class Spare:
    """The pooled connection a store keeps between uses (``Connections.kept``), with its
    cursor."""

    pool: AsyncConnectionPool
    conn: psycopg.AsyncConnection
    cursor: psycopg.AsyncCursor[Any]
    since: float  # when it left the pool (monotonic)


class Connections:
    """One store's way to its Postgres: the DSNs, the pool and the errors."""

    def __init__(
        self,
        dsn: str,
        schema: str,
        *,
        min_size: int,
        max_size: int,
        direct_dsn: str | None = None,
        application_name: str | None = None,
    ) -> None:
        self.schema = schema
        self._application_name = application_name or POOLED_NAME
        self.q = queries(schema)
        self._min_size, self.max_size = min_size, max_size
        #: TASKQ_DSN goes through a pooler (learnt at open; until then assumed, the safe way)
        self.pooled = True
        self.direct_conninfo = (
            self.conninfo_for(direct_dsn, through_pooler=False) if direct_dsn else None
        )
        self.set_dsn(dsn)
        self.pool: AsyncConnectionPool | None = None
        self._spare: Spare | None = None

    def set_dsn(self, dsn: str) -> None:
        self.dsn = dsn
        self.display_dsn = redact(dsn)
        self.conninfo = self.conninfo_for(dsn)

    def conninfo_for(
        self, dsn: str, planner: Sequence[str] = (), *, through_pooler: bool | None = None
    ) -> str:
        """The conninfo of ``dsn``, with ``planner`` settings as startup options (only
        for a connection that reaches Postgres directly: a pooler refuses them).

        Its ``application_name`` (unless the DSN names one) is the store's own when it
        reaches Postgres directly, and the same for every client through a pooler
        (``through_pooler``, default: ``self.pooled``): PgBouncer gives a client any
        server connection, and one whose ``application_name`` differs from the client's
        first gets a ``SET application_name``: a statement more for every transaction
        of a fleet of differently named workers (measured: twice the transactions)."""
        try:
            params = conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise InvalidDSN(
                f"invalid DSN {redact(dsn)!r}: {redaction.echoed(first_line(exc), dsn)}"
            ) from None
        if planner:
            extra = " ".join(f"-c {setting}" for setting in planner)
            params["options"] = f"{params.get('options') or ''} {extra}".strip()
        params.setdefault("connect_timeout", str(int(CONNECT_TIMEOUT)))
        shared = self.pooled if through_pooler is None else through_pooler
        params.setdefault("application_name", POOLED_NAME if shared else self._application_name)
        return make_conninfo("", **params)

    @property
    def prepare_threshold(self) -> int | None:
        """psycopg's: prepare after 5 runs on a direct connection, never through a pooler."""
        return None if self.pooled else 5

    @property
    def connection_kwargs(self) -> dict[str, Any]:
        """How every connection of the store's own is opened (the pool's, the claim
        connection, the calling threads'): autocommit, prepared only when direct."""
        return {"autocommit": True, "prepare_threshold": self.prepare_threshold}

    @property
    def listen_conninfo(self) -> str | None:
        """Where LISTEN goes: TASKQ_DSN when it is direct, else TASKQ_PG_DSN_DIRECT; None
        when neither can hold a session (the store polls)."""
        return self.direct_conninfo if self.pooled else self.conninfo

    async def connect(self, conninfo: str) -> psycopg.AsyncConnection:
        """A connection outside the pool, set up as the pool's are."""
        return await psycopg.AsyncConnection.connect(conninfo, **self.connection_kwargs)

    # -- errors ------------------------------------------------------------------------
    def translate(self, exc: psycopg.Error) -> StoreError:
        if isinstance(exc, _MISSING_SCHEMA):
            return SchemaNotMigrated(
                f"taskq's tables are missing or out of date in schema {self.schema!r} at "
                f"{self.display_dsn}: run `taskq migrate` ({first_line(exc)})"
            )
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            return StoreUnavailable(
                f"Postgres at {self.display_dsn} is unavailable: {first_line(exc)}"
            )
        return StoreError(f"Postgres error at {self.display_dsn}: {first_line(exc)}")

    def not_open(self) -> StoreUnavailable:
        return StoreUnavailable(f"the store for {self.display_dsn} is not open")

    # -- the pool ----------------------------------------------------------------------
    async def _server(self, conninfo: str, display: str) -> Server:
        """Connect once and ask who answers (a bad host fails here, with the server's own
        reason)."""
        try:
            probe = await psycopg.AsyncConnection.connect(
                conninfo, autocommit=True, prepare_threshold=None
            )
            try:
                cur = probe.cursor(row_factory=dict_row)
                await cur.execute(self.q["server_identity"])
                row = await cur.fetchone()
                assert row is not None, "server_identity returns one row"
                pooled = probe.info.backend_pid != row["pid"]
            finally:
                await probe.close()
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to Postgres at {display}: {first_line(exc)}"
            ) from exc
        return Server(row["database"], row["database_oid"], row["started"], pooled)

    async def _check_direct(self, server: Server, *, always: bool = False) -> None:
        """Past a pooler, TASKQ_PG_DSN_DIRECT must reach the same database as TASKQ_DSN,
        and directly (a direct TASKQ_DSN never uses it; ``always``: check it anyway, for
        a workgroup's relay, which LISTENs on it whatever TASKQ_DSN is)."""
        if self.direct_conninfo is None or not (server.pooled or always):
            return
        shown = f"{HEALTH_DSN_ENV} ({redact(self.direct_conninfo)})"
        direct = await self._server(self.direct_conninfo, shown)
        if direct.pooled:
            raise ConfigError(
                f"{shown} goes through a connection pooler: it must reach Postgres itself"
            )
        if not direct.same_database(server):
            raise ConfigError(
                f"{shown} reaches database {direct.database!r}, not the database "
                f"{server.database!r} of {self.display_dsn} on the same server: they must "
                "be one database"
            )

    async def check_direct_dsn(self) -> None:
        """``_check_direct`` whether or not a pooler stands before this DSN (a workgroup's
        relay LISTENs on TASKQ_PG_DSN_DIRECT whatever TASKQ_DSN is): it must reach this
        DSN's database, directly (``ConfigError``, one line); ``StoreUnavailable`` when
        either cannot be reached."""
        server = await self._server(self.conninfo, self.display_dsn)
        await self._check_direct(server, always=True)

    async def new_pool(self) -> AsyncConnectionPool:
        """Open a pool after one connection proves the server answers and tells whether
        a pooler stands between (``pooled``), and TASKQ_PG_DSN_DIRECT is checked."""
        server = await self._server(self.conninfo, self.display_dsn)
        await self._check_direct(server)
        self.pooled = server.pooled
        conninfo = self.conninfo = self.conninfo_for(self.dsn)  # its name, now it is known
        pool = AsyncConnectionPool(
            conninfo,
            kwargs=self.connection_kwargs,
            min_size=self._min_size,
            max_size=self.max_size,
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
                f"{first_line(exc)}"
            ) from exc
        return pool

    async def open(self) -> None:
        if self.pool is None:
            self.pool = await self.new_pool()

    async def replace_pool(self, dsn: str | None) -> AsyncConnectionPool | None:
        """A new pool (for ``dsn`` when given) in place of the current one, which is
        returned for the caller to close once nothing uses it. On failure raise and keep
        the old DSN and pool."""
        old = self.dsn
        if dsn is not None:
            self.set_dsn(dsn)
        try:
            pool = await self.new_pool()
        except BaseException:
            self.set_dsn(old)
            raise
        old_pool, self.pool = self.pool, pool
        await self.drop_spare()
        return old_pool

    def open_connections(self) -> int:
        """The pool's connections now (in use, idle, and the kept one)."""
        return 0 if self.pool is None else int(self.pool.get_stats().get("pool_size", 0))

    async def close(self) -> None:
        await self.drop_spare()
        pool, self.pool = self.pool, None
        if pool is not None:
            await pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
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
            raise self.translate(exc) from exc
        finally:
            await pool.putconn(conn)

    async def _checkout(self) -> tuple[AsyncConnectionPool, psycopg.AsyncConnection]:
        """A connection from the pool that the server has not hung up on (see
        ``connection``), and its pool; the caller puts it back."""
        pool = self.pool
        if pool is None:
            raise self.not_open()
        try:
            conn = await pool.getconn(timeout=CHECKOUT_TIMEOUT)
            for _ in range(self.max_size):
                if not hung_up(conn):
                    break
                await conn.close()
                await pool.putconn(conn)  # closed: the pool drops it and grows a new one
                conn = await pool.getconn(timeout=CHECKOUT_TIMEOUT)
        except psycopg.Error as exc:
            raise self.translate(exc) from exc
        return pool, conn

    # -- the kept connection -------------------------------------------------------------
    @asynccontextmanager
    async def kept(self) -> AsyncIterator[Spare]:
        """The kept connection and its cursor, for the statements a store sends all the
        time: single enqueues (the pool's checkout and return and a new cursor were ~20%
        of one's client CPU) and a worker's acknowledgements (the pool hands its
        connections out in turn, first in, first out, so each ack went to the next
        backend, which had to prepare ``complete`` for itself (psycopg prepares a
        statement on a connection's fifth run; Postgres plans its first five runs each)
        and, for a workflow's steps, compile the trigger functions: three backends warmed
        up instead of one). Kept out of the pool between uses while each ends cleanly,
        idle and young (``SPARE_MAX_AGE``); a caller that finds it in use gets one from
        the pool, kept afterwards if none is. Errors translated, as ``connection``'s."""
        spare = await self._take_spare()
        ok = False
        try:
            yield spare
            ok = True
        except psycopg.Error as exc:
            raise self.translate(exc) from exc
        finally:
            await self._keep(spare, ok)

    async def _take_spare(self) -> Spare:
        """The kept connection when there is one (and the server has not hung up on it),
        else one from the pool as ``connection`` checks it out."""
        spare, self._spare = self._spare, None
        if spare is not None:
            if spare.pool is self.pool and not hung_up(spare.conn):
                return spare
            await spare.conn.close()  # the server hung up on it (or the pool was replaced)
            await spare.pool.putconn(spare.conn)
        pool, conn = await self._checkout()
        return Spare(pool, conn, conn.cursor(), time.monotonic())

    async def _keep(self, spare: Spare, ok: bool) -> None:
        """Keep ``spare`` for the next use if it ended cleanly, idle and young, and no
        other is kept; else back to its pool (which checks, resets or drops it)."""
        if (
            ok
            and self._spare is None
            and spare.pool is self.pool
            and spare.conn.pgconn.transaction_status == TransactionStatus.IDLE
            and time.monotonic() - spare.since < SPARE_MAX_AGE
        ):
            self._spare = spare
            return
        await spare.pool.putconn(spare.conn)

    async def drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            await spare.pool.putconn(spare.conn)

    # -- one statement -----------------------------------------------------------------
    async def fetchall(self, name: str, params: dict[str, Any] | None = None) -> list[DictRow]:
        async with self.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(self.q[name], params)
            return await cur.fetchall()

    async def fetchone(
        self, name: str, params: dict[str, Any] | None = None, *, kept: bool = False
    ) -> DictRow | None:
        """The statement's first row (``kept``: on the kept connection, see ``kept``)."""
        if kept:
            async with self.kept() as spare:
                return await _first_row(spare.conn, self.q[name], params)
        async with self.connection() as conn:
            return await _first_row(conn, self.q[name], params)

    async def fetchvalue(
        self, name: str, column: str, params: dict[str, Any], *, kept: bool = False
    ) -> int:
        """One count a statement returns in its one row."""
        row = await self.fetchone(name, params, kept=kept)
        assert row is not None, f"{name} returns one row"
        return int(row[column])

    async def execute(self, name: str, params: dict[str, Any] | None = None) -> None:
        async with self.connection() as conn:
            await conn.execute(self.q[name], params)

    async def rowcount(self, name: str, params: dict[str, Any] | None = None) -> int:
        """How many rows the named statement changed."""
        async with self.connection() as conn:
            cur = await conn.execute(self.q[name], params)
            return cur.rowcount
