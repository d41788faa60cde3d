"""Enqueue in the application's own transaction (``connection=``), with real parts:
real Postgres and SQLite, real psycopg, SQLAlchemy and Django connections, and a real
``taskq worker`` process that runs what was committed."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from taskq import AsyncClient, Client, ConfigError, JobNotFound
from tests.conftest import StoreTarget
from tests.support import worker_actors
from tests.support.django_project import postgres_database
from tests.support.helpers import migrate, wait_until
from tests.support.worker_harness import WorkerProcess

REMEMBER = worker_actors.remember  # the worker process serves tests.support.worker_actors


def _migrate(target: StoreTarget) -> None:
    asyncio.run(migrate(target.dsn, target.schema))


@pytest.fixture
def client(target: StoreTarget) -> Iterator[Client]:
    _migrate(target)
    with Client(target.dsn, schema=target.schema) as c:
        yield c


@pytest.fixture
def pg_client(pg_target: StoreTarget) -> Iterator[Client]:
    _migrate(pg_target)
    with Client(pg_target.dsn, schema=pg_target.schema) as c:
        yield c


@pytest.fixture
def worker(target: StoreTarget, client: Client, tmp_path: Path) -> Iterator[WorkerProcess]:
    proc = WorkerProcess(target, log_path=tmp_path / "worker.log")
    try:
        proc.wait_for_event("worker-started", timeout=60)
        yield proc
    finally:
        proc.stop()


def _exists(client: Client, job_id: Any) -> bool:
    try:
        client.get(job_id)
    except JobNotFound:
        return False
    return True


def _runs_to_success(client: Client, job_id: Any) -> None:
    wait_until(
        lambda: client.get(job_id).state == "succeeded", timeout=60, what="the committed job run"
    )


def _app_connection(target: StoreTarget) -> Any:
    """A connection the application opened itself (not through taskq), in a transaction."""
    if target.kind == "sqlite":
        return sqlite3.connect(target.dsn.removeprefix("sqlite:///"))  # implicit BEGIN on write
    return psycopg.connect(target.dsn)  # autocommit off: a transaction starts with the first query


def test_committed_jobs_run_and_rolled_back_jobs_never_exist(client, target, worker):
    conn = _app_connection(target)
    try:
        kept = client.enqueue_with(REMEMBER, ["kept"], connection=conn)
        assert not kept.duplicate
        assert not _exists(client, kept)  # not committed: invisible to everyone else
        conn.commit()
        _runs_to_success(client, kept)

        gone = client.enqueue_with(REMEMBER, ["gone"], connection=conn)
        batch = client.enqueue_many(REMEMBER, [(["a"], {}), (["b"], {})], connection=conn)
        conn.rollback()
        assert not any(_exists(client, i) for i in [gone, *batch])
    finally:
        conn.close()


def test_unique_keys_inside_the_callers_transaction(client, target):
    conn = _app_connection(target)
    try:
        first = client.enqueue_with(REMEMBER, ["x"], unique_key="once", connection=conn)
        again = client.enqueue_with(REMEMBER, ["y"], unique_key="once", connection=conn)
        many = client.enqueue_many(
            REMEMBER, [(["z"], {}), (["w"], {})], unique_keys=["once", "other"], connection=conn
        )
        assert again.duplicate and again == first
        assert many[0].duplicate and many[0] == first and not many[1].duplicate
        conn.commit()
        assert client.stats()["queued"] == 2
        assert client.get(first).unique_key == "once"
    finally:
        conn.close()


def test_psycopg_savepoint_rolled_back_takes_the_job(pg_client, pg_target):
    with psycopg.connect(pg_target.dsn) as conn:
        with conn.transaction():
            outer = pg_client.enqueue_with(REMEMBER, ["outer"], connection=conn)
            with pytest.raises(RuntimeError), conn.transaction():  # a savepoint
                inner = pg_client.enqueue_with(REMEMBER, ["inner"], connection=conn.cursor())
                raise RuntimeError("roll the savepoint back")
    assert _exists(pg_client, outer)
    assert not _exists(pg_client, inner)


def test_a_rollback_sends_no_wakeup(pg_client, pg_target):
    """NOTIFY is transactional: listeners hear the committed enqueue, never the other."""
    channel = f"taskq_{pg_target.schema}"[:63]
    with psycopg.connect(pg_target.dsn, autocommit=True) as listener:
        listener.execute(f'LISTEN "{channel}"')
        with psycopg.connect(pg_target.dsn) as conn:
            pg_client.enqueue_with(REMEMBER, ["no"], queue="rolled-back", connection=conn)
            conn.rollback()
            pg_client.enqueue_with(REMEMBER, ["yes"], queue="committed", connection=conn)
            conn.commit()
        heard = []
        for note in listener.notifies(timeout=30):
            heard.append(note.payload)
            if note.payload == "committed":
                break
    assert heard == ["committed"]


def test_a_connection_to_another_database_or_schema_or_file_is_refused(client, target, tmp_path):
    if target.kind == "sqlite":
        other = sqlite3.connect(tmp_path / "other.sqlite3")
        with pytest.raises(ConfigError, match="not the taskq store's file"):
            client.enqueue_with(REMEMBER, ["no"], connection=other)
        other.close()
        return
    params = conninfo_to_dict(target.dsn)
    with psycopg.connect(make_conninfo("", **{**params, "dbname": "postgres"})) as other_db:
        with pytest.raises(ConfigError, match="reaches database 'postgres'"):
            client.enqueue_with(REMEMBER, ["no"], connection=other_db)
    with Client(target.dsn, schema="taskq_no_such_schema") as elsewhere:
        with psycopg.connect(target.dsn) as conn:
            client.enqueue_with(REMEMBER, ["fine"], connection=conn)  # checked and passed
            with pytest.raises(ConfigError, match="no taskq schema"):  # not for this schema
                elsewhere.enqueue_with(REMEMBER, ["x"], connection=conn)
            conn.rollback()
    with pytest.raises(ConfigError, match="SQLite connection, but the taskq store is"):
        client.enqueue_with(REMEMBER, ["no"], connection=sqlite3.connect(tmp_path / "x.sqlite3"))
    with pytest.raises(ConfigError, match="expected a psycopg 3 connection"):
        client.enqueue_with(REMEMBER, ["no"], connection=object())
    assert client.stats()["queued"] == 0


async def test_a_client_without_a_dsn_given_a_postgres_connection_says_set_taskq_dsn(
    pg_dsn, tmp_path, monkeypatch
):
    """No DSN and no TASKQ_DSN: the store would be the default SQLite file. A Postgres
    connection= is refused with the fix (set TASKQ_DSN), and no file is created."""
    monkeypatch.chdir(tmp_path)
    for name in ("TASKQ_DSN", "TASKQ_PG_DSN", "TASKQ_DSN_FILE"):
        monkeypatch.delenv(name, raising=False)
    with psycopg.connect(pg_dsn) as conn:
        client = Client()
        try:
            with pytest.raises(ConfigError, match=r"no DSN: TASKQ_DSN is not set.*set TASKQ_DSN"):
                client.enqueue_with(REMEMBER, ["x"], connection=conn)
            with pytest.raises(ConfigError, match="set TASKQ_DSN"):
                client.enqueue_many(REMEMBER, [(("x",), {})], connection=conn)
        finally:
            client.close()
        aclient = AsyncClient()
        try:
            with pytest.raises(ConfigError, match="set TASKQ_DSN"):
                await aclient.enqueue_with(REMEMBER, ["x"], connection=conn)
        finally:
            await aclient.close()
    assert list(tmp_path.iterdir()) == []


async def test_async_client_on_a_sync_connection(target, tmp_path):
    await asyncio.to_thread(_migrate, target)
    conn = _app_connection(target)
    try:
        async with AsyncClient(target.dsn, schema=target.schema) as client:
            job_id = await client.enqueue_with(REMEMBER, ["sync-conn"], connection=conn)
            with pytest.raises(JobNotFound):
                await client.get(job_id)
            conn.commit()
            assert (await client.get(job_id)).state == "queued"
    finally:
        conn.close()


# -- SQLAlchemy --------------------------------------------------------------------------


def _sa_url(target: StoreTarget, driver: str = "psycopg") -> str:
    if target.kind == "sqlite":
        return "sqlite:///" + target.dsn.removeprefix("sqlite:///")
    return target.dsn.replace("postgresql://", f"postgresql+{driver}://", 1)


def test_sqlalchemy_session_commit_runs_rollback_and_savepoint_do_not(client, target, worker):
    from sqlalchemy import create_engine, text
    from sqlalchemy.orm import Session

    engine = create_engine(_sa_url(target))
    try:
        with Session(engine) as session:
            session.execute(text("SELECT 1"))
            kept = client.enqueue_with(REMEMBER, ["sa-kept"], connection=session)
            nested = session.begin_nested()
            dropped = client.enqueue_with(REMEMBER, ["sa-savepoint"], connection=session)
            nested.rollback()
            assert not _exists(client, kept)
            session.commit()
        _runs_to_success(client, kept)
        assert not _exists(client, dropped)

        with engine.connect() as conn:  # a Connection, rolled back
            gone = client.enqueue_with(REMEMBER, ["sa-gone"], connection=conn)
            conn.rollback()
        assert not _exists(client, gone)
    finally:
        engine.dispose()


async def test_async_psycopg_and_sqlalchemy_connections(pg_target):
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    _migrate_task = asyncio.to_thread(_migrate, pg_target)
    await _migrate_task
    async with AsyncClient(pg_target.dsn, schema=pg_target.schema) as client:
        async with await psycopg.AsyncConnection.connect(pg_target.dsn) as conn:
            kept = await client.enqueue_with(REMEMBER, ["async-kept"], connection=conn)
            await conn.commit()
            gone = await client.enqueue_with(REMEMBER, ["async-gone"], connection=conn)
            await conn.rollback()
        engine = create_async_engine(_sa_url(pg_target))
        try:
            async with AsyncSession(engine) as session:
                sa_kept = await client.enqueue_with(REMEMBER, ["sa-async"], connection=session)
                await session.commit()
            async with AsyncSession(engine) as session:
                sa_gone = await client.enqueue_with(REMEMBER, ["sa-gone"], connection=session)
                await session.rollback()
        finally:
            await engine.dispose()
        for job_id in (kept, sa_kept):
            assert (await client.get(job_id)).state == "queued"
        for job_id in (gone, sa_gone):
            with pytest.raises(JobNotFound):
                await client.get(job_id)
        with pytest.raises(ConfigError, match="AsyncClient"):
            async with await psycopg.AsyncConnection.connect(pg_target.dsn) as conn:
                with Client(pg_target.dsn, schema=pg_target.schema) as sync_client:
                    sync_client.enqueue_with(REMEMBER, ["no"], connection=conn)


# -- Django ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def django_connection(pg_dsn: str) -> Iterator[Any]:
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(DATABASES={"default": postgres_database(pg_dsn)}, USE_TZ=True)
        django.setup()
    from taskq.contrib.django import connection

    conn = connection()
    yield conn
    conn.close()


@pytest.fixture
def pg_worker(pg_target, pg_client, tmp_path) -> Iterator[WorkerProcess]:
    proc = WorkerProcess(pg_target, log_path=tmp_path / "worker.log")
    try:
        proc.wait_for_event("worker-started", timeout=60)
        yield proc
    finally:
        proc.stop()


def test_django_atomic_commit_runs_rollback_and_savepoint_do_not(
    pg_client, pg_worker, django_connection
):
    from django.db import transaction

    with transaction.atomic():
        kept = pg_client.enqueue_with(REMEMBER, ["dj-kept"], connection=django_connection)
        try:
            with transaction.atomic():  # a savepoint
                inner = pg_client.enqueue_with(REMEMBER, ["dj-inner"], connection=django_connection)
                raise RuntimeError("roll the savepoint back")
        except RuntimeError:
            pass
        assert not _exists(pg_client, kept)
    _runs_to_success(pg_client, kept)
    assert not _exists(pg_client, inner)

    try:
        with transaction.atomic():
            gone = pg_client.enqueue_with(REMEMBER, ["dj-gone"], connection=django_connection)
            raise RuntimeError("roll it all back")
    except RuntimeError:
        pass
    assert not _exists(pg_client, gone)

    # outside atomic(): Django's autocommit writes it at once
    now = pg_client.enqueue_with(REMEMBER, ["dj-now"], connection=django_connection)
    assert _exists(pg_client, now)


def test_the_django_client_joins_atomic_by_default_and_not_when_told(
    pg_client, pg_target, django_connection
):
    """taskq.contrib.django's client: inside atomic() its enqueue is in the block (unseen
    by others until the commit, gone with a rollback); connection=None or
    join_atomic=False write at once, on taskq's own connection."""
    from django.db import transaction

    from taskq.contrib.django import DjangoClient

    joining = DjangoClient(schema=pg_target.schema)
    apart = DjangoClient(schema=pg_target.schema, join_atomic=False)
    try:
        with transaction.atomic():
            joined = joining.enqueue(REMEMBER, "dj-joined")
            many = joining.enqueue_many(REMEMBER, [(("dj-many",), {})])
            at_once = joining.enqueue_with(REMEMBER, ["dj-at-once"], connection=None)
            not_joined = apart.enqueue(REMEMBER, "dj-apart")
            assert not _exists(pg_client, joined) and not _exists(pg_client, many[0])
            assert _exists(pg_client, at_once) and _exists(pg_client, not_joined)
        assert _exists(pg_client, joined) and _exists(pg_client, many[0])  # committed
        try:
            with transaction.atomic():
                gone = joining.enqueue(REMEMBER, "dj-gone")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        assert not _exists(pg_client, gone)
        outside = joining.enqueue(REMEMBER, "dj-outside")  # autocommit: at once
        assert _exists(pg_client, outside)
    finally:
        joining.close()
        apart.close()
