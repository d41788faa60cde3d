"""The Postgres store's one LISTEN connection (store/postgres/listen.py): the fetcher's
and the cancel watcher's waits share it, each woken by its own notifications only, and
one that came while its waiter was not waiting is kept for its next wait."""

from __future__ import annotations

import asyncio
import gc

import psycopg

from taskq.ids import uuid7
from tests.support.helpers import async_wait_until, migrated_store
from tests.support.storekit import spec


def listen_connections(target) -> int:
    """Server connections whose last statement LISTENs on the schema's channels."""
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        (found,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE %s",
            (f'LISTEN "taskq_%{target.schema}"',),
        ).fetchone()
    return int(found)


async def running_job(store) -> tuple:
    worker = uuid7()
    await store.enqueue([spec(queue="held")])
    (claimed,) = (await store.claim(worker, ["held"], 1, 30.0)).jobs
    return worker, claimed.id


async def test_both_waits_share_one_connection_and_each_wakes_for_its_own(pg_target) -> None:
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        _, job_id = await running_job(store)
        jobs = asyncio.ensure_future(store.wait_for_jobs(["default"], 30.0))
        cancels = asyncio.ensure_future(store.wait_for_cancels(30.0))
        await async_wait_until(lambda: _listening(pg_target), what="the LISTEN connection")
        assert listen_connections(pg_target) == 1  # one connection for both channels

        await store.request_cancel([job_id])
        assert await asyncio.wait_for(asyncio.shield(cancels), 20) is True
        assert not jobs.done()  # a cancel is not a job

        async with migrated_store(pg_target.dsn, pg_target.schema) as producer:
            await producer.enqueue([spec()])
        assert await asyncio.wait_for(jobs, 20) is True


async def _listening(target) -> bool:
    return listen_connections(target) >= 1


async def test_a_notification_for_a_waiter_not_waiting_is_kept_for_its_next_wait(
    pg_target,
) -> None:
    """The cancel watcher polls between its waits and the fetcher claims between its
    own: what was announced meanwhile, read by the other's wait, still wakes theirs."""
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        _, job_id = await running_job(store)
        await store.wait_for_jobs(["default"], 0.0)  # listening from here on

        # only the fetcher waits when the cancel is announced
        jobs = asyncio.ensure_future(store.wait_for_jobs(["default"], 30.0))
        await store.request_cancel([job_id])
        async with migrated_store(pg_target.dsn, pg_target.schema) as producer:
            await producer.enqueue([spec()])
        assert await asyncio.wait_for(jobs, 20) is True
        assert await asyncio.wait_for(store.wait_for_cancels(5.0), 1.0) is True  # kept

        # only the cancel watcher waits when a job comes
        cancels = asyncio.ensure_future(store.wait_for_cancels(0.5))
        async with migrated_store(pg_target.dsn, pg_target.schema) as producer:
            await producer.enqueue([spec()])
        assert await cancels is False
        assert await asyncio.wait_for(store.wait_for_jobs(["default"], 5.0), 1.0) is True
        assert await store.wait_for_jobs(["default"], 0.1) is False  # used up once


async def test_the_fetchers_wait_takes_the_reading_over(pg_target) -> None:
    """A new job wakes the fetcher in its own task: when it starts waiting while the
    cancel watcher reads the connection, the reading passes to it (and the cancel wait
    still hears its own notifications)."""
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        _, job_id = await running_job(store)
        listener = store._listener  # type: ignore[attr-defined]
        cancels = asyncio.ensure_future(store.wait_for_cancels(30.0))
        await async_wait_until(lambda: _reading(listener, first=False), what="cancels reading")
        jobs = asyncio.ensure_future(store.wait_for_jobs(["default"], 30.0))
        await async_wait_until(lambda: _reading(listener, first=True), what="the fetcher reading")
        await store.request_cancel([job_id])
        assert await asyncio.wait_for(cancels, 20) is True
        async with migrated_store(pg_target.dsn, pg_target.schema) as producer:
            await producer.enqueue([spec()])
        assert await asyncio.wait_for(jobs, 20) is True


async def _reading(listener, *, first: bool) -> bool:
    """Someone reads the connection; ``first``: a first waiter (none asks it to yield)."""
    return bool(listener._reading) and (not listener._yield) == first


async def test_a_reading_wait_cancelled_leaves_no_task_behind(pg_target) -> None:
    """The cancel watcher's wait, reading the connection (no fetcher waits), is cancelled
    at shutdown: its step of psycopg's reading ends with it, nothing is left to fail
    unretrieved when the connection closes ("Task exception was never retrieved")."""
    loop = asyncio.get_running_loop()
    unhandled: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    try:
        async with migrated_store(pg_target.dsn, pg_target.schema) as store:
            listener = store._listener  # type: ignore[attr-defined]
            cancels = asyncio.ensure_future(store.wait_for_cancels(30.0))
            await async_wait_until(lambda: _reading(listener, first=False), what="it reading")
            cancels.cancel()
            await asyncio.gather(cancels, return_exceptions=True)
            assert cancels.cancelled()
        for _ in range(3):  # an unretrieved task's error is reported when it is collected
            gc.collect()
            await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert [c.get("message") for c in unhandled] == []
