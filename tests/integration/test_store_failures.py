"""How the stores fail: lost connections, unreachable servers, unwritable files, missing
schema. Each failure is one clear taskq error, and the store recovers when it can."""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import psycopg
import pytest

from taskq.exceptions import (
    ConfigError,
    InvalidDSN,
    SchemaNotMigrated,
    StoreError,
    StoreUnavailable,
)
from taskq.ids import uuid7, uuid7_ints
from taskq.jobs import JobColumns, Outcome, OutcomeKind, new_job_ids
from taskq.store import Store, create_store
from taskq.store.sqlfile import load_migrations
from taskq.store.sqlite import SqliteStore
from tests.support.helpers import async_wait_until
from tests.support.storekit import another_store, spec

SUCCEEDED = OutcomeKind.SUCCEEDED


@asynccontextmanager
async def tagged_store(target) -> AsyncIterator[tuple[Store, str]]:
    """An opened, migrated store whose connections carry an application_name of their
    own (so a test can kill exactly them), and that name."""
    name = f"taskq_test_{secrets.token_hex(4)}"
    dsn = f"{target.dsn}{'&' if '?' in target.dsn else '?'}application_name={name}"
    store = create_store(dsn, target.schema)
    await store.open()
    try:
        await store.migrate()
        yield store, name
    finally:
        await store.close()


def terminate(dsn: str, application_name: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            # with a timeout: returns once each backend is gone (its goodbye sent)
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE application_name = %s AND pid <> pg_backend_pid()",
            (application_name,),
        ).fetchall()
    return len(rows)


def _terminate_when_sleeping(dsn: str, application_name: str) -> int:
    """Kill the backend of ``application_name`` once it is inside pg_sleep (deadline 20 s)."""
    deadline = time.monotonic() + 20
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name"
                " = %s AND state = 'active' AND query LIKE 'SELECT pg_sleep%%'",
                (application_name,),
            ).fetchall()
            if rows:
                return len(rows)
            time.sleep(0.02)
    return 0


async def test_connections_killed_while_idle_are_replaced_without_failing_a_call(pg_target):
    """Postgres restarted or an admin killed the backends while the pool sat idle: the
    next calls get fresh connections instead of StoreUnavailable (a web app's first
    request after a database restart does not fail)."""
    async with tagged_store(pg_target) as (store, app):
        await store.enqueue([spec()])
        async with AsyncExitStack() as held:  # four connections at once: the pool grows
            for _ in range(4):
                await held.enter_async_context(store._db.connection())  # type: ignore[attr-defined]
        assert terminate(pg_target.dsn, app) >= 4
        for _ in range(8):
            assert (await store.stats())["queued"] == 1


async def test_a_connection_killed_mid_call_is_store_unavailable_once_then_recovers(pg_target):
    async with tagged_store(pg_target) as (store, app):
        await store.enqueue([spec()])
        killer = asyncio.create_task(
            asyncio.to_thread(_terminate_when_sleeping, pg_target.dsn, app)
        )
        with pytest.raises(StoreUnavailable) as info:
            async with store._db.connection() as conn:  # type: ignore[attr-defined]
                await conn.execute("SELECT pg_sleep(30)")
        assert await killer == 1
        assert isinstance(info.value.__cause__, psycopg.OperationalError)
        assert "\n" not in str(info.value) and "127.0.0.1" in str(info.value)
        assert (await store.stats())["queued"] == 1  # the pool dropped the dead connection


def plain_jobs(n: int) -> JobColumns:
    return JobColumns(new_job_ids(uuid7_ints(n)), ["[1]"] * n, ["{}"] * n, "tests.echo", "default")


async def test_the_producers_kept_connection_killed_while_idle_is_replaced(pg_target):
    """An enqueue keeps its connection for the next one (``_spare``): killed while it
    waits, it is replaced at the next enqueue, which does not fail."""
    async with tagged_store(pg_target) as (store, app):
        await store.enqueue_columns(plain_jobs(1))
        assert store._db._spare is not None  # type: ignore[attr-defined]
        assert terminate(pg_target.dsn, app) >= 1
        await store.enqueue_columns(plain_jobs(1))
        await store.enqueue_columns(plain_jobs(150))  # the COPY path on it too
        assert (await store.stats())["queued"] == 152


async def test_acknowledgements_run_on_the_kept_connection(pg_target):
    """complete and give_back go through the kept connection: one backend prepares them
    and compiles the workflow triggers (the pool hands its connections out in turn)."""
    async with tagged_store(pg_target) as (store, _app):
        await store.enqueue_columns(plain_jobs(2))  # an enqueue keeps its connection
        kept = store._db._spare  # type: ignore[attr-defined]
        assert kept is not None
        worker = uuid7()
        done, back = (await store.claim(worker, ["default"], 2, 30.0)).jobs

        async def last_statement() -> str:
            async with store._db.connection() as conn:  # type: ignore[attr-defined]
                cur = await conn.execute(
                    "SELECT query FROM pg_stat_activity WHERE pid = %s",
                    [kept.conn.info.backend_pid],
                )
                row = await cur.fetchone()
            assert row is not None
            return str(row[0])

        assert await store.complete(worker, [Outcome(done.id, done.attempt, SUCCEEDED)]) == 1
        assert store._db._spare is kept  # type: ignore[attr-defined]
        assert "WITH outcome AS" in await last_statement()
        assert await store.give_back(worker, [(back.id, back.attempt)]) == 1
        assert store._db._spare is kept  # type: ignore[attr-defined]
        assert "WITH returned AS" in await last_statement()


async def test_concurrent_enqueues_share_the_pool_and_keep_one_connection(pg_target):
    async with tagged_store(pg_target) as (store, _app):
        await asyncio.gather(*(store.enqueue_columns(plain_jobs(1 + i % 120)) for i in range(24)))
        assert (await store.stats())["queued"] == sum(1 + i % 120 for i in range(24))
        pool = store._db.pool  # type: ignore[attr-defined]

        async def connections_out() -> int:
            stats = pool.get_stats()
            return stats["pool_size"] - stats["pool_available"]

        async def settled() -> bool:  # the burst grew the pool: psycopg_pool counts a
            return await connections_out() <= 1  # connection it is still adding as out

        await async_wait_until(settled, what="the pool's growth to finish")
        kept = store._db._spare  # type: ignore[attr-defined]
        assert kept is not None and await connections_out() == 1


async def test_a_failed_enqueue_does_not_keep_its_connection(pg_target):
    async with tagged_store(pg_target) as (store, _app):
        jobs = plain_jobs(1)
        await store.enqueue_columns(jobs)
        assert store._db._spare is not None  # type: ignore[attr-defined]
        with pytest.raises(StoreError):
            await store.enqueue_columns(jobs)  # the same id again
        assert store._db._spare is None  # type: ignore[attr-defined]  # back to the pool
        await store.enqueue_columns(plain_jobs(2))
        assert (await store.stats())["queued"] == 3


async def test_listener_reconnects_after_its_connection_is_killed(pg_target):
    async with tagged_store(pg_target) as (store, app):
        assert await store.wait_for_jobs(["default"], timeout=0.0) is False  # now listening
        terminate(pg_target.dsn, app)
        assert await store.wait_for_jobs(["default"], timeout=0.2) is False  # falls back
        assert await store.wait_for_jobs(["default"], timeout=0.0) is False  # listens again
        async with another_store(pg_target) as producer:
            await producer.enqueue([spec()])
        assert await store.wait_for_jobs(["default"], timeout=20.0) is True


async def test_unreachable_postgres_fails_fast_with_one_redacted_line():
    store = create_store("postgresql://root:s3cret@127.0.0.1:1/test", "taskq")
    with pytest.raises(StoreUnavailable) as info:
        await store.open()
    message = str(info.value)
    assert message.startswith(
        "cannot connect to Postgres at postgresql://root:***@127.0.0.1:1/test"
    )
    assert "s3cret" not in message and "\n" not in message
    assert store.display_dsn == "postgresql://root:***@127.0.0.1:1/test"
    await store.close()


def test_bad_dsn_and_schema_are_config_errors():
    with pytest.raises(InvalidDSN):
        create_store("mysql://x@y/z")
    with pytest.raises(ConfigError, match="invalid schema name"):
        create_store("postgresql://root@127.0.0.1/test", "Robert'); DROP")


async def test_postgres_reconnect_keeps_the_old_pool_when_the_new_dsn_fails(pg_target):
    async with another_store(pg_target) as store:
        await store.migrate()
        with pytest.raises(StoreUnavailable):
            await store.reconnect("postgresql://root@127.0.0.1:1/test")
        assert "127.0.0.1:1" not in store.display_dsn
        await store.ping()
        await store.reconnect(pg_target.dsn)  # a good one replaces the pool
        assert (await store.stats())["queued"] == 0


def listening(target, count: int) -> bool:
    """At least ``count`` connections LISTEN on ``target``'s schema's channels."""
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        (found,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE %s",
            (f'LISTEN "taskq_%{target.schema}"',),
        ).fetchone()
    return found >= count


async def test_postgres_reconnect_while_tasks_wait_on_its_listeners(pg_target):
    """A SIGHUP's reconnect while the fetcher and the cancel watcher wait for
    notifications (together, on the store's one LISTEN connection): every reconnect
    succeeds (closing a listener under a waiting task freed its socket while the event
    loop still watched it, and the next connection opened could then fail with
    "connection socket closed": 2 reconnects in 5), and the waits go on working on the
    new connections."""
    async with another_store(pg_target) as store:
        await store.migrate()
        waits = [
            asyncio.ensure_future(store.wait_for_jobs(["nobody"], 30.0)),
            asyncio.ensure_future(store.wait_for_cancels(30.0)),
        ]
        try:

            async def listening_for_both() -> bool:
                return listening(pg_target, 1)

            await async_wait_until(listening_for_both, what="the waits listening")
            for _ in range(10):
                await store.reconnect(pg_target.dsn)
                await store.ping()
            await store.warm_up()  # the new LISTEN is in place: a commit from now on wakes
            await store.enqueue([spec()])
            assert await store.wait_for_jobs(["default"], 30.0) is True
        finally:
            for wait in waits:
                wait.cancel()
            await asyncio.gather(*waits, return_exceptions=True)


async def test_sqlite_reconnect_reopens_the_file(sqlite_target):
    async with another_store(sqlite_target) as store:
        await store.migrate()
        await store.enqueue([spec()])
        await store.reconnect()
        assert (await store.stats())["queued"] == 1


async def test_unwritable_sqlite_location_is_one_clear_line(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    store = create_store(f"sqlite:///{blocker}/sub/taskq.sqlite3")
    with pytest.raises(StoreUnavailable) as info:
        await store.open()
    assert str(info.value).startswith("cannot create the directory of SQLite database")
    assert "\n" not in str(info.value)
    await store.close()


async def test_sqlite_creates_missing_parent_directories(tmp_path: Path):
    path = tmp_path / "deep" / "er" / "taskq.sqlite3"
    store = create_store(f"sqlite:///{path}")
    await store.open()
    try:
        assert await store.migrate() == [m.version for m in load_migrations("sqlite")]
        assert path.exists()
    finally:
        await store.close()


async def test_unmigrated_store_raises_schema_not_migrated(target):
    store = create_store(target.dsn, target.schema)
    await store.open()
    try:
        with pytest.raises(SchemaNotMigrated, match="taskq migrate"):
            await store.check_schema()
        with pytest.raises(SchemaNotMigrated, match="taskq migrate"):
            await store.get_job(uuid7())
        with pytest.raises(SchemaNotMigrated):
            await store.enqueue([spec()])
    finally:
        await store.close()


async def test_calls_before_open_are_store_unavailable(target):
    store = create_store(target.dsn, target.schema)
    with pytest.raises(StoreUnavailable, match="not open"):
        await store.stats()


class WriteLockHolder:
    """Another connection holding the SQLite file's write lock (as a busy process would)."""

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    def __enter__(self) -> WriteLockHolder:
        self.conn.execute("BEGIN IMMEDIATE")
        return self

    def release(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")

    def __exit__(self, *exc: object) -> None:
        self.release()
        self.conn.close()


async def test_sqlite_lock_held_too_long_is_store_unavailable_then_recovers(sqlite_target):
    path = sqlite_target.dsn.removeprefix("sqlite:///")
    store = SqliteStore(path, busy_timeout=0.05, locked_deadline=0.3)
    await store.open()
    try:
        await store.migrate()
        with WriteLockHolder(path), pytest.raises(StoreUnavailable, match="locked") as info:
            await store.enqueue([spec()])
        assert "\n" not in str(info.value)
        assert (await store.stats())["queued"] == 0  # nothing half-written
        await store.enqueue([spec()])
        assert (await store.stats())["queued"] == 1
    finally:
        await store.close()


async def test_sqlite_write_waits_out_a_lock_past_the_busy_timeout(sqlite_target):
    path = sqlite_target.dsn.removeprefix("sqlite:///")
    store = SqliteStore(path, busy_timeout=0.01, locked_deadline=30.0)
    await store.open()
    try:
        await store.migrate()
        with WriteLockHolder(path) as holder:
            timer = threading.Timer(0.3, holder.release)  # the other process finishes
            timer.start()
            try:
                await store.enqueue([spec()])
            finally:
                timer.cancel()
        assert (await store.stats())["queued"] == 1
    finally:
        await store.close()
