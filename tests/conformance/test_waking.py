"""The Store contract: warming up and waking on new jobs (NOTIFY on Postgres, polling
on SQLite), against every engine."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from taskq.ids import uuid7
from taskq.jobs import Outcome, OutcomeKind
from tests.support.conformance_kit import claim_all, future
from tests.support.storekit import another_store, spec


# -- waking --------------------------------------------------------------------------
async def prime(store, w) -> None:
    """What a worker does before it waits: an (empty) claim, and a first wait that sets
    up listening. Anything committed after this must wake the next wait."""
    assert await claim_all(store, w) == []
    await store.wait_for_jobs(["default"], timeout=0.0)


async def test_warm_up_claims_nothing_and_opens_the_listening(store, target):
    """A starting worker warms its store up while it checks the schema: nothing may be
    claimed yet; on Postgres the LISTEN is in place (its first wait finds it open): one
    connection, LISTENing on both channels (its last statement the second LISTEN)."""
    (job_id,) = await store.enqueue([spec()])
    await store.warm_up()
    await store.warm_up()  # again: nothing more
    job = await store.get_job(job_id)
    assert job is not None and job.state == "queued" and job.attempts == 0
    if target.kind == "postgres":
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            (listening,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query = ANY(%s)",
                ([f'LISTEN "{store.channel}"', f'LISTEN "{store.cancel_channel}"'],),
            ).fetchone()
        assert listening == 1
    assert [c.id for c in await claim_all(store, uuid7())] == [job_id]


async def test_wait_for_jobs_wakes_on_enqueue_from_another_connection(store, target):
    await prime(store, uuid7())
    async with another_store(target) as producer:
        waiter = asyncio.create_task(store.wait_for_jobs(["default"], timeout=20.0))
        await producer.enqueue([spec()])
        assert await asyncio.wait_for(waiter, timeout=25.0) is True


async def test_wait_for_jobs_sees_an_enqueue_made_before_it_started(store, target):
    await prime(store, uuid7())
    async with another_store(target) as producer:
        await producer.enqueue([spec(), spec()])
    assert await store.wait_for_jobs(["default"], timeout=20.0) is True


async def test_wait_for_jobs_ignores_other_queues_and_times_out(store, target):
    await prime(store, uuid7())
    async with another_store(target) as producer:
        waiter = asyncio.create_task(store.wait_for_jobs(["default"], timeout=0.5))
        await producer.enqueue([spec(queue="elsewhere"), spec(run_at=future())])
        assert await asyncio.wait_for(waiter, timeout=10.0) is False


async def test_wait_for_jobs_wakes_on_requeue(store, target):
    w = uuid7()
    await store.enqueue([spec(idempotent=True)])
    async with another_store(target) as other:
        assert len(await claim_all(other, w)) == 1
        await prime(store, uuid7())
        waiter = asyncio.create_task(store.wait_for_jobs(["default"], timeout=20.0))
        await other.rescue_worker(w, "died")
        assert await asyncio.wait_for(waiter, timeout=25.0) is True


async def test_a_cancelled_wait_leaves_the_next_wait_working(store, target):
    """The fetcher cancels its wait at shutdown or on its own timeout."""
    await prime(store, uuid7())
    for _ in range(3):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(store.wait_for_jobs(["default"], timeout=30.0), timeout=0.1)
    async with another_store(target) as producer:
        await producer.enqueue([spec()])
    assert await store.wait_for_jobs(["default"], timeout=20.0) is True
    await store.ping()


async def test_a_shared_blame_marks_the_jobs_to_run_alone_until_a_run_ends(store):
    await store.enqueue([spec(idempotent=True, max_crashes=3) for _ in range(2)])
    w = uuid7()
    assert [c.run_alone for c in await claim_all(store, w)] == [False, False]
    await store.rescue_worker(w, "worker exited with code 1", blamed=True)  # shared
    w = uuid7()
    a, b = await claim_all(store, w)
    assert (a.run_alone, b.run_alone) == (True, True)
    await store.rescue_worker(w, "worker killed by SIGKILL", blamed=False)  # still unproven
    w = uuid7()
    a, b = await claim_all(store, w)
    assert (a.run_alone, b.run_alone) == (True, True)
    await store.complete(w, [Outcome(a.id, a.attempt, OutcomeKind.RETRY, error="e")])
    await store.give_back(w, [(b.id, b.attempt)])
    flags = {c.id: c.run_alone for c in await claim_all(store, uuid7())}
    assert flags == {a.id: False, b.id: True}  # a's run ended: cleared; b never ran
