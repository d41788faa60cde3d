"""The Postgres store's claims: one connection of their own, sent as pipelines.

The claim connection sits outside the pool, with the planner settings of
``CLAIM_PLANNER`` when it reaches Postgres directly; claims through it run one at a
time (a worker's fetcher claims one batch at a time anyway). Three ways a claim goes,
each one round trip:

- the plain claim (``claim``), when no limit covers the queues or any actor;
- the plain claim with ``limits_exist`` in front of it, when that was not looked at in
  the last ``LIMITS_TTL`` (a worker waking after a quiet second);
- the claim under limits (``claim_limited``): BEGIN, the transaction's advisory lock,
  the claim within each limit's room, COMMIT, as one pipeline with a single sync.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row

from ...jobs import Claim
from ..queues import LIMITS_TTL, count_full
from ..rows import Codec
from .connections import Connections, hung_up

#: the claim connection's planner settings: one generic plan for the claim, planned once
#: per connection instead of at every claim (~0.3 ms of server time each, on the path
#: from enqueue to start); no sort where an index gives the order (a generic plan cannot
#: know the LIMIT and would otherwise sort a whole queue once ``jobs`` has statistics);
#: no JIT (the disabled sorts that remain push the estimated cost past jit_above_cost,
#: and compiling cost seconds)
CLAIM_PLANNER = ("plan_cache_mode=force_generic_plan", "enable_sort=off", "jit=off")


class Claimer:
    """A store's claims, on its one claim connection."""

    def __init__(self, connections: Connections, codec: Codec) -> None:
        self._db = connections
        self._codec = codec
        self._conn: psycopg.AsyncConnection | None = None
        self._lock = asyncio.Lock()
        self._limits_seen: dict[str, tuple[float, bool]] = {}  # by the queues' array literal

    @property
    def _limits_key(self) -> str:
        return f"taskq-limits:{self._db.schema}"

    async def claim(self, params: dict[str, Any]) -> Claim:
        """``Store.claim`` with its parameters (``queues``, ``limit`` ... as the claim
        statements take them: the name lists as array literals, ``pgarray.names``)."""
        limit = params["limit"]
        waits: dict[tuple[str, str], int] = {}
        known = self._limits_known(params["queues"])
        if known is None:  # not looked at lately: ask in the same round trip as the claim
            rows, found = await self._claim_checking_limits(params)
            if found and len(rows) < limit:
                # each part in claim order: the open queues' jobs, then the limited ones'
                rows += await self._claim_limited({**params, "limit": limit - len(rows)}, waits)
        elif known:
            rows = await self._claim_limited(params, waits)
        else:
            async with self.connection() as conn:
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(self._db.q["claim"], params)
                rows = await cur.fetchall()
        return Claim(self._codec.claimed(rows), waits)

    def _conninfo(self) -> str:
        """The claim connection's conninfo: with the planner settings when it reaches
        Postgres directly; plain through a pooler (which refuses startup options: there
        psycopg prepares nothing, so each claim is planned with its LIMIT known, and the
        plan needs no setting)."""
        if self._db.pooled:
            return self._db.conninfo
        return self._db.conninfo_for(self._db.dsn, CLAIM_PLANNER)

    def open_connections(self) -> int:
        return int(self._conn is not None and not self._conn.closed)

    def forget_limits(self) -> None:
        """Look at the limits again at the next claim (they were just changed here)."""
        self._limits_seen.clear()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """The claim connection, held for one claim. Reopened when the server hung up on
        it while it sat idle, and dropped (to be reopened by the next claim) when a claim
        fails on it."""
        if self._db.pool is None:
            raise self._db.not_open()
        async with self._lock:
            try:
                conn = self._conn
                if conn is None or conn.closed or hung_up(conn):
                    if conn is not None:
                        await conn.close()
                    self._conn = None
                    conn = self._conn = await self._db.connect(self._conninfo())
                yield conn
            except psycopg.Error as exc:
                await self._close_unlocked()
                raise self._db.translate(exc) from exc
            except BaseException:
                if self._conn is not None and (
                    self._conn.info.transaction_status != TransactionStatus.IDLE
                ):
                    await self._close_unlocked()  # cut short in a claim: start over
                raise

    async def close(self) -> None:
        async with self._lock:
            await self._close_unlocked()

    async def _close_unlocked(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()

    def _limits_known(self, queues: str) -> bool | None:
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
        queues = params["queues"]
        async with self.connection() as conn, conn.pipeline():
            check = conn.cursor(row_factory=dict_row)
            await check.execute(self._db.q["limits_exist"], {"queues": queues})
            claim = conn.cursor(row_factory=dict_row)
            await claim.execute(self._db.q["claim"], params)
            found_row = await check.fetchone()
            rows = await claim.fetchall()
        found = bool(found_row and found_row["found"])
        self._limits_seen[queues] = (time.monotonic(), found)
        return rows, found

    async def _claim_limited(
        self, params: dict[str, Any], waits: dict[tuple[str, str], int]
    ) -> list[DictRow]:
        """The claim under limits: BEGIN, the limits lock (transaction-scoped), the claim
        within each room (forgetting starts that left their window), COMMIT, sent as one
        pipeline with a single sync (one round trip). Limited claims thus run one at a
        time, and each reads the counts the previous one committed. On any error the
        transaction is rolled back before the connection is used again. The limits it
        found full are counted into ``waits``."""
        async with self.connection() as conn:
            try:
                async with conn.pipeline():
                    await conn.execute(self._db.q["begin"])
                    await conn.execute(self._db.q["limits_lock"], {"key": self._limits_key})
                    cur = conn.cursor(row_factory=dict_row)
                    await cur.execute(self._db.q["claim_limited"], params)
                    await conn.execute(self._db.q["commit"])
                rows = await cur.fetchall()
            except BaseException:
                if conn.info.transaction_status != TransactionStatus.IDLE and not conn.closed:
                    with contextlib.suppress(psycopg.Error):
                        await conn.execute(self._db.q["rollback"])
                raise
        if rows:
            count_full(waits, rows[0]["full_limits"] or ())
        return [r for r in rows if r["id"] is not None]
