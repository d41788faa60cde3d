"""The Postgres store: ``Store`` on psycopg 3 async, its SQL from ``postgres.sql``.

The package's parts: ``connections.py`` (the DSN, the pool, the kept connection of
enqueues and acks, error mapping), ``here.py`` (the synchronous ``Client``'s connections),
``claims.py`` (the claim connection and its pipelines),
``listen.py`` (the LISTEN connection: new jobs on channel ``taskq_<schema>`` and cancel
requests), ``insight.py`` (the operator's views). This module is the store itself: one
method per ``Store`` call, each one statement (or one pipeline) on one of those
connections.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from ...events import LISTEN_UNAVAILABLE, STORE_LISTEN_FAILED, STORE_MIGRATED
from ...exceptions import SchemaNotMigrated
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
from ...settings import HEALTH_DSN_ENV, validate_schema
from .. import pgarray
from ..drift import Difference, config_differences
from ..enqueue import (
    columns_insert,
    copy_columns,
    jobs_table,
    needs_full,
    pg_statements,
    pg_steps,
    run_async,
)
from ..queues import limits_from_row, overview
from .bulk import copy_jobs, stage_jobs
from .claims import Claimer
from .codec import CODEC, utc
from .connections import Connections, first_line
from .here import HereConnections
from .insight import PostgresInsight
from .listen import Listener, channel_for, listen_on
from .schema import apply_migrations, missing_migrations
from .upkeep import Upkeep
from .workflows import PostgresWorkflows

log = get_logger(__name__)


COPY_THRESHOLD = 100  # batches this big go by COPY (one stream), smaller by one INSERT
COPY_BLOCK = 250  # jobs per block of enqueue_columns' COPY data (sent as the next is built)
LISTEN_FIX = (
    f"set {HEALTH_DSN_ENV} to a DSN that reaches Postgres itself (not the pooler) for LISTEN; "
    "until then workers poll for new jobs and cancels (docs/scaling.md)"
)


class PostgresStore(PostgresWorkflows, Upkeep):
    """``Store`` on Postgres; all tables live in ``schema``."""

    kind = "postgres"

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "taskq",
        min_size: int = 1,
        max_size: int = 10,
        direct_dsn: str | None = None,
        application_name: str | None = None,
    ) -> None:
        self.schema = validate_schema(schema)
        self.channel = channel_for(self.schema)
        self.cancel_channel = channel_for(self.schema, "cancel")
        self._db = Connections(
            dsn,
            self.schema,
            min_size=min(min_size, max_size),
            max_size=max_size,
            direct_dsn=direct_dsn,
            application_name=application_name,
        )
        self._told_no_listen = False
        self.enqueue_sql = pg_statements(self.schema)  # also run on callers' connections
        # the synchronous Client's enqueue on its calling threads (LocalEnqueue)
        self._here = HereConnections(
            self._db, self.enqueue_sql, copy_threshold=COPY_THRESHOLD, copy_block=COPY_BLOCK
        )
        self._claimer = Claimer(self._db, CODEC)
        # one LISTEN connection for new jobs and cancel requests (listen.py)
        self._listener = Listener(self._listen)
        self.insight = PostgresInsight(self._db, CODEC)
        self._identity: tuple[Any, ...] | None = None

    @property
    def display_dsn(self) -> str:
        return self._db.display_dsn

    def open_connections(self) -> int:
        parts = (self._db, self._claimer, self._listener, self._here)
        return sum(part.open_connections() for part in parts)

    # -- lifecycle -----------------------------------------------------------------------
    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._listener.close()
        await self._claimer.close()
        self._here.close()
        await self._db.close()

    async def reconnect(self, dsn: str | None = None) -> None:
        old_pool = await self._db.replace_pool(dsn)
        self._here.replace()
        self._identity = None
        await self._listener.close()
        await self._claimer.close()
        if old_pool is not None:
            await old_pool.close()

    async def drop_schema(self) -> None:
        """Drop this store's schema and all its tables (``taskq.testing``: a throwaway
        schema per test). Not part of ``Store``: SQLite's test stores are files."""
        async with self._db.connection() as conn:
            await conn.execute(self._db.q["drop_schema"])

    async def migrate(self) -> list[str]:
        applied_now = await apply_migrations(self._db)
        if applied_now:
            log.event(
                STORE_MIGRATED, dsn=self.display_dsn, schema=self.schema, versions=applied_now
            )
        return applied_now

    async def check_schema(self) -> None:
        missing = await missing_migrations(self._db)
        if missing:
            raise SchemaNotMigrated(
                f"schema {self.schema!r} at {self.display_dsn} lacks migrations "
                f"{', '.join(missing)}: run `taskq migrate`"
            )

    async def ping(self) -> None:
        await self._db.fetchone("ping")

    async def now(self) -> datetime:
        row = await self._db.fetchone("now")
        assert row is not None
        return utc(cast(datetime, row["now"]))

    # -- producers -----------------------------------------------------------------------
    async def enqueue(self, specs: Sequence[JobSpec]) -> list[UUID]:
        if not specs:
            return []
        full = needs_full(specs)
        async with self._db.connection() as conn:
            if len(specs) >= COPY_THRESHOLD and not full:
                async with conn.transaction():
                    await copy_jobs(conn, self.enqueue_sql, [s for s in specs if s.run_at is None])
                    await copy_jobs(
                        conn, self.enqueue_sql, [s for s in specs if s.run_at is not None]
                    )
                return [s.id for s in specs]
            if full and len(specs) >= COPY_THRESHOLD:  # COPY to a staging table first
                async with conn.transaction():
                    inserted = await stage_jobs(conn, self.enqueue_sql, specs)
                    return await run_async(conn, pg_steps(self.enqueue_sql, specs, inserted))
            if full and len(specs) > 1:  # insert, look up holders, maybe insert again
                async with conn.transaction():
                    return await run_async(conn, pg_steps(self.enqueue_sql, specs))
            return await run_async(conn, pg_steps(self.enqueue_sql, specs))

    async def enqueue_columns(self, jobs: JobColumns) -> None:
        if not jobs.ids:
            return
        async with self._db.kept() as spare:
            if len(jobs.ids) < COPY_THRESHOLD:  # one INSERT (enqueue_one for a single job)
                await spare.cursor.execute(*columns_insert(self.enqueue_sql, jobs))
            else:  # one COPY on the autocommit connection: one statement, one transaction
                name, blocks = copy_columns(jobs, COPY_BLOCK)
                async with spare.cursor.copy(self.enqueue_sql[name]) as copy:
                    for block in blocks:
                        await copy.write(block)

    def enqueue_columns_here(self, jobs: JobColumns) -> None:
        """``enqueue_columns`` on the calling thread, on a synchronous connection
        (``LocalEnqueue``, here.py); the store must be open."""
        if self._db.pool is None:
            raise self._db.not_open()
        if jobs.ids:
            self._here.write(jobs)

    async def identity(self) -> tuple[Any, ...]:
        """(database, port, server start time) of this store's server: a caller's
        connection must show the same to enqueue in its transaction. Asked once."""
        if self._identity is None:
            async with self._db.connection() as conn:
                cur = await conn.execute(
                    self.enqueue_sql["connection_identity"],
                    {"jobs_table": jobs_table(self.schema)},
                )
                row = await cur.fetchone()
            assert row is not None
            self._identity = tuple(row[:3])
        return self._identity

    async def get_job(self, job_id: UUID) -> Job | None:
        row = await self._db.fetchone("get_job", {"id": job_id})
        return CODEC.job(row) if row else None

    async def list_jobs(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        rows = await self._db.fetchall(
            "list_jobs", {"state": state, "queue": queue, "tag": tag, "limit": limit}
        )
        return [CODEC.job(r) for r in rows]

    async def stats(self) -> dict[str, int]:
        counts = dict.fromkeys(ALL_STATES, 0)
        for row in await self._db.fetchall("stats"):
            counts[row["state"]] = row["count"]
        return counts

    async def retry_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        if not job_ids:
            return []
        rows = await self._db.fetchall(
            "retry_jobs", {"ids": list(job_ids), "channel": self.channel}
        )
        return [r["id"] for r in rows]

    async def retry_all_dead(self) -> int:
        return await self._db.fetchvalue("retry_all_dead", "count", {"channel": self.channel})

    async def cancel_jobs(self, job_ids: Sequence[UUID], *, by: str | None = None) -> list[UUID]:
        if not job_ids:
            return []
        rows = await self._db.fetchall("cancel_jobs", {"ids": list(job_ids), "by": by})
        return [r["id"] for r in rows]

    async def request_cancel(
        self, job_ids: Sequence[UUID], *, by: str | None = None
    ) -> dict[UUID, tuple[CancelResult, str]]:
        if not job_ids:
            return {}
        rows = await self._db.fetchall(
            "request_cancel",
            {"ids": list(job_ids), "by": by, "cancel_channel": self.cancel_channel},
        )
        return {r["id"]: (CancelResult.of(r["state"], r["moved"]), r["state"]) for r in rows}

    async def cancel_requested(self, worker_id: UUID) -> list[UUID]:
        rows = await self._db.fetchall("cancel_requested", {"worker_id": worker_id})
        return [r["id"] for r in rows]

    async def wait_for_cancels(self, timeout: float) -> bool:
        """Until a cancel request is announced (any job: the caller checks which) or
        ``timeout``. The cancel listener is a connection of its own; when it fails this
        raises StoreUnavailable (the caller backs off and logs the outage once). With
        nowhere to LISTEN (a pooler, no direct DSN) it only waits ``timeout``."""
        if not self._can_listen():
            await asyncio.sleep(timeout)
            return False
        try:
            channel = self.cancel_channel
            return await self._listener.wait(timeout, lambda notify: notify.channel == channel)
        except psycopg.Error as exc:
            await self._listener.close()
            raise self._db.translate(exc) from exc

    async def _listen(self) -> psycopg.AsyncConnection:
        """A new connection outside the pool, LISTENing on both channels: new jobs and
        cancel requests (TASKQ_DSN when it is direct, TASKQ_PG_DSN_DIRECT past a pooler)."""
        conninfo = self._db.listen_conninfo
        if conninfo is None:
            raise psycopg.OperationalError("no connection to LISTEN on: a pooler, no direct DSN")
        conn = await self._db.connect(conninfo)
        try:
            await listen_on(conn, self._db.q, self.channel, self.cancel_channel)
        except BaseException:
            await conn.close()
            raise
        return conn

    async def advance_next_scheduled(self, queues: Sequence[str]) -> list[UUID]:
        if not queues:
            return []
        rows = await self._db.fetchall("advance_next_scheduled", {"queues": list(queues)})
        return [r["id"] for r in rows]

    # -- periodic schedules ----------------------------------------------------------
    async def record_schedules(self, schedules: Sequence[Mapping[str, str]], now: datetime) -> None:
        if not schedules:
            return
        async with self._db.connection() as conn:
            await conn.execute(
                self._db.q["record_schedules"],
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
        return [CODEC.schedule(r) for r in await self._db.fetchall("list_schedules")]

    async def mark_schedule_tick(self, name: str, tick: datetime) -> None:
        async with self._db.connection() as conn:
            await conn.execute(self._db.q["mark_schedule_tick"], {"name": name, "tick": tick})

    async def actor_configs(self) -> dict[str, ActorConfig]:
        rows = await self._db.fetchall("actor_configs")
        return {r["name"]: CODEC.actor_config(r) for r in rows}

    async def sync_actor_configs(
        self, configs: Sequence[ActorConfig], *, force: bool
    ) -> list[Difference]:
        if not configs:
            return []
        async with self._db.connection() as conn, conn.transaction():
            await conn.execute(
                self._db.q["actor_configs_lock"], {"key": f"taskq-actors:{self.schema}"}
            )
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(self._db.q["actor_configs"])
            stored = {r["name"]: CODEC.actor_config(r) for r in await cur.fetchall()}
            differences = config_differences(stored, configs)
            if not force and any(d.routes for d in differences):
                return differences
            await conn.execute(
                self._db.q["upsert_actor_configs"],
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
        async with self._db.connection() as conn:
            await conn.execute(
                self._db.q["register_worker"],
                {
                    "id": info.id,
                    "workgroup_instance": info.workgroup_instance,
                    "worker_label": info.worker_label,
                    "pid": info.pid,
                    "hostname": info.hostname,
                    "queues": list(info.queues),
                    "started_at": info.started_at,
                    "max_connections": info.max_connections,
                },
            )

    async def unregister_worker(self, worker_id: UUID) -> None:
        async with self._db.connection() as conn:
            await conn.execute(self._db.q["unregister_worker"], {"id": worker_id})

    async def find_worker(self, workgroup_instance: UUID, worker_label: str) -> WorkerInfo | None:
        row = await self._db.fetchone(
            "find_worker", {"workgroup_instance": workgroup_instance, "worker_label": worker_label}
        )
        return CODEC.worker(row) if row else None

    async def heartbeat(
        self, worker_id: UUID, lease_seconds: float, connections: int | None = None
    ) -> int:
        params = {"worker_id": worker_id, "lease": float(lease_seconds), "connections": connections}
        return await self._db.fetchvalue("heartbeat", "extended", params)

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
            "worker_id": worker_id,
            "queues": pgarray.names(queues),
            "limit": limit,
            "lease": float(lease_seconds),
            "exclude_actors": pgarray.names(exclude_actors),
        }
        return await self._claimer.claim(params)

    # -- queue controls ------------------------------------------------------------------
    async def paused_queues(self) -> list[str]:
        return [r["name"] for r in await self._db.fetchall("paused_queues")]

    async def set_queue_paused(self, name: str, paused: bool, *, by: str | None = None) -> None:
        async with self._db.connection() as conn:
            await conn.execute(
                self._db.q["pause_queue"], {"name": name, "paused": paused, "by": by}
            )

    async def set_limits(self, kind: str, name: str, limits: Limits) -> None:
        self._claimer.forget_limits()
        async with self._db.connection() as conn:
            if not limits:
                await conn.execute(self._db.q["clear_limits"], {"kind": kind, "name": name})
                return
            await conn.execute(
                self._db.q["set_limits"],
                {
                    "kind": kind,
                    "name": name,
                    "concurrency": limits.concurrency,
                    "rate": limits.rate.count if limits.rate else None,
                    "rate_period": limits.rate.period if limits.rate else None,
                },
            )

    async def get_limits(self) -> dict[tuple[str, str], Limits]:
        rows = await self._db.fetchall("get_limits")
        return {(r["kind"], r["name"]): limits_from_row(r) for r in rows}

    async def queue_overview(self) -> list[QueueInfo]:
        depths = await self._db.fetchall("queue_depths")
        controls = await self._db.fetchall("queue_controls")
        limits = await self._db.fetchall("get_limits")
        return overview(CODEC, depths, controls, limits)

    async def complete(self, worker_id: UUID, outcomes: Sequence[Outcome]) -> int:
        if not outcomes:
            return 0
        return await self._db.fetchvalue(
            "complete",
            "changed",
            pgarray.complete_params(worker_id, self.channel, outcomes),
            kept=True,
        )

    async def give_back(self, worker_id: UUID, jobs: Sequence[tuple[UUID, int]]) -> int:
        if not jobs:
            return 0
        return await self._db.fetchvalue(
            "give_back",
            "changed",
            {
                "worker_id": worker_id,
                "channel": self.channel,
                "ids": pgarray.uuids([j[0] for j in jobs]),
                "attempts": pgarray.ints([j[1] for j in jobs]),
            },
            kept=True,
        )

    async def rescue_worker(
        self, worker_id: UUID, cause: str, *, blamed: bool = False
    ) -> list[RescuedJob]:
        rows = await self._db.fetchall(
            "rescue_worker",
            {"worker_id": worker_id, "cause": cause, "blamed": blamed, "channel": self.channel},
        )
        return [CODEC.rescued(r) for r in rows]

    async def rescue_expired(
        self, cause: str, *, exclude_worker: UUID | None = None
    ) -> list[RescuedJob]:
        rows = await self._db.fetchall(
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
        for name, params in passes:  # each batch on a connection of its own for its time:
            while True:  # a long prune never holds one of a small pool's connections
                deleted = await self._db.rowcount(name, params)
                jobs_deleted += deleted
                if deleted < batch:
                    break
        return jobs_deleted, await self._db.rowcount("prune_workers", {"before": workers_before})

    # -- waking --------------------------------------------------------------------------
    def _can_listen(self) -> bool:
        """Whether LISTEN has a connection that keeps its session; when not (TASKQ_DSN
        through a pooler and no TASKQ_PG_DSN_DIRECT), ``listen-unavailable`` once."""
        if self._db.listen_conninfo is not None:
            return True
        if not self._told_no_listen:
            self._told_no_listen = True
            log.event(LISTEN_UNAVAILABLE, dsn=self.display_dsn, fix=LISTEN_FIX)
        return False

    async def warm_up(self) -> None:
        async def claimer() -> None:
            async with self._claimer.connection():
                pass

        # the two connect at once; what fails is left for the first claim or wait
        parts = [claimer(), self._listener.open()] if self._can_listen() else [claimer()]
        await asyncio.gather(*parts, return_exceptions=True)

    async def wait_for_jobs(self, queues: Sequence[str], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        if not self._can_listen():
            await asyncio.sleep(timeout)  # the caller polls
            return False
        wanted = set(queues)
        try:
            channel = self.channel
            return await self._listener.wait(
                timeout,
                lambda notify: notify.channel == channel and notify.payload in wanted,
                first=True,  # the fetcher: woken in its own task (the enqueue-to-start path)
            )
        except psycopg.Error as exc:
            log.event(STORE_LISTEN_FAILED, dsn=self.display_dsn, error=first_line(exc))
            await self._listener.close()
            await asyncio.sleep(max(0.0, deadline - time.monotonic()))
            return False
