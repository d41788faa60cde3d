"""The Postgres store through a real PgBouncer in transaction mode (tests/support/pgbouncer.py):
what it learns at open, what it never sends through a pooler, LISTEN past it, the
mistakes it refuses, and a pooler that goes away (issue 19)."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import threading
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

import taskq
from taskq.exceptions import ConfigError, StoreUnavailable
from taskq.ids import uuid7
from taskq.jobs import Outcome, OutcomeKind
from taskq.store import create_store
from taskq.store.postgres import PostgresStore
from tests.support import pgbouncer
from tests.support import worker_actors as actors
from tests.support.helpers import migrated_store
from tests.support.storekit import spec
from tests.support.worker_logs import captured_logs


@pytest.fixture
def schema(pg_dsn: str) -> Iterator[str]:
    name = f"taskq_t_{secrets.token_hex(6)}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
async def pooled(pgbouncer_dsn: str, schema: str) -> AsyncIterator[PostgresStore]:
    """A migrated store through the pooler, with no direct DSN."""
    async with migrated_store(pgbouncer_dsn, schema) as store:
        assert isinstance(store, PostgresStore)
        yield store


def other_database(dsn: str) -> str:
    """``dsn`` naming the server's ``postgres`` database instead of its own."""
    assert conninfo_to_dict(dsn).get("dbname") != "postgres"
    head, _, _ = dsn.partition("?")
    return head.rsplit("/", 1)[0] + "/postgres"


async def test_a_pooled_dsn_is_detected_and_nothing_is_prepared_through_it(
    pooled: PostgresStore, pg_dsn: str, schema: str
) -> None:
    assert pooled._db.pooled is True  # the pooler's cancel key is not the backend's pid
    assert pooled._db.prepare_threshold is None
    async with migrated_store(pg_dsn, schema) as direct:
        assert isinstance(direct, PostgresStore)
        assert direct._db.pooled is False  # a direct DSN keeps psycopg's automatic prepare
        assert direct._db.prepare_threshold == 5


async def test_many_stores_repeat_the_same_statements_through_one_small_pool(
    pg_dsn: str, schema: str
) -> None:
    """Four stores share two server connections: with prepared statements each would
    find the others' (``prepared statement "_pg3_0" already exists``) or, worse, run
    one with another's parameters. Every claim, ack and heartbeat here goes through."""
    bouncer = pgbouncer.PgBouncer(pg_dsn, pool_size=2)
    dsn = bouncer.start()
    try:
        async with migrated_store(dsn, schema) as first:
            await first.enqueue([spec() for _ in range(400)])
            stores = [create_store(dsn, schema) for _ in range(3)]
            for store in stores:
                await store.open()
            try:

                async def drain(store) -> int:
                    worker, done = uuid7(), 0
                    while claimed := (await store.claim(worker, ["default"], 5, 30.0)).jobs:
                        await store.heartbeat(worker, 30.0)
                        outcomes = [
                            Outcome(c.id, c.attempt, OutcomeKind.SUCCEEDED) for c in claimed
                        ]
                        done += await store.complete(worker, outcomes)
                    return done

                done = await asyncio.gather(*(drain(s) for s in [first, *stores]))
            finally:
                for store in stores:
                    await store.close()
            assert sum(done) == 400
            assert (await first.stats())["succeeded"] == 400
    finally:
        bouncer.close()


async def test_without_a_direct_dsn_a_worker_is_told_once_and_polls(
    pooled: PostgresStore,
) -> None:
    with captured_logs() as logs:
        await pooled.warm_up()
        await pooled.enqueue([spec()])
        assert await pooled.wait_for_jobs(["default"], timeout=0.05) is False
        assert await pooled.wait_for_cancels(timeout=0.05) is False
    (told,) = logs.events("listen-unavailable")
    assert told["level"] == "warning"
    assert "TASKQ_PG_DSN_DIRECT" in told["fix"]
    assert (await pooled.claim(uuid7(), ["default"], 10, 30.0)).jobs  # polling finds it


async def test_with_a_direct_dsn_listen_goes_past_the_pooler(
    pgbouncer_dsn: str, pg_dsn: str, schema: str
) -> None:
    async with migrated_store(pgbouncer_dsn, schema, pg_dsn) as store:
        await store.claim(uuid7(), ["default"], 10, 30.0)
        await store.wait_for_jobs(["default"], timeout=0.0)  # listening from here on
        waiting = asyncio.create_task(store.wait_for_jobs(["default"], timeout=20.0))
        await asyncio.sleep(0.05)
        async with migrated_store(pgbouncer_dsn, schema) as producer:
            await producer.enqueue([spec()])  # its NOTIFY goes through the pooler
        assert await waiting is True


async def test_a_direct_dsn_to_another_database_is_refused_at_open(
    pgbouncer_dsn: str, pg_dsn: str, schema: str
) -> None:
    store = create_store(pgbouncer_dsn, schema, direct_dsn=other_database(pg_dsn))
    with pytest.raises(ConfigError) as refused:
        await store.open()
    message = str(refused.value)
    assert "\n" not in message
    assert "TASKQ_PG_DSN_DIRECT" in message and "'postgres'" in message
    await store.close()


async def test_a_direct_dsn_through_the_pooler_is_refused_at_open(
    pgbouncer_dsn: str, schema: str
) -> None:
    store = create_store(pgbouncer_dsn, schema, direct_dsn=pgbouncer_dsn)
    with pytest.raises(ConfigError, match="goes through a connection pooler"):
        await store.open()
    await store.close()


async def test_an_unreachable_pooler_is_a_store_outage_and_its_return_the_recovery(
    pg_dsn: str, schema: str
) -> None:
    bouncer = pgbouncer.PgBouncer(pg_dsn)
    dsn = bouncer.start()
    try:
        async with migrated_store(dsn, schema) as store:
            await store.enqueue([spec()])
            bouncer.stop()
            with pytest.raises(StoreUnavailable):
                await store.stats()
            with pytest.raises(StoreUnavailable):
                await store.claim(uuid7(), ["default"], 10, 30.0)
            bouncer.start()
            assert (await store.stats())["queued"] == 1
            assert len((await store.claim(uuid7(), ["default"], 10, 30.0)).jobs) == 1
    finally:
        bouncer.close()


async def test_large_batches_go_by_copy_and_staging_through_the_pooler(
    pooled: PostgresStore,
) -> None:
    """COPY (a plain batch) and the staging table (a batch with unique keys) each run in
    one transaction; the staging table is dropped at its commit, so nothing is left in
    a server session the pooler hands to another client."""
    plain = [spec() for _ in range(300)]
    keyed = [
        dataclasses.replace(spec(), unique_key=f"k{i}", unique_states=",queued,running,")
        for i in range(300)
    ]
    assert await pooled.enqueue(plain) == [s.id for s in plain]
    assert await pooled.enqueue(keyed) == [s.id for s in keyed]
    assert await pooled.enqueue(keyed) == [s.id for s in keyed]  # duplicates: the holders
    assert (await pooled.stats())["queued"] == 600
    async with pooled._db.connection() as conn:
        cur = await conn.execute("SELECT to_regclass('pg_temp.taskq_enqueue_stage')")
        assert (await cur.fetchone()) == (None,)


def test_the_sync_clients_calling_thread_writes_through_the_pooler(
    pgbouncer_dsn: str, schema: str
) -> None:
    """taskq.Client writes plain jobs on the calling thread's own connection: through a
    pooler it prepares nothing either (the same statement 30 times, from two threads)."""
    asyncio.run(_migrate(pgbouncer_dsn, schema))
    with taskq.Client(pgbouncer_dsn, schema=schema) as client:
        failed: list[BaseException] = []

        def enqueue_many_singly(n: int) -> None:
            try:
                for i in range(15):
                    client.enqueue(actors.remember, f"t{n}-{i}")
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=enqueue_many_singly, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failed == []
        assert client.stats()["queued"] == 30


async def _migrate(dsn: str, schema: str) -> None:
    async with migrated_store(dsn, schema):
        pass


async def test_through_the_pooler_every_worker_presents_one_name_past_it_its_own(
    pgbouncer_dsn: str, pg_dsn: str, schema: str
) -> None:
    """PgBouncer gives a client any server connection and first SETs the client's
    application_name on it when they differ: a fleet of differently named workers would
    cost Postgres a statement more per transaction (measured: twice the transactions).
    Through the pooler every store presents the same name; its direct LISTEN connection
    keeps its own."""
    names = [f"taskq worker {n}-{secrets.token_hex(3)}" for n in ("a", "b")]
    stores = [
        create_store(pgbouncer_dsn, schema, direct_dsn=pg_dsn, application_name=name)
        for name in names
    ]
    async with migrated_store(pgbouncer_dsn, schema):
        pass
    try:
        for store in stores:
            await store.open()
        for _ in range(5):  # each store's calls on whatever server connection is free
            for store in stores:
                await store.ping()
                await store.claim(uuid7(), ["q"], 1, 30.0)
        await stores[0].warm_up()  # its LISTEN connection, past the pooler

        def sessions() -> dict[str, int]:
            with psycopg.connect(pg_dsn, autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT application_name, count(*) FROM pg_stat_activity "
                    "WHERE application_name = ANY(%s) GROUP BY 1",
                    (names,),
                ).fetchall()
            return {name: int(count) for name, count in rows}

        # no server connection of the pooler took either name; the direct one has its own
        assert await asyncio.to_thread(sessions) == {names[0]: 1}
    finally:
        for store in stores:
            await store.close()
